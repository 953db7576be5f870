//! HTTP service mode (`FERRY_ROLE=http`) for Knative, Cloud Run and OpenFaaS (of-watchdog
//! `mode=http`): every function of the program behind one HTTP server on `$PORT`.
//!
//! - `POST /functions/{name or id}`: the body is the arguments, encoded as its `Content-Type`
//!   says (`application/json`, the default, or `application/x-ferry-binary`); the output comes
//!   back in the codec `Accept` asks for (default: the request's). An empty JSON body is `{}`.
//! - A failure is the JSON of [`crate::Error`] with a status by kind (400 bad input, 401 missing
//!   token, 404 unknown function, 413 too large, 422 user error, 500 panic, 502 crash,
//!   504 timeout) and the kind in `X-Ferry-Error`, so a ferry client rebuilds the same error.
//! - `GET /healthz` (liveness) and `GET /readyz` (readiness: 503 while draining), also as
//!   OpenFaaS's `/_/health` and `/_/ready`.
//! - Bodies above `FERRY_HTTP_MAX_BODY` bytes (default 6 MiB, Lambda's limit) are refused with 413.
//! - With `FERRY_AUTH_TOKEN` set, function routes need `Authorization: Bearer <token>`.
//! - SIGTERM stops accepting connections, lets in-flight invocations finish, then exits.
//! - Each function runs at most its `concurrency` invocations at once; more wait their turn.
//! - A sync body that overruns its timeout retires the service (see [`crate::runtime`]): new
//!   calls get 503, `/readyz` answers 503, and once in-flight calls finish the process exits
//!   with status 2, so the platform starts a fresh instance instead of piling up stuck threads.
//! - An `x-ferry-flow` header makes the invocation a stage of a chained flow: after the body, the
//!   service invokes the next stage itself and answers with what the last stage returned.
//! - Functions invoke functions in this service, or over HTTP at other services when
//!   `FERRY_BACKEND=http` (with `FERRY_HTTP_ROUTES`, `FERRY_HTTP_URL_TEMPLATE` or
//!   `FERRY_HTTP_URL`).
//! - Shared values ([`crate::Shared`]) arrive by content hash: `X-Ferry-Blobs` lists the ids the
//!   arguments refer to. When the instance's cache lacks some, it answers 428 with them in
//!   `X-Ferry-Missing-Blobs` (and a `missing_shared` error); the client uploads each with
//!   `PUT /blobs/{id}` (same token and body limit; 400 unless the body hashes to the id) and
//!   sends the request again.

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};

use super::{BLOBS_HEADER, FLOW_HEADER, MISSING_BLOBS_HEADER};
use crate::runtime::Runtime;
use crate::runtime::guard::{self, Bodies, Limits};
use crate::wire::Envelope;
use crate::{Codec, Error, ErrorKind, Registry};

/// Lambda's synchronous payload limit, a sensible default for any function endpoint.
const DEFAULT_MAX_BODY: usize = 6 << 20;

pub(crate) fn serve(registry: &'static Registry) -> ExitCode {
    match Settings::from_env() {
        Ok(settings) => {
            crate::runtime::serve::run_to_exit("http service", serve_on(registry, settings))
        }
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

struct Settings {
    address: SocketAddr,
    max_body: usize,
    token: Option<String>,
    limits: Limits,
}

impl Settings {
    fn from_env() -> Result<Self, String> {
        let max_body = crate::config::HTTP_MAX_BODY
            .number()
            .map_err(|e| e.to_string())?
            .unwrap_or(DEFAULT_MAX_BODY);
        Ok(Self {
            address: crate::runtime::serve::listen_address()?,
            max_body,
            token: crate::config::AUTH_TOKEN.text(),
            limits: Limits::from_env().map_err(|e| e.to_string())?,
        })
    }
}

struct Service {
    runtime: Runtime,
    token: Option<String>,
    max_body: usize,
    draining: AtomicBool,
}

async fn serve_on(registry: &'static Registry, settings: Settings) -> std::io::Result<()> {
    let listener = crate::runtime::serve::bind(settings.address)?;
    crate::runtime::serve::announce(&listener)?;
    let ctx = crate::runtime::serve::worker_context()
        .map_err(|e| std::io::Error::other(e.to_string()))?;
    let service = Arc::new(Service {
        runtime: Runtime::new(registry, ctx),
        token: settings.token,
        max_body: settings.max_body,
        draining: AtomicBool::new(false),
    });
    let draining = service.clone();
    let bodies = Bodies::new(&settings.limits, settings.max_body, failure);
    let shutdown = async move {
        tokio::select! {
            () = crate::runtime::serve::shutdown_signal() => {}
            () = draining.runtime.retired() => {}
        }
        draining.draining.store(true, Ordering::Release);
        tracing::info!("draining: no new connections, finishing in-flight invocations");
    };
    guard::serve(
        listener,
        bodies.guard(router(service.clone())),
        &settings.limits,
        shutdown,
    )
    .await?;
    match service.runtime.retired_because() {
        Some(reason) => Err(std::io::Error::other(format!("retired: {reason}"))),
        None => Ok(()),
    }
}

fn router(service: Arc<Service>) -> Router {
    let max_body = service.max_body;
    Router::new()
        .route("/functions/{function}", post(invoke))
        .route("/blobs/{id}", put(upload_blob))
        .route("/healthz", get(healthy))
        .route("/_/health", get(healthy))
        .route("/readyz", get(ready))
        .route("/_/ready", get(ready))
        // The handler reads the body under `max_body` itself and answers 413 with a ferry error.
        .layer(DefaultBodyLimit::max(max_body.saturating_add(1)))
        .with_state(service)
}

async fn healthy() -> StatusCode {
    StatusCode::OK
}

async fn ready(State(service): State<Arc<Service>>) -> StatusCode {
    if service.draining.load(Ordering::Acquire) || service.runtime.retired_because().is_some() {
        StatusCode::SERVICE_UNAVAILABLE
    } else {
        StatusCode::OK
    }
}

async fn invoke(
    State(service): State<Arc<Service>>,
    Path(function): Path<String>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    if let Some(refusal) = refuse_unauthorized(&service, &headers) {
        return refusal;
    }
    let request_codec = match codec_of(headers.get(header::CONTENT_TYPE)) {
        Ok(codec) => codec,
        Err(error) => return failure(StatusCode::UNSUPPORTED_MEDIA_TYPE, &error),
    };
    let response_codec = match headers.get(header::ACCEPT) {
        Some(accept) if accept.as_bytes() != b"*/*" => {
            codec_of(Some(accept)).unwrap_or(request_codec)
        }
        _ => request_codec,
    };
    let body = match axum::body::to_bytes(body, service.max_body).await {
        Ok(body) => body,
        Err(_) => {
            let error = Error::new(ErrorKind::PayloadTooLarge {
                size: service.max_body as u64 + 1,
                limit: service.max_body as u64,
            })
            .in_function(&function);
            return failure(StatusCode::PAYLOAD_TOO_LARGE, &error);
        }
    };
    if let Err(error) = service.runtime.admit() {
        return failure(
            StatusCode::SERVICE_UNAVAILABLE,
            &error.in_function(&function),
        );
    }
    let registration = match service.runtime.registry().lookup(&function) {
        Ok(registration) => registration,
        Err(error) => return failure(status_of(&error), &error),
    };
    let descriptor = registration.descriptor();
    let mut envelope = Envelope::new(descriptor.id, request_codec);
    envelope.reply_codec = Some(response_codec);
    envelope.trace = ["traceparent", "x-request-id", "x-amzn-trace-id"]
        .iter()
        .find_map(|name| headers.get(*name).and_then(|v| v.to_str().ok()))
        .map(str::to_owned);
    if let Some(route) = headers.get(FLOW_HEADER) {
        match serde_json::from_slice(route.as_bytes()) {
            Ok(route) => envelope.flow = Some(route),
            Err(e) => {
                let error = Error::config(format!("invalid `{FLOW_HEADER}` header: {e}"))
                    .in_function(descriptor.id);
                return failure(StatusCode::BAD_REQUEST, &error);
            }
        }
    }
    let _blobs = match pin_blobs(&headers) {
        Ok(pins) => pins,
        Err(error) => return failure(status_of(&error), &error.in_function(descriptor.id)),
    };
    match service.runtime.invoke(registration, &envelope, body).await {
        Ok(output) => {
            let mut response = (StatusCode::OK, output).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static(response_codec.content_type()),
            );
            response
        }
        Err(error) => failure(status_of(&error), &error),
    }
}

/// Pins the shared values the request refers to in this instance's cache, or names those it
/// lacks (a `missing_shared` error: 428).
fn pin_blobs(headers: &HeaderMap) -> Result<crate::shared::Pins, Error> {
    let Some(listed) = headers.get(BLOBS_HEADER) else {
        return Ok(crate::shared::Pins::default());
    };
    let ids = crate::shared::ids_from_header(listed.to_str().unwrap_or_default())?;
    crate::shared::pin_present(&ids).map_err(|missing| {
        crate::shared::missing(&missing, "this instance's cache lacks it; upload it")
    })
}

/// `PUT /blobs/{id}`: a shared value's blob, kept if it hashes to `id`.
async fn upload_blob(
    State(service): State<Arc<Service>>,
    Path(id): Path<String>,
    headers: HeaderMap,
    body: axum::body::Body,
) -> Response {
    if let Some(refusal) = refuse_unauthorized(&service, &headers) {
        return refusal;
    }
    let id = match id.parse::<crate::shared::BlobId>() {
        Ok(id) => id,
        Err(error) => return failure(StatusCode::BAD_REQUEST, &error),
    };
    let Ok(body) = axum::body::to_bytes(body, service.max_body).await else {
        let error = Error::new(ErrorKind::PayloadTooLarge {
            size: service.max_body as u64 + 1,
            limit: service.max_body as u64,
        });
        return failure(StatusCode::PAYLOAD_TOO_LARGE, &error);
    };
    match crate::shared::insert_verified(id, body) {
        Ok(()) => StatusCode::NO_CONTENT.into_response(),
        Err(error) => failure(StatusCode::BAD_REQUEST, &error),
    }
}

/// A 401 when the service wants a bearer token and the request lacks it.
fn refuse_unauthorized(service: &Service, headers: &HeaderMap) -> Option<Response> {
    let token = service.token.as_ref()?;
    if authorized(headers, token) {
        return None;
    }
    let error = Error::config("missing or wrong bearer token");
    Some(failure(StatusCode::UNAUTHORIZED, &error))
}

fn authorized(headers: &HeaderMap, token: &str) -> bool {
    // The scheme is case-insensitive and may be followed by more than one space (RFC 9110 11.4).
    let Some(given) = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().split_once(' '))
        .filter(|(scheme, _)| scheme.eq_ignore_ascii_case("bearer"))
        .map(|(_, token)| token.trim_start())
    else {
        return false;
    };
    // Constant time in the token's length: no early exit on the first differing byte.
    given.len() == token.len()
        && given
            .bytes()
            .zip(token.bytes())
            .fold(0u8, |diff, (a, b)| diff | (a ^ b))
            == 0
}

fn codec_of(value: Option<&HeaderValue>) -> Result<Codec, Error> {
    let Some(value) = value else {
        return Ok(Codec::Json);
    };
    let media = value
        .to_str()
        .unwrap_or_default()
        .split(';')
        .next()
        .unwrap_or_default()
        .trim();
    match media {
        "" | "application/json" | "text/json" | "text/plain" => Ok(Codec::Json),
        "application/x-ferry-binary" | "application/octet-stream" => Ok(Codec::Binary),
        other => Err(Error::config(format!(
            "unsupported media type `{other}`: use `application/json` or `application/x-ferry-binary`"
        ))),
    }
}

fn status_of(error: &Error) -> StatusCode {
    match error.kind() {
        ErrorKind::BadInput { .. } => StatusCode::BAD_REQUEST,
        ErrorKind::UnknownFunction { .. } => StatusCode::NOT_FOUND,
        ErrorKind::PayloadTooLarge { .. } => StatusCode::PAYLOAD_TOO_LARGE,
        ErrorKind::User { .. } => StatusCode::UNPROCESSABLE_ENTITY,
        ErrorKind::Timeout { .. } => StatusCode::GATEWAY_TIMEOUT,
        ErrorKind::WorkerCrashed { .. } | ErrorKind::OutOfMemory { .. } => StatusCode::BAD_GATEWAY,
        ErrorKind::Unavailable { .. } => StatusCode::SERVICE_UNAVAILABLE,
        ErrorKind::Throttled { .. } => StatusCode::TOO_MANY_REQUESTS,
        ErrorKind::Config { .. } => StatusCode::NOT_ACCEPTABLE,
        ErrorKind::MissingShared { .. } => StatusCode::PRECONDITION_REQUIRED,
        _ => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

/// Errors are JSON whatever the codec: every client can read them.
fn failure(status: StatusCode, error: &Error) -> Response {
    let body = serde_json::to_vec(error).unwrap_or_default();
    let mut response = (status, body).into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    if let Ok(kind) = serde_json::to_value(error.kind()) {
        if let Some(kind) = kind.get("kind").and_then(|k| k.as_str()) {
            if let Ok(value) = HeaderValue::from_str(kind) {
                headers.insert("x-ferry-error", value);
            }
        }
    }
    if let ErrorKind::MissingShared { ids, .. } = error.kind() {
        if let Ok(value) = HeaderValue::from_str(&ids.join(",")) {
            headers.insert(MISSING_BLOBS_HEADER, value);
        }
    }
    response
}
