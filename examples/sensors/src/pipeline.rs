//! The flow: read a reading from the sensor service → keep it if it is a temperature → take its
//! value → fold it into a moving average. Four ferry functions of one parameter each, so
//! [`pipeline`] can chain them.
//!
//! The moving average is **per instance**: each process that runs `moving_average` keeps its own
//! in placed state ([`Context::instance`]), as Dyninka's `@Placed` accumulator is per service.
//! One HTTP service (one process) for the function gives one average over everything it was
//! sent; on the local platform every worker process that ran it has one of its own. Remote
//! invocation is at least once, so a retried invocation can count a value twice.

use std::sync::{Mutex, PoisonError};

use ferry::Flow;
use ferry::prelude::*;

use crate::dataset::{Reading, TEMPERATURE};
use crate::service::{ReadError, Row, SensorClient};

/// Fetches one reading from the sensor service at `SENSORS_URL`. I/O-bound: one instance
/// serves many at once, over one connection pool per process.
#[ferry::function(concurrency = 256, timeout = "30s")]
pub async fn read(ctx: Context, row: Row) -> Result<Reading, ReadError> {
    let client = ctx.instance(|| ProcessClient(SensorClient::from_env()));
    let client = client.0.as_ref().map_err(Clone::clone)?;
    client.fetch(row).await
}

/// The sensor client of this process, created by the first `read` it runs.
struct ProcessClient(Result<SensorClient, ReadError>);

/// The reading if it is a temperature; `None` ends the flow for any other variable.
#[ferry::function(concurrency = 256, inline)]
pub fn keep_temperature(reading: Reading) -> Option<Reading> {
    (reading.variable == TEMPERATURE).then_some(reading)
}

/// The reading's value.
#[ferry::function(concurrency = 256, inline)]
pub fn value(reading: Reading) -> f64 {
    reading.value
}

/// Folds `value` into this instance's running average and returns the average so far.
#[ferry::function(concurrency = 256, inline)]
pub fn moving_average(ctx: &Context, value: f64) -> f64 {
    let placed = ctx.instance(|| PlacedAverage(Mutex::new(RunningAverage::default())));
    let mut average = placed.0.lock().unwrap_or_else(PoisonError::into_inner);
    average.add(value)
}

/// The placed state of `moving_average`: one per process.
struct PlacedAverage(Mutex<RunningAverage>);

/// The mean of every value added so far.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RunningAverage {
    sum: f64,
    count: u64,
}

impl RunningAverage {
    /// Adds `value` and returns the mean so far.
    pub fn add(&mut self, value: f64) -> f64 {
        self.sum += value;
        self.count += 1;
        self.mean()
    }

    /// The mean so far (NaN before any value).
    pub fn mean(&self) -> f64 {
        self.sum / self.count as f64
    }

    /// How many values were added.
    pub fn count(&self) -> u64 {
        self.count
    }
}

/// The flow, chained by default: a reading in, the moving average out, or `None` when the
/// reading was not a temperature.
pub fn pipeline() -> Flow<Row, f64> {
    Flow::start::<Read>()
        .then::<KeepTemperature>()
        .then::<Value>()
        .then::<MovingAverage>()
}

/// Runs the flow orchestrated from inside a function: the orchestrating function of an
/// OpenFaaS-style deployment, which clients call and which calls each stage in turn.
#[ferry::function(concurrency = 256, timeout = "60s")]
pub async fn orchestrate(ctx: Context, row: Row) -> ferry::Result<Option<f64>> {
    pipeline()
        .mode(ferry::FlowMode::Orchestrated)
        .run(&ctx, row)
        .await
}

/// The name of [`orchestrate`]'s function.
pub fn orchestrator_name() -> &'static str {
    <Orchestrate as ferry::Function>::DESCRIPTOR.name
}

/// The stages' names, in order: the functions a deployment serves, one service each.
pub fn stage_names() -> [&'static str; 4] {
    [
        <Read as ferry::Function>::DESCRIPTOR.name,
        <KeepTemperature as ferry::Function>::DESCRIPTOR.name,
        <Value as ferry::Function>::DESCRIPTOR.name,
        <MovingAverage as ferry::Function>::DESCRIPTOR.name,
    ]
}

/// What the flow computes for `readings` fed in order through one instance: the average after
/// each temperature, computed directly.
pub fn expected_averages<'a>(readings: impl IntoIterator<Item = &'a Reading>) -> Vec<f64> {
    let mut average = RunningAverage::default();
    readings
        .into_iter()
        .filter(|r| r.variable == TEMPERATURE)
        .map(|r| average.add(r.value))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_running_average_is_the_mean_so_far() {
        let mut average = RunningAverage::default();
        assert!(average.mean().is_nan());
        assert_eq!(average.add(4.0), 4.0);
        assert_eq!(average.add(1.0), 2.5);
        assert_eq!(average.add(-2.5), 2.5 / 3.0);
        assert_eq!(average.count(), 3);
    }

    #[test]
    fn only_temperatures_pass() {
        let readings = crate::dataset::generate(100, 3);
        for reading in readings {
            let kept = keep_temperature(reading.clone());
            assert_eq!(kept.is_some(), reading.variable == TEMPERATURE);
            if let Some(kept) = kept {
                assert_eq!(value(kept), reading.value);
            }
        }
    }
}
