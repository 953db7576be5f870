//! Running `cargo build` for the program: static linking, a check that the target's standard
//! library is installed, and a progress line fed by cargo's JSON messages (cargo's own output
//! with `--verbose`).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, IsTerminal};
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use cargo_metadata::{Message, TargetKind};
use indicatif::{ProgressBar, ProgressStyle};

use crate::artifacts::Linkage;
use crate::program::Program;

/// What to build.
#[derive(Debug)]
pub struct BuildRequest<'a> {
    pub program: &'a Program,
    pub profile: &'a str,
    /// The target triple; `None` builds for the host without `--target`.
    pub target: Option<&'a str>,
    pub linkage: Linkage,
    /// A static binary stays position-independent (static-pie) instead of fixed-address.
    pub position_independent: bool,
    pub strip: bool,
    pub verbose: bool,
}

/// The flag that links glibc statically.
const CRT_STATIC: &str = "-C target-feature=+crt-static";

/// The flag that links an executable at a fixed address, with no relocations left to apply.
const FIXED_ADDRESS: &str = "-C relocation-model=static";

/// The host's target triple (`rustc -vV`).
pub fn host_triple() -> anyhow::Result<String> {
    let output = Command::new(rustc())
        .arg("-vV")
        .output()
        .context("cannot run `rustc -vV`")?;
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .find_map(|line| line.strip_prefix("host: "))
        .map(|host| host.trim().to_owned())
        .context("`rustc -vV` did not name the host")
}

fn rustc() -> String {
    std::env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned())
}

/// Fails unless the standard library for `target` is installed.
pub fn check_target_installed(target: &str) -> anyhow::Result<()> {
    let output = Command::new(rustc())
        .args(["--print", "target-libdir", "--target", target])
        .output()
        .context("cannot run `rustc --print target-libdir`")?;
    if !output.status.success() {
        bail!(
            "`{target}` is not a target rustc knows: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    let dir = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    let has_std = std::fs::read_dir(&dir).is_ok_and(|entries| {
        entries
            .flatten()
            .any(|e| e.file_name().to_string_lossy().starts_with("libstd-"))
    });
    if !has_std {
        bail!(
            "the standard library for `{target}` is not installed (nothing in `{}`): install it with `rustup target add {target}`, or build for another `--target`",
            dir.display()
        );
    }
    Ok(())
}

/// The extra rustflags a static build of `target` needs, or an error for targets ferry cannot
/// link statically. Unless `position_independent`, the binary is linked at a fixed address
/// (`relocation-model=static`): a static-pie binary applies tens of thousands of relocations to itself
/// at every start, most of the time a cold start spends before `main`.
pub fn static_rustflags(target: &str, position_independent: bool) -> anyhow::Result<String> {
    let mut flags = if target.contains("-linux-musl") {
        // musl targets link statically by default.
        Vec::new()
    } else if target.contains("-linux-gnu") {
        vec![CRT_STATIC]
    } else {
        bail!(
            "ferry builds static binaries for Linux targets only (`*-linux-gnu` with crt-static, `*-linux-musl`), not `{target}`"
        )
    };
    if !position_independent {
        flags.push(FIXED_ADDRESS);
    }
    Ok(flags.join(" "))
}

/// Adds `flags` to the rustflags cargo uses for `target`'s units, keeping the user's own:
/// appended to `CARGO_ENCODED_RUSTFLAGS` or `RUSTFLAGS` when one is set (they override
/// everything else), otherwise to `CARGO_TARGET_<TRIPLE>_RUSTFLAGS`. With `--target` given,
/// none of these reach build scripts and proc macros, which must stay dynamic.
fn add_rustflags(command: &mut Command, target: &str, flags: &str) {
    if let Some(encoded) = std::env::var("CARGO_ENCODED_RUSTFLAGS")
        .ok()
        .filter(|v| !v.is_empty())
    {
        let extra = flags.split(' ').collect::<Vec<_>>().join("\x1f");
        command.env("CARGO_ENCODED_RUSTFLAGS", format!("{encoded}\x1f{extra}"));
    } else if let Some(rustflags) = std::env::var("RUSTFLAGS").ok().filter(|v| !v.is_empty()) {
        command.env("RUSTFLAGS", format!("{rustflags} {flags}"));
    } else {
        let var = format!(
            "CARGO_TARGET_{}_RUSTFLAGS",
            target.to_ascii_uppercase().replace(['-', '.'], "_")
        );
        let value = match std::env::var(&var).ok().filter(|v| !v.is_empty()) {
            Some(existing) => format!("{existing} {flags}"),
            None => flags.to_owned(),
        };
        command.env(var, value);
    }
}

/// Builds the program and returns the binary's path.
pub fn build(request: &BuildRequest<'_>) -> anyhow::Result<PathBuf> {
    let program = request.program;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(&cargo);
    let color = std::io::stderr().is_terminal();
    command
        .args(["build", "--profile", request.profile])
        .args(["--package", &program.package, "--bin", &program.bin])
        .arg(if color {
            "--message-format=json-diagnostic-rendered-ansi"
        } else {
            "--message-format=json"
        });
    if request.strip {
        command.args([
            "--config",
            &format!("profile.{}.strip=\"debuginfo\"", request.profile),
        ]);
    }
    if let Some(target) = request.target {
        command.args(["--target", target]);
        if request.linkage == Linkage::Static {
            let flags = static_rustflags(target, request.position_independent)?;
            if !flags.is_empty() {
                add_rustflags(&mut command, target, &flags);
            }
        } else if target.contains("-linux-musl") {
            add_rustflags(&mut command, target, "-C target-feature=-crt-static");
        }
    }
    command.stdout(Stdio::piped());
    command.stderr(if request.verbose {
        Stdio::inherit()
    } else {
        Stdio::piped()
    });

    let started = Instant::now();
    let what = format!(
        "{} ({}, {}, {})",
        program.bin,
        request.profile,
        request.target.unwrap_or("host"),
        match request.linkage {
            Linkage::Static => "static",
            Linkage::Dynamic => "dynamic",
        }
    );
    let bar = if request.verbose {
        ProgressBar::hidden()
    } else {
        spinner(format!("building {what}"))
    };
    let mut child = command
        .spawn()
        .with_context(|| format!("cannot run `{cargo} build`"))?;

    // cargo's stderr: its status lines, kept to explain a failure that produced no compiler
    // message (a bad profile, a failed build script, a linker error).
    let stderr = child.stderr.take().map(|stderr| {
        std::thread::spawn(move || {
            let mut tail = VecDeque::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let trimmed = line.trim_start();
                if trimmed.starts_with("Compiling")
                    || trimmed.starts_with("Finished")
                    || trimmed.starts_with("Blocking")
                {
                    continue;
                }
                if tail.len() == 40 {
                    tail.pop_front();
                }
                tail.push_back(line);
            }
            tail
        })
    });

    let stdout = child.stdout.take().context("cargo's stdout")?;
    let mut compiled = 0_usize;
    let mut executable = None;
    let mut errors = 0_usize;
    for message in Message::parse_stream(BufReader::new(stdout)) {
        match message.context("cannot read cargo's output")? {
            Message::CompilerArtifact(artifact) => {
                compiled += 1;
                bar.set_message(format!(
                    "building {what}: {compiled} crates, now `{}`",
                    artifact.target.name
                ));
                if artifact.target.name == program.bin
                    && artifact.target.kind.contains(&TargetKind::Bin)
                {
                    executable = artifact.executable.map(|p| p.into_std_path_buf());
                }
            }
            Message::CompilerMessage(message) => {
                if message.message.level == cargo_metadata::diagnostic::DiagnosticLevel::Error {
                    errors += 1;
                }
                if let Some(rendered) = &message.message.rendered {
                    bar.suspend(|| eprint!("{rendered}"));
                }
            }
            _ => {}
        }
    }
    let status = child.wait().context("cargo did not finish")?;
    bar.finish_and_clear();
    let tail = stderr
        .and_then(|handle| handle.join().ok())
        .unwrap_or_default();
    if !status.success() {
        if errors == 0 {
            for line in &tail {
                eprintln!("{line}");
            }
        }
        bail!("`cargo build` of `{}` failed ({status})", program.bin);
    }
    let executable = executable.with_context(|| {
        format!(
            "cargo built `{}` but did not say where the binary is",
            program.bin
        )
    })?;
    eprintln!("built {what} in {:.1}s", started.elapsed().as_secs_f64());
    Ok(executable)
}

/// A spinner on stderr (hidden when stderr is not a terminal).
pub fn spinner(message: String) -> ProgressBar {
    let bar = ProgressBar::new_spinner();
    bar.set_style(
        ProgressStyle::with_template("{spinner} {msg} [{elapsed}]")
            .unwrap_or_else(|_| ProgressStyle::default_spinner()),
    );
    bar.set_message(message);
    bar.enable_steady_tick(Duration::from_millis(120));
    bar
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn static_builds_are_fixed_address_unless_position_independent() {
        let gnu = "x86_64-unknown-linux-gnu";
        assert_eq!(
            static_rustflags(gnu, false).unwrap(),
            "-C target-feature=+crt-static -C relocation-model=static"
        );
        assert_eq!(
            static_rustflags(gnu, true).unwrap(),
            "-C target-feature=+crt-static"
        );
        let musl = "aarch64-unknown-linux-musl";
        assert_eq!(
            static_rustflags(musl, false).unwrap(),
            "-C relocation-model=static"
        );
        assert_eq!(static_rustflags(musl, true).unwrap(), "");
        let refused = static_rustflags("x86_64-pc-windows-msvc", false).unwrap_err();
        assert!(
            refused.to_string().contains("Linux targets only"),
            "{refused}"
        );
    }
}
