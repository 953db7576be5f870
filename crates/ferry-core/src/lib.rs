//! # ferry-core — what a ferry program is, without running one
//!
//! The parts of [ferry](https://docs.rs/ferry) that describe functions and their invocations
//! but need no async runtime: the [`Error`] every invocation may end in, the [`Codec`]s
//! arguments and results travel in, what a function declares ([`FunctionDescriptor`]), the
//! [`manifest`] of a program, the [`naming`] rule of deployed functions, and every `FERRY_*`
//! setting ([`config`]). `ferry` re-exports all of it; tools that only read programs and
//! manifests (the `ferry` command's build and deploy steps) can depend on this crate alone.
//!
//! ```
//! use ferry_core::{Codec, FunctionConfig, naming};
//!
//! let bytes = Codec::Json.encode(&serde_json::json!({ "n": 8 }))?;
//! assert_eq!(bytes, br#"{"n":8}"#);
//! let hash = naming::config_hash(&FunctionConfig::DEFAULT, "count-queens");
//! assert_eq!(naming::deployed_name("nqueens", "count-queens", &hash)?.len(), 29);
//! # Ok::<(), ferry_core::Error>(())
//! ```

#![warn(missing_docs, unreachable_pub)]

pub mod codec;
pub mod config;
pub mod error;
pub mod function;
pub mod invocation;
pub mod manifest;
pub mod naming;

pub use codec::Codec;
pub use error::{Error, ErrorKind, ExitReason, Result};
pub use function::{FunctionConfig, FunctionDescriptor, ParamDescriptor};
pub use invocation::InvocationId;
pub use manifest::Manifest;
