//! Shared set-up: a local platform whose workers are the `ferry-fixture` program.

#![allow(dead_code)]

use std::future::IntoFuture;
use std::time::Duration;

use ferry::{Context, LocalConfig};

/// A local platform of at most `workers` fixture workers.
pub fn local(workers: usize) -> Context {
    local_with(LocalConfig::default().max_workers(workers))
}

pub fn local_with(config: LocalConfig) -> Context {
    Context::local(config.worker_exe(env!("CARGO_BIN_EXE_ferry-fixture"))).expect("local platform")
}

/// Fails the test instead of hanging: every invocation must end.
pub async fn bounded<T>(future: impl IntoFuture<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(30), future)
        .await
        .expect("an invocation hung")
}
