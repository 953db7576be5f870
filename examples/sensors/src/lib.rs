//! The smart-building sensor dataflow of Dyninka's evaluation, on ferry: a sensor service serving
//! a month of Newcastle Urban Observatory readings one at a time, and a flow of four functions
//! that reads a reading, keeps it if it is a temperature, takes its value and folds it into a
//! moving average held in placed state.
//!
//! - [`dataset`]: the observatory's CSV schema and a seeded generator of rows in it;
//! - [`service`]: the sensor service (an axum router) and its client;
//! - [`pipeline`]: the four functions and the [`Flow`](ferry::Flow) through them;
//! - [`deploy`]: one HTTP service process per function, chained to each other, as on Knative;
//! - [`timing`]: a timed twin of the flow that brings each stage's start and finish back.
//!
//! The `sensors` binary runs the flow, serves the sensor service, or load-tests the deployment;
//! see the README.

pub mod dataset;
pub mod deploy;
pub mod pipeline;
pub mod service;
pub mod timing;
