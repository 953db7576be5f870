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

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

pub use self::http::HttpConfig;
pub use self::lambda::{LambdaConfig, LambdaHttp};
pub use self::local::LocalConfig;
pub use self::openwhisk::OpenWhiskConfig;
pub use self::retry::RetryPolicy;
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
        Ok(Self::named()?.unwrap_or_default())
    }

    /// The backend `FERRY_BACKEND` names, if set: a host defaults to `local`, a worker to
    /// itself.
    pub(crate) fn named() -> Result<Option<Self>> {
        crate::config::BACKEND.word()?.map(str::parse).transpose()
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

/// How a context reaches a platform: one implementation per platform's client, so adding a
/// platform is one folder here and one arm in [`Context::new`].
pub(crate) trait Transport: Send + Sync + 'static {
    /// Which backend this is.
    fn kind(&self) -> BackendKind;

    /// Sends encoded arguments; `descriptor` is known when the function is registered here.
    fn invoke(
        &self,
        ctx: &Context,
        envelope: Envelope,
        payload: Bytes,
        descriptor: Option<&'static FunctionDescriptor>,
    ) -> BoxFuture<'static, Result<Bytes>>;

    /// What the backend has done so far.
    fn stats(&self) -> BackendStats;

    /// How typed calls encode arguments and outputs: platforms whose events are JSON take JSON.
    fn codec(&self) -> crate::Codec {
        crate::Codec::Binary
    }

    /// Whether shared values can travel by id: the backend gets a blob to a worker that lacks it.
    fn delivers_shared(&self) -> bool {
        false
    }

    /// Whether functions run in this process (typed calls then skip encoding).
    fn in_process(&self) -> bool {
        false
    }

    /// The output inside the platform's wrapping, when it may wrap one (OpenWhisk answers a
    /// result that is not a JSON object as `{"result": …}`).
    fn unwrap_output(&self, _output: &[u8]) -> Option<Vec<u8>> {
        None
    }

    /// Per function, the invocations that waited for a worker to start.
    fn cold_starts_by_function(&self) -> HashMap<String, u64> {
        HashMap::new()
    }

    /// Stops the backend's workers, if it runs any.
    fn shutdown(&self) {}
}

/// A context's backend: a shared [`Transport`].
#[derive(Clone)]
pub(crate) struct Backend(Arc<dyn Transport>);

impl Backend {
    pub(crate) fn new(transport: impl Transport) -> Self {
        Self(Arc::new(transport))
    }

    pub(crate) fn kind(&self) -> BackendKind {
        self.0.kind()
    }

    /// How typed calls encode arguments and outputs.
    pub(crate) fn wire_codec(&self) -> crate::Codec {
        self.0.codec()
    }

    /// Whether shared values can travel by id.
    pub(crate) fn delivers_shared(&self) -> bool {
        self.0.delivers_shared()
    }

    /// Whether functions run in this process.
    pub(crate) fn in_process(&self) -> bool {
        self.0.in_process()
    }

    /// Decodes a typed call's output, unwrapping it from the platform's wrapping when the whole
    /// does not decode.
    pub(crate) fn decode_output<T: serde::de::DeserializeOwned>(&self, output: &[u8]) -> Result<T> {
        decode_output(self.wire_codec(), output, |output| {
            self.0.unwrap_output(output)
        })
    }

    /// The output inside the platform's wrapping, when there may be one.
    pub(crate) fn unwrapped_output(&self, output: &[u8]) -> Option<Vec<u8>> {
        self.0.unwrap_output(output)
    }

    pub(crate) fn stats(&self) -> BackendStats {
        self.0.stats()
    }

    /// Per function, the invocations that waited for a worker to start.
    pub(crate) fn cold_starts_by_function(&self) -> HashMap<String, u64> {
        self.0.cold_starts_by_function()
    }

    /// Sends encoded arguments; `descriptor` is known when the function is registered here.
    pub(crate) fn invoke(
        &self,
        ctx: &Context,
        envelope: Envelope,
        payload: Bytes,
        descriptor: Option<&'static FunctionDescriptor>,
    ) -> BoxFuture<'static, Result<Bytes>> {
        self.0.invoke(ctx, envelope, payload, descriptor)
    }

    pub(crate) async fn shutdown(&self) {
        self.0.shutdown();
    }
}

/// Decodes `output` in `codec`; when the whole does not decode, what `unwrap` finds inside it.
pub(crate) fn decode_output<T: serde::de::DeserializeOwned>(
    codec: crate::Codec,
    output: &[u8],
    unwrap: impl FnOnce(&[u8]) -> Option<Vec<u8>>,
) -> Result<T> {
    let whole = match codec.decode::<T>(output) {
        Ok(value) => return Ok(value),
        Err(e) => e,
    };
    match unwrap(output) {
        Some(inner) => codec
            .decode(&inner)
            .map_err(|e| Error::protocol(format!("cannot decode the output: {e}"))),
        None => Err(Error::protocol(format!(
            "cannot decode the output: {whole}"
        ))),
    }
}

/// Contexts on each platform. They live with the platforms, so the context itself knows only
/// the `Transport` trait.
impl Context {
    /// A context on the given backend, configured from the environment
    /// (see [`LocalConfig::from_env`]).
    pub fn new(kind: BackendKind) -> Result<Self> {
        crate::config::check()?;
        crate::role::check_may_host(false, true)?;
        match kind {
            BackendKind::Inline => Ok(Self::inline()),
            BackendKind::Local => Self::local(LocalConfig::from_env()?),
            BackendKind::Http => Self::http(HttpConfig::from_env()?),
            BackendKind::OpenWhisk => Self::openwhisk(OpenWhiskConfig::from_env()?),
            BackendKind::Lambda => Self::lambda(LambdaConfig::from_env()?),
        }
    }

    /// The backend named by `FERRY_BACKEND` (default `local`).
    pub fn from_env() -> Result<Self> {
        Self::new(BackendKind::from_env()?)
    }

    /// Functions run as tasks of this process: the monolith.
    pub fn inline() -> Self {
        Self::with_backend(Backend::new(inline::Inline))
    }

    /// Functions served over HTTP (by `FERRY_ROLE=http` processes: Knative, Cloud Run,
    /// OpenFaaS…).
    pub fn http(config: HttpConfig) -> Result<Self> {
        crate::config::check()?;
        crate::role::check_may_host(false, true)?;
        Ok(Self::with_backend(Backend::new(Arc::new(
            http::client::HttpBackend::new(config)?,
        ))))
    }

    /// Functions deployed as OpenWhisk actions, invoked through the controller's REST API.
    pub fn openwhisk(config: OpenWhiskConfig) -> Result<Self> {
        crate::config::check()?;
        crate::role::check_may_host(false, true)?;
        Ok(Self::with_backend(Backend::new(Arc::new(
            openwhisk::client::OpenWhiskBackend::new(config)?,
        ))))
    }

    /// Functions deployed on AWS Lambda, invoked through the SigV4-signed Invoke API.
    pub fn lambda(config: LambdaConfig) -> Result<Self> {
        crate::config::check()?;
        crate::role::check_may_host(false, true)?;
        Ok(Self::with_backend(Backend::new(Arc::new(
            lambda::client::LambdaBackend::new(config)?,
        ))))
    }

    /// The embedded local platform with explicit settings.
    pub fn local(config: LocalConfig) -> Result<Self> {
        crate::config::check()?;
        Ok(Self::with_backend(Backend::new(local::LocalBackend::new(
            config,
        )?)))
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
