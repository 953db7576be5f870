//! What a context's invocations did, per function: calls, errors, cold starts and latency
//! percentiles, for [`Context::stats`](crate::Context::stats) and the run report
//! (`FERRY_REPORT=1`).

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Lambda's price on x86 (us-east-1): per GB-second of billed duration, and per request.
const LAMBDA_GB_SECOND_USD: f64 = 0.000_016_666_7;
const LAMBDA_REQUEST_USD: f64 = 0.000_000_2;

/// One function's invocations from one context (and the contexts its functions were handed).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct FunctionStats {
    /// The function's id.
    pub function: String,
    /// Invocations that ended.
    pub calls: u64,
    /// Of those, the ones that ended in an error.
    pub errors: u64,
    /// Invocations that waited for a new worker to start (the local platform counts them; a
    /// remote platform's own cold starts are not seen from here).
    pub cold_starts: u64,
    /// Median round trip, as the caller saw it, in milliseconds.
    pub p50_ms: f64,
    /// 99th percentile round trip in milliseconds.
    pub p99_ms: f64,
    /// Longest round trip in milliseconds.
    pub max_ms: f64,
    /// Every round trip added up, in seconds: what a platform billing by duration would bill,
    /// queueing included.
    pub total_seconds: f64,
    /// The function's `memory_mb`, when it is registered in this program.
    pub memory_mb: Option<u32>,
}

impl FunctionStats {
    /// GB-seconds on a platform that bills `memory_mb` for every round trip (Lambda), with half
    /// a millisecond per call: what rounding each call up to the millisecond adds on average.
    pub fn gb_seconds(&self) -> Option<f64> {
        let memory_gb = f64::from(self.memory_mb?) / 1024.0;
        let billed = self.total_seconds + self.calls as f64 * 0.0005;
        Some(memory_gb * billed)
    }

    /// What these calls would cost on Lambda (x86, us-east-1 prices): GB-seconds plus requests.
    pub fn lambda_cost_usd(&self) -> Option<f64> {
        Some(self.gb_seconds()? * LAMBDA_GB_SECOND_USD + self.calls as f64 * LAMBDA_REQUEST_USD)
    }
}

#[derive(Default)]
pub(crate) struct Metrics {
    by_function: Mutex<HashMap<String, Recorded>>,
}

struct Recorded {
    calls: u64,
    errors: u64,
    total: Duration,
    memory_mb: Option<u32>,
    /// Round trips in microseconds, 3 significant digits, up to an hour.
    latency: Histogram<u64>,
}

impl Metrics {
    pub(crate) fn record(
        &self,
        function: &str,
        memory_mb: Option<u32>,
        elapsed: Duration,
        ok: bool,
    ) {
        let mut by_function = self
            .by_function
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let recorded = match by_function.get_mut(function) {
            Some(recorded) => recorded,
            None => by_function.entry(function.to_owned()).or_insert(Recorded {
                calls: 0,
                errors: 0,
                total: Duration::ZERO,
                memory_mb,
                latency: Histogram::new_with_bounds(1, 3_600_000_000, 3)
                    .expect("static histogram bounds are valid"),
            }),
        };
        recorded.calls += 1;
        recorded.errors += u64::from(!ok);
        recorded.total += elapsed;
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        recorded.latency.saturating_record(micros.max(1));
    }

    /// Every function's numbers, by id.
    pub(crate) fn snapshot(&self) -> Vec<FunctionStats> {
        let by_function = self
            .by_function
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let ms = |micros: u64| micros as f64 / 1000.0;
        let mut stats: Vec<FunctionStats> = by_function
            .iter()
            .map(|(function, r)| FunctionStats {
                function: function.clone(),
                calls: r.calls,
                errors: r.errors,
                cold_starts: 0,
                p50_ms: ms(r.latency.value_at_quantile(0.5)),
                p99_ms: ms(r.latency.value_at_quantile(0.99)),
                max_ms: ms(r.latency.max()),
                total_seconds: r.total.as_secs_f64(),
                memory_mb: r.memory_mb,
            })
            .collect();
        stats.sort_by(|a, b| a.function.cmp(&b.function));
        stats
    }
}

/// The run report: one line per function, for `FERRY_REPORT=1` at the end of a host's `main`.
pub(crate) fn report(backend: crate::BackendKind, functions: &[FunctionStats]) -> String {
    use std::fmt::Write as _;
    let mut out = format!("ferry report ({backend} backend)\n");
    let width = functions
        .iter()
        .map(|f| f.function.len())
        .max()
        .unwrap_or(0)
        .max("function".len());
    let _ = writeln!(
        out,
        "{:<width$}  {:>8}  {:>6}  {:>5}  {:>9}  {:>9}  {:>10}  {:>11}",
        "function", "calls", "errors", "cold", "p50 ms", "p99 ms", "GB-s", "lambda $"
    );
    let (mut gb_seconds, mut cost) = (0.0, 0.0);
    for f in functions {
        let (gb, usd) = (f.gb_seconds(), f.lambda_cost_usd());
        gb_seconds += gb.unwrap_or(0.0);
        cost += usd.unwrap_or(0.0);
        let _ = writeln!(
            out,
            "{:<width$}  {:>8}  {:>6}  {:>5}  {:>9.3}  {:>9.3}  {:>10}  {:>11}",
            f.function,
            f.calls,
            f.errors,
            f.cold_starts,
            f.p50_ms,
            f.p99_ms,
            gb.map_or_else(|| "-".to_owned(), |v| format!("{v:.3}")),
            usd.map_or_else(|| "-".to_owned(), |v| format!("{v:.6}")),
        );
    }
    if functions.is_empty() {
        out.push_str("(no invocations)\n");
    } else {
        let _ = writeln!(
            out,
            "estimated on Lambda (x86, us-east-1, round trips as billed duration): {gb_seconds:.3} GB-s, ${cost:.6}"
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_counts_per_function() {
        let metrics = Metrics::default();
        for ms in 1..=100 {
            metrics.record("app::f", Some(1024), Duration::from_millis(ms), ms != 7);
        }
        metrics.record("app::g", None, Duration::from_micros(10), true);
        let stats = metrics.snapshot();
        assert_eq!(stats.len(), 2);
        let f = &stats[0];
        assert_eq!((f.function.as_str(), f.calls, f.errors), ("app::f", 100, 1));
        assert!((f.p50_ms - 50.0).abs() < 0.1, "{}", f.p50_ms);
        assert!((f.p99_ms - 99.0).abs() < 0.1, "{}", f.p99_ms);
        assert!((f.max_ms - 100.0).abs() < 0.1, "{}", f.max_ms);
        // 5.05 s of round trips at 1 GB, plus half a millisecond of rounding per call.
        let gb = f.gb_seconds().unwrap();
        assert!((gb - 5.1).abs() < 1e-9, "{gb}");
        assert_eq!(stats[1].gb_seconds(), None);
        let report = report(crate::BackendKind::Local, &stats);
        assert!(report.contains("app::f"), "{report}");
        assert!(report.contains("5.100"), "{report}");
    }
}
