//! No-op invocation round trip and throughput, `inline` vs `local`.
//!
//! `cargo bench -p ferry-tests --bench invoke` prints a Markdown table (also written to
//! `target/ferry-bench/invoke.md`). Numbers are from one run on one machine: compare the
//! backends and the in-flight levels with each other, not with other machines.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use ferry::{BackendKind, Context, LocalConfig};
use ferry_tests::Noop;

const LATENCY_CALLS: usize = 20_000;
const IN_FLIGHT: &[usize] = &[1, 4, 16, 64, 256, 1024, 2048];
/// Each throughput level runs at least this long (and at least 20,000 invocations).
const LEVEL_TIME: Duration = Duration::from_millis(1500);

fn main() {
    // `cargo bench` passes `--bench`; anything else (e.g. a filter) is ignored.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let mut report = String::new();
    let _ = writeln!(
        report,
        "| backend | p50 round trip | p99 round trip | mean | {} |",
        IN_FLIGHT
            .iter()
            .map(|n| format!("{n} in flight"))
            .collect::<Vec<_>>()
            .join(" | ")
    );
    let _ = writeln!(
        report,
        "|---|---|---|---|{}",
        "---|".repeat(IN_FLIGHT.len())
    );
    for kind in [BackendKind::Inline, BackendKind::Local] {
        // Host code runs as a task on the runtime, as `ferry::run` runs `main`.
        let row = runtime
            .block_on(async move { tokio::spawn(measure(kind)).await })
            .expect("measurement task");
        let _ = writeln!(report, "{row}");
    }
    println!("\n{report}");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/ferry-bench");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join("invoke.md"), &report);
}

async fn measure(kind: BackendKind) -> String {
    let ctx = match kind {
        BackendKind::Local => {
            Context::local(LocalConfig::default().worker_exe(env!("CARGO_BIN_EXE_ferry-fixture")))
        }
        other => Context::new(other),
    }
    .expect("backend");

    for _ in 0..2_000 {
        ctx.call(Noop {}).await.expect("warm-up");
    }
    let mut samples = Vec::with_capacity(LATENCY_CALLS);
    for _ in 0..LATENCY_CALLS {
        let started = Instant::now();
        ctx.call(Noop {}).await.expect("noop");
        samples.push(started.elapsed());
    }
    samples.sort_unstable();
    let p50 = samples[samples.len() / 2];
    let p99 = samples[samples.len() * 99 / 100];
    let mean = samples.iter().sum::<Duration>() / samples.len() as u32;
    eprintln!("{kind}: p50 {p50:?} p99 {p99:?} mean {mean:?}");

    let mut cells = Vec::new();
    for &in_flight in IN_FLIGHT {
        let mut done = 0usize;
        let started = Instant::now();
        while done < 20_000 || started.elapsed() < LEVEL_TIME {
            let batch = (in_flight * 16).max(4_096);
            let outputs = ctx
                .map(std::iter::repeat_with(|| Noop {}).take(batch))
                .concurrency(in_flight)
                .progress(false)
                .await
                .expect("noop fan-out");
            done += outputs.len();
        }
        let rate = done as f64 / started.elapsed().as_secs_f64();
        eprintln!("{kind}: {in_flight} in flight: {rate:.0}/s");
        cells.push(format!("{:.0}/s", rate));
    }
    format!(
        "| {kind} | {} | {} | {} | {} |",
        micros(p50),
        micros(p99),
        micros(mean),
        cells.join(" | ")
    )
}

fn micros(d: Duration) -> String {
    format!("{:.1} µs", d.as_secs_f64() * 1e6)
}
