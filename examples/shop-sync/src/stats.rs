//! Latency statistics of a run, as the thesis reports them.

use std::time::Duration;

/// Per-model latency of a run, in milliseconds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LatencyStats {
    /// The middle value (the mean of the two middle ones for an even count).
    pub median: f64,
    /// The arithmetic mean.
    pub mean: f64,
    /// The population standard deviation.
    pub std_dev: f64,
    /// 95th percentile, nearest rank.
    pub p95: f64,
    /// 99th percentile, nearest rank.
    pub p99: f64,
    /// 99.9th percentile, nearest rank.
    pub p999: f64,
}

impl LatencyStats {
    /// The statistics of `latencies`; `None` when there are none.
    pub fn of(latencies: &[Duration]) -> Option<Self> {
        if latencies.is_empty() {
            return None;
        }
        let mut millis: Vec<f64> = latencies.iter().map(|d| d.as_secs_f64() * 1e3).collect();
        millis.sort_by(f64::total_cmp);
        let n = millis.len();
        let median = if n % 2 == 0 {
            (millis[n / 2 - 1] + millis[n / 2]) / 2.0
        } else {
            millis[n / 2]
        };
        let mean = millis.iter().sum::<f64>() / n as f64;
        let variance = millis.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / n as f64;
        Some(Self {
            median,
            mean,
            std_dev: variance.sqrt(),
            p95: nearest_rank(&millis, 950),
            p99: nearest_rank(&millis, 990),
            p999: nearest_rank(&millis, 999),
        })
    }
}

/// The nearest-rank percentile of sorted values, the percentile given in thousandths (999 for
/// p99.9): the value at rank ⌈p·n⌉. Integer arithmetic, so p99.9 of 1,000 values is the
/// 999th, not the 1,000th.
///
/// # Panics
///
/// When `sorted` is empty.
pub fn nearest_rank(sorted: &[f64], per_mille: usize) -> f64 {
    assert!(!sorted.is_empty(), "no values");
    let rank = (per_mille * sorted.len()).div_ceil(1000).max(1);
    sorted[rank.min(sorted.len()) - 1]
}
