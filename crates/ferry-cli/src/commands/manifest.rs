//! `ferry manifest <binary>`: runs the program with `FERRY_ROLE=manifest` and prints its
//! functions. The binary is checked for ferry's marker first, so no other program is run.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail};
use ferry_core::Manifest;

#[derive(Debug, clap::Args)]
pub struct Args {
    /// The program's binary (e.g. `target/release/nqueens`).
    pub binary: PathBuf,
    /// Print on one line instead of indented.
    #[arg(long)]
    pub compact: bool,
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let manifest = read(&args.binary)?;
    let json = if args.compact {
        serde_json::to_string(&manifest)?
    } else {
        serde_json::to_string_pretty(&manifest)?
    };
    println!("{json}");
    Ok(())
}

/// Reads the manifest of a ferry program.
pub fn read(binary: &Path) -> anyhow::Result<Manifest> {
    let bytes =
        std::fs::read(binary).with_context(|| format!("cannot read `{}`", binary.display()))?;
    if memchr::memmem::find(&bytes, ferry_core::manifest::PROGRAM_MARKER.as_bytes()).is_none() {
        bail!(
            "`{}` is not a ferry program (built with ferry {} or compatible): it has no ferry manifest",
            binary.display(),
            env!("CARGO_PKG_VERSION")
        );
    }
    drop(bytes);
    let program = if binary.components().count() == 1 {
        Path::new(".").join(binary)
    } else {
        binary.to_path_buf()
    };
    let output = Command::new(&program)
        .env(ferry::ROLE_VAR, "manifest")
        .output()
        .with_context(|| format!("cannot run `{}`", binary.display()))?;
    if !output.status.success() {
        bail!(
            "`{}` failed to print its manifest ({}): {}",
            binary.display(),
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    serde_json::from_slice(&output.stdout)
        .with_context(|| format!("`{}` printed an unreadable manifest", binary.display()))
}
