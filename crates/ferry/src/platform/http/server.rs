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
        app(service.clone(), &settings.limits),
        &settings.limits,
        shutdown,
    )
    .await?;
    match service.runtime.retired_because() {
        Some(reason) => Err(std::io::Error::other(format!("retired: {reason}"))),
        None => Ok(()),
    }
}

/// The service's routes behind the body guard: everything a request meets once hyper has read
/// its head.
fn app(service: Arc<Service>, limits: &Limits) -> Router {
    let max_body = service.max_body;
    Bodies::new(limits, max_body, failure).guard(router(service))
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

#[cfg(test)]
mod tests {
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::OnceLock;
    use std::time::Duration;

    use axum::body::Body;
    use axum::http::{Method, Request};
    use bytes::Bytes;
    use serde::{Deserialize, Serialize};
    use tower::ServiceExt as _;

    use super::*;
    use crate::registry::Registration;
    use crate::{Context, Function, FunctionConfig, FunctionDescriptor, ParamDescriptor, Shared};

    const TOKEN: &str = "s3cret-token";
    /// Small, so that bodies over it are cheap to make.
    const MAX_BODY: usize = 16 << 10;
    const FAILED: &str = "the function failed";

    /// Declares a test function: its invocation type, descriptor and body.
    macro_rules! function {
        ($ty:ident { $($field:ident: $fty:ty),* } as $id:literal, $name:literal -> $out:ty,
         |$this:ident| $body:expr) => {
            #[derive(Debug, Serialize, Deserialize)]
            struct $ty { $($field: $fty),* }

            impl Function for $ty {
                type Output = $out;
                const DESCRIPTOR: &'static FunctionDescriptor = &FunctionDescriptor {
                    id: $id,
                    name: $name,
                    params: &[$(ParamDescriptor {
                        name: stringify!($field),
                        ty: stringify!($fty),
                    }),*],
                    output: stringify!($out),
                    config: FunctionConfig {
                        timeout: Duration::from_secs(5),
                        concurrency: 4,
                        ..FunctionConfig::DEFAULT
                    },
                    is_async: true,
                    file: file!(),
                    line: line!(),
                };

                fn run(
                    self,
                    _ctx: Context,
                ) -> Pin<Box<dyn Future<Output = crate::Result<$out>> + Send>> {
                    let $this = self;
                    Box::pin(async move { $body })
                }
            }
        };
    }

    function!(Add { a: i64, b: i64 } as "app::add", "add" -> i64, |this| {
        Ok(this.a.wrapping_add(this.b))
    });
    function!(Hello {} as "app::hello", "hello" -> String, |_this| Ok("hello".to_owned()));
    function!(Refuse { n: u32 } as "app::refuse", "refuse" -> u32, |this| {
        Err(Error::new(ErrorKind::User {
            message: format!("{} refused", this.n),
            type_name: "Refused".to_owned(),
        }))
    });
    // A function that genuinely fails: the one 5xx a request may get.
    function!(Fail {} as "app::fail", "fail" -> (), |_this| Err(Error::panic(FAILED)));
    function!(BlobLen { data: Shared<Vec<u8>> } as "app::blob_len", "blob_len" -> usize, |this| {
        Ok(this.data.len())
    });
    // Two functions of one name: the name alone is ambiguous.
    function!(DupA {} as "app::a::dup", "dup" -> u8, |_this| Ok(1));
    function!(DupB {} as "app::b::dup", "dup" -> u8, |_this| Ok(2));

    static ADD: Registration = Registration::of::<Add>();
    static HELLO: Registration = Registration::of::<Hello>();
    static REFUSE: Registration = Registration::of::<Refuse>();
    static FAIL: Registration = Registration::of::<Fail>();
    static BLOB_LEN: Registration = Registration::of::<BlobLen>();
    static DUP_A: Registration = Registration::of::<DupA>();
    static DUP_B: Registration = Registration::of::<DupB>();

    fn registry() -> &'static Registry {
        static REGISTRY: OnceLock<Registry> = OnceLock::new();
        REGISTRY.get_or_init(|| {
            Registry::build([&ADD, &HELLO, &REFUSE, &FAIL, &BLOB_LEN, &DUP_A, &DUP_B].into_iter())
                .unwrap()
        })
    }

    /// The service's router as `serve_on` builds it (body guard included), with or without a
    /// bearer token.
    fn app(token: bool) -> Router {
        let service = Arc::new(Service {
            runtime: Runtime::new(registry(), Context::inline()),
            token: token.then(|| TOKEN.to_owned()),
            max_body: MAX_BODY,
            draining: AtomicBool::new(false),
        });
        let limits = Limits {
            header_timeout: Duration::from_secs(5),
            idle_timeout: None,
            body_timeout: Duration::from_secs(5),
            max_connections: 16,
            max_bytes_in_flight: 1 << 20,
            drain: Duration::from_secs(1),
        };
        super::app(service, &limits)
    }

    /// A blob of a `Vec<u8>`: the binary codec's tag, then the value.
    fn blob_of(value: &[u8]) -> (crate::shared::BlobId, Vec<u8>) {
        let mut blob = vec![2u8];
        blob.extend(Codec::Binary.encode(&value.to_vec()).unwrap());
        (crate::shared::BlobId::of(&blob), blob)
    }

    /// Sends `request` through `app`: the status, the `x-ferry-error` kind and the body.
    async fn send(app: &Router, request: Request<Body>) -> (StatusCode, Option<String>, Bytes) {
        let response = app.clone().oneshot(request).await.unwrap();
        let status = response.status();
        let kind = response
            .headers()
            .get("x-ferry-error")
            .map(|v| v.to_str().unwrap().to_owned());
        let body = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .unwrap();
        (status, kind, body)
    }

    fn post(path: &str, headers: &[(&str, &str)], body: impl Into<Body>) -> Request<Body> {
        let mut request = Request::post(path);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        request.body(body.into()).unwrap()
    }

    #[tokio::test]
    async fn the_test_service_answers() {
        let app = app(true);
        let bearer = format!("Bearer {TOKEN}");
        let auth = [("authorization", bearer.as_str())];
        let (status, _, body) =
            send(&app, post("/functions/add", &auth, r#"{"a":40,"b":2}"#)).await;
        assert_eq!((status, &body[..]), (StatusCode::OK, &b"42"[..]));
        let (status, kind, _) = send(&app, post("/functions/add", &[], "{}")).await;
        assert_eq!(
            (status, kind.as_deref()),
            (StatusCode::UNAUTHORIZED, Some("config"))
        );
        let (status, kind, _) = send(&app, post("/functions/fail", &auth, "")).await;
        assert_eq!(
            (status, kind.as_deref()),
            (StatusCode::INTERNAL_SERVER_ERROR, Some("panic"))
        );

        let (id, blob) = blob_of(b"shared bytes");
        let upload = Request::put(format!("/blobs/{id}"))
            .header("authorization", &bearer)
            .body(Body::from(blob))
            .unwrap();
        assert_eq!(send(&app, upload).await.0, StatusCode::NO_CONTENT);
        let mut by_id = 1u32.to_le_bytes().to_vec();
        by_id.extend_from_slice(id.as_bytes());
        let headers = [
            auth[0],
            ("content-type", "application/x-ferry-binary"),
            ("accept", "application/json"),
            ("x-ferry-blobs", &id.to_string()),
        ];
        let (status, _, body) = send(&app, post("/functions/blob_len", &headers, by_id)).await;
        assert_eq!((status, &body[..]), (StatusCode::OK, &b"12"[..]));
    }

    /// A route whose stage number has no successor once panicked the handler (an overflow in
    /// debug builds) after the function ran; it is bad input, refused before anything runs.
    #[tokio::test]
    async fn a_flow_route_past_the_last_stage_is_bad_input() {
        let app = app(false);
        let route = r#"{"next":[{"function":"app::add","unwrap":false}],"stage":4294967295}"#;
        let headers = [("x-ferry-flow", route)];
        let (status, kind, body) =
            send(&app, post("/functions/add", &headers, r#"{"a":0,"b":0}"#)).await;
        assert_eq!(
            (status, kind.as_deref()),
            (StatusCode::BAD_REQUEST, Some("config"))
        );
        let said = String::from_utf8_lossy(&body);
        assert!(said.contains("there is no stage 4294967295"), "{said}");
        let (status, _, body) = send(&app, post("/functions/add", &[], r#"{"a":40,"b":2}"#)).await;
        assert_eq!((status, &body[..]), (StatusCode::OK, &b"42"[..]));
    }

    /// Any request (method, path, headers, body), sent through the service's router and body
    /// guard, gets an answer; a 5xx only when the function itself failed, never for bad input;
    /// and the service answers a good request after it.
    mod robustness {
        use axum::http::{HeaderName, Uri};
        use proptest::prelude::*;

        use super::*;

        /// One request, and whether the service it goes to wants a token.
        #[derive(Debug, Clone)]
        struct Case {
            token: bool,
            method: Method,
            path: String,
            headers: Vec<(HeaderName, HeaderValue)>,
            body: Vec<u8>,
        }

        fn hex(len: usize) -> impl Strategy<Value = String> {
            proptest::string::string_regex(&format!("[0-9a-fA-F]{{{len}}}")).unwrap()
        }

        /// A blob uploaded before the cases run, which arguments may refer to by id.
        fn known_blob() -> crate::shared::BlobId {
            blob_of(b"known").0
        }

        fn segment() -> impl Strategy<Value = String> {
            prop_oneof![
                4 => prop::sample::select(vec![
                    "add", "app::add", "hello", "refuse", "fail", "app::fail", "blob_len", "dup",
                    "app::a::dup", "ad%64", "%61pp%3A%3Aadd", "add%00", "%ff%fe", "%", "%zz",
                    "add%2Fx", "..", ".", "", "fn", "flow",
                ])
                .prop_map(str::to_owned),
                2 => "[a-zA-Z0-9_:.~!$&'()*+,;=@-]{0,16}",
                2 => prop::collection::vec(
                    prop_oneof!["%[0-9a-fA-F]{2}", "[a-z:]{1,3}", "%[g-z%]{0,2}"],
                    0..8,
                )
                .prop_map(|parts| parts.concat()),
                // Up to the longest URI a request may have (64 KiB).
                1 => (1usize..60_000).prop_map(|n| "a".repeat(n)),
                1 => hex(64),
                1 => prop_oneof![hex(63), hex(65)],
                1 => Just(known_blob().to_string()),
            ]
        }

        /// A path, and the method its route takes (if any).
        fn path() -> impl Strategy<Value = (String, Method)> {
            let path = prop_oneof![
                6 => segment().prop_map(|s| (format!("/functions/{s}"), Method::POST)),
                1 => (segment(), segment())
                    .prop_map(|(a, b)| (format!("/functions/{a}/{b}"), Method::POST)),
                3 => segment().prop_map(|s| (format!("/blobs/{s}"), Method::PUT)),
                1 => segment().prop_map(|s| (format!("/fn/{s}"), Method::POST)),
                1 => prop::sample::select(vec![
                    "/flow", "/healthz", "/readyz", "/_/health", "/_/ready", "/", "//",
                    "/functions", "/functions/", "/blobs", "/blobs/", "/functions//add",
                    "/functions/add/", "/FUNCTIONS/add",
                ])
                .prop_map(|p| (p.to_owned(), Method::GET)),
                1 => prop::collection::vec(segment(), 0..4)
                    .prop_map(|s| (format!("/{}", s.join("/")), Method::POST)),
            ];
            (path, prop::option::of("[a-z0-9=&%+]{0,20}")).prop_map(|((path, method), query)| {
                match query {
                    Some(query) => (format!("{path}?{query}"), method),
                    None => (path, method),
                }
            })
        }

        fn method() -> impl Strategy<Value = Method> {
            prop_oneof![
                8 => Just(Method::POST),
                2 => Just(Method::PUT),
                2 => Just(Method::GET),
                1 => prop::sample::select(vec![
                    Method::HEAD,
                    Method::DELETE,
                    Method::PATCH,
                    Method::OPTIONS,
                    Method::TRACE,
                    Method::CONNECT,
                ]),
                1 => "[A-Z]{1,12}".prop_map(|m| Method::from_bytes(m.as_bytes()).unwrap()),
            ]
        }

        /// Any bytes a header value may hold (no control characters but tab).
        fn any_value() -> impl Strategy<Value = Vec<u8>> {
            prop::collection::vec(
                prop_oneof![
                    8 => 0x20u8..0x7f,
                    1 => 0x80u8..=0xff,
                    1 => Just(b'\t'),
                ],
                0..80,
            )
        }

        fn flow() -> impl Strategy<Value = Vec<u8>> {
            let function = prop_oneof![
                prop::sample::select(vec!["app::add", "app::hello", "app::fail", "nope", "dup"])
                    .prop_map(str::to_owned),
                "[a-z:]{0,12}",
                (0usize..700).prop_map(|n| "f".repeat(n)),
            ];
            let step = (function, any::<bool>()).prop_map(
                |(function, unwrap)| serde_json::json!({ "function": function, "unwrap": unwrap }),
            );
            prop_oneof![
                4 => (
                    prop_oneof![Just(0u32), 0u32..70, any::<u32>(), Just(u32::MAX)],
                    prop::collection::vec(step, 0..4),
                )
                    .prop_map(|(stage, next)| {
                        serde_json::json!({ "stage": stage, "next": next }).to_string().into_bytes()
                    }),
                1 => (60usize..80).prop_map(|n| {
                    let step = serde_json::json!({ "function": "app::add" });
                    serde_json::json!({ "stage": 0, "next": vec![step; n] })
                        .to_string()
                        .into_bytes()
                }),
                2 => "[{}\\[\\]\",:a-z0-9 ]{0,80}".prop_map(String::into_bytes),
                1 => any_value(),
            ]
        }

        fn header() -> impl Strategy<Value = (HeaderName, Vec<u8>)> {
            let media = prop_oneof![
                prop::sample::select(vec![
                    "application/json",
                    "application/x-ferry-binary",
                    "application/octet-stream",
                    "text/plain",
                    "text/json; charset=utf-8",
                    "text/csv",
                    "*/*",
                    "",
                    "application/json;;;",
                ])
                .prop_map(|m| m.as_bytes().to_vec()),
                any_value(),
            ];
            let authorization = prop_oneof![
                Just(format!("Bearer {TOKEN}").into_bytes()),
                Just(format!("bearer    {TOKEN}").into_bytes()),
                Just(format!("Bearer {TOKEN}x").into_bytes()),
                Just(b"Bearer".to_vec()),
                Just(b"Basic dXNlcjpwYXNz".to_vec()),
                any_value(),
            ];
            let blobs = prop_oneof![
                Just(known_blob().to_string().into_bytes()),
                prop::collection::vec(
                    prop_oneof![hex(64), hex(3), Just(known_blob().to_string())],
                    0..5
                )
                .prop_map(|ids| ids.join(",").into_bytes()),
                any_value(),
            ];
            let length = prop_oneof![
                any::<u64>().prop_map(|n| n.to_string().into_bytes()),
                (0u64..40_000).prop_map(|n| n.to_string().into_bytes()),
                Just(b"99999999999999999999999".to_vec()),
                Just(b"-1".to_vec()),
                any_value(),
            ];
            let named = |name: &'static str| HeaderName::from_static(name);
            prop_oneof![
                3 => media.clone().prop_map(move |v| (named("content-type"), v)),
                2 => media.prop_map(move |v| (named("accept"), v)),
                2 => authorization.prop_map(move |v| (named("authorization"), v)),
                3 => flow().prop_map(move |v| (named("x-ferry-flow"), v)),
                2 => blobs.prop_map(move |v| (named("x-ferry-blobs"), v)),
                1 => length.prop_map(move |v| (named("content-length"), v)),
                1 => (
                    prop::sample::select(vec![
                        "x-ferry-deadline", "x-ferry-deadline-ms", "x-ferry-error", "traceparent",
                        "x-request-id", "x-amzn-trace-id", "transfer-encoding", "connection",
                        "expect", "host",
                    ]),
                    any_value(),
                )
                    .prop_map(move |(name, v)| (named(name), v)),
                1 => ("[a-zA-Z0-9!#$%&'*+.^_`|~-]{1,24}", any_value())
                    .prop_map(|(name, v)| (HeaderName::from_bytes(name.as_bytes()).unwrap(), v)),
            ]
        }

        fn body() -> impl Strategy<Value = Vec<u8>> {
            let add = (any::<i64>(), any::<i64>());
            prop_oneof![
                2 => Just(Vec::new()),
                2 => prop::collection::vec(any::<u8>(), 0..256),
                2 => "[{}\\[\\]\",:a-z0-9 .-]{0,120}".prop_map(String::into_bytes),
                3 => add.prop_map(|(a, b)| format!(r#"{{"a": {a}, "b": {b}}}"#).into_bytes()),
                1 => add.prop_map(|(a, b)| Codec::Binary.encode(&Add { a, b }).unwrap()),
                1 => any::<u32>().prop_map(|n| format!(r#"{{"n": {n}}}"#).into_bytes()),
                1 => (any::<bool>(), hex(64)).prop_map(|(known, random)| {
                    let id = if known { known_blob() } else { random.parse().unwrap() };
                    let mut by_id = 1u32.to_le_bytes().to_vec();
                    by_id.extend_from_slice(id.as_bytes());
                    by_id
                }),
                1 => prop::collection::vec(any::<u8>(), 0..64).prop_map(|value| blob_of(&value).1),
                1 => (MAX_BODY - 100..MAX_BODY + 4_000).prop_map(|n| vec![b'7'; n]),
            ]
        }

        type Parts = (Method, String, Vec<(HeaderName, Vec<u8>)>, Vec<u8>);

        /// A call a function takes as it is (arguments, codec, blobs), to which `header()` may
        /// add trouble.
        fn call() -> impl Strategy<Value = Parts> {
            let json = |v: &[(&'static str, &'static str)]| -> Vec<(HeaderName, Vec<u8>)> {
                v.iter()
                    .map(|(n, v)| (HeaderName::from_static(n), v.as_bytes().to_vec()))
                    .collect()
            };
            let by_id = |id: crate::shared::BlobId| {
                let mut by_id = 1u32.to_le_bytes().to_vec();
                by_id.extend_from_slice(id.as_bytes());
                by_id
            };
            let call = prop_oneof![
                (
                    any::<i64>(),
                    any::<i64>(),
                    prop::sample::select(vec!["add", "app::add", "ad%64"])
                )
                    .prop_map(move |(a, b, name)| {
                        let body = format!(r#"{{"a": {a}, "b": {b}}}"#).into_bytes();
                        (name, json(&[("content-type", "application/json")]), body)
                    }),
                (any::<i64>(), any::<i64>()).prop_map(move |(a, b)| {
                    let body = Codec::Binary.encode(&Add { a, b }).unwrap();
                    let headers = json(&[("content-type", "application/x-ferry-binary")]);
                    ("add", headers, body)
                }),
                any::<u32>().prop_map(move |n| (
                    "refuse",
                    json(&[]),
                    format!(r#"{{"n": {n}}}"#).into_bytes()
                )),
                Just(("fail", json(&[]), Vec::new())),
                Just((
                    "hello",
                    json(&[("accept", "application/x-ferry-binary")]),
                    Vec::new()
                )),
                Just(("app::b::dup", json(&[]), b"{}".to_vec())),
                // By the id of the blob this instance holds, or of one it lacks (428).
                prop::option::of(hex(64)).prop_map(move |unknown| {
                    let id = match unknown {
                        Some(hex) => hex.parse().unwrap(),
                        None => known_blob(),
                    };
                    let mut headers = json(&[("content-type", "application/x-ferry-binary")]);
                    headers.push((
                        HeaderName::from_static("x-ferry-blobs"),
                        id.to_string().into_bytes(),
                    ));
                    ("blob_len", headers, by_id(id))
                }),
            ];
            (call, prop::collection::vec(header(), 0..3)).prop_map(
                |((name, mut headers, body), more)| {
                    headers.extend(more);
                    (Method::POST, format!("/functions/{name}"), headers, body)
                },
            )
        }

        fn case() -> impl Strategy<Value = Case> {
            // Mostly the method the path's route takes.
            let any_request = (
                prop::bool::weighted(0.8),
                method(),
                path(),
                prop::collection::vec(header(), 0..6),
                body(),
            )
                .prop_map(|(natural, method, (path, route_method), headers, body)| {
                    let method = if natural { route_method } else { method };
                    (method, path, headers, body)
                });
            // A valid upload, whatever else its headers say.
            let upload = (
                prop::collection::vec(any::<u8>(), 0..2_000),
                prop::collection::vec(header(), 0..3),
            )
                .prop_map(|(value, headers)| {
                    let (id, blob) = blob_of(&value);
                    (Method::PUT, format!("/blobs/{id}"), headers, blob)
                });
            let parts = prop_oneof![5 => any_request, 4 => call(), 1 => upload];
            // A service with a token, and mostly a request that has it.
            (any::<bool>(), prop::bool::weighted(0.8), parts).prop_map(
                |(token, authorized, (method, mut path, mut headers, body))| {
                    if token && authorized {
                        let bearer = format!("Bearer {TOKEN}").into_bytes();
                        headers.insert(0, (HeaderName::from_static("authorization"), bearer));
                    }
                    // The longest URI `http` takes.
                    path.truncate(u16::MAX as usize - 1);
                    Case {
                        token,
                        method,
                        path,
                        headers: headers
                            .into_iter()
                            .filter_map(|(name, value)| {
                                Some((name, HeaderValue::from_bytes(&value).ok()?))
                            })
                            .collect(),
                        body,
                    }
                },
            )
        }

        struct Fixture {
            runtime: tokio::runtime::Runtime,
            plain: Router,
            guarded: Router,
        }

        fn fixture() -> &'static Fixture {
            static FIXTURE: OnceLock<Fixture> = OnceLock::new();
            FIXTURE.get_or_init(|| {
                let runtime = tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap();
                let (id, blob) = blob_of(b"known");
                crate::shared::insert_verified(id, Bytes::from(blob)).unwrap();
                Fixture {
                    runtime,
                    plain: app(false),
                    guarded: app(true),
                }
            })
        }

        /// The request's answer, checked; then a good request, which must succeed.
        async fn check(app: &Router, case: Case) -> Result<(), TestCaseError> {
            let token = case.token;
            // An answer to HEAD has no body.
            let head = case.method == Method::HEAD;
            let mut request = Request::builder()
                .method(case.method)
                .uri(Uri::try_from(&case.path).unwrap());
            for (name, value) in case.headers {
                request = request.header(name, value);
            }
            let (status, kind, body) =
                send(app, request.body(Body::from(case.body)).unwrap()).await;
            if status.is_server_error() {
                // Only for the function's own failure: `fail`'s, as its error says.
                let error = serde_json::from_slice::<Error>(&body).ok();
                prop_assert!(
                    error.as_ref().is_some_and(|error| {
                        status == StatusCode::INTERNAL_SERVER_ERROR
                            && error.function() == Some("app::fail")
                            && matches!(
                                error.kind(),
                                ErrorKind::Panic { message } if message == FAILED
                            )
                    }),
                    "{status} for bad input: {error:?} {body:?}"
                );
            }
            // A ferry error says so in a header and is JSON whatever the codec.
            if kind.is_some() && !head {
                let error = serde_json::from_slice::<Error>(&body);
                prop_assert!(error.is_ok(), "{status}: not a ferry error: {body:?}");
            }

            let bearer = format!("Bearer {TOKEN}");
            let headers: &[(&str, &str)] = if token {
                &[("authorization", &bearer)]
            } else {
                &[]
            };
            let (status, _, body) =
                send(app, post("/functions/add", headers, r#"{"a": 40, "b": 2}"#)).await;
            prop_assert_eq!((status, &body[..]), (StatusCode::OK, &b"42"[..]));
            Ok(())
        }

        proptest! {
            #[test]
            fn any_request_gets_an_answer_and_bad_input_is_never_a_server_error(case in case()) {
                let fixture = fixture();
                let app = if case.token { &fixture.guarded } else { &fixture.plain };
                fixture.runtime.block_on(check(app, case))?;
            }
        }
    }
}
