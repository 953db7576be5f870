//! What is known of a function at compile time: its identity, signature and configuration.
//! `#[ferry::function]` writes a [`FunctionDescriptor`] for every function.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Identity, signature and configuration of a function.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FunctionDescriptor {
    /// Stable id: module path (starting with the crate name) + `::` + name.
    pub id: &'static str,
    /// The function's name (the `fn` name unless the `name` option says otherwise).
    pub name: &'static str,
    /// Parameters in declaration order; a `Context` parameter is not listed.
    pub params: &'static [ParamDescriptor],
    /// The output type as written (the `Ok` type for functions returning `Result`).
    pub output: &'static str,
    /// Resources and limits.
    pub config: FunctionConfig,
    /// Whether the body is an `async fn` (sync bodies run on a blocking thread).
    pub is_async: bool,
    /// Where the function is defined.
    pub file: &'static str,
    /// Line of the definition.
    pub line: u32,
}

/// One parameter: its name (the JSON field) and its type as written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ParamDescriptor {
    /// The parameter name, which is also its JSON field.
    pub name: &'static str,
    /// The type as written in the source.
    #[serde(rename = "type")]
    pub ty: &'static str,
}

/// Resources and limits of a function, set with `#[ferry::function(...)]` options.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FunctionConfig {
    /// Memory of one instance, in MiB (`memory_mb`).
    pub memory_mb: u32,
    /// Longest run of one invocation (`timeout`).
    #[serde(with = "duration_ms", rename = "timeout_ms")]
    pub timeout: Duration,
    /// Invocations one instance runs at once (`concurrency`).
    pub concurrency: u32,
    /// Safe to run more than once for the same arguments (`idempotent`): the local platform then
    /// runs an invocation again when its worker crashes under it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub idempotent: bool,
}

impl FunctionConfig {
    /// The defaults follow the platforms' own: OpenWhisk's 256 MB and 60 s, and one invocation
    /// per instance as on OpenWhisk and classic Lambda. CPU-bound functions want exactly that;
    /// I/O-bound and `async` functions usually want a higher `concurrency`.
    pub const DEFAULT: Self = Self {
        memory_mb: 256,
        timeout: Duration::from_secs(60),
        concurrency: 1,
        idempotent: false,
    };
}

impl Default for FunctionConfig {
    fn default() -> Self {
        Self::DEFAULT
    }
}

mod duration_ms {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        value: &Duration,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(u64::try_from(value.as_millis()).unwrap_or(u64::MAX))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Duration, D::Error> {
        u64::deserialize(deserializer).map(Duration::from_millis)
    }
}
