//! One retry policy for every remote backend.
//!
//! Retried: failures of the platform, not of the function — an unreachable endpoint, a broken
//! connection and unavailability (503), the `Unavailable` kind, and throttling (429), the
//! `Throttled` kind. Not retried: user
//! errors, bad input, panics, timeouts. An invocation whose request was sent may therefore run
//! more than once (at-least-once): functions that are invoked remotely should be idempotent.

use std::future::Future;
use std::time::Duration;

use crate::{ErrorKind, Result};

/// Bounded, jittered exponential backoff.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct RetryPolicy {
    /// Attempts in all, the first included (1 = no retry).
    pub max_attempts: u32,
    /// Delay before the first retry; doubled for each next one.
    pub base_delay: Duration,
    /// Longest delay between attempts.
    pub max_delay: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 4,
            base_delay: Duration::from_millis(50),
            max_delay: Duration::from_secs(2),
        }
    }
}

impl RetryPolicy {
    /// No retries.
    pub const NEVER: Self = Self {
        max_attempts: 1,
        base_delay: Duration::ZERO,
        max_delay: Duration::ZERO,
    };

    /// Sets the number of attempts.
    #[must_use]
    pub fn attempts(mut self, n: u32) -> Self {
        self.max_attempts = n.max(1);
        self
    }

    /// Sets the first delay.
    #[must_use]
    pub fn base_delay(mut self, delay: Duration) -> Self {
        self.base_delay = delay;
        self
    }

    /// Runs `attempt` until it succeeds, fails for good, or the attempts run out.
    pub(crate) async fn run<T, F, Fut>(&self, attempt: F) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        self.run_while(attempt, |error| {
            matches!(
                error.kind(),
                ErrorKind::Unavailable { .. } | ErrorKind::Throttled { .. }
            )
        })
        .await
    }

    /// Runs `attempt` again, with backoff, while it fails with an error `retryable` accepts and
    /// attempts remain.
    pub(crate) async fn run_while<T, F, Fut>(
        &self,
        mut attempt: F,
        retryable: impl Fn(&crate::Error) -> bool,
    ) -> Result<T>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T>>,
    {
        let mut tries = 0;
        loop {
            tries += 1;
            match attempt().await {
                Err(error) if tries < self.max_attempts && retryable(&error) => {
                    tracing::debug!(%error, tries, "retrying");
                    tokio::time::sleep(self.delay(tries)).await;
                }
                outcome => return outcome,
            }
        }
    }

    /// Full jitter: a random delay up to the exponential bound.
    fn delay(&self, tries: u32) -> Duration {
        let bound = self
            .base_delay
            .saturating_mul(1u32 << (tries - 1).min(16))
            .min(self.max_delay);
        let nanos = u64::try_from(bound.as_nanos()).unwrap_or(u64::MAX);
        if nanos == 0 {
            return Duration::ZERO;
        }
        Duration::from_nanos(jitter() % nanos)
    }
}

fn jitter() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static STATE: AtomicU64 = AtomicU64::new(0x9E37_79B9_7F4A_7C15);
    let mut x =
        STATE.fetch_add(0x9E37_79B9_7F4A_7C15, Ordering::Relaxed) ^ u64::from(std::process::id());
    x ^= x >> 33;
    x = x.wrapping_mul(0xFF51_AFD7_ED55_8CCD);
    x ^ (x >> 33)
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use super::*;
    use crate::Error;

    #[tokio::test]
    async fn retries_unavailable_only_and_stops_at_the_bound() {
        let policy = RetryPolicy::default().base_delay(Duration::from_millis(1));
        let calls = AtomicU32::new(0);
        let outcome: Result<()> = policy
            .run(|| async {
                calls.fetch_add(1, Ordering::SeqCst);
                Err(Error::unavailable("down"))
            })
            .await;
        assert!(outcome.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 4);

        let calls = AtomicU32::new(0);
        let outcome: Result<()> = policy
            .run(|| async {
                calls.fetch_add(1, Ordering::SeqCst);
                Err(Error::panic("no"))
            })
            .await;
        assert!(outcome.is_err());
        assert_eq!(calls.load(Ordering::SeqCst), 1, "a panic is not retried");
    }
}
