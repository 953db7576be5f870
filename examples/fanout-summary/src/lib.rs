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
    /// Wall time of the fan-out: the median of [`runs`](Self::runs), cold starts included
    /// where they happened.
    pub seconds: f64,
    /// Wall time of every measured run, in order (one, unless the program measured more).
    pub runs: Vec<f64>,
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
            runs: vec![seconds],
            sequential_seconds,
            speedup: sequential_seconds.map(|sequential| sequential / seconds),
            backend: stats.backend,
            workers: stats.max_workers,
            cold_starts: stats.cold_starts,
        }
    }

    /// The fan-out measured `timing.runs` times: its median is the time, and the speedup the
    /// baseline's over it.
    #[must_use]
    pub fn measured(mut self, timing: &Timing) -> Self {
        self.seconds = timing.median();
        self.runs.clone_from(&timing.runs);
        self.speedup = self.sequential_seconds.map(|s| s / self.seconds);
        self
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
        if self.runs.len() > 1 {
            let (min, max) = spread(&self.runs);
            println!(
                "{} runs: median {}, min {}, max {}",
                self.runs.len(),
                Seconds(self.seconds),
                Seconds(min),
                Seconds(max)
            );
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

/// The `--warmup` and `--runs` flags of a program that times its fan-out as hyperfine does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::Args)]
pub struct TimingArgs {
    /// Unmeasured runs first (they start the platform's workers), as hyperfine's `--warmup`.
    #[arg(long, default_value_t = 0)]
    pub warmup: u32,
    /// Measured runs; the time reported is their median, as hyperfine's `--runs`.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: u32,
}

impl TimingArgs {
    /// [`Timing::measure`] with these flags.
    ///
    /// # Errors
    ///
    /// The first error `run` returns.
    pub async fn measure<T, E, F, Fut>(self, run: F) -> Result<(T, Timing), E>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, E>>,
    {
        Timing::measure(self.warmup, self.runs, run).await
    }
}

/// Wall times of repeated runs, measured as hyperfine does: unmeasured warm-up runs first
/// (they start the platform's workers), then the measured ones.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Timing {
    /// Seconds of each measured run, in order.
    pub runs: Vec<f64>,
}

impl Timing {
    /// Runs `run` `warmup` times unmeasured, then `runs` times (at least once) measured; the
    /// value of the last run, and the times.
    ///
    /// # Errors
    ///
    /// The first error `run` returns.
    pub async fn measure<T, E, F, Fut>(warmup: u32, runs: u32, mut run: F) -> Result<(T, Self), E>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, E>>,
    {
        for _ in 0..warmup {
            run().await?;
        }
        let mut timing = Self::default();
        loop {
            let started = std::time::Instant::now();
            let value = run().await?;
            timing.runs.push(started.elapsed().as_secs_f64());
            if timing.runs.len() >= runs.max(1) as usize {
                return Ok((value, timing));
            }
        }
    }

    /// The median run (the mean of the middle two for an even count).
    ///
    /// ```
    /// # use fanout_summary::Timing;
    /// assert_eq!(Timing { runs: vec![3.0, 1.0, 2.0] }.median(), 2.0);
    /// assert_eq!(Timing { runs: vec![4.0, 1.0, 2.0, 3.0] }.median(), 2.5);
    /// ```
    pub fn median(&self) -> f64 {
        let mut sorted = self.runs.clone();
        sorted.sort_by(f64::total_cmp);
        match sorted.len() {
            0 => 0.0,
            n if n % 2 == 1 => sorted[n / 2],
            n => (sorted[n / 2 - 1] + sorted[n / 2]) / 2.0,
        }
    }
}

/// The fastest and slowest of `runs`.
fn spread(runs: &[f64]) -> (f64, f64) {
    runs.iter().fold((f64::INFINITY, 0.0), |(min, max), &run| {
        (min.min(run), max.max(run))
    })
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
