//! Every option, and the defaults when none is given.

use std::time::Duration;

use ferry::{Function, FunctionConfig};

#[ferry::function(
    name = "count-queens",
    memory_mb = 512,
    timeout = "30s",
    concurrency = 4
)]
fn count_queens(n: u32) -> u64 {
    u64::from(n)
}

#[ferry::function(timeout = "250ms")]
fn quick(n: u32) -> u32 {
    n
}

/// An integer timeout is in seconds.
#[ferry::function(timeout = 5, memory_mb = 16)]
fn five_seconds(n: u32) -> u32 {
    n
}

#[ferry::function(timeout = "2m", concurrency = 1000, memory_mb = 65536)]
fn trailing_comma(n: u32) -> u32 {
    n
}

#[ferry::function(name = "Snake_and-kebab2")]
fn renamed() {}

#[ferry::function]
fn defaults() {}

#[ferry::function(idempotent, concurrency = 2)]
fn safe_to_repeat(n: u32) -> u32 {
    n
}

fn main() {
    let config = CountQueens::DESCRIPTOR.config;
    assert_eq!(CountQueens::DESCRIPTOR.name, "count-queens");
    assert_eq!(config.memory_mb, 512);
    assert_eq!(config.timeout, Duration::from_secs(30));
    assert_eq!(config.concurrency, 4);

    assert_eq!(Quick::DESCRIPTOR.config.timeout, Duration::from_millis(250));
    assert_eq!(
        FiveSeconds::DESCRIPTOR.config.timeout,
        Duration::from_secs(5)
    );
    assert_eq!(FiveSeconds::DESCRIPTOR.config.memory_mb, 16);
    assert_eq!(
        TrailingComma::DESCRIPTOR.config.timeout,
        Duration::from_secs(120)
    );
    assert_eq!(TrailingComma::DESCRIPTOR.config.concurrency, 1000);
    assert_eq!(TrailingComma::DESCRIPTOR.config.memory_mb, 65536);

    // Options that are not given keep the defaults.
    assert_eq!(
        Quick::DESCRIPTOR.config.memory_mb,
        FunctionConfig::DEFAULT.memory_mb
    );
    assert_eq!(Renamed::DESCRIPTOR.name, "Snake_and-kebab2");
    assert_eq!(Renamed::DESCRIPTOR.config, FunctionConfig::DEFAULT);
    assert_eq!(Defaults::DESCRIPTOR.config, FunctionConfig::DEFAULT);
    assert_eq!(Defaults::DESCRIPTOR.name, "defaults");
    assert!(!Defaults::DESCRIPTOR.config.idempotent);
    assert!(SafeToRepeat::DESCRIPTOR.config.idempotent);
    assert_eq!(SafeToRepeat::DESCRIPTOR.config.concurrency, 2);
}
