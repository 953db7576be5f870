//! Support for the macros' expansions. Not a public API: it changes with `ferry-macros`, which
//! `ferry` pins to its exact version.

use std::fmt::Display;
use std::future::Future;
use std::panic::AssertUnwindSafe;

use futures::FutureExt;
pub use futures::future::BoxFuture;
pub use inventory;
pub use serde;
pub use tokio;

pub use crate::registry::Registration;
use crate::{Error, ErrorKind, Result};

/// `Result<T, E>` returned by a function body: `Err` becomes a user error.
pub trait FnResult {
    /// The success type.
    type Ok;
    /// Converts into ferry's result.
    fn into_outcome(self) -> Result<Self::Ok>;
}

impl<T, E: Display + 'static> FnResult for std::result::Result<T, E> {
    type Ok = T;

    fn into_outcome(self) -> Result<T> {
        self.map_err(|e| {
            // A ferry error (a nested invocation failed and the body used `?`) keeps its kind.
            if let Some(error) = (&e as &dyn std::any::Any).downcast_ref::<Error>() {
                return error.clone();
            }
            Error::new(ErrorKind::User {
                message: format!("{e:#}"),
                type_name: std::any::type_name::<E>().to_owned(),
            })
        })
    }
}

/// Runs an `async` body, turning a panic into [`ErrorKind::Panic`].
pub fn run_async<T, F>(body: F) -> BoxFuture<'static, Result<T>>
where
    F: Future<Output = Result<T>> + Send + 'static,
{
    Box::pin(AssertUnwindSafe(body).catch_unwind().map(|outcome| {
        outcome.unwrap_or_else(|payload| Err(Error::panic(crate::error::panic_message(&*payload))))
    }))
}

/// Runs a sync body on a blocking thread, turning a panic into [`ErrorKind::Panic`].
pub fn run_blocking<T, F>(body: F) -> BoxFuture<'static, Result<T>>
where
    F: FnOnce() -> Result<T> + Send + 'static,
    T: Send + 'static,
{
    #[cfg(feature = "local")]
    let slot = crate::platform::local::server::current_slot();
    let handle = tokio::task::spawn_blocking(move || {
        #[cfg(feature = "local")]
        crate::platform::local::server::label_thread_for(slot);
        call_catching_panics(body)
    });
    Box::pin(handle.map(|joined| {
        joined.unwrap_or_else(|e| Err(Error::unavailable(format!("blocking task ended: {e}"))))
    }))
}

/// Calls a sync body, turning a panic into [`ErrorKind::Panic`].
fn call_catching_panics<T>(body: impl FnOnce() -> Result<T>) -> Result<T> {
    std::panic::catch_unwind(AssertUnwindSafe(body))
        .unwrap_or_else(|payload| Err(Error::panic(crate::error::panic_message(&*payload))))
}

/// Runs the sync body of an `inline` function as a task on the runtime's own threads: no hop to
/// the blocking pool, which costs two thread wake-ups a call, more than a short body itself.
///
/// Only while another of the runtime's threads stays free of inline bodies: one that never
/// returns then holds a single thread, its invocation still times out on another (see
/// `InlineTurn` in `execute.rs`), and the instance retires as it does for a stuck blocking
/// thread. Otherwise (a single-threaded runtime, or every other thread already in an inline
/// body) the body runs on the blocking pool.
pub fn run_inline<T, F>(body: F) -> BoxFuture<'static, Result<T>>
where
    F: FnOnce() -> Result<T> + Send + 'static,
    T: Send + 'static,
{
    // A local worker names the thread of each sync call, to find the call that took its
    // memory: there the body keeps a thread of its own.
    #[cfg(feature = "local")]
    if crate::platform::local::server::current_slot().is_some() {
        return run_blocking(body);
    }
    let Some(turn) = crate::execute::InlineTurn::take() else {
        return run_blocking(body);
    };
    let task = tokio::spawn(async move {
        let _turn = turn;
        call_catching_panics(body)
    });
    Box::pin(task.map(|joined| {
        joined.unwrap_or_else(|e| Err(Error::unavailable(format!("inline task ended: {e}"))))
    }))
}

#[diagnostic::on_unimplemented(
    message = "the `#[ferry::function]` parameters must implement `Serialize` and `Deserialize`",
    label = "this parameter type is not a serde type",
    note = "derive them with `#[derive(serde::Serialize, serde::Deserialize)]`, or, without a serde dependency, `#[derive(ferry::serde::Serialize, ferry::serde::Deserialize)]` and `#[serde(crate = \"ferry::serde\")]`"
)]
pub trait Param: serde::Serialize + serde::de::DeserializeOwned + Send + 'static {}
impl<T: serde::Serialize + serde::de::DeserializeOwned + Send + 'static> Param for T {}

#[diagnostic::on_unimplemented(
    message = "the `#[ferry::function]` return type must implement `Serialize` and `Deserialize`",
    label = "this return type is not a serde type",
    note = "derive them with `#[derive(serde::Serialize, serde::Deserialize)]`, or, without a serde dependency, `#[derive(ferry::serde::Serialize, ferry::serde::Deserialize)]` and `#[serde(crate = \"ferry::serde\")]`"
)]
pub trait Output: serde::Serialize + serde::de::DeserializeOwned + Send + 'static {}
impl<T: serde::Serialize + serde::de::DeserializeOwned + Send + 'static> Output for T {}

/// Fails to compile, with a clear message, unless `T` is a serde type.
pub const fn assert_param<T: Param>() {}

/// Fails to compile, with a clear message, unless `T` is a serde type.
pub const fn assert_output<T: Output>() {}

/// Entry for `#[ferry::main]`.
pub use crate::run::run;

#[diagnostic::on_unimplemented(
    message = "the second parameter of `#[ferry::main]` must be the program's options, a `clap::Parser`",
    label = "this type is not a `clap::Parser`",
    note = "derive it: `#[derive(clap::Parser)] struct Args {{ .. }}`"
)]
pub trait ProgramArgs: clap::Parser + Send + 'static {}
impl<T: clap::Parser + Send + 'static> ProgramArgs for T {}

/// Fails to compile, with a clear message, unless `T` is a `clap::Parser`.
pub const fn assert_program_args<T: ProgramArgs>() {}

/// Entry for `#[ferry::main]` with the program's options.
pub fn run_with_args<A, F, Fut>(main: F) -> std::process::ExitCode
where
    A: ProgramArgs,
    F: FnOnce(crate::Context, A) -> Fut,
    Fut: Future + Send + 'static,
    Fut::Output: std::process::Termination + Send,
{
    crate::run::run_with_args(main)
}
