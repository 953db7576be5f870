//! # ferry — single-source serverless functions for Rust
//!
//! Write functions and the program that calls them in one crate. One binary holds every
//! function: started normally it is the host program; started as a worker it serves the
//! functions. The same code runs as a monolith (`inline`), on the embedded local platform of
//! warm worker processes (`local`, the default), and on serverless platforms.
//!
//! ```
//! use ferry::prelude::*;
//!
//! /// An ordinary function: callable directly, and remotely as `Add { a, b }`.
//! #[ferry::function]
//! fn add(a: i64, b: i64) -> i64 {
//!     a + b
//! }
//!
//! #[ferry::main]
//! async fn main(ctx: Context) -> ferry::Result<()> {
//!     assert_eq!(add(2, 3), 5);
//!     assert_eq!(ctx.call(Add { a: 2, b: 3 }).await?, 5);
//!     let doubled = ctx.map((0..100).map(|i| Add { a: i, b: i })).await?;
//!     assert_eq!(doubled[21], 42);
//!     Ok(())
//! }
//! ```
//!
//! - [`#[ferry::function]`](function) generates the invocation type and registers the function.
//! - [`Context`] invokes: [`call`](Context::call), [`spawn`](Context::spawn),
//!   [`map`](Context::map), [`as_completed`](Context::as_completed).
//! - [`run`] (or [`#[ferry::main]`](main)) decides at start-up whether the process is the host, a
//!   worker, or a manifest request.
//! - Every invocation ends in its output or an [`Error`] whose [`ErrorKind`] says why.
//! - [`Shared`] wraps an argument many tasks share: encoded once, sent by content hash.

#![warn(missing_docs, unreachable_pub)]
// A build with some platforms left out leaves parts of the shared code unused.
#![cfg_attr(
    not(all(
        feature = "local",
        feature = "http",
        feature = "openwhisk",
        feature = "lambda",
        feature = "web",
        feature = "state",
        feature = "progress"
    )),
    allow(dead_code, unused_imports, unused_variables)
)]

#[cfg(feature = "store")]
pub mod aws;
mod context;
mod execute;
pub mod flow;
mod function;
pub mod graph;
mod mapped;
mod metrics;
mod platform;
mod progress;
mod registry;
mod role;
mod run;
mod runtime;
pub mod shared;
#[cfg(feature = "state")]
pub mod state;
#[cfg(feature = "store")]
pub mod store;
#[cfg(feature = "web")]
pub mod web;
mod wire;

#[doc(hidden)]
#[path = "private.rs"]
pub mod __private;

// What describes functions and invocations without running them lives in `ferry-core`; it is
// part of ferry's API as if written here.
use ferry_core::error;
pub use ferry_core::{Codec, Error, ErrorKind, ExitReason, InvocationId, Manifest, Result};
pub use ferry_core::{codec, config, manifest, naming};

pub use context::{Completions, Context, DEFAULT_FAN_OUT, Handle, Invocation, Map, MapFuture};
pub use flow::{Flow, FlowMode, Stage};
pub use function::{Function, FunctionConfig, FunctionDescriptor, ParamDescriptor};
pub use graph::{Graph, Node};
pub use metrics::FunctionStats;
#[cfg(feature = "http")]
pub use platform::HttpConfig;
#[cfg(feature = "local")]
pub use platform::LocalConfig;
#[cfg(feature = "openwhisk")]
pub use platform::OpenWhiskConfig;
pub use platform::{BackendKind, BackendStats, RetryPolicy};
#[cfg(feature = "lambda")]
pub use platform::{LambdaCodec, LambdaConfig, LambdaHttp};
pub use registry::{Registration, Registry};
pub use role::{ROLE_VAR, Role};
pub use run::{run, run_with_args};
pub use shared::Shared;

/// serde, as ferry uses it: a crate whose only dependency is ferry derives with
/// `#[derive(ferry::serde::Serialize, ferry::serde::Deserialize)]` and
/// `#[serde(crate = "ferry::serde")]`.
pub use serde;

/// Makes a plain function a ferry function.
///
/// ```
/// # use ferry::prelude::*;
/// #[ferry::function(name = "count-queens", memory_mb = 512, timeout = "30s", concurrency = 1)]
/// pub fn count_queens(n: u32, cols: u64, left: u64, right: u64) -> u64 {
///     # let _ = (n, cols, left, right);
///     0
/// }
///
/// // The function stays callable; `CountQueens` is its invocation type.
/// let direct = count_queens(8, 0, 0, 0);
/// let remote = CountQueens { n: 8, cols: 0, left: 0, right: 0 };
/// assert_eq!(<CountQueens as ferry::Function>::DESCRIPTOR.name, "count-queens");
/// # let _ = (direct, remote);
/// ```
///
/// - Parameters and the return type are serde types; the body may be sync (it runs on a
///   blocking thread) or `async`.
/// - Returning `Result<T, E>` with `E: Display` makes `Err(e)` a [`ErrorKind::User`] error.
///   The macro recognises the return type by its last path segment being `Result`
///   (`Result`, `std::result::Result`, `ferry::Result`, `anyhow::Result`); behind another alias
///   the `Result` itself becomes the output, errors included.
/// - A parameter of type [`Context`] (or `&Context`) receives the invocation's context, so the
///   function can invoke functions; it is not part of the invocation type.
/// - Options: `name` (default: the fn name), `memory_mb` (256), `timeout` (`"60s"`),
///   `concurrency` (1: invocations one instance runs at once), `invocation` (the invocation
///   type's name, default the fn name in UpperCamelCase).
/// - The id is the module path plus the name (`my_crate::solver::count-queens`): stable across
///   builds and machines.
/// - The invocation type is named after the function in UpperCamelCase and lives next to it;
///   a `use` of another item with that name in the same module conflicts with it: rename it
///   with `invocation = "AddTask"`.
pub use ferry_macros::function;

/// Sugar for [`run`]: `#[ferry::main] async fn main(ctx: Context) -> R` becomes
/// `fn main() -> ExitCode { ferry::run(...) }`.
///
/// Every such program takes `--backend <inline|local|http|openwhisk|lambda>` (or
/// `FERRY_BACKEND`) and lists it in `--help`. A second parameter, a `clap::Parser`
/// (`async fn main(ctx: Context, args: Args)`), adds the program's own options
/// ([`run_with_args`]).
pub use ferry_macros::main;

/// Runs an `async fn` test on a multi-thread runtime, as `#[tokio::test(flavor =
/// "multi_thread")]` would, without a tokio dependency of its own.
///
/// ```
/// # use ferry::prelude::*;
/// #[ferry::function]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// #[ferry::test]
/// async fn adds_inline() {
///     assert_eq!(Context::inline().call(Add { a: 2, b: 3 }).await.unwrap(), 5);
/// }
/// # fn main() {}
/// ```
pub use ferry_macros::test;

/// What most programs need.
pub mod prelude {
    #[cfg(feature = "local")]
    pub use crate::LocalConfig;
    pub use crate::{BackendKind, Codec, Context, Error, ErrorKind, Function};
}

/// The README's example compiles and runs as a doctest.
#[cfg(doctest)]
#[doc = include_str!("../../../README.md")]
struct ReadmeDoctests;
