//! The model: a ferry function is an invocation type (one field per parameter) that implements
//! [`Function`]. `#[ferry::function]` writes both from a plain `fn`.

use std::future::Future;
use std::pin::Pin;

use serde::Serialize;
use serde::de::DeserializeOwned;

pub use ferry_core::function::{FunctionConfig, FunctionDescriptor, ParamDescriptor};

use crate::{Context, Result};

/// A function that ferry can invoke on any backend.
///
/// The implementing type is the invocation: its fields are the arguments. It is what gets
/// serialized, sent, retried and logged.
pub trait Function: Serialize + DeserializeOwned + Send + 'static {
    /// What the function returns on success.
    type Output: Serialize + DeserializeOwned + Send + 'static;

    /// Identity and configuration, known at compile time.
    const DESCRIPTOR: &'static FunctionDescriptor;

    /// Runs the function body in this process. Backends call this; programs call
    /// [`Context::call`] instead, which also applies the timeout and catches panics.
    fn run(self, ctx: Context) -> Pin<Box<dyn Future<Output = Result<Self::Output>> + Send>>;
}
