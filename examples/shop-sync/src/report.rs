//! Results as the thesis wrote them (CSV), as a Markdown table and as JSON.
//!
//! The CSV has one row per model count and, metric by metric, one column per runner:
//! `Models Count,seconds(mono),seconds(serverless-local),…,successes(mono),…,latP99.9(…)`.
//! Seconds are the run's total; latencies are per model, in milliseconds. `peakRssMiB` is the
//! sum of the peak RSS of the runner's processes over the run, `benchPeakRssMiB` the peak RSS
//! of the benchmarker's process (the mock servers, and for `mono` the monolith too) over the
//! same run; `nan` where `/proc` could not tell ([`crate::memory`]).

use std::fmt::Write as _;
use std::path::Path;
use std::time::Duration;

use anyhow::Context as _;
use shop_sync::stats::LatencyStats;
use shop_sync::workload::Plan;

use crate::bench::{DispatchMode, Run};
use crate::runner::RunnerKind;

/// How a metric's cell is written.
type Cell = fn(&RunResult) -> String;

/// The metrics of the CSV, in column order, with how each is written.
pub const METRICS: &[(&str, Cell)] = &[
    ("seconds", |r| format!("{:.3}", r.seconds)),
    ("successes", |r| r.successes.to_string()),
    ("fails", |r| r.fails.to_string()),
    ("latMedian", |r| format!("{:.3}", r.latency.median)),
    ("latAvg", |r| format!("{:.3}", r.latency.mean)),
    ("latStdDev", |r| format!("{:.3}", r.latency.std_dev)),
    ("latP95", |r| format!("{:.3}", r.latency.p95)),
    ("latP99", |r| format!("{:.3}", r.latency.p99)),
    ("latP99.9", |r| format!("{:.3}", r.latency.p999)),
    ("peakRssMiB", |r| mib(r.memory.runner_mib)),
    ("benchPeakRssMiB", |r| mib(r.memory.bench_mib)),
];

/// A memory figure in MiB with one decimal, `nan` when unknown.
pub fn mib(value: Option<f64>) -> String {
    value.map_or_else(|| "nan".to_owned(), |v| format!("{v:.1}"))
}

/// Peak resident memory over a run, in MiB.
#[derive(Debug, Clone, Copy, Default)]
pub struct Memory {
    /// The sum over the runner's processes (for `mono`, the benchmarker's process).
    pub runner_mib: Option<f64>,
    /// The benchmarker's process, with the mock servers.
    pub bench_mib: Option<f64>,
}

/// One runner's run over one model count.
#[derive(Debug, Clone)]
pub struct RunResult {
    /// The runner.
    pub runner: RunnerKind,
    /// Models synced.
    pub models: usize,
    /// SH's starting state.
    pub plan: Plan,
    /// Least time between sync starts, if throttled.
    pub delay: Option<Duration>,
    /// Whether syncs were sent bounded or all at once.
    pub dispatch: DispatchMode,
    /// Most syncs in flight at once (all of them, sent all at once).
    pub in_flight: usize,
    /// Total time.
    pub seconds: f64,
    /// Syncs that succeeded.
    pub successes: usize,
    /// Syncs that failed.
    pub fails: usize,
    /// Per-model latency.
    pub latency: LatencyStats,
    /// Peak resident memory over the run.
    pub memory: Memory,
    /// Each sync, when asked for (`--latencies`).
    pub samples: Vec<Sample>,
}

/// One sync of a run.
#[derive(Debug, Clone)]
pub struct Sample {
    /// The model.
    pub model: String,
    /// Its items: the work of its sync grows with them.
    pub items: usize,
    /// Its latency in milliseconds.
    pub millis: f64,
    /// Whether it synced.
    pub ok: bool,
}

impl RunResult {
    /// The result of `run`.
    pub fn new(
        runner: RunnerKind,
        models: usize,
        plan: Plan,
        delay: Option<Duration>,
        run: &Run,
    ) -> Self {
        Self {
            runner,
            models,
            plan,
            delay,
            dispatch: DispatchMode::Bounded,
            in_flight: run.latencies.len(),
            seconds: run.elapsed.as_secs_f64(),
            successes: run.latencies.len().saturating_sub(run.failures.len()),
            fails: run.failures.len(),
            latency: run.latency(),
            memory: Memory::default(),
            samples: Vec::new(),
        }
    }

    /// Syncs per second.
    pub fn qps(&self) -> f64 {
        if self.seconds > 0.0 {
            (self.successes + self.fails) as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// The CSV header for these runners.
pub fn header(runners: &[RunnerKind]) -> String {
    let mut columns = vec!["Models Count".to_owned()];
    for (metric, _) in METRICS {
        for runner in runners {
            columns.push(format!("{metric}({})", runner.column()));
        }
    }
    columns.join(",")
}

/// Writes the results as CSV, one row per model count.
pub fn write_csv(path: &Path, runners: &[RunnerKind], results: &[RunResult]) -> anyhow::Result<()> {
    let mut text = header(runners);
    text.push('\n');
    let mut counts: Vec<usize> = results.iter().map(|r| r.models).collect();
    counts.dedup();
    for models in counts {
        let mut cells = vec![models.to_string()];
        for (_, write) in METRICS {
            for runner in runners {
                let result = results
                    .iter()
                    .find(|r| r.models == models && r.runner == *runner)
                    .with_context(|| {
                        format!("no result of {} for {models} models", runner.column())
                    })?;
                cells.push(write(result));
            }
        }
        text.push_str(&cells.join(","));
        text.push('\n');
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("cannot create {}", parent.display()))?;
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}

/// A Markdown table, with each serverless runner's throughput as a ratio of the monolith's.
pub fn table(title: &str, results: &[RunResult]) -> String {
    let mut text = format!(
        "\n{title}\n\n| models | P / F | runner | seconds | ok | failed | syncs/s | vs mono | median ms | p99 ms | p99.9 ms | p99.9 / median | peak RSS MiB | benchmarker MiB |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
    );
    for result in results {
        let mono = results
            .iter()
            .find(|r| {
                r.models == result.models
                    && r.dispatch == result.dispatch
                    && r.runner == RunnerKind::Mono
            })
            .map(RunResult::qps);
        let ratio = match mono {
            Some(mono) if mono > 0.0 => format!("{:.2}x", result.qps() / mono),
            _ => "–".to_owned(),
        };
        let _ = writeln!(
            text,
            "| {} | {} / {} | {} | {:.3} | {} | {} | {:.1} | {ratio} | {:.1} | {:.1} | {:.1} | {:.2} | {} | {} |",
            result.models,
            result.plan.partial,
            result.plan.full,
            result.runner.column(),
            result.seconds,
            result.successes,
            result.fails,
            result.qps(),
            result.latency.median,
            result.latency.p99,
            result.latency.p999,
            result.latency.p999 / result.latency.median.max(f64::MIN_POSITIVE),
            mib(result.memory.runner_mib),
            mib(result.memory.bench_mib),
        );
    }
    text
}

/// Every result as one line of JSON.
pub fn json(unthrottled: &[RunResult], throttled: &[RunResult]) -> String {
    let rows = |results: &[RunResult]| -> Vec<serde_json::Value> {
        results
            .iter()
            .map(|r| {
                serde_json::json!({
                    "runner": r.runner.column(),
                    "models": r.models,
                    "partial": r.plan.partial,
                    "full": r.plan.full,
                    "delay_ms": r.delay.map(|d| d.as_millis() as u64),
                    "dispatch": r.dispatch.name(),
                    "in_flight": r.in_flight,
                    "seconds": r.seconds,
                    "successes": r.successes,
                    "fails": r.fails,
                    "qps": r.qps(),
                    "lat_median_ms": r.latency.median,
                    "lat_avg_ms": r.latency.mean,
                    "lat_std_dev_ms": r.latency.std_dev,
                    "lat_p95_ms": r.latency.p95,
                    "lat_p99_ms": r.latency.p99,
                    "lat_p999_ms": r.latency.p999,
                    "peak_rss_mib": r.memory.runner_mib,
                    "bench_peak_rss_mib": r.memory.bench_mib,
                })
            })
            .collect()
    };
    serde_json::json!({ "unthrottled": rows(unthrottled), "throttled": rows(throttled) })
        .to_string()
}

/// Every sync of every run as CSV: `delay_ms,dispatch,models,runner,model,items,latency_ms,ok`.
pub fn write_samples(
    path: &Path,
    unthrottled: &[RunResult],
    throttled: &[RunResult],
) -> anyhow::Result<()> {
    let mut text = String::from("delay_ms,dispatch,models,runner,model,items,latency_ms,ok\n");
    for result in unthrottled.iter().chain(throttled) {
        let delay = result.delay.map_or(0, |d| d.as_millis());
        for sample in &result.samples {
            let _ = writeln!(
                text,
                "{delay},{},{},{},{},{},{:.3},{}",
                result.dispatch.name(),
                result.models,
                result.runner.column(),
                sample.model,
                sample.items,
                sample.millis,
                sample.ok
            );
        }
    }
    std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))
}
