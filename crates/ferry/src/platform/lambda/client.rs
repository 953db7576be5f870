//! The `lambda` backend: functions deployed on AWS Lambda, invoked through the Invoke API
//! (`POST /2015-03-31/functions/{name}/invocations`) signed with SigV4.
//!
//! - Connections: a pool of HTTP/2 connections, each carrying many streams (Cppless used
//!   16 × 100). Over TLS, HTTP/2 is negotiated and a server that only speaks HTTP/1.1 gets
//!   keep-alive HTTP/1.1; over plain `http://` (an emulator) HTTP/1.1 is used unless h2c is asked.
//! - A function error is still a 200 with `X-Amz-Function-Error`: the body is the runtime's error
//!   object, which ferry's runtime extends with the ferry error, so kinds travel back exactly.
//! - Arguments over Lambda's 6 MB request limit go through the store (`FERRY_STORE`,
//!   [`crate::platform::offload`]), as do outputs over it and shared values; without a store they are
//!   refused before sending.
//! - 429 (`TooManyRequestsException`) is [`ErrorKind::Throttled`], 5xx [`ErrorKind::Unavailable`]:
//!   both retried with jittered backoff by the [`RetryPolicy`].

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::future::BoxFuture;
use serde_json::Value;

use super::MAX_PAYLOAD;
use crate::aws::{AwsConfig, Signer};
use crate::platform::offload::Offload;
use crate::platform::retry::RetryPolicy;
use crate::platform::{BackendKind, RemoteClient};
use crate::wire::Envelope;
use crate::{Error, ErrorKind, FunctionDescriptor, Result};

/// Which HTTP version the Invoke client speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
#[non_exhaustive]
pub enum LambdaHttp {
    /// HTTP/2 where TLS negotiates it, else HTTP/1.1.
    #[default]
    Auto,
    /// HTTP/2 without TLS, by prior knowledge (an h2c emulator or proxy).
    H2c,
    /// HTTP/1.1 only.
    Http1,
}

/// How the `lambda` backend's typed calls travel in Lambda's JSON events.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LambdaCodec {
    /// The arguments as a JSON object, as any Lambda function reads them.
    #[default]
    Json,
    /// ferry's binary codec, base64'd into the event `{"__ferry_binary": "…"}` and answered the
    /// same way (Cppless's default on Lambda): for calls between ferry programs, smaller and
    /// faster to encode than JSON for numbers and byte arrays.
    BinaryInJson,
}

/// Where Lambda is, who we are, and which Lambda function each ferry function is.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LambdaConfig {
    /// Region, credentials and endpoint.
    pub aws: AwsConfig,
    /// The Lambda function of each ferry function: `{name}` and `{id}` are replaced, e.g.
    /// `shop-{name}`. Default `{name}`.
    pub functions: String,
    /// The app `ferry deploy` deployed the program as (`FERRY_APP`): functions are then found
    /// by their deployed names ([`crate::naming`]) instead of the template.
    pub app: Option<String>,
    /// Lambda functions named one by one (ferry function name → Lambda function), ahead of the
    /// app and the template.
    pub routes: std::collections::BTreeMap<String, String>,
    /// A version or alias to invoke (`Qualifier`).
    pub qualifier: Option<String>,
    /// HTTP version.
    pub http: LambdaHttp,
    /// How typed calls encode arguments and outputs (`FERRY_LAMBDA_CODEC`): JSON, which any
    /// Lambda function reads, or [`LambdaCodec::BinaryInJson`] between ferry programs.
    pub codec: LambdaCodec,
    /// Where arguments and outputs over Lambda's 6 MB limit, and shared values, travel
    /// (`FERRY_STORE`, [`crate::store`]); without one, larger payloads are refused and shared
    /// values travel in full with every call.
    pub store: Option<crate::store::StoreLocation>,
    /// Connections in the pool; requests are spread over them round-robin.
    pub connections: usize,
    /// Longest wait for one request's answer (Lambda's own limit is 15 minutes).
    pub request_timeout: Duration,
    /// What is retried, how often.
    pub retry: RetryPolicy,
}

impl LambdaConfig {
    /// Lambda as `aws` describes it, with 16 connections.
    pub fn new(aws: AwsConfig) -> Self {
        Self {
            aws,
            functions: "{name}".to_owned(),
            app: None,
            routes: std::collections::BTreeMap::new(),
            qualifier: None,
            http: LambdaHttp::Auto,
            codec: LambdaCodec::Json,
            store: None,
            connections: 16,
            request_timeout: Duration::from_secs(905),
            retry: RetryPolicy::default(),
        }
    }

    /// [`AwsConfig::load`], then `FERRY_APP` (deployed names), `FERRY_LAMBDA_FUNCTIONS` (the
    /// name template),
    /// `FERRY_LAMBDA_ROUTES` (`name=lambda-function,…`), `FERRY_LAMBDA_QUALIFIER`,
    /// `FERRY_LAMBDA_HTTP` (`auto`, `h2c` or `http1`), `FERRY_LAMBDA_CODEC` (`json` or
    /// `binary-in-json`), `FERRY_STORE` and `FERRY_LAMBDA_CONNECTIONS`.
    pub async fn load() -> Result<Self> {
        let aws = AwsConfig::load()
            .await
            .map_err(|e| Error::config(e.to_string()))?;
        Self::with_env(aws)
    }

    /// [`load`](Self::load) without `.await`: AWS settings from [`AwsConfig::from_env`] (which
    /// loads them on a private runtime), so that [`Context::new`](crate::Context::new) and
    /// [`Context::from_env`](crate::Context::from_env) stay synchronous.
    pub fn from_env() -> Result<Self> {
        let aws = AwsConfig::from_env().map_err(|e| Error::config(e.to_string()))?;
        Self::with_env(aws)
    }

    fn with_env(aws: AwsConfig) -> Result<Self> {
        use crate::config::{
            APP, LAMBDA_CODEC, LAMBDA_CONNECTIONS, LAMBDA_FUNCTIONS, LAMBDA_HTTP, LAMBDA_QUALIFIER,
            LAMBDA_ROUTES, STORE,
        };
        let mut config = Self::new(aws);
        if let Some(template) = LAMBDA_FUNCTIONS.text() {
            config.functions = template;
        }
        config.routes = LAMBDA_ROUTES.routes()?;
        config.qualifier = LAMBDA_QUALIFIER.text();
        config.app = APP.text();
        config.http = match LAMBDA_HTTP.word()? {
            Some("h2c") => LambdaHttp::H2c,
            Some("http1") => LambdaHttp::Http1,
            _ => LambdaHttp::Auto,
        };
        if LAMBDA_CODEC.word()? == Some("binary-in-json") {
            config.codec = LambdaCodec::BinaryInJson;
        }
        config.store = STORE
            .text()
            .map(|text| text.parse())
            .transpose()
            .map_err(|e: crate::store::StoreError| Error::config(e.to_string()))?;
        if let Some(connections) = LAMBDA_CONNECTIONS.number()? {
            config.connections = connections;
        }
        Ok(config)
    }

    /// Sets the name template (`{name}`, `{id}`).
    #[must_use]
    pub fn functions(mut self, template: impl Into<String>) -> Self {
        self.functions = template.into();
        self
    }

    /// Finds functions by the names `ferry deploy` gave them under `app`.
    #[must_use]
    pub fn app(mut self, app: impl Into<String>) -> Self {
        self.app = Some(app.into());
        self
    }

    /// Sends the ferry function `name` to the Lambda function `lambda_function`.
    #[must_use]
    pub fn route(mut self, name: impl Into<String>, lambda_function: impl Into<String>) -> Self {
        self.routes.insert(name.into(), lambda_function.into());
        self
    }

    /// Sets the HTTP version.
    #[must_use]
    pub fn http(mut self, http: LambdaHttp) -> Self {
        self.http = http;
        self
    }

    /// Sets how typed calls encode arguments and outputs.
    #[must_use]
    pub fn codec(mut self, codec: LambdaCodec) -> Self {
        self.codec = codec;
        self
    }

    /// Sends payloads over Lambda's limit, and shared values, through `store`.
    #[must_use]
    pub fn store(mut self, store: crate::store::StoreLocation) -> Self {
        self.store = Some(store);
        self
    }

    /// Sets the number of pooled connections.
    #[must_use]
    pub fn connections(mut self, n: usize) -> Self {
        self.connections = n.max(1);
        self
    }

    /// Sets the retry policy.
    #[must_use]
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// The Lambda function that runs the ferry function `name` (`id`): its route, else its
    /// deployed name under [`app`](Self::app), else the template's.
    pub fn function(&self, id: &str, name: &str) -> Result<String> {
        if let Some(routed) = self.routes.get(name).or_else(|| self.routes.get(id)) {
            return Ok(routed.clone());
        }
        match &self.app {
            Some(app) => crate::Registry::global()?.deployed_name(app, id, name),
            None => Ok(self.functions.replace("{name}", name).replace("{id}", id)),
        }
    }
}

pub(crate) struct LambdaBackend {
    config: LambdaConfig,
    signer: Signer,
    /// One client per connection: a client multiplexes HTTP/2 streams over one connection per
    /// host, so the pool is a set of clients.
    clients: Vec<reqwest::Client>,
    next_client: AtomicUsize,
    offload: Option<Offload>,
}

impl LambdaBackend {
    pub(crate) fn new(config: LambdaConfig) -> Result<Self> {
        let clients = (0..config.connections.max(1))
            .map(|_| {
                let mut builder = reqwest::Client::builder()
                    .timeout(config.request_timeout)
                    .pool_max_idle_per_host(1024)
                    .http2_adaptive_window(true);
                builder = match config.http {
                    LambdaHttp::Auto => builder,
                    LambdaHttp::H2c => builder.http2_prior_knowledge(),
                    LambdaHttp::Http1 => builder.http1_only(),
                };
                builder
                    .build()
                    .map_err(|e| Error::config(format!("cannot build the http client: {e}")))
            })
            .collect::<Result<Vec<_>>>()?;
        let offload = config
            .store
            .clone()
            .map(|location| crate::store::Store::new(&config.aws, location).map(Offload::new))
            .transpose()?;
        Ok(Self {
            offload,
            signer: config.aws.signer("lambda"),
            config,
            clients,
            next_client: AtomicUsize::new(0),
        })
    }

    async fn attempt(&self, url: &str, function: &str, payload: Bytes) -> Result<Bytes> {
        let headers = [
            ("content-type", "application/json"),
            ("x-amz-invocation-type", "RequestResponse"),
        ];
        // Signed per attempt: a retry must carry a fresh date. `ready` refreshes temporary
        // credentials before they expire (one atomic load while they are fresh).
        self.signer
            .ready()
            .await
            .map_err(|e| Error::config(e.to_string()))?;
        let signed = self
            .signer
            .sign("POST", url, &headers, &payload)
            .map_err(|e| Error::config(e.to_string()))?;
        let mut header_map = reqwest::header::HeaderMap::with_capacity(6);
        for (name, value) in headers {
            header_map.insert(name, reqwest::header::HeaderValue::from_static(value));
        }
        signed.apply_to(&mut header_map);
        let client =
            &self.clients[self.next_client.fetch_add(1, Ordering::Relaxed) % self.clients.len()];
        let response = client
            .post(url)
            .headers(header_map)
            .body(payload)
            .send()
            .await
            .map_err(|e| Error::unavailable(format!("cannot reach {url}: {e}")))?;
        let status = response.status().as_u16();
        let failed = response
            .headers()
            .get("x-amz-function-error")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let error_type = response
            .headers()
            .get("x-amzn-errortype")
            .and_then(|v| v.to_str().ok())
            .map(|v| v.split(':').next().unwrap_or(v).to_owned());
        let body = response
            .bytes()
            .await
            .map_err(|e| Error::unavailable(format!("connection to {url} broke: {e}")))?;
        answer(status, failed.is_some(), error_type, function, body)
    }
}

/// What an Invoke answer means: the output, the function's error or the service's.
fn answer(
    status: u16,
    function_failed: bool,
    error_type: Option<String>,
    function: &str,
    body: Bytes,
) -> Result<Bytes> {
    match (status, function_failed) {
        (200, true) => Err(function_error(&body)),
        // The Runtime Interface Emulator answers a function error with a 200 and no header.
        (200, false) if is_error_report(&body) => Err(function_error(&body)),
        (200, false) => Ok(body),
        // Emulators answer a function error with a 500 (cargo lambda's), or a 502 when the
        // runtime exited after reporting it (the RIE); the Lambda service's own errors never
        // carry an `errorType`.
        (500..=599, _) if is_runtime_error(&body) => Err(function_error(&body)),
        _ => Err(service_error(status, error_type, function, &body)),
    }
}

/// A function error: the runtime's `{errorMessage, errorType, …}`, with ferry's error inside
/// when the runtime is ferry's.
fn function_error(body: &[u8]) -> Error {
    let error: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    if let Some(error) = error
        .get("ferry")
        .and_then(|e| serde_json::from_value::<Error>(e.clone()).ok())
    {
        return error;
    }
    if !is_runtime_error(body) {
        // Every runtime reports `{errorMessage, errorType}`: anything else came from the
        // platform itself (moto without Docker: "error running docker: …").
        return Error::new(ErrorKind::Platform {
            message: String::from_utf8_lossy(body).trim().to_owned(),
        });
    }
    let text = |key: &str| error.get(key).and_then(Value::as_str).unwrap_or_default();
    let message = match text("errorMessage") {
        "" => String::from_utf8_lossy(body).trim().to_owned(),
        message => message.to_owned(),
    };
    let error_type = text("errorType");
    if let Some(seconds) = message
        .split("Task timed out after ")
        .nth(1)
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|s| s.parse::<f64>().ok())
    {
        return Error::new(ErrorKind::Timeout {
            limit_ms: (seconds * 1000.0).round() as u64,
        });
    }
    match error_type {
        "Function.ResponseSizeTooLarge" => Error::new(ErrorKind::PayloadTooLarge {
            size: 0,
            limit: MAX_PAYLOAD as u64,
        }),
        "Runtime.OutOfMemory" => Error::new(ErrorKind::OutOfMemory {
            limit_mb: 0,
            used_mb: 0,
        }),
        t if t.starts_with("Runtime.") => Error::protocol(format!("{t}: {message}")),
        _ => Error::new(ErrorKind::User {
            message,
            type_name: error_type.to_owned(),
        }),
    }
}

/// Whether an answer without `X-Amz-Function-Error` is still an error report: exactly the
/// fields a runtime (`errorMessage`, `errorType`, `stackTrace`, ferry's `ferry`) or the platform
/// writes, with an error type of ferry's or the platform's own (`Runtime.*`, `Function.*`,
/// `Sandbox.*`). An output of a function is not read this way unless it has that very shape.
fn is_error_report(body: &[u8]) -> bool {
    if body.len() > 64 * 1024 || memchr::memmem::find(body, b"errorType").is_none() {
        return false;
    }
    let Ok(Value::Object(report)) = serde_json::from_slice::<Value>(body) else {
        return false;
    };
    let known = [
        "errorMessage",
        "errorType",
        "stackTrace",
        "ferry",
        "requestId",
    ];
    let Some(error_type) = report.get("errorType").and_then(Value::as_str) else {
        return false;
    };
    report.get("errorMessage").is_some_and(Value::is_string)
        && report.keys().all(|key| known.contains(&key.as_str()))
        && (report.contains_key("ferry")
            || ["ferry.", "Runtime.", "Function.", "Sandbox."]
                .iter()
                .any(|prefix| error_type.starts_with(prefix)))
}

fn is_runtime_error(body: &[u8]) -> bool {
    serde_json::from_slice::<Value>(body)
        .is_ok_and(|v| v.get("errorType").is_some() && v.get("errorMessage").is_some())
}

/// An answer of the Lambda service itself.
fn service_error(status: u16, error_type: Option<String>, function: &str, body: &[u8]) -> Error {
    let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let message = ["message", "Message", "errorMessage"]
        .iter()
        .find_map(|key| parsed.get(*key).and_then(Value::as_str))
        .map(str::to_owned)
        .unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_owned());
    let error_type = error_type
        .or_else(|| {
            parsed
                .get("Type")
                .and_then(Value::as_str)
                .map(str::to_owned)
        })
        .unwrap_or_default();
    let described = if error_type.is_empty() {
        format!("lambda answered {status}: {message}")
    } else {
        format!("lambda answered {status} {error_type}: {message}")
    };
    match status {
        404 => Error::new(ErrorKind::UnknownFunction {
            id: function.to_owned(),
        }),
        413 => Error::new(ErrorKind::PayloadTooLarge {
            size: 0,
            limit: MAX_PAYLOAD as u64,
        }),
        429 => Error::new(ErrorKind::Throttled { message: described }),
        401 | 403 => Error::config(described),
        500.. => Error::unavailable(described),
        _ => Error::protocol(described),
    }
}

impl RemoteClient for LambdaBackend {
    const KIND: BackendKind = BackendKind::Lambda;
    const CODEC: crate::Codec = crate::Codec::Json;

    fn codec(&self) -> crate::Codec {
        match self.config.codec {
            LambdaCodec::Json => crate::Codec::Json,
            LambdaCodec::BinaryInJson => crate::Codec::BinaryInJson,
        }
    }

    fn delivers_shared(&self) -> bool {
        self.offload.is_some()
    }

    fn send(
        self: &Arc<Self>,
        envelope: Envelope,
        payload: Bytes,
        descriptor: Option<&'static FunctionDescriptor>,
    ) -> BoxFuture<'static, Result<Bytes>> {
        let backend = self.clone();
        Box::pin(async move {
            let name = descriptor.map_or(envelope.function.as_str(), |d| d.name);
            let function = backend.config.function(&envelope.function, name)?;
            let mut url = format!(
                "{}/2015-03-31/functions/{function}/invocations",
                backend.config.aws.lambda_endpoint().trim_end_matches('/')
            );
            if let Some(qualifier) = &backend.config.qualifier {
                url.push_str("?Qualifier=");
                url.push_str(qualifier);
            }
            let (backend, url, function) = (&backend, &url, &function);
            let send = |event: Bytes| async move {
                let attempt = || backend.attempt(url, function, event.clone());
                backend.config.retry.run(attempt).await
            };
            crate::platform::offload::exchange(
                backend.offload.as_ref(),
                &envelope,
                payload,
                MAX_PAYLOAD,
                BackendKind::Lambda,
                function,
                send,
            )
            .await
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The Runtime Interface Emulator rewrites a `ferry.*` error type to `Runtime.Unknown`; the
    /// kind survives in the body's `ferry` field, and is read from there.
    #[test]
    fn the_kind_is_read_from_the_body_whatever_the_error_type_says() {
        let body = serde_json::json!({
            "errorMessage": "timed out after 1000 ms",
            "errorType": "Runtime.Unknown",
            "stackTrace": [],
            "ferry": Error::timeout(std::time::Duration::from_secs(1)),
        });
        let error = function_error(body.to_string().as_bytes());
        assert!(
            matches!(error.kind(), ErrorKind::Timeout { limit_ms: 1000 }),
            "{error}"
        );
    }

    /// The RIE sends function errors as a 200 without `X-Amz-Function-Error`: error reports of
    /// ferry's runtime or the platform are still errors, an output that merely mentions an error
    /// type is an output.
    #[test]
    fn error_reports_without_the_header_are_errors() {
        let ferry_error = serde_json::json!({
            "errorMessage": "7 is odd",
            "errorType": "Runtime.Unknown",
            "stackTrace": [],
            "ferry": Error::new(ErrorKind::User { message: "7 is odd".into(), type_name: String::new() }),
        });
        assert!(is_error_report(ferry_error.to_string().as_bytes()));
        assert!(is_error_report(
            br#"{"errorType":"Function.ResponseSizeTooLarge","errorMessage":"Response payload size exceeded maximum allowed payload size (6291556 bytes)."}"#
        ));
        for output in [
            &br#"{"errorType":"validation","errorMessage":"a user's own record"}"#[..],
            br#"{"errorType":"Runtime.X","errorMessage":"m","count":3}"#,
            br#"{"errorType":"ferry.User"}"#,
            br#"[1, 2]"#,
            br#""errorType""#,
        ] {
            assert!(
                !is_error_report(output),
                "{}",
                String::from_utf8_lossy(output)
            );
        }
    }

    /// The RIE's answer when a runtime reported a timeout and exited to be replaced: a 502
    /// with the report. It is the function's timeout, not an unavailable platform to retry.
    #[test]
    fn a_report_after_the_runtime_exited_is_the_functions_error() {
        let report = serde_json::json!({
            "errorMessage": "timed out after 894 ms",
            "errorType": "Runtime.ExitError",
            "stackTrace": [],
            "ferry": Error::timeout(std::time::Duration::from_millis(894)),
        });
        let error = answer(502, false, None, "f", Bytes::from(report.to_string())).unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::Timeout { limit_ms: 894 }),
            "{error}"
        );
        assert!(!error.is_transient(), "{error}");
        let output = answer(200, false, None, "f", Bytes::from_static(b"42")).unwrap();
        assert_eq!(&output[..], b"42");
        let unavailable = answer(502, false, None, "f", Bytes::from_static(b"bad gateway"));
        assert!(unavailable.unwrap_err().is_transient());
    }

    #[test]
    fn a_failure_of_the_platform_is_not_the_functions() {
        let error =
            function_error(b"error running docker: Error while fetching server API version");
        assert!(
            matches!(error.kind(), ErrorKind::Platform { message } if message.starts_with("error running docker")),
            "{error}"
        );
        assert!(!error.is_transient());
    }

    #[test]
    fn function_errors_keep_their_meaning() {
        let error = function_error(
            br#"{"errorMessage": "2026-11-21T10:00:00Z 1 Task timed out after 3.00 seconds", "errorType": "Sandbox.Timedout"}"#,
        );
        assert_eq!(error.kind(), &ErrorKind::Timeout { limit_ms: 3000 });
        let error = function_error(br#"{"errorMessage": "no stock", "errorType": "ValueError"}"#);
        assert!(
            matches!(error.kind(), ErrorKind::User { message, type_name } if message == "no stock" && type_name == "ValueError")
        );
        let error = function_error(
            br#"{"errorMessage": "x", "errorType": "ferry.User", "ferry": {"kind": "panic", "message": "boom"}}"#,
        );
        assert!(matches!(error.kind(), ErrorKind::Panic { message } if message == "boom"));
    }

    #[test]
    fn service_errors_by_status() {
        let throttled = service_error(
            429,
            Some("TooManyRequestsException".into()),
            "f",
            br#"{"Type": "User", "message": "Rate Exceeded."}"#,
        );
        assert!(
            matches!(throttled.kind(), ErrorKind::Throttled { message } if message.contains("Rate Exceeded."))
        );
        assert!(matches!(
            service_error(404, None, "f", b"{}").kind(),
            ErrorKind::UnknownFunction { id } if id == "f"
        ));
        assert!(matches!(
            service_error(503, None, "f", b"").kind(),
            ErrorKind::Unavailable { .. }
        ));
    }
}
