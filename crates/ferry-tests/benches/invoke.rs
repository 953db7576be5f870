//! No-op invocation round trip and throughput, `inline` vs `local`.
//!
//! `cargo bench -p ferry-tests --bench invoke` prints a Markdown table (also written to
//! `target/ferry-bench/invoke.md`, or `FERRY_BENCH_OUT`: benches/report/mod.rs). Numbers are from
//! one run on one machine: compare the backends and the in-flight levels with each other, not
//! with other machines. `-- --quick`: 2,000 round trips, levels of 0.2 s.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use ferry::{BackendKind, Context, LocalConfig};
use ferry_tests::Noop;

mod report;

const IN_FLIGHT: &[usize] = &[1, 4, 16, 64, 256, 1024, 2048];

/// The bench's size: full, or `--quick`.
#[derive(Clone, Copy)]
struct Size {
    warm_up: usize,
    latency_calls: usize,
    /// Each throughput level runs at least this long and this many invocations.
    level_time: Duration,
    level_calls: usize,
}

const FULL: Size = Size {
    warm_up: 2_000,
    latency_calls: 20_000,
    level_time: Duration::from_millis(1500),
    level_calls: 20_000,
};

const QUICK: Size = Size {
    warm_up: 200,
    latency_calls: 2_000,
    level_time: Duration::from_millis(200),
    level_calls: 2_000,
};

fn main() {
    // `cargo bench` passes `--bench`; anything else but `--quick` (e.g. a filter) is ignored.
    let size = if report::quick() { QUICK } else { FULL };
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
            .block_on(async move { tokio::spawn(measure(kind, size)).await })
            .expect("measurement task");
        let _ = writeln!(report, "{row}");
    }
    report::write("invoke", &report);
}

async fn measure(kind: BackendKind, size: Size) -> String {
    let ctx = match kind {
        BackendKind::Local => {
            Context::local(LocalConfig::default().worker_exe(env!("CARGO_BIN_EXE_ferry-fixture")))
        }
        other => Context::new(other),
    }
    .expect("backend");

    for _ in 0..size.warm_up {
        ctx.call(Noop {}).await.expect("warm-up");
    }
    let mut samples = Vec::with_capacity(size.latency_calls);
    for _ in 0..size.latency_calls {
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
        while done < size.level_calls || started.elapsed() < size.level_time {
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
