//! Peak host memory of a long fan-out: `ctx.map` over 1,000,000 tasks with a 1 KiB argument
//! each, on the `inline` and `local` backends.
//!
//! ```text
//! cargo bench -p ferry-tests --bench fan_out_memory
//! cargo bench -p ferry-tests --bench fan_out_memory -- --tasks 100000 --backends inline
//! cargo bench -p ferry-tests --bench fan_out_memory -- --quick   # 100,000 tasks
//! ```
//!
//! The report is printed and written to `target/ferry-bench/fan_out_memory.md`, or
//! `FERRY_BENCH_OUT` (benches/report/mod.rs).
//!
//! Each backend runs in a child process of its own, so each peak (`VmHWM` in `/proc/self/status`)
//! is that backend's alone. The row also gives the resident set just before the map (runtime,
//! context and, for `local`, the host side of the platform) and the wall time of the map. Worker
//! processes' memory is not counted: this measures what the host holds.

use std::fmt::Write as _;
use std::process::Command;
use std::time::Instant;

use ferry::{BackendKind, Context, DEFAULT_FAN_OUT, LocalConfig};
use ferry_tests::Discard;

mod report;

const TASKS: usize = 1_000_000;
const QUICK_TASKS: usize = 100_000;
const ARGUMENT_BYTES: usize = 1024;

fn main() {
    let mut tasks = if report::quick() { QUICK_TASKS } else { TASKS };
    let mut backends = vec![BackendKind::Inline, BackendKind::Local];
    let mut child: Option<BackendKind> = None;
    // `cargo bench` passes `--bench`; other unknown words are ignored (`--quick` read above).
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--tasks" => tasks = args.next().and_then(|n| n.parse().ok()).expect("--tasks N"),
            "--backends" => {
                backends = args
                    .next()
                    .expect("--backends inline,local")
                    .split(',')
                    .map(|b| b.parse().expect("a backend: inline or local"))
                    .collect();
            }
            "--child" => {
                child = Some(
                    args.next()
                        .and_then(|b| b.parse().ok())
                        .expect("--child BACKEND"),
                );
            }
            _ => {}
        }
    }
    if let Some(kind) = child {
        println!("{}", measure(kind, tasks));
        return;
    }
    let mut report = format!(
        "`ctx.map` of {tasks} tasks, {ARGUMENT_BYTES} B argument each, {DEFAULT_FAN_OUT} in \
         flight (the default)\n\n\
         | backend | tasks | wall time | tasks/s | host RSS before the map | peak host RSS (VmHWM) |\n\
         |---|---|---|---|---|---|\n"
    );
    for kind in backends {
        let output = Command::new(std::env::current_exe().expect("this executable"))
            .args(["--tasks", &tasks.to_string(), "--child", &kind.to_string()])
            .output()
            .expect("run the measurement");
        assert!(
            output.status.success(),
            "{kind}: {}\n{}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        let row = String::from_utf8_lossy(&output.stdout);
        eprint!("{row}");
        let _ = write!(report, "{row}");
    }
    report::write("fan_out_memory", &report);
}

/// Runs the fan-out on `kind` in this process and returns its table row.
fn measure(kind: BackendKind, tasks: usize) -> String {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    // Host code runs as a task on the runtime, as `ferry::run` runs `main`.
    let run = async move {
        let ctx = match kind {
            BackendKind::Local => Context::local(
                LocalConfig::default().worker_exe(env!("CARGO_BIN_EXE_ferry-fixture")),
            ),
            other => Context::new(other),
        }
        .expect("backend");
        // Warm up: start the workers, so the row measures the fan-out.
        let warm = ctx
            .map((0..64).map(|_| Discard { data: Vec::new() }))
            .progress(false)
            .await
            .expect("warm-up");
        assert_eq!(warm.len(), 64);
        let before = kib("VmRSS");
        let started = Instant::now();
        let lengths = ctx
            .map((0..tasks).map(|i| Discard {
                data: vec![(i % 251) as u8 | 1; ARGUMENT_BYTES],
            }))
            .progress(false)
            .await
            .expect("fan-out");
        let elapsed = started.elapsed();
        let peak = kib("VmHWM");
        assert_eq!(lengths.len(), tasks);
        assert!(lengths.iter().all(|&n| n == ARGUMENT_BYTES));
        let row = format!(
            "| {kind} | {tasks} | {:.2} s | {:.0}/s | {} | {} |",
            elapsed.as_secs_f64(),
            tasks as f64 / elapsed.as_secs_f64(),
            mib(before),
            mib(peak),
        );
        ctx.shutdown().await;
        row
    };
    runtime
        .block_on(async move { tokio::spawn(run).await })
        .expect("measurement task")
}

/// A `/proc/self/status` field in KiB.
fn kib(field: &str) -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").expect("/proc/self/status");
    status
        .lines()
        .find_map(|line| line.strip_prefix(field)?.strip_prefix(':'))
        .and_then(|value| value.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("{field} in /proc/self/status"))
}

fn mib(kib: u64) -> String {
    format!("{:.1} MiB", kib as f64 / 1024.0)
}
