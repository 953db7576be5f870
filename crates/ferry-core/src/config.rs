//! Every `FERRY_*` setting, declared once: its name, what it takes, its default and what it
//! means. Settings are read through a [`Source`] (the process environment, or a map in tests)
//! with one rule for every kind of value:
//!
//! - unset and empty are the same: the default applies;
//! - a flag is `1`, `true`, `yes` or `on`, or `0`, `false`, `no` or `off` (any case);
//! - a bad value is a [`Config`](crate::ErrorKind::Config) error that names the variable and
//!   what it accepts; nothing falls back silently.
//!
//! [`check`] reads them all, so a program that enters through `ferry::run` or builds a
//! `Context` stops at a bad value before anything else runs.

use std::collections::BTreeMap;
use std::str::FromStr;

use crate::{Error, Result};

/// What a setting's value may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Takes {
    /// On or off, by the one boolean rule.
    Flag,
    /// A whole number (0 allowed).
    Count,
    /// A whole number above 0.
    Positive,
    /// One of these words.
    OneOf(&'static [&'static str]),
    /// Free text (a URL, a path, a template, a token).
    Text,
    /// `name=target,name=target`.
    Routes,
    /// `host:port`.
    Address,
}

impl Takes {
    /// What the value must be, for an error message.
    fn accepted(self) -> String {
        match self {
            Self::Flag => "one of 1, true, yes, on, 0, false, no, off".to_owned(),
            Self::Count => "a whole number".to_owned(),
            Self::Positive => "a whole number above 0".to_owned(),
            Self::OneOf(words) => format!(
                "one of {}",
                words
                    .iter()
                    .map(|w| format!("`{w}`"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            Self::Text => "text".to_owned(),
            Self::Routes => "`name=target` entries separated by commas".to_owned(),
            Self::Address => "`host:port`".to_owned(),
        }
    }
}

/// Who sets a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SetBy {
    /// The user, the operator or a deploy tool: documented in the README's table.
    User,
    /// ferry itself, on the processes it starts.
    Ferry,
}

/// One `FERRY_*` setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub struct Setting {
    /// The variable.
    pub name: &'static str,
    /// What its value may be.
    pub takes: Takes,
    /// What applies when it is unset, as the README says it.
    pub default: &'static str,
    /// What it does.
    pub meaning: &'static str,
    /// Who sets it.
    pub set_by: SetBy,
}

/// Where settings are read from.
pub trait Source {
    /// The variable's value, if set.
    fn get(&self, name: &str) -> Option<String>;
}

/// The process environment.
#[derive(Debug, Clone, Copy, Default)]
pub struct Environment;

impl Source for Environment {
    fn get(&self, name: &str) -> Option<String> {
        std::env::var(name).ok()
    }
}

/// A lookup function is a source too.
impl<F: Fn(&str) -> Option<String>> Source for F {
    fn get(&self, name: &str) -> Option<String> {
        self(name)
    }
}

impl Source for BTreeMap<String, String> {
    fn get(&self, name: &str) -> Option<String> {
        BTreeMap::get(self, name).cloned()
    }
}

impl Source for [(&str, &str)] {
    fn get(&self, name: &str) -> Option<String> {
        self.iter()
            .find(|(key, _)| *key == name)
            .map(|(_, value)| (*value).to_owned())
    }
}

impl Setting {
    /// The value in `source`, unless unset or empty.
    pub fn text_in(&self, source: &(impl Source + ?Sized)) -> Option<String> {
        source.get(self.name).filter(|v| !v.trim().is_empty())
    }

    /// The value in the environment, unless unset or empty.
    pub fn text(&self) -> Option<String> {
        self.text_in(&Environment)
    }

    /// The flag in `source` (`false` when unset).
    pub fn flag_in(&self, source: &(impl Source + ?Sized)) -> Result<bool> {
        let Some(value) = self.text_in(source) else {
            return Ok(false);
        };
        match value.trim().to_ascii_lowercase().as_str() {
            "1" | "true" | "yes" | "on" => Ok(true),
            "0" | "false" | "no" | "off" => Ok(false),
            _ => Err(self.invalid(&value)),
        }
    }

    /// The flag in the environment (`false` when unset).
    pub fn flag(&self) -> Result<bool> {
        self.flag_in(&Environment)
    }

    /// The number in `source`, if set.
    pub fn number_in<T: FromStr + PartialOrd + Default>(
        &self,
        source: &(impl Source + ?Sized),
    ) -> Result<Option<T>> {
        let Some(value) = self.text_in(source) else {
            return Ok(None);
        };
        match value.trim().parse::<T>() {
            Ok(n) if self.takes != Takes::Positive || n > T::default() => Ok(Some(n)),
            _ => Err(self.invalid(&value)),
        }
    }

    /// The number in the environment, if set.
    pub fn number<T: FromStr + PartialOrd + Default>(&self) -> Result<Option<T>> {
        self.number_in(&Environment)
    }

    /// The word in `source`, if set: one of [`Takes::OneOf`]'s.
    pub fn word_in(&self, source: &(impl Source + ?Sized)) -> Result<Option<&'static str>> {
        let Some(value) = self.text_in(source) else {
            return Ok(None);
        };
        let Takes::OneOf(words) = self.takes else {
            return Err(self.invalid(&value));
        };
        words
            .iter()
            .copied()
            .find(|word| *word == value.trim())
            .map(Some)
            .ok_or_else(|| self.invalid(&value))
    }

    /// The word in the environment, if set.
    pub fn word(&self) -> Result<Option<&'static str>> {
        self.word_in(&Environment)
    }

    /// The `name=target` routes in `source` (empty when unset).
    pub fn routes_in(&self, source: &(impl Source + ?Sized)) -> Result<BTreeMap<String, String>> {
        let Some(value) = self.text_in(source) else {
            return Ok(BTreeMap::new());
        };
        value
            .split(',')
            .map(str::trim)
            .filter(|entry| !entry.is_empty())
            .map(|entry| match entry.split_once('=') {
                Some((name, target)) if !name.trim().is_empty() && !target.trim().is_empty() => {
                    Ok((name.trim().to_owned(), target.trim().to_owned()))
                }
                _ => Err(Error::config(format!(
                    "`{}` must be {}; `{entry}` is not",
                    self.name,
                    self.takes.accepted()
                ))),
            })
            .collect()
    }

    /// The routes in the environment.
    pub fn routes(&self) -> Result<BTreeMap<String, String>> {
        self.routes_in(&Environment)
    }

    /// The error for a value this setting does not take.
    pub fn invalid(&self, value: &str) -> Error {
        Error::config(format!(
            "`{}` must be {}, not `{value}`",
            self.name,
            self.takes.accepted()
        ))
    }

    /// Checks the value in `source` against what the setting takes.
    fn check_in(&self, source: &(impl Source + ?Sized)) -> Result<()> {
        match self.takes {
            Takes::Flag => self.flag_in(source).map(drop),
            Takes::Count | Takes::Positive => self.number_in::<u64>(source).map(drop),
            Takes::OneOf(_) => self.word_in(source).map(drop),
            Takes::Routes => self.routes_in(source).map(drop),
            Takes::Address => match self.text_in(source) {
                Some(value) if value.parse::<std::net::SocketAddr>().is_err() => {
                    Err(self.invalid(&value))
                }
                _ => Ok(()),
            },
            Takes::Text => Ok(()),
        }
    }
}

const fn user(
    name: &'static str,
    takes: Takes,
    default: &'static str,
    meaning: &'static str,
) -> Setting {
    Setting {
        name,
        takes,
        default,
        meaning,
        set_by: SetBy::User,
    }
}

/// The backends, as `--backend` and `FERRY_BACKEND` name them.
const BACKENDS: &[&str] = &["inline", "local", "http", "openwhisk", "lambda"];

/// Where functions run.
pub const BACKEND: Setting = user(
    "FERRY_BACKEND",
    Takes::OneOf(BACKENDS),
    "`local` (in a worker: the worker itself)",
    "where functions run: `inline`, `local`, `http`, `openwhisk` or `lambda`",
);
/// What this process is.
pub const ROLE: Setting = user(
    "FERRY_ROLE",
    Takes::OneOf(&[
        "host",
        "local-worker",
        "openwhisk",
        "actionloop",
        "http",
        "lambda",
        "manifest",
    ]),
    "`host` (or what started it: Lambda, the ActionLoop proxy)",
    "what the binary runs as: `host`, `http`, `openwhisk`, `actionloop`, `lambda` or `manifest`",
);
/// The function an instance serves.
pub const FUNCTION: Setting = user(
    "FERRY_FUNCTION",
    Takes::Text,
    "the one the platform names, else the only one",
    "the function an OpenWhisk action or Lambda function serves (name or id)",
);
/// The deployed application's name.
pub const APP: Setting = user(
    "FERRY_APP",
    Takes::Text,
    "none",
    "the app whose deployed functions the `openwhisk` and `lambda` backends call",
);
/// ferry's own logs.
pub const LOG: Setting = user(
    "FERRY_LOG",
    Takes::Text,
    "off",
    "log filter for ferry's own logs on stderr, e.g. `debug` (a span per invocation)",
);
/// The run report.
pub const REPORT: Setting = user(
    "FERRY_REPORT",
    Takes::Flag,
    "off",
    "print the run report (per function calls, errors, cold starts, p50/p99, Lambda cost) on exit",
);
/// Progress bars.
pub const PROGRESS: Setting = user(
    "FERRY_PROGRESS",
    Takes::OneOf(&["auto", "always", "never"]),
    "`auto`: on a terminal",
    "`always` or `never` show progress bars for fan-outs",
);
/// Most local workers.
pub const LOCAL_WORKERS: Setting = user(
    "FERRY_LOCAL_WORKERS",
    Takes::Positive,
    "number of cores",
    "most worker processes of the local platform",
);
/// Idle local workers stop.
pub const LOCAL_IDLE_MS: Setting = user(
    "FERRY_LOCAL_IDLE_MS",
    Takes::Count,
    "30000",
    "stop a local worker idle this long (ms)",
);
/// Memory limit of a local worker.
pub const LOCAL_MEMORY_MB: Setting = user(
    "FERRY_LOCAL_MEMORY_MB",
    Takes::Count,
    "largest `memory_mb` of the program",
    "memory limit per local worker in MiB (0 = none)",
);
/// Work sent ahead to a local worker.
pub const LOCAL_PREFETCH: Setting = user(
    "FERRY_LOCAL_PREFETCH",
    Takes::Count,
    "0",
    "invocations sent to a local worker ahead of a free slot",
);
/// How often the local platform retries an invocation whose worker failed under it.
pub const LOCAL_RETRIES: Setting = user(
    "FERRY_LOCAL_RETRIES",
    Takes::Count,
    "3 for `idempotent` functions, else 0",
    "times the local platform runs an invocation again when its worker crashed or was stopped under it (never for its own error, timeout or memory); set, it applies to every function",
);
/// The local worker executable.
pub const WORKER_EXE: Setting = user(
    "FERRY_WORKER_EXE",
    Takes::Text,
    "this executable",
    "the executable local workers run",
);
/// Async threads per local worker.
pub const WORKER_THREADS: Setting = user(
    "FERRY_WORKER_THREADS",
    Takes::Positive,
    "tokio's default (cores, or `TOKIO_WORKER_THREADS`)",
    "async runtime threads per local worker",
);
/// Where a server listens.
pub const LISTEN: Setting = user(
    "FERRY_LISTEN",
    Takes::Address,
    "`0.0.0.0:$PORT`, else `0.0.0.0:8080`",
    "where the HTTP service, the OpenWhisk runtime or a web app listens (`host:port`; port 0 picks one)",
);
/// A bearer token for the HTTP service.
pub const AUTH_TOKEN: Setting = user(
    "FERRY_AUTH_TOKEN",
    Takes::Text,
    "none",
    "bearer token the HTTP service requires and the `http` backend sends",
);
/// Largest request body of the HTTP service.
pub const HTTP_MAX_BODY: Setting = user(
    "FERRY_HTTP_MAX_BODY",
    Takes::Positive,
    "6291456 (6 MiB)",
    "largest request body the HTTP service takes, in bytes",
);
/// How long a client of a server may take over a request's headers.
pub const HTTP_HEADER_TIMEOUT_MS: Setting = user(
    "FERRY_HTTP_HEADER_TIMEOUT_MS",
    Takes::Positive,
    "10000",
    "longest a client of a ferry server may take to start a request on a new connection, and to send its headers from their first byte (ms)",
);
/// How long a kept-alive connection may stay idle between requests.
pub const HTTP_IDLE_TIMEOUT_MS: Setting = user(
    "FERRY_HTTP_IDLE_TIMEOUT_MS",
    Takes::Count,
    "300000 (5 min); the OpenWhisk runtime: never",
    "longest a kept-alive connection to a ferry server may stay idle between requests (ms); 0: never",
);
/// How long a client of a server may take over a request's body.
pub const HTTP_BODY_TIMEOUT_MS: Setting = user(
    "FERRY_HTTP_BODY_TIMEOUT_MS",
    Takes::Positive,
    "30000",
    "longest a client of the HTTP service or the OpenWhisk runtime may take to send a request's body (ms); then 408",
);
/// Most connections a server holds.
pub const HTTP_MAX_CONNECTIONS: Setting = user(
    "FERRY_HTTP_MAX_CONNECTIONS",
    Takes::Positive,
    "1024, at most the open-file limit less 64",
    "most connections a ferry server holds open; more wait in the listen queue, and while one waits, held connections close after the request they are answering",
);
/// Most request bytes a server holds at once.
pub const HTTP_MAX_BYTES_IN_FLIGHT_MB: Setting = user(
    "FERRY_HTTP_MAX_BYTES_IN_FLIGHT_MB",
    Takes::Positive,
    "64",
    "most request bytes the HTTP service or the OpenWhisk runtime holds at once, in MiB; more requests wait before their bodies are read",
);
/// How long a server drains after SIGTERM.
pub const HTTP_DRAIN_MS: Setting = user(
    "FERRY_HTTP_DRAIN_MS",
    Takes::Count,
    "25000",
    "after SIGTERM, longest a ferry server waits for in-flight requests before it exits (ms)",
);
/// The HTTP service's base URL.
pub const HTTP_URL: Setting = user(
    "FERRY_HTTP_URL",
    Takes::Text,
    "none",
    "base URL of the HTTP service the `http` backend calls",
);
/// One URL per function.
pub const HTTP_URL_TEMPLATE: Setting = user(
    "FERRY_HTTP_URL_TEMPLATE",
    Takes::Text,
    "none",
    "URL per function for the `http` backend, with `{name}` and `{id}`",
);
/// Functions at URLs of their own.
pub const HTTP_ROUTES: Setting = user(
    "FERRY_HTTP_ROUTES",
    Takes::Routes,
    "none",
    "`name=url,…`: functions the `http` backend finds at URLs of their own",
);
/// h2c for the `http` backend.
pub const HTTP_H2C: Setting = user(
    "FERRY_HTTP_H2C",
    Takes::Flag,
    "off",
    "the `http` backend speaks HTTP/2 without TLS",
);
/// Requests in flight from the `http` backend.
pub const HTTP_MAX_IN_FLIGHT: Setting = user(
    "FERRY_HTTP_MAX_IN_FLIGHT",
    Takes::Positive,
    "256",
    "most requests the `http` backend has in flight",
);
/// How long the `http` backend waits on a silent peer.
pub const HTTP_PEER_TIMEOUT_MS: Setting = user(
    "FERRY_HTTP_PEER_TIMEOUT_MS",
    Takes::Positive,
    "10000",
    "longest the `http` backend waits on a silent peer: to accept a connection, to acknowledge a request, to answer keepalive probes while a call runs (ms); then `unavailable`",
);
/// OpenWhisk action names.
pub const OPENWHISK_ACTIONS: Setting = user(
    "FERRY_OPENWHISK_ACTIONS",
    Takes::Text,
    "`{name}`",
    "action name template of the `openwhisk` backend, with `{name}` and `{id}`",
);
/// TLS checks against the OpenWhisk controller.
pub const OPENWHISK_INSECURE: Setting = user(
    "FERRY_OPENWHISK_INSECURE",
    Takes::Flag,
    "off",
    "accept the OpenWhisk controller's self-signed certificate",
);
/// How the `openwhisk` backend's typed calls encode arguments.
pub const OPENWHISK_CODEC: Setting = user(
    "FERRY_OPENWHISK_CODEC",
    Takes::OneOf(&["json", "binary-in-json"]),
    "`json`",
    "how the `openwhisk` backend's typed calls travel: JSON, or ferry's binary codec base64'd into the parameters (between ferry programs)",
);
/// Lambda function names.
pub const LAMBDA_FUNCTIONS: Setting = user(
    "FERRY_LAMBDA_FUNCTIONS",
    Takes::Text,
    "`{name}`",
    "Lambda function name template of the `lambda` backend, with `{name}` and `{id}`",
);
/// Functions deployed under names of their own.
pub const LAMBDA_ROUTES: Setting = user(
    "FERRY_LAMBDA_ROUTES",
    Takes::Routes,
    "none",
    "`name=lambda-function,…`: functions the `lambda` backend finds under names of their own",
);
/// The Lambda alias or version called.
pub const LAMBDA_QUALIFIER: Setting = user(
    "FERRY_LAMBDA_QUALIFIER",
    Takes::Text,
    "none (`$LATEST`)",
    "alias or version the `lambda` backend invokes",
);
/// The Invoke client's HTTP version.
pub const LAMBDA_HTTP: Setting = user(
    "FERRY_LAMBDA_HTTP",
    Takes::OneOf(&["auto", "h2c", "http1"]),
    "`auto`",
    "HTTP version of the `lambda` backend's Invoke client",
);
/// How the `lambda` backend's typed calls encode arguments.
pub const LAMBDA_CODEC: Setting = user(
    "FERRY_LAMBDA_CODEC",
    Takes::OneOf(&["json", "binary-in-json"]),
    "`json`",
    "how the `lambda` backend's typed calls travel: JSON, or ferry's binary codec base64'd into the event (between ferry programs)",
);
/// The Invoke client's connections.
pub const LAMBDA_CONNECTIONS: Setting = user(
    "FERRY_LAMBDA_CONNECTIONS",
    Takes::Positive,
    "16",
    "connections of the `lambda` backend's Invoke client",
);
/// The IAM role `ferry deploy` gives Lambda functions.
pub const LAMBDA_ROLE: Setting = user(
    "FERRY_LAMBDA_ROLE",
    Takes::Text,
    "none",
    "the IAM role (ARN) `ferry deploy --platform lambda` gives the functions",
);
/// The shared-value cache.
pub const SHARED_CACHE_MB: Setting = user(
    "FERRY_SHARED_CACHE_MB",
    Takes::Count,
    "64",
    "MiB of shared values a process caches, counted by their encoded blobs",
);
/// The bucket for what Lambda's limits cannot carry.
pub const STORE: Setting = user(
    "FERRY_STORE",
    Takes::Text,
    "none",
    "`s3://bucket/prefix`: where the `lambda` and `openwhisk` backends and runtimes put arguments and outputs over the platform's payload limit, and shared values (once each); host and functions need the same",
);
/// The Redis of `ferry::state`.
pub const REDIS_URL: Setting = user(
    "FERRY_REDIS_URL",
    Takes::Text,
    "none",
    "the Redis that holds `ferry::state` handles, e.g. `redis://127.0.0.1:6379`",
);
/// Set by the local platform on its workers: the host's pid.
pub const LOCAL_HOST_PID: Setting = Setting {
    name: "FERRY_LOCAL_HOST_PID",
    takes: Takes::Count,
    default: "none",
    meaning: "the host that started this local worker",
    set_by: SetBy::Ferry,
};
/// Set by the local platform on its workers: the worker's number.
pub const WORKER_ID: Setting = Setting {
    name: "FERRY_WORKER_ID",
    takes: Takes::Count,
    default: "none",
    meaning: "which local worker this is",
    set_by: SetBy::Ferry,
};

/// Every setting.
pub const ALL: &[Setting] = &[
    BACKEND,
    ROLE,
    FUNCTION,
    APP,
    LOG,
    REPORT,
    PROGRESS,
    LOCAL_WORKERS,
    LOCAL_IDLE_MS,
    LOCAL_MEMORY_MB,
    LOCAL_PREFETCH,
    LOCAL_RETRIES,
    WORKER_EXE,
    WORKER_THREADS,
    LISTEN,
    AUTH_TOKEN,
    HTTP_MAX_BODY,
    HTTP_HEADER_TIMEOUT_MS,
    HTTP_IDLE_TIMEOUT_MS,
    HTTP_BODY_TIMEOUT_MS,
    HTTP_MAX_CONNECTIONS,
    HTTP_MAX_BYTES_IN_FLIGHT_MB,
    HTTP_DRAIN_MS,
    HTTP_URL,
    HTTP_URL_TEMPLATE,
    HTTP_ROUTES,
    HTTP_H2C,
    HTTP_MAX_IN_FLIGHT,
    HTTP_PEER_TIMEOUT_MS,
    OPENWHISK_ACTIONS,
    OPENWHISK_INSECURE,
    OPENWHISK_CODEC,
    LAMBDA_FUNCTIONS,
    LAMBDA_ROUTES,
    LAMBDA_QUALIFIER,
    LAMBDA_HTTP,
    LAMBDA_CODEC,
    LAMBDA_CONNECTIONS,
    LAMBDA_ROLE,
    SHARED_CACHE_MB,
    STORE,
    REDIS_URL,
    LOCAL_HOST_PID,
    WORKER_ID,
];

/// Checks every setting in `source`: the first bad value is the error. `FERRY_BACKEND` is
/// checked where it is read instead, since a program's `--backend` overrides it.
pub fn check_in(source: &(impl Source + ?Sized)) -> Result<()> {
    ALL.iter()
        .filter(|setting| setting.name != BACKEND.name)
        .try_for_each(|setting| setting.check_in(source))
}

/// Checks every setting in the environment.
pub fn check() -> Result<()> {
    check_in(&Environment)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn source(pairs: &[(&'static str, &'static str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    #[test]
    fn one_rule_for_flags() {
        for on in ["1", "true", "TRUE", "yes", "on"] {
            assert!(
                REPORT.flag_in(&source(&[("FERRY_REPORT", on)])).unwrap(),
                "{on}"
            );
        }
        for off in ["0", "false", "no", "Off", "", " "] {
            assert!(
                !REPORT.flag_in(&source(&[("FERRY_REPORT", off)])).unwrap(),
                "{off}"
            );
        }
        assert!(!REPORT.flag_in(&source(&[])).unwrap());
        let error = REPORT
            .flag_in(&source(&[("FERRY_REPORT", "maybe")]))
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid configuration: `FERRY_REPORT` must be one of 1, true, yes, on, 0, false, no, off, not `maybe`"
        );
    }

    #[test]
    fn bad_values_name_the_variable_and_what_it_takes() {
        let cases: &[(&str, &str, &str)] = &[
            ("FERRY_LOCAL_WORKERS", "0", "a whole number above 0"),
            ("FERRY_LOCAL_WORKERS", "many", "a whole number above 0"),
            ("FERRY_LOCAL_IDLE_MS", "-5", "a whole number"),
            ("FERRY_LISTEN", "8080", "`host:port`"),
            ("FERRY_HTTP_ROUTES", "add", "`name=target` entries"),
            (
                "FERRY_PROGRESS",
                "sometimes",
                "one of `auto`, `always`, `never`",
            ),
        ];
        for (name, value, accepted) in cases {
            let pairs = [(*name, *value)];
            let error = check_in(&pairs[..]).unwrap_err();
            let message = error.to_string();
            assert!(
                message.contains(&format!("`{name}`")) && message.contains(accepted),
                "{name}={value}: {message}"
            );
        }
        check_in(&source(&[
            ("FERRY_LOCAL_WORKERS", "4"),
            ("FERRY_LISTEN", "127.0.0.1:0"),
        ]))
        .unwrap();
    }

    #[test]
    fn every_name_is_declared_once() {
        let mut names: Vec<_> = ALL.iter().map(|s| s.name).collect();
        names.sort_unstable();
        let before = names.len();
        names.dedup();
        assert_eq!(before, names.len(), "a setting is declared twice");
        assert!(names.iter().all(|n| n.starts_with("FERRY_")));
    }
}
