//! Stage timings: a timed twin of the flow, whose values carry when each stage's body started
//! and finished, so a caller learns the time between services and each stage's own work without
//! asking the services for logs.
//!
//! Each timed stage runs its plain stage's body unchanged ([`read`], [`keep_temperature`],
//! [`value`], [`moving_average`]) between two readings of `CLOCK_MONOTONIC`
//! ([`monotonic_ns`]): nanoseconds since boot, the same clock in every process of a machine, so
//! the stamps of stages in different processes compare. They travel with the value (16 bytes a
//! stage) to the next stage, and the final output brings them back to the caller: nothing else
//! is sent. A flow that a stage ends (`keep_temperature` on anything but a temperature) returns
//! no stamps, so only the flows that reach the moving average are timed.
//!
//! What a body's stamps cannot see is when ferry forwards (chained) or answers (orchestrated)
//! after the body returns: the time between one stage's body finishing and the next one's
//! starting — encoding the output, the request to the next service (chained) or the answer to
//! the caller and its next request (orchestrated), decoding it there — is the hop between them.

use ferry::Flow;
use ferry::prelude::*;
use serde::{Deserialize, Serialize};

use crate::dataset::Reading;
use crate::pipeline::{keep_temperature, moving_average, read, value};
use crate::service::{ReadError, Row};

/// Now on `CLOCK_MONOTONIC`, in nanoseconds: since boot, one clock for every process of the
/// machine (a [`std::time::Instant`] reads the same clock but cannot leave its process).
pub fn monotonic_ns() -> u64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec, which `now` is; CLOCK_MONOTONIC always exists
    // on Linux, so it cannot fail.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut now) };
    now.tv_sec as u64 * 1_000_000_000 + now.tv_nsec as u64
}

/// When one stage's body ran, on [`monotonic_ns`]'s clock.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageStamp {
    /// The body started: the invocation had arrived and its input was decoded.
    pub started_ns: u64,
    /// The body returned its output.
    pub finished_ns: u64,
}

/// A flow's value with the stamps of the stages that made it, in flow order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Timed<T> {
    /// What the plain flow would pass here.
    pub value: T,
    /// One stamp per stage so far.
    pub stages: Vec<StageStamp>,
}

impl<T> Timed<T> {
    /// `value` before any stage.
    pub fn new(value: T) -> Self {
        Self {
            value,
            stages: Vec::with_capacity(4),
        }
    }

    /// `value`, made by a stage whose body started at `started_ns` and finishes now.
    fn then<U>(self, started_ns: u64, value: U) -> Timed<U> {
        let mut stages = self.stages;
        stages.push(StageStamp {
            started_ns,
            finished_ns: monotonic_ns(),
        });
        Timed { value, stages }
    }
}

/// [`read`], timed.
#[ferry::function(concurrency = 256, timeout = "30s")]
pub async fn timed_read(ctx: Context, row: Timed<Row>) -> Result<Timed<Reading>, ReadError> {
    let started = monotonic_ns();
    let reading = read(ctx, row.value).await?;
    Ok(row.then(started, reading))
}

/// [`keep_temperature`], timed: `None` ends the flow, and its stamps with it.
#[ferry::function(concurrency = 256, inline)]
pub fn timed_keep_temperature(reading: Timed<Reading>) -> Option<Timed<Reading>> {
    let started = monotonic_ns();
    let Timed { value, stages } = reading;
    let kept = keep_temperature(value)?;
    Some(Timed { value: (), stages }.then(started, kept))
}

/// [`value`], timed.
#[ferry::function(concurrency = 256, inline)]
pub fn timed_value(reading: Timed<Reading>) -> Timed<f64> {
    let started = monotonic_ns();
    let Timed { value: r, stages } = reading;
    Timed { value: (), stages }.then(started, value(r))
}

/// [`moving_average`], timed: the same placed average as the plain stage's.
#[ferry::function(concurrency = 256, inline)]
pub fn timed_moving_average(ctx: &Context, value: Timed<f64>) -> Timed<f64> {
    let started = monotonic_ns();
    let average = moving_average(ctx, value.value);
    value.then(started, average)
}

/// The timed twin of [`pipeline`](crate::pipeline::pipeline), chained by default.
pub fn timed_pipeline() -> Flow<Timed<Row>, Timed<f64>> {
    Flow::start::<TimedRead>()
        .then::<TimedKeepTemperature>()
        .then::<TimedValue>()
        .then::<TimedMovingAverage>()
}

/// The timed stages' names, in flow order: each is served where its plain stage is.
pub fn timed_stage_names() -> [&'static str; 4] {
    [
        <TimedRead as ferry::Function>::DESCRIPTOR.name,
        <TimedKeepTemperature as ferry::Function>::DESCRIPTOR.name,
        <TimedValue as ferry::Function>::DESCRIPTOR.name,
        <TimedMovingAverage as ferry::Function>::DESCRIPTOR.name,
    ]
}

/// One timed flow as its caller saw it: when it sent the flow, each stage's stamp, and when the
/// output came back, all on [`monotonic_ns`]'s clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FlowTimings {
    /// The caller sent the flow's first request.
    pub sent_ns: u64,
    /// Each stage's body, in flow order.
    pub stages: Vec<StageStamp>,
    /// The caller had the output.
    pub received_ns: u64,
}

impl FlowTimings {
    /// Every instant in order: sent, each stage's start and finish, received.
    pub fn instants(&self) -> Vec<u64> {
        let mut instants = vec![self.sent_ns];
        for stage in &self.stages {
            instants.extend([stage.started_ns, stage.finished_ns]);
        }
        instants.push(self.received_ns);
        instants
    }

    /// Whether the instants never go back: the caller sent before the first stage started, each
    /// stage finished after it started and before the next started, and the output came back
    /// after the last finished.
    pub fn is_ordered(&self) -> bool {
        self.instants().windows(2).all(|pair| pair[0] <= pair[1])
    }

    /// Each stage's body, in nanoseconds.
    pub fn bodies_ns(&self) -> Vec<u64> {
        self.stages
            .iter()
            .map(|s| s.finished_ns.saturating_sub(s.started_ns))
            .collect()
    }

    /// The time between services, in nanoseconds: from the caller's send to the first stage's
    /// start, from each stage's finish to the next one's start, and from the last finish to the
    /// caller's receipt (one more than the stages).
    pub fn hops_ns(&self) -> Vec<u64> {
        let instants = self.instants();
        instants
            .chunks(2)
            .map(|pair| match pair {
                [from, to] => to.saturating_sub(*from),
                _ => 0,
            })
            .collect()
    }
}

/// Short names of the stages and hops for tables: `read`, `keep_temperature`…
pub fn stage_labels() -> [&'static str; 4] {
    crate::pipeline::stage_names().map(|name| name.rsplit("::").next().unwrap_or(name))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_monotonic_clock_does_not_go_back() {
        let first = monotonic_ns();
        let second = monotonic_ns();
        assert!(first > 0 && second >= first);
    }

    #[test]
    fn hops_and_bodies_split_the_flow() {
        let timings = FlowTimings {
            sent_ns: 100,
            stages: vec![
                StageStamp {
                    started_ns: 110,
                    finished_ns: 130,
                },
                StageStamp {
                    started_ns: 135,
                    finished_ns: 136,
                },
            ],
            received_ns: 150,
        };
        assert!(timings.is_ordered());
        assert_eq!(timings.bodies_ns(), [20, 1]);
        assert_eq!(timings.hops_ns(), [10, 5, 14]);
        let sum: u64 = timings.bodies_ns().iter().chain(&timings.hops_ns()).sum();
        assert_eq!(sum, timings.received_ns - timings.sent_ns);
        let backwards = FlowTimings {
            received_ns: 120,
            ..timings
        };
        assert!(!backwards.is_ordered());
    }
}
