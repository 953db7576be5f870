//! How a fan-out went: the summary ferry's examples print, for programs that compare a
//! sequential baseline with a fan-out.

use serde::Serialize;

use ferry::{BackendKind, BackendStats};

/// Timing of a fan-out against its sequential baseline, with the backend's counters.
///
/// ```
/// # use fanout_summary::FanOutSummary;
/// # use ferry::Context;
/// let stats = Context::inline().stats();
/// let summary = FanOutSummary::new(14200, 64, 0.5, Some(1.0), &stats);
/// assert_eq!(summary.speedup, Some(2.0));
/// assert!(summary.to_json().starts_with(r#"{"result":14200,"tasks":64,"#));
/// ```
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FanOutSummary<T> {
    /// What the fan-out computed.
    pub result: T,
    /// Invocations made.
    pub tasks: u64,
    /// Wall time of the fan-out, cold starts included.
    pub seconds: f64,
    /// Wall time of the sequential in-process baseline, if it ran.
    pub sequential_seconds: Option<f64>,
    /// `sequential_seconds / seconds`.
    pub speedup: Option<f64>,
    /// Where the invocations ran.
    pub backend: BackendKind,
    /// [`BackendStats::max_workers`].
    pub workers: usize,
    /// [`BackendStats::cold_starts`].
    pub cold_starts: u64,
}

impl<T: Serialize> FanOutSummary<T> {
    /// A summary of a fan-out that took `seconds` (and its baseline `sequential_seconds`).
    pub fn new(
        result: T,
        tasks: u64,
        seconds: f64,
        sequential_seconds: Option<f64>,
        stats: &BackendStats,
    ) -> Self {
        Self {
            result,
            tasks,
            seconds,
            sequential_seconds,
            speedup: sequential_seconds.map(|sequential| sequential / seconds),
            backend: stats.backend,
            workers: stats.max_workers,
            cold_starts: stats.cold_starts,
        }
    }

    /// The summary as one line of JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Prints the timings and counters; with `json`, the JSON object last, on a line of its own.
    pub fn print(&self, json: bool) {
        match (self.sequential_seconds, self.speedup) {
            (Some(sequential), Some(speedup)) => {
                println!("sequential: {}", Seconds(sequential));
                println!(
                    "{}: {} (speedup {speedup:.2}x)",
                    self.backend,
                    Seconds(self.seconds)
                );
            }
            _ => println!("{}: {}", self.backend, Seconds(self.seconds)),
        }
        println!(
            "tasks: {}, workers: {}, cold starts: {}",
            self.tasks, self.workers, self.cold_starts
        );
        if json {
            println!("{}", self.to_json());
        }
    }
}

struct Seconds(f64);

impl std::fmt::Display for Seconds {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            s if s >= 1.0 => write!(f, "{s:.3} s"),
            s if s >= 1e-3 => write!(f, "{:.3} ms", s * 1e3),
            s => write!(f, "{:.1} µs", s * 1e6),
        }
    }
}
