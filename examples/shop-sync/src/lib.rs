//! The e-commerce synchronisation case study of "Swift as a serverless language" (2023), on
//! ferry: a logistics system (PS, the source of truth) and a Shopify store (SH) as mock HTTP
//! servers, the `syncModel` function that makes a model's product on SH match PS, and the
//! benchmarker that syncs every model through a monolith and through serverless runners.
//!
//! - [`prng`]: xorshift128+, from which every random choice is drawn;
//! - [`generate`]: the seeded PS catalogue; [`mapping`]: how a PS model looks on SH;
//! - [`ps`], [`sh`]: the mock servers (axum routers over in-memory stores);
//! - [`client`]: their HTTP clients; [`syncer`]: `sync_model`, the ferry function;
//! - [`monolith`]: the function behind an HTTP route of the same process;
//! - [`workload`]: which models start partially or fully synced; [`check`]: SH equals PS;
//! - [`stats`]: latency statistics.
//!
//! The `shop-sync` binary runs the benchmark; see the README.

pub mod check;
pub mod client;
pub mod generate;
pub mod mapping;
pub mod model;
pub mod monolith;
pub mod prng;
pub mod ps;
pub mod server;
pub mod sh;
pub mod stats;
pub mod syncer;
pub mod workload;
