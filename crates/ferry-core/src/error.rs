//! The one error type of ferry: every invocation ends in its output or in an [`Error`] whose
//! [`ErrorKind`] says what went wrong and where.

use std::fmt;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::InvocationId;

/// `Result<T, ferry::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Why an invocation (or a ferry operation) failed, with the function and invocation it concerns.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Error {
    /// Flattened: `{"kind": "user", "message": …, "function": …}`.
    #[serde(flatten)]
    kind: ErrorKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    function: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    invocation: Option<InvocationId>,
    /// Position of the failing function in a flow, counted from 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    stage: Option<u32>,
    /// Index of the failing task in a fan-out (`map`, `as_completed`) or graph. It means
    /// something only to the caller that made the fan-out, so it never travels.
    #[serde(skip)]
    task: Option<usize>,
}

/// What went wrong. Matches are expected to have a wildcard arm: kinds are added over time.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ErrorKind {
    /// The arguments could not be decoded; `path` is the JSON path of the offending field
    /// (`.` for the whole input).
    BadInput {
        /// The JSON path of the offending field (`.` for the whole input).
        path: String,
        /// What was wrong with it.
        message: String,
    },
    /// The function returned `Err(e)`; `message` is `e.to_string()`.
    User {
        /// The error's `to_string()`.
        message: String,
        /// The error's type.
        type_name: String,
    },
    /// The function panicked.
    Panic {
        /// The panic's message.
        message: String,
    },
    /// The function ran longer than its timeout.
    Timeout {
        /// The limit that ran out, in milliseconds.
        limit_ms: u64,
    },
    /// The worker process died while the invocation was in flight.
    WorkerCrashed {
        /// How the worker ended.
        reason: ExitReason,
    },
    /// The worker exceeded its memory limit and was stopped.
    OutOfMemory {
        /// The limit, in MiB.
        limit_mb: u64,
        /// What the worker held when it was stopped, in MiB.
        used_mb: u64,
    },
    /// The backend could not be reached or could not start a worker.
    Unavailable {
        /// Why.
        message: String,
    },
    /// The platform refused the invocation for now (HTTP 429): too many in flight or per minute.
    Throttled {
        /// The platform's message.
        message: String,
    },
    /// The encoded arguments or result exceed what the transport accepts.
    PayloadTooLarge {
        /// The size, in bytes.
        size: u64,
        /// The limit, in bytes.
        limit: u64,
    },
    /// No function with this id or name is registered where the invocation arrived.
    UnknownFunction {
        /// The id or name asked for.
        id: String,
    },
    /// A value could not be encoded, or a peer broke the wire protocol.
    Protocol {
        /// What went wrong.
        message: String,
    },
    /// The operation was given an invalid setting (an unknown backend name, say).
    Config {
        /// What is wrong with the setting.
        message: String,
    },
    /// The platform could not run the function at all: its own failure, not the function's (an
    /// emulator without its container engine, a runtime that never started).
    Platform {
        /// The platform's message.
        message: String,
    },
    /// The arguments refer to shared values (`ferry::Shared`) by content hash that
    /// could not be had where the function runs; `ids` are the hashes in hex.
    MissingShared {
        /// The content hashes of the missing values, in hex.
        ids: Vec<String>,
        /// Why they could not be had.
        message: String,
    },
}

/// How a worker process ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ExitReason {
    /// It exited with this code.
    Code(i32),
    /// It was killed by this signal (6 = `SIGABRT`, 9 = `SIGKILL`, 11 = `SIGSEGV`…).
    Signal(i32),
    /// It stopped answering and was killed.
    Unresponsive,
    /// It was killed for passing its memory limit, by another invocation's doing.
    MemoryLimit {
        /// The limit, in MiB.
        limit_mb: u64,
        /// What the worker held when it was stopped, in MiB.
        used_mb: u64,
    },
    /// Its exit status could not be read.
    Unknown,
}

impl fmt::Display for ExitReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Self::Code(code) => write!(f, "exited with code {code}"),
            Self::Signal(signal) => match signal_name(signal) {
                Some(name) => write!(f, "killed by signal {signal} ({name})"),
                None => write!(f, "killed by signal {signal}"),
            },
            Self::Unresponsive => f.write_str("stopped answering and was killed"),
            Self::MemoryLimit { limit_mb, used_mb } => write!(
                f,
                "killed at its memory limit ({used_mb} MiB used, limit {limit_mb} MiB) by \
                 another invocation's doing"
            ),
            Self::Unknown => f.write_str("ended for an unknown reason"),
        }
    }
}

fn signal_name(signal: i32) -> Option<&'static str> {
    Some(match signal {
        libc::SIGABRT => "SIGABRT, aborted",
        libc::SIGSEGV => "SIGSEGV, segmentation fault",
        libc::SIGBUS => "SIGBUS, bus error",
        libc::SIGKILL => "SIGKILL",
        libc::SIGILL => "SIGILL, illegal instruction",
        libc::SIGFPE => "SIGFPE, arithmetic error",
        libc::SIGTERM => "SIGTERM",
        _ => return None,
    })
}

impl fmt::Display for ErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::BadInput { path, message } => write!(f, "bad input at `{path}`: {message}"),
            Self::User { message, .. } => write!(f, "returned an error: {message}"),
            Self::Panic { message } => write!(f, "panicked: {message}"),
            Self::Timeout { limit_ms } => write!(f, "timed out after {}", Millis(*limit_ms)),
            Self::WorkerCrashed { reason } => write!(f, "worker crashed: {reason}"),
            Self::OutOfMemory { limit_mb, used_mb } => write!(
                f,
                "worker ran out of memory: {used_mb} MiB used, limit {limit_mb} MiB"
            ),
            Self::Unavailable { message } => write!(f, "backend unavailable: {message}"),
            Self::Throttled { message } => write!(f, "throttled by the platform: {message}"),
            Self::PayloadTooLarge { size, limit } => {
                write!(f, "payload too large: {size} bytes, limit {limit} bytes")
            }
            Self::UnknownFunction { id } => write!(f, "unknown function `{id}`"),
            Self::Protocol { message } => write!(f, "protocol error: {message}"),
            Self::Config { message } => write!(f, "invalid configuration: {message}"),
            Self::Platform { message } => write!(f, "the platform could not run it: {message}"),
            Self::MissingShared { ids, message } => {
                write!(
                    f,
                    "shared value {} not available: {message}",
                    ids.join(", ")
                )
            }
        }
    }
}

struct Millis(u64);

impl fmt::Display for Millis {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.0 % 1000 == 0 {
            write!(f, "{} s", self.0 / 1000)
        } else {
            write!(f, "{} ms", self.0)
        }
    }
}

impl Error {
    /// An error of this kind, not yet tied to a function.
    pub fn new(kind: ErrorKind) -> Self {
        Self {
            kind,
            function: None,
            invocation: None,
            stage: None,
            task: None,
        }
    }

    /// What went wrong.
    pub fn kind(&self) -> &ErrorKind {
        &self.kind
    }

    /// The id of the function the error concerns, when known.
    pub fn function(&self) -> Option<&str> {
        self.function.as_deref()
    }

    /// When the error ended a `ferry::Flow`: the failing stage's position, from 0 (its
    /// function is [`function`](Self::function)).
    pub fn flow_stage(&self) -> Option<u32> {
        self.stage
    }

    /// When the error ended a task of a fan-out (`Context::map`,
    /// `Context::as_completed`) or a node of a
    /// `Graph`: its index, in the order the tasks were given.
    pub fn task(&self) -> Option<usize> {
        self.task
    }

    /// Names the task: the outermost fan-out, the caller's own, has the last word.
    #[must_use]
    #[doc(hidden)]
    pub fn in_task(mut self, index: usize) -> Self {
        self.task = Some(index);
        self
    }

    /// Names the flow stage, unless a deeper layer already did.
    #[must_use]
    #[doc(hidden)]
    pub fn at_stage(mut self, stage: u32) -> Self {
        if self.stage.is_none() {
            self.stage = Some(stage);
        }
        self
    }

    /// The invocation the error concerns, when known.
    pub fn invocation(&self) -> Option<InvocationId> {
        self.invocation
    }

    /// Names the function, unless a deeper layer already did.
    #[must_use]
    pub fn in_function(mut self, id: &str) -> Self {
        if self.function.is_none() {
            self.function = Some(id.to_owned());
        }
        self
    }

    /// Names the invocation, unless a deeper layer already did.
    #[must_use]
    pub fn in_invocation(mut self, id: InvocationId) -> Self {
        if self.invocation.is_none() {
            self.invocation = Some(id);
        }
        self
    }

    /// Whether trying again may succeed: the worker or the transport failed, not the function's
    /// own logic or its input.
    pub fn is_transient(&self) -> bool {
        matches!(
            self.kind,
            ErrorKind::WorkerCrashed { .. } | ErrorKind::Unavailable { .. }
        )
    }

    #[doc(hidden)]
    pub fn bad_input(path: impl Into<String>, message: impl Into<String>) -> Self {
        Self::new(ErrorKind::BadInput {
            path: path.into(),
            message: message.into(),
        })
    }

    #[doc(hidden)]
    pub fn protocol(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Protocol {
            message: message.into(),
        })
    }

    #[doc(hidden)]
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Unavailable {
            message: message.into(),
        })
    }

    #[doc(hidden)]
    pub fn config(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Config {
            message: message.into(),
        })
    }

    #[doc(hidden)]
    pub fn timeout(limit: Duration) -> Self {
        Self::new(ErrorKind::Timeout {
            limit_ms: u64::try_from(limit.as_millis()).unwrap_or(u64::MAX),
        })
    }

    #[doc(hidden)]
    pub fn panic(message: impl Into<String>) -> Self {
        Self::new(ErrorKind::Panic {
            message: message.into(),
        })
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if let Some(task) = self.task {
            write!(f, "task {task}: ")?;
        }
        if let Some(stage) = self.stage {
            write!(f, "flow stage {stage}: ")?;
        }
        match (&self.function, &self.invocation) {
            (Some(function), Some(invocation)) => {
                write!(
                    f,
                    "function `{function}` (invocation {invocation}) {}",
                    self.kind
                )
            }
            (Some(function), None) => write!(f, "function `{function}` {}", self.kind),
            (None, Some(invocation)) => write!(f, "invocation {invocation} {}", self.kind),
            (None, None) => write!(f, "{}", self.kind),
        }
    }
}

/// Debug shows the message, as `main` prints it when returning `Err`.
impl fmt::Debug for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl std::error::Error for Error {}

/// The message of a panic payload (`&str` or `String`; anything else is opaque).
#[doc(hidden)]
pub fn panic_message(payload: &(dyn std::any::Any + Send)) -> String {
    if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_owned()
    } else if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else {
        "a non-string panic payload".to_owned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_name_function_and_cause() {
        let error =
            Error::bad_input("n", "invalid type: string \"x\", expected u32").in_function("app::f");
        assert_eq!(
            error.to_string(),
            "function `app::f` bad input at `n`: invalid type: string \"x\", expected u32"
        );
        let crashed = Error::new(ErrorKind::WorkerCrashed {
            reason: ExitReason::Signal(libc::SIGABRT),
        });
        assert_eq!(
            crashed.to_string(),
            "worker crashed: killed by signal 6 (SIGABRT, aborted)"
        );
        assert_eq!(
            Error::timeout(Duration::from_millis(1500)).to_string(),
            "timed out after 1500 ms"
        );
    }

    #[test]
    fn json_is_flat() {
        let error = Error::bad_input("b", "expected i64").in_function("app::add");
        let json = serde_json::to_value(&error).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"kind": "bad_input", "path": "b", "message": "expected i64", "function": "app::add"})
        );
    }

    #[test]
    fn round_trips_as_json() {
        let error = Error::new(ErrorKind::OutOfMemory {
            limit_mb: 256,
            used_mb: 300,
        })
        .in_function("app::hog");
        let json = serde_json::to_string(&error).unwrap();
        assert_eq!(serde_json::from_str::<Error>(&json).unwrap(), error);
    }
}
