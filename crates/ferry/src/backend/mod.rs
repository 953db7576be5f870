//! Where invocations run. A [`Context`] holds one backend:
//!
//! - `inline`: tasks of this process (the monolith);
//! - `local`: the embedded local platform, warm worker processes of this executable;
//! - `http`: functions served over HTTP by ferry's service mode (Knative, Cloud Run, OpenFaaS);
//! - `openwhisk`: functions deployed as OpenWhisk actions, through the controller's REST API;
//! - `lambda`: functions deployed on AWS Lambda, through the SigV4-signed Invoke API.

pub(crate) mod http;
pub(crate) mod inline;
pub(crate) mod lambda;
pub(crate) mod local;
pub(crate) mod openwhisk;
pub(crate) mod retry;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

pub use self::http::HttpConfig;
pub use self::lambda::{LambdaConfig, LambdaHttp};
pub use self::local::LocalConfig;
pub use self::openwhisk::OpenWhiskConfig;
pub use self::retry::RetryPolicy;
use crate::context::Invocation;
use crate::registry::Registration;
use crate::serve::local::ParentLink;
use crate::wire::Envelope;
use crate::{Context, Error, FunctionDescriptor, Result};

/// A backend by name, as given to `--backend` or `FERRY_BACKEND`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default, clap::ValueEnum,
)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum BackendKind {
    /// Functions run as tasks of the calling process.
    Inline,
    /// Functions run in warm worker processes of this executable.
    #[default]
    Local,
    /// Functions served over HTTP (`FERRY_HTTP_URL`).
    Http,
    /// Functions deployed as OpenWhisk actions (`__OW_API_HOST` or a wskprops file).
    #[serde(rename = "openwhisk")]
    #[value(name = "openwhisk")]
    OpenWhisk,
    /// Functions deployed on AWS Lambda (credentials and region as the AWS CLI finds them).
    Lambda,
}

impl BackendKind {
    /// Every backend, for help texts.
    pub const ALL: &'static [BackendKind] = &[
        Self::Inline,
        Self::Local,
        Self::Http,
        Self::OpenWhisk,
        Self::Lambda,
    ];

    /// `FERRY_BACKEND`, or `local` when unset.
    pub fn from_env() -> Result<Self> {
        match std::env::var("FERRY_BACKEND") {
            Ok(name) if !name.is_empty() => name.parse(),
            _ => Ok(Self::default()),
        }
    }

    /// The name as written on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Self::Inline => "inline",
            Self::Local => "local",
            Self::Http => "http",
            Self::OpenWhisk => "openwhisk",
            Self::Lambda => "lambda",
        }
    }
}

impl std::str::FromStr for BackendKind {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        Self::ALL
            .iter()
            .copied()
            .find(|kind| kind.name() == s)
            .ok_or_else(|| {
                Error::config(format!(
                    "unknown backend `{s}`; expected one of {}",
                    Self::ALL
                        .iter()
                        .map(|k| format!("`{}`", k.name()))
                        .collect::<Vec<_>>()
                        .join(", ")
                ))
            })
    }
}

impl std::fmt::Display for BackendKind {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// What a backend has done so far.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct BackendStats {
    /// The backend.
    pub backend: BackendKind,
    /// Most workers it may run at once. For `inline`, the cores of the calling process, whose
    /// threads run the bodies.
    pub max_workers: usize,
    /// Workers alive now (`inline`: the calling process, 1).
    pub workers: usize,
    /// Worker processes started (each one a cold start).
    pub cold_starts: u64,
    /// Invocations submitted.
    pub invocations: u64,
    /// Per function, the calls made through the context asked (see
    /// [`Context::stats`](crate::Context::stats)), by id.
    pub functions: Vec<crate::metrics::FunctionStats>,
}

#[derive(Clone)]
pub(crate) enum Backend {
    Inline,
    Local(Arc<local::LocalBackend>),
    Http(Arc<http::HttpBackend>),
    OpenWhisk(Arc<openwhisk::OpenWhiskBackend>),
    Lambda(Arc<lambda::LambdaBackend>),
    /// Inside a local worker: invocations go back to the host's platform.
    Parent(Arc<ParentLink>),
}

impl Backend {
    pub(crate) fn local(config: LocalConfig) -> Result<Self> {
        Ok(Self::Local(Arc::new(local::LocalBackend::new(config)?)))
    }

    pub(crate) fn kind(&self) -> BackendKind {
        match self {
            Self::Inline => BackendKind::Inline,
            Self::Local(_) | Self::Parent(_) => BackendKind::Local,
            Self::Http(_) => BackendKind::Http,
            Self::OpenWhisk(_) => BackendKind::OpenWhisk,
            Self::Lambda(_) => BackendKind::Lambda,
        }
    }

    /// How typed calls encode arguments and outputs: platforms whose events are JSON get JSON.
    pub(crate) fn wire_codec(&self) -> crate::Codec {
        match self {
            Self::OpenWhisk(_) | Self::Lambda(_) => crate::Codec::Json,
            _ => crate::Codec::Binary,
        }
    }

    /// Whether shared values can travel by id: the backend gets a blob to a worker that lacks it.
    pub(crate) fn delivers_shared(&self) -> bool {
        matches!(self, Self::Local(_) | Self::Http(_))
    }

    /// Decodes a typed call's output.
    pub(crate) fn decode_output<T: serde::de::DeserializeOwned>(&self, output: &[u8]) -> Result<T> {
        match self {
            Self::OpenWhisk(_) => openwhisk::decode_result(output),
            _ => self
                .wire_codec()
                .decode(output)
                .map_err(|e| Error::protocol(format!("cannot decode the output: {e}"))),
        }
    }

    /// The output inside a platform's wrapping, when there may be one: OpenWhisk answers a
    /// result that is not a JSON object as `{"result": …}`.
    pub(crate) fn unwrapped_output(&self, output: &[u8]) -> Option<Vec<u8>> {
        let Self::OpenWhisk(_) = self else {
            return None;
        };
        match serde_json::from_slice::<serde_json::Value>(output) {
            Ok(serde_json::Value::Object(mut object)) if object.len() == 1 => {
                serde_json::to_vec(&object.remove("result")?).ok()
            }
            _ => None,
        }
    }

    pub(crate) fn stats(&self) -> BackendStats {
        match self {
            Self::Inline => BackendStats {
                backend: BackendKind::Inline,
                max_workers: std::thread::available_parallelism().map_or(1, usize::from),
                workers: 1,
                cold_starts: 0,
                invocations: inline::invocations(),
                functions: Vec::new(),
            },
            Self::Local(local) => local.stats(),
            Self::Http(http) => http.stats(),
            Self::OpenWhisk(openwhisk) => openwhisk.stats(),
            Self::Lambda(lambda) => lambda.stats(),
            Self::Parent(parent) => parent.stats(),
        }
    }

    /// Per function, the invocations that waited for a worker to start.
    pub(crate) fn cold_starts_by_function(&self) -> std::collections::HashMap<String, u64> {
        match self {
            Self::Local(local) => local.cold_starts_by_function(),
            _ => std::collections::HashMap::new(),
        }
    }

    /// Sends encoded arguments; `descriptor` is known when the function is registered here.
    pub(crate) fn invoke(
        &self,
        ctx: &Context,
        envelope: Envelope,
        payload: Bytes,
        descriptor: Option<&'static FunctionDescriptor>,
    ) -> BoxFuture<'static, Result<Bytes>> {
        match self {
            Self::Inline => inline::invoke(ctx, envelope, payload),
            Self::Local(local) => local.invoke(envelope, payload, descriptor),
            Self::Http(http) => http.invoke(envelope, payload, descriptor),
            Self::OpenWhisk(openwhisk) => openwhisk.invoke(envelope, payload, descriptor),
            Self::Lambda(lambda) => lambda.invoke(envelope, payload, descriptor),
            Self::Parent(parent) => parent.invoke(envelope, payload),
        }
    }

    pub(crate) async fn shutdown(&self) {
        if let Self::Local(local) = self {
            local.shutdown();
        }
    }
}

/// Stats of a backend that only counts invocations: the platform runs and scales the workers.
pub(crate) fn remote_stats(backend: BackendKind, invocations: u64) -> BackendStats {
    BackendStats {
        backend,
        max_workers: 0,
        workers: 0,
        cold_starts: 0,
        invocations,
        functions: Vec::new(),
    }
}

/// What a platform whose events are JSON accepts, checked before anything is sent.
pub(crate) fn check_json_event(
    envelope: &Envelope,
    payload: &[u8],
    limit: usize,
    backend: BackendKind,
) -> Result<()> {
    if envelope.codec != crate::Codec::Json {
        return Err(Error::config(format!(
            "the {backend} backend sends json, not `{}`",
            envelope.codec
        )));
    }
    if payload.len() > limit {
        return Err(Error::new(crate::ErrorKind::PayloadTooLarge {
            size: payload.len() as u64,
            limit: limit as u64,
        }));
    }
    Ok(())
}

/// `name=target,name=target`: functions routed one by one (`FERRY_HTTP_ROUTES`,
/// `FERRY_LAMBDA_ROUTES`).
pub(crate) fn parse_routes(
    variable: &str,
    text: &str,
) -> Result<std::collections::BTreeMap<String, String>> {
    text.split(',')
        .map(str::trim)
        .filter(|entry| !entry.is_empty())
        .map(|entry| match entry.split_once('=') {
            Some((name, target)) if !name.trim().is_empty() && !target.trim().is_empty() => {
                Ok((name.trim().to_owned(), target.trim().to_owned()))
            }
            _ => Err(Error::config(format!(
                "`{variable}` entries are `name=target`, not `{entry}`"
            ))),
        })
        .collect()
}

/// The parameter that carries a chained flow's route ([`crate::wire::FlowRoute`]) through
/// platforms whose events are a JSON object of arguments (OpenWhisk, Lambda).
pub(crate) const FLOW_PARAM: &str = "__ferry_flow";

/// The JSON arguments with the envelope's flow route added as [`FLOW_PARAM`], if it has one.
pub(crate) fn with_flow_param(envelope: &Envelope, payload: Bytes) -> Result<Bytes> {
    let Some(route) = &envelope.flow else {
        return Ok(payload);
    };
    let mut arguments: serde_json::Map<String, serde_json::Value> =
        if payload.trim_ascii().is_empty() {
            serde_json::Map::new()
        } else {
            serde_json::from_slice(&payload).map_err(|e| {
                Error::protocol(format!(
                    "a flow stage's arguments must be a json object: {e}"
                ))
            })?
        };
    let route = serde_json::to_value(route)
        .map_err(|e| Error::protocol(format!("cannot encode the flow route: {e}")))?;
    arguments.insert(FLOW_PARAM.to_owned(), route);
    serde_json::to_vec(&arguments)
        .map(Bytes::from)
        .map_err(|e| Error::protocol(format!("cannot encode the arguments: {e}")))
}

/// Takes [`FLOW_PARAM`] out of JSON arguments: the route of the flow this invocation is a stage
/// of, if it is one.
pub(crate) fn take_flow_param(
    arguments: &mut serde_json::Value,
) -> Result<Option<crate::wire::FlowRoute>> {
    let Some(route) = arguments
        .as_object_mut()
        .and_then(|object| object.remove(FLOW_PARAM))
    else {
        return Ok(None);
    };
    serde_json::from_value(route)
        .map(Some)
        .map_err(|e| Error::bad_input(FLOW_PARAM, format!("invalid flow route: {e}")))
}

/// Whether a timed-out body may still be running on a thread that cannot be stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Overrun {
    No,
    /// A sync body outlived its timeout: its thread runs on until the process ends.
    StuckThread,
}

/// Runs a registered function in this process under its timeout (or the caller's earlier
/// deadline). Inline backends and every worker mode execute through here.
pub(crate) async fn execute(
    ctx: &Context,
    registration: &'static Registration,
    envelope: &Envelope,
    payload: Bytes,
    placement: Placement,
) -> (Result<Vec<u8>>, Overrun) {
    let descriptor = registration.descriptor();
    let mut limit = descriptor.config.timeout;
    if let Some(remaining) = envelope.remaining() {
        limit = limit.min(remaining);
    }
    let child = ctx.for_invocation(Invocation {
        function: descriptor.id.to_owned(),
        id: envelope.invocation,
        deadline: Instant::now() + limit,
        metadata: envelope.metadata.clone(),
    });
    let output_codec = envelope.reply_codec.unwrap_or(envelope.codec);
    let body = registration.run(child, envelope.codec, output_codec, payload);
    let (result, overrun) = with_timeout(body, limit, descriptor.is_async, placement).await;
    let result = result.map_err(|e| {
        e.in_function(descriptor.id)
            .in_invocation(envelope.invocation)
    });
    (result, overrun)
}

/// Where a body runs under [`with_timeout`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placement {
    /// In the calling task: the caller is already a task of its own (a worker's request).
    Here,
    /// In a new task, so a caller driving many calls from one task gets parallelism.
    Spawned,
}

/// Runs `body` under `limit`. Panics are already errors (the macro's wrappers catch them).
pub(crate) async fn with_timeout<T: Send + 'static>(
    body: BoxFuture<'static, Result<T>>,
    limit: Duration,
    is_async: bool,
    placement: Placement,
) -> (Result<T>, Overrun) {
    let stuck = if is_async {
        Overrun::No
    } else {
        Overrun::StuckThread
    };
    if placement == Placement::Here {
        return match tokio::time::timeout(limit, body).await {
            Ok(result) => (result, Overrun::No),
            Err(_) => (Err(Error::timeout(limit)), stuck),
        };
    }
    let mut task = tokio::spawn(body);
    match tokio::time::timeout(limit, &mut task).await {
        Ok(Ok(result)) => (result, Overrun::No),
        Ok(Err(joined)) if joined.is_panic() => (
            Err(Error::panic(crate::error::panic_message(
                &*joined.into_panic(),
            ))),
            Overrun::No,
        ),
        Ok(Err(joined)) => (
            Err(Error::unavailable(format!(
                "invocation task ended: {joined}"
            ))),
            Overrun::No,
        ),
        Err(_) => {
            task.abort();
            (Err(Error::timeout(limit)), stuck)
        }
    }
}
