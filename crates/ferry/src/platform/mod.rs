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
// What a platform's payload limit cannot carry, through the store.
#[cfg(all(feature = "store", any(feature = "openwhisk", feature = "lambda")))]
pub(crate) mod offload;
pub(crate) mod openwhisk;
pub(crate) mod retry;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use futures::future::BoxFuture;
use serde::{Deserialize, Serialize};

#[cfg(feature = "http")]
pub use self::http::HttpConfig;
#[cfg(feature = "lambda")]
pub use self::lambda::{LambdaCodec, LambdaConfig, LambdaHttp};
#[cfg(feature = "local")]
pub use self::local::LocalConfig;
#[cfg(feature = "openwhisk")]
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

    /// What the backend has done so far; `None` for a platform that runs and scales its own
    /// workers, where only the invocations sent are known (and counted for it).
    fn stats(&self) -> Option<BackendStats> {
        None
    }

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

    /// Per function, the invocations that waited for a worker to start.
    fn cold_starts_by_function(&self) -> HashMap<String, u64> {
        HashMap::new()
    }

    /// Stops the backend's workers, if it runs any.
    fn shutdown(&self) {}
}

#[cfg(any(feature = "http", feature = "openwhisk", feature = "lambda"))]
/// The client of a platform that runs its own workers (HTTP services, OpenWhisk, Lambda):
/// each invocation's future owns a share of the client, and only the invocations sent are
/// known (and counted by [`Backend`]).
pub(crate) trait RemoteClient: Send + Sync + 'static {
    /// Which backend this is.
    const KIND: BackendKind;
    /// How typed calls encode arguments and outputs.
    const CODEC: crate::Codec = crate::Codec::Binary;
    /// Whether shared values can travel by id.
    const DELIVERS_SHARED: bool = false;

    /// How typed calls encode arguments and outputs, when a client's settings choose it.
    fn codec(&self) -> crate::Codec {
        Self::CODEC
    }

    /// Whether shared values can travel by id, when a client's settings choose it.
    fn delivers_shared(&self) -> bool {
        Self::DELIVERS_SHARED
    }

    /// Sends encoded arguments.
    fn send(
        self: &Arc<Self>,
        envelope: Envelope,
        payload: Bytes,
        descriptor: Option<&'static FunctionDescriptor>,
    ) -> BoxFuture<'static, Result<Bytes>>;
}

#[cfg(any(feature = "http", feature = "openwhisk", feature = "lambda"))]
impl<C: RemoteClient> Transport for Arc<C> {
    fn kind(&self) -> BackendKind {
        C::KIND
    }

    fn invoke(
        &self,
        _ctx: &Context,
        envelope: Envelope,
        payload: Bytes,
        descriptor: Option<&'static FunctionDescriptor>,
    ) -> BoxFuture<'static, Result<Bytes>> {
        self.send(envelope, payload, descriptor)
    }

    fn codec(&self) -> crate::Codec {
        RemoteClient::codec(&**self)
    }

    fn delivers_shared(&self) -> bool {
        RemoteClient::delivers_shared(&**self)
    }
}

/// A context's backend: a shared [`Transport`], and the invocations sent through it.
#[derive(Clone)]
pub(crate) struct Backend(Arc<Connected>);

struct Connected {
    transport: Box<dyn Transport>,
    invocations: AtomicU64,
}

impl std::ops::Deref for Backend {
    type Target = dyn Transport;

    fn deref(&self) -> &Self::Target {
        &*self.0.transport
    }
}

impl Backend {
    pub(crate) fn new(transport: impl Transport) -> Self {
        Self(Arc::new(Connected {
            transport: Box::new(transport),
            invocations: AtomicU64::new(0),
        }))
    }

    pub(crate) fn kind(&self) -> BackendKind {
        self.0.transport.kind()
    }

    /// How typed calls encode arguments and outputs.
    pub(crate) fn wire_codec(&self) -> crate::Codec {
        self.0.transport.codec()
    }

    /// Whether shared values can travel by id.
    pub(crate) fn delivers_shared(&self) -> bool {
        self.0.transport.delivers_shared()
    }

    /// Whether functions run in this process.
    pub(crate) fn in_process(&self) -> bool {
        self.0.transport.in_process()
    }

    /// Decodes a typed call's output.
    pub(crate) fn decode_output<T: serde::de::DeserializeOwned>(&self, output: &[u8]) -> Result<T> {
        self.wire_codec()
            .decode(output)
            .map_err(|e| Error::protocol(format!("cannot decode the output: {e}")))
    }

    pub(crate) fn stats(&self) -> BackendStats {
        self.0.transport.stats().unwrap_or_else(|| BackendStats {
            backend: self.kind(),
            max_workers: 0,
            workers: 0,
            cold_starts: 0,
            invocations: self.0.invocations.load(Ordering::Relaxed),
            functions: Vec::new(),
        })
    }

    /// Per function, the invocations that waited for a worker to start.
    pub(crate) fn cold_starts_by_function(&self) -> HashMap<String, u64> {
        self.0.transport.cold_starts_by_function()
    }

    /// Sends encoded arguments; `descriptor` is known when the function is registered here.
    pub(crate) fn invoke(
        &self,
        ctx: &Context,
        envelope: Envelope,
        payload: Bytes,
        descriptor: Option<&'static FunctionDescriptor>,
    ) -> BoxFuture<'static, Result<Bytes>> {
        self.0.invocations.fetch_add(1, Ordering::Relaxed);
        self.0.transport.invoke(ctx, envelope, payload, descriptor)
    }

    pub(crate) async fn shutdown(&self) {
        self.0.transport.shutdown();
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
            #[cfg(feature = "local")]
            BackendKind::Local => Self::local(LocalConfig::from_env()?),
            #[cfg(feature = "http")]
            BackendKind::Http => Self::http(HttpConfig::from_env()?),
            #[cfg(feature = "openwhisk")]
            BackendKind::OpenWhisk => Self::openwhisk(OpenWhiskConfig::from_env()?),
            #[cfg(feature = "lambda")]
            BackendKind::Lambda => Self::lambda(LambdaConfig::from_env()?),
            #[allow(unreachable_patterns)]
            other => Err(not_built(other)),
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
    #[cfg(feature = "http")]
    pub fn http(config: HttpConfig) -> Result<Self> {
        crate::config::check()?;
        crate::role::check_may_host(false, true)?;
        Ok(Self::with_backend(Backend::new(Arc::new(
            http::client::HttpBackend::new(config)?,
        ))))
    }

    /// Functions deployed as OpenWhisk actions, invoked through the controller's REST API.
    #[cfg(feature = "openwhisk")]
    pub fn openwhisk(config: OpenWhiskConfig) -> Result<Self> {
        crate::config::check()?;
        crate::role::check_may_host(false, true)?;
        Ok(Self::with_backend(Backend::new(Arc::new(
            openwhisk::client::OpenWhiskBackend::new(config)?,
        ))))
    }

    /// Functions deployed on AWS Lambda, invoked through the SigV4-signed Invoke API.
    #[cfg(feature = "lambda")]
    pub fn lambda(config: LambdaConfig) -> Result<Self> {
        crate::config::check()?;
        crate::role::check_may_host(false, true)?;
        Ok(Self::with_backend(Backend::new(Arc::new(
            lambda::client::LambdaBackend::new(config)?,
        ))))
    }

    /// The embedded local platform with explicit settings.
    #[cfg(feature = "local")]
    pub fn local(config: LocalConfig) -> Result<Self> {
        crate::config::check()?;
        Ok(Self::with_backend(Backend::new(local::LocalBackend::new(
            config,
        )?)))
    }
}

/// The error for a backend this build of ferry leaves out.
pub(crate) fn not_built(kind: BackendKind) -> Error {
    Error::config(format!(
        "this program was built without ferry's `{kind}` feature: enable it in Cargo.toml \
         (`ferry = {{ features = [\"{kind}\"] }}`), or pick another backend with `--backend` \
         or `FERRY_BACKEND`"
    ))
}

#[cfg(any(feature = "openwhisk", feature = "lambda"))]
/// The event a platform whose events are JSON is sent: the arguments, checked against the
/// platform's limit before anything is sent, with a chained flow's route added. Arguments in
/// the binary codec inside JSON travel as `{"__ferry_binary": "<base64>"}` ([`BINARY_PARAM`]).
pub(crate) fn json_event(
    envelope: &Envelope,
    payload: Bytes,
    limit: usize,
    backend: BackendKind,
) -> Result<Bytes> {
    let payload = match envelope.codec {
        crate::Codec::Json => payload,
        crate::Codec::BinaryInJson => {
            let mut event = Vec::with_capacity(payload.len() + BINARY_PARAM.len() + 5);
            event.extend_from_slice(b"{\"");
            event.extend_from_slice(BINARY_PARAM.as_bytes());
            event.extend_from_slice(b"\":");
            event.extend_from_slice(&payload);
            event.push(b'}');
            Bytes::from(event)
        }
        crate::Codec::Binary => {
            return Err(Error::config(format!(
                "the {backend} backend sends json, not `{}`",
                envelope.codec
            )));
        }
    };
    if payload.len() > limit {
        return Err(Error::new(crate::ErrorKind::PayloadTooLarge {
            size: payload.len() as u64,
            limit: limit as u64,
        }));
    }
    with_flow_param(envelope, payload)
}

#[cfg(any(feature = "openwhisk", feature = "lambda"))]
/// The parameter that carries arguments in the binary codec, base64'd, through platforms whose
/// events are a JSON object ([`crate::Codec::BinaryInJson`]).
pub(crate) const BINARY_PARAM: &str = "__ferry_binary";

#[cfg(any(feature = "openwhisk", feature = "lambda"))]
/// The parameter that carries a chained flow's route ([`crate::wire::FlowRoute`]) through
/// platforms whose events are a JSON object of arguments (OpenWhisk, Lambda).
pub(crate) const FLOW_PARAM: &str = "__ferry_flow";

#[cfg(any(feature = "openwhisk", feature = "lambda"))]
/// The JSON arguments with the envelope's flow route added as [`FLOW_PARAM`], and the ids of the
/// shared values they refer to as `__ferry_shared`, if it has them. They are written into the
/// object's text: the arguments are not parsed again.
fn with_flow_param(envelope: &Envelope, payload: Bytes) -> Result<Bytes> {
    let mut params = serde_json::Map::new();
    if let Some(route) = &envelope.flow {
        let route = serde_json::to_value(route)
            .map_err(|e| Error::protocol(format!("cannot encode the flow route: {e}")))?;
        params.insert(FLOW_PARAM.to_owned(), route);
    }
    if !envelope.blobs.is_empty() {
        let ids = serde_json::to_value(&envelope.blobs)
            .map_err(|e| Error::protocol(format!("cannot encode shared value ids: {e}")))?;
        params.insert(SHARED_PARAM.to_owned(), ids);
    }
    if params.is_empty() {
        return Ok(payload);
    }
    let params = serde_json::to_vec(&params)
        .map_err(|e| Error::protocol(format!("cannot encode the arguments: {e}")))?;
    // `{"k":v}` without its braces, spliced in after the arguments' opening one.
    let params = &params[1..params.len() - 1];
    let arguments = payload.trim_ascii();
    if arguments.is_empty() {
        return Ok(Bytes::from([b"{", params, b"}"].concat()));
    }
    let Some(members) = arguments.strip_prefix(b"{") else {
        return Err(Error::protocol(
            "a flow stage's arguments must be a json object",
        ));
    };
    let separator: &[u8] = if members.trim_ascii_start().starts_with(b"}") {
        b""
    } else {
        b","
    };
    Ok(Bytes::from([b"{", params, separator, members].concat()))
}

#[cfg(any(feature = "openwhisk", feature = "lambda"))]
/// The parameter that lists the shared values an event's arguments refer to by id (events of a
/// backend that delivers them through a store).
pub(crate) const SHARED_PARAM: &str = "__ferry_shared";

#[cfg(any(feature = "openwhisk", feature = "lambda"))]
/// Takes the base64 string out of arguments a caller sent in [`crate::Codec::BinaryInJson`]:
/// exactly `{"__ferry_binary": "<base64>"}` ([`BINARY_PARAM`]) once the flow route is out.
pub(crate) fn take_binary_param(arguments: &mut serde_json::Value) -> Option<serde_json::Value> {
    let object = arguments.as_object_mut()?;
    if object.len() == 1
        && object
            .get(BINARY_PARAM)
            .is_some_and(serde_json::Value::is_string)
    {
        object.remove(BINARY_PARAM)
    } else {
        None
    }
}

#[cfg(any(feature = "openwhisk", feature = "lambda"))]
/// Takes [`SHARED_PARAM`] out of JSON arguments: the shared values they refer to by id.
pub(crate) fn take_shared_param(
    arguments: &mut serde_json::Value,
) -> Result<Vec<crate::shared::BlobId>> {
    let Some(ids) = arguments
        .as_object_mut()
        .and_then(|object| object.remove(SHARED_PARAM))
    else {
        return Ok(Vec::new());
    };
    serde_json::from_value(ids)
        .map_err(|e| Error::bad_input(SHARED_PARAM, format!("invalid shared value ids: {e}")))
}

#[cfg(any(feature = "openwhisk", feature = "lambda"))]
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
