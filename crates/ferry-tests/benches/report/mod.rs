//! What the benches share: `--quick`, and where a bench's Markdown report goes.
//!
//! `--quick` (`cargo bench … -- --quick`) runs a bench at a reduced size: fewer calls, levels or
//! rounds, for `scripts/reproduce.sh --quick` (CI). Every bench prints its report and writes it to
//! the file `FERRY_BENCH_OUT` names (`scripts/reproduce/experiments/benches.sh` sets it; `cargo
//! bench` runs a bench in its package's folder, so give an absolute path), or else to
//! `target/ferry-bench/NAME.md`. A bench outside this package includes this file with `#[path]`.

use std::path::PathBuf;

/// Whether the bench was asked for its reduced size.
pub fn quick() -> bool {
    std::env::args().any(|arg| arg == "--quick")
}

/// Prints `report` and writes it to `FERRY_BENCH_OUT`, or else to `target/ferry-bench/NAME.md`.
pub fn write(name: &str, report: &str) {
    println!("\n{report}");
    let path = std::env::var_os("FERRY_BENCH_OUT")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(env!("CARGO_MANIFEST_DIR"))
                .join("../../target/ferry-bench")
                .join(format!("{name}.md"))
        });
    if let Some(dir) = path.parent() {
        let _ = std::fs::create_dir_all(dir);
    }
    std::fs::write(&path, report)
        .unwrap_or_else(|e| panic!("cannot write the report to {}: {e}", path.display()));
}
