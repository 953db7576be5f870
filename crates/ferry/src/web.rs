//! Web apps: an [`axum::Router`] served unchanged as a plain HTTP server, behind AWS Lambda
//! Function URL / API Gateway HTTP API (payload 2.0) events, or as an OpenWhisk web action.
//!
//! ```no_run
//! use axum::routing::get;
//!
//! fn main() -> std::process::ExitCode {
//!     let app = axum::Router::new().route("/hello", get(|| async { "hello" }));
//!     ferry::web::serve(app)
//! }
//! ```
//!
//! The platform is recognised as for functions: `AWS_LAMBDA_RUNTIME_API` (or `FERRY_ROLE=lambda`)
//! means Lambda events, OpenWhisk's ActionLoop proxy (or `FERRY_ROLE=actionloop`) or
//! `FERRY_ROLE=openwhisk` an OpenWhisk web action (one line per activation, or `/init` + `/run`),
//! and anything else a plain server on `FERRY_LISTEN` / `$PORT` (8080) that drains on SIGTERM.
//!
//! `ferry deploy` deploys a web program's binary as the web app and as each of its functions, so
//! on Lambda and under the ActionLoop proxy the program serves a function when the platform names
//! one (Lambda's `_HANDLER`; the action's name or `FERRY_FUNCTION`), as [`crate::run`] would, and
//! the router otherwise (`_HANDLER=web`, an action without `FERRY_FUNCTION`).
//!
//! - **Lambda**: `rawPath`, `rawQueryString`, `headers`, `cookies[]` and the (base64 when
//!   `isBase64Encoded`) `body` become the request; the response becomes `{statusCode, headers,
//!   cookies[], body, isBase64Encoded}`, with binary bodies base64'd.
//! - **OpenWhisk** (a raw web action, `raw-http`): `__ow_method`, `__ow_path`, `__ow_query`,
//!   `__ow_headers` and `__ow_body` become the request, the body decoded from base64 when the
//!   controller encodes it (binary content types and `application/json`); the response becomes
//!   `{statusCode, headers, body}`, with binary and JSON bodies base64'd (the controller decodes
//!   them by their content type).

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::header::{CONTENT_TYPE, COOKIE, SET_COOKIE};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use serde_json::{Map, Value, json};
use tower::ServiceExt;

use crate::platform::lambda::server as lambda;
use crate::role::Role;
use crate::{Context, Registry};

/// Largest response body read back from the router (Lambda's limit is 6 MB anyway).
const MAX_BODY: usize = 64 << 20;

/// axum, as ferry serves it: routers, extractors and responses without an axum dependency of
/// the program's own (`use ferry::web::axum::{Router, routing::get};`).
pub use axum;

/// Serves `router` on the platform this process was started on; returns the exit code.
///
/// Handlers reach functions through a [`Context`] argument (`async fn page(ctx: ferry::Context)`),
/// which works in every mode: started by hand it is the backend `--backend` or `FERRY_BACKEND`
/// names (default the local platform, whose workers are this program); on Lambda and OpenWhisk it
/// is the one a worker's functions get (`FERRY_BACKEND=lambda|openwhisk` reaches the program's
/// deployed functions, otherwise they run in this process).
pub fn serve(router: Router) -> ExitCode {
    let role = match crate::run::entry() {
        Ok(role) => role,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    match role {
        // A web app is a ferry program too: tools list its functions (often none).
        Role::Manifest => return crate::run::print_manifest(true),
        // The host's context started this program as a worker: serve its functions, not the app.
        Role::LocalWorker => {
            return match crate::Registry::global() {
                Ok(registry) => crate::platform::local::server::serve(registry),
                Err(error) => {
                    eprintln!("error: {error}");
                    ExitCode::from(2)
                }
            };
        }
        Role::Lambda | Role::ActionLoop => return serve_deployed(role, router),
        _ => {}
    }
    // Started by hand, the app is a host: `--backend` (or `FERRY_BACKEND`) picks where its
    // handlers' calls go. A platform's worker takes no command line.
    let backend = match role {
        Role::Host => match crate::run::backend_from_command_line() {
            Ok(backend) => Some(backend),
            Err(error) => {
                eprintln!("error: {error}");
                return ExitCode::from(2);
            }
        },
        _ => None,
    };
    crate::runtime::serve::run_to_exit("web app", async move {
        let ctx = match backend {
            Some(backend) => Context::new(backend),
            None => crate::runtime::serve::worker_context(),
        }
        .map_err(|e| e.to_string())?;
        let router = router.layer(axum::Extension(ctx));
        match role {
            Role::OpenWhisk => serve_web_action(router).await,
            _ => serve_plain(router).await,
        }
    })
}

/// A handler's `ctx: ferry::Context` argument, in a router served by [`serve`].
impl<S: Send + Sync> axum::extract::FromRequestParts<S> for Context {
    type Rejection = (StatusCode, &'static str);

    async fn from_request_parts(
        parts: &mut axum::http::request::Parts,
        _state: &S,
    ) -> Result<Self, Self::Rejection> {
        // A web action activation's own context (with its metadata) comes first.
        if let Some(ActivationContext(ctx)) = parts.extensions.get::<ActivationContext>() {
            return Ok(ctx.clone());
        }
        parts.extensions.get::<Context>().cloned().ok_or((
            StatusCode::INTERNAL_SERVER_ERROR,
            "no ferry::Context here: serve the router with `ferry::web::serve`",
        ))
    }
}

async fn serve_plain(router: Router) -> Result<(), String> {
    let address = crate::runtime::serve::listen_address()?;
    let listener = crate::runtime::serve::bind(address)
        .map_err(|e| format!("cannot listen on {address}: {e}"))?;
    crate::runtime::serve::announce(&listener).map_err(|e| e.to_string())?;
    axum::serve(listener, router)
        .with_graceful_shutdown(crate::runtime::serve::shutdown_signal())
        .await
        .map_err(|e| e.to_string())
}

/// Runs one request through the router and reads the whole response.
async fn handle(router: &Router, request: Request<Body>) -> (StatusCode, HeaderMap, Bytes) {
    let response: Response<Body> = match router.clone().oneshot(request).await {
        Ok(response) => response,
        Err(never) => match never {},
    };
    let (parts, body) = response.into_parts();
    let body = axum::body::to_bytes(body, MAX_BODY)
        .await
        .unwrap_or_default();
    (parts.status, parts.headers, body)
}

/// Whether a body of this content type travels as text (else base64).
fn is_text(headers: &HeaderMap, body: &[u8]) -> bool {
    let Some(content_type) = headers.get(CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return std::str::from_utf8(body).is_ok();
    };
    let media = content_type.split(';').next().unwrap_or_default().trim();
    (media.starts_with("text/")
        || media == "application/json"
        || media.ends_with("+json")
        || media.ends_with("+xml")
        || media == "application/xml"
        || media == "application/javascript"
        || media == "application/x-www-form-urlencoded")
        && std::str::from_utf8(body).is_ok()
}

fn encode_body(headers: &HeaderMap, body: &[u8]) -> (String, bool) {
    if is_text(headers, body) {
        (String::from_utf8_lossy(body).into_owned(), false)
    } else {
        (base64_simd::STANDARD.encode_to_string(body), true)
    }
}

fn request(
    method: &str,
    path: &str,
    query: &str,
    headers: impl Iterator<Item = (String, String)>,
    body: Vec<u8>,
) -> Result<Request<Body>, String> {
    let method = Method::from_bytes(method.to_ascii_uppercase().as_bytes())
        .map_err(|_| format!("invalid method `{method}`"))?;
    let path = if path.starts_with('/') {
        path.to_owned()
    } else {
        format!("/{path}")
    };
    let uri = if query.is_empty() {
        path
    } else {
        format!("{path}?{query}")
    };
    let mut builder = Request::builder().method(method).uri(&uri);
    for (name, value) in headers {
        if let (Ok(name), Ok(value)) = (HeaderName::try_from(name), HeaderValue::try_from(value)) {
            builder = builder.header(name, value);
        }
    }
    builder
        .body(Body::from(body))
        .map_err(|e| format!("invalid request for `{uri}`: {e}"))
}

fn string_pairs(value: &Value) -> impl Iterator<Item = (String, String)> + '_ {
    value
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, value)| {
            let value = value
                .as_str()
                .map_or_else(|| value.to_string(), str::to_owned);
            (name.clone(), value)
        })
}

// ---- AWS Lambda: Function URL / API Gateway HTTP API (payload format 2.0) ----

async fn serve_lambda(router: Router) -> Result<(), String> {
    let base = lambda::api_base()?;
    let client = lambda::api_client()?;
    loop {
        let invocation = lambda::next_invocation(&client, &base).await?;
        let result = match lambda_request(&invocation.event) {
            Ok(request) => {
                let (status, headers, body) = handle(&router, request).await;
                Ok(
                    serde_json::to_vec(&lambda_response(status, &headers, &body))
                        .unwrap_or_default(),
                )
            }
            Err(message) => Err(crate::Error::bad_input(".", message)),
        };
        lambda::post_result(&client, &base, &invocation.request_id, result).await?;
    }
}

pub(crate) fn lambda_request(event: &[u8]) -> Result<Request<Body>, String> {
    let event: Value =
        serde_json::from_slice(event).map_err(|e| format!("not an http api event: {e}"))?;
    let method = event["requestContext"]["http"]["method"]
        .as_str()
        .unwrap_or("GET");
    let path = event["rawPath"]
        .as_str()
        .or_else(|| event["requestContext"]["http"]["path"].as_str())
        .unwrap_or("/");
    let query = event["rawQueryString"].as_str().unwrap_or_default();
    let mut headers: Vec<(String, String)> = string_pairs(&event["headers"]).collect();
    if let Some(cookies) = event["cookies"].as_array() {
        let joined: Vec<&str> = cookies.iter().filter_map(Value::as_str).collect();
        if !joined.is_empty() {
            headers.push((COOKIE.as_str().to_owned(), joined.join("; ")));
        }
    }
    let body = match event["body"].as_str() {
        None => Vec::new(),
        Some(body) if event["isBase64Encoded"].as_bool() == Some(true) => base64_simd::STANDARD
            .decode_to_vec(body)
            .map_err(|e| format!("the body is not valid base64: {e}"))?,
        Some(body) => body.as_bytes().to_vec(),
    };
    request(method, path, query, headers.into_iter(), body)
}

/// Each header's name and its values that are text.
fn header_values(headers: &HeaderMap) -> impl Iterator<Item = (&HeaderName, Vec<&str>)> {
    headers.keys().map(|name| {
        let values = headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
        (name, values)
    })
}

fn lambda_response(status: StatusCode, headers: &HeaderMap, body: &[u8]) -> Value {
    let mut single = Map::new();
    let mut cookies = Vec::new();
    for (name, values) in header_values(headers) {
        if name == SET_COOKIE {
            cookies.extend(values.iter().map(|v| Value::String((*v).to_owned())));
        } else {
            // Payload 2.0 carries one value per header: repeated ones are comma-joined.
            single.insert(name.as_str().to_owned(), Value::String(values.join(", ")));
        }
    }
    let (body, base64) = encode_body(headers, body);
    json!({
        "statusCode": status.as_u16(),
        "headers": single,
        "cookies": cookies,
        "body": body,
        "isBase64Encoded": base64,
    })
}

// ---- OpenWhisk web action ----

struct WebAction {
    router: Router,
    initialized: AtomicBool,
}

async fn serve_web_action(router: Router) -> Result<(), String> {
    let address = crate::runtime::serve::listen_address()?;
    let listener = crate::runtime::serve::bind(address)
        .map_err(|e| format!("cannot listen on {address}: {e}"))?;
    crate::runtime::serve::announce(&listener).map_err(|e| e.to_string())?;
    let state = Arc::new(WebAction {
        router,
        initialized: AtomicBool::new(false),
    });
    let app = Router::new()
        .route("/init", post(web_init))
        .route("/run", post(web_run))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(state);
    axum::serve(listener, app)
        .with_graceful_shutdown(crate::runtime::serve::shutdown_signal())
        .await
        .map_err(|e| e.to_string())
}

async fn web_init(State(action): State<Arc<WebAction>>) -> axum::response::Response {
    if action.initialized.swap(true, Ordering::AcqRel) {
        return (
            StatusCode::FORBIDDEN,
            axum::Json(json!({"error": "Cannot initialize the action more than once."})),
        )
            .into_response();
    }
    axum::Json(json!({"ok": true})).into_response()
}

async fn web_run(State(action): State<Arc<WebAction>>, body: Bytes) -> axum::response::Response {
    let value = serde_json::from_slice::<Value>(&body)
        .ok()
        .and_then(|mut body| body.get_mut("value").map(Value::take))
        .unwrap_or(Value::Null);
    let response = match web_action_request(&value) {
        Ok(request) => {
            let (status, headers, body) = handle(&action.router, request).await;
            axum::Json(web_action_response(status, &headers, &body)).into_response()
        }
        Err(message) => (
            StatusCode::BAD_REQUEST,
            axum::Json(json!({"error": message})),
        )
            .into_response(),
    };
    crate::platform::openwhisk::server::write_sentinels();
    response
}

pub(crate) fn web_action_request(value: &Value) -> Result<Request<Body>, String> {
    let method = value["__ow_method"].as_str().unwrap_or("get");
    let path = value["__ow_path"].as_str().unwrap_or("/");
    let query = value["__ow_query"].as_str().unwrap_or_default();
    let headers: Vec<(String, String)> = string_pairs(&value["__ow_headers"]).collect();
    let body = match value["__ow_body"].as_str() {
        None => Vec::new(),
        Some(body) => {
            let content_type = headers
                .iter()
                .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
                .map(|(_, v)| v.as_str())
                .unwrap_or_default();
            if !content_type.is_empty() && openwhisk_base64(content_type) {
                base64_simd::STANDARD
                    .decode_to_vec(body)
                    .map_err(|e| format!("`__ow_body` is not valid base64: {e}"))?
            } else {
                body.as_bytes().to_vec()
            }
        }
    };
    request(method, path, query, headers.into_iter(), body)
}

/// Whether OpenWhisk's controller carries a body of this content type as base64, both ways: the
/// media types its HTTP stack (akka-http, as spray did) calls binary — everything but `text/*`,
/// the registered textual `application/*` types and types given a `charset` — and, for its
/// legacy, `application/json` (in `__ow_body`; a JSON response body is decoded when it looks like
/// base64, so ferry always encodes one).
fn openwhisk_base64(content_type: &str) -> bool {
    let mut parts = content_type.split(';');
    let media = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
    let charset = parts.any(|p| p.trim().to_ascii_lowercase().starts_with("charset="));
    let Some((main, sub)) = media.split_once('/') else {
        return true;
    };
    if main == "text" {
        return false;
    }
    if media == "application/json" || sub.ends_with("+json") {
        return true;
    }
    const TEXTUAL: [&str; 10] = [
        "application/javascript",
        "application/ecmascript",
        "application/x-www-form-urlencoded",
        "application/xml",
        "application/xhtml+xml",
        "application/rss+xml",
        "application/atom+xml",
        "application/soap+xml",
        "application/xml-dtd",
        "application/x-javascript",
    ];
    !(TEXTUAL.contains(&media.as_str()) || (charset && main != "multipart"))
}

fn web_action_response(status: StatusCode, headers: &HeaderMap, body: &[u8]) -> Value {
    let mut out = Map::new();
    for (name, values) in header_values(headers) {
        let value = if values.len() == 1 {
            Value::String(values[0].to_owned())
        } else {
            Value::Array(
                values
                    .iter()
                    .map(|v| Value::String((*v).to_owned()))
                    .collect(),
            )
        };
        out.insert(name.as_str().to_owned(), value);
    }
    let content_type = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    let body = match (content_type, std::str::from_utf8(body)) {
        (Some(content_type), text) if !openwhisk_base64(&content_type) => match text {
            Ok(text) => text.to_owned(),
            Err(_) => String::from_utf8_lossy(body).into_owned(),
        },
        // Without a content type the controller answers `text/html`: text passes as it is.
        (None, Ok(text)) => text.to_owned(),
        (None, Err(_)) => {
            out.insert(
                CONTENT_TYPE.as_str().to_owned(),
                Value::String("application/octet-stream".to_owned()),
            );
            base64_simd::STANDARD.encode_to_string(body)
        }
        (Some(_), _) => base64_simd::STANDARD.encode_to_string(body),
    };
    json!({ "statusCode": status.as_u16(), "headers": out, "body": body })
}

// ---- Deployed by `ferry deploy`: one binary is the web app and its functions ----

/// Serves a program deployed on Lambda (`role` [`Role::Lambda`]) or as an ActionLoop executable
/// ([`Role::ActionLoop`]), where `ferry deploy` runs one binary as the web app and as each of its
/// functions: a function the platform names (Lambda's `_HANDLER`; under ActionLoop the
/// activation's action or `FERRY_FUNCTION`) is served as [`crate::run`] serves it, anything else
/// by `router`. [`serve`] hands those two roles here.
pub(crate) fn serve_deployed(role: Role, router: Router) -> ExitCode {
    let registry = match Registry::global() {
        Ok(registry) => registry,
        Err(error) => {
            eprintln!("error: {error}");
            return ExitCode::from(2);
        }
    };
    if role == Role::ActionLoop {
        return serve_actionloop(registry, router);
    }
    let handler = std::env::var("_HANDLER").unwrap_or_default();
    if registry.lookup(&handler).is_ok() {
        return crate::platform::lambda::server::serve(registry);
    }
    crate::runtime::serve::run_to_exit("web app", async move {
        let ctx = crate::runtime::serve::worker_context().map_err(|e| e.to_string())?;
        serve_lambda(router.layer(axum::Extension(ctx))).await
    })
}

// ---- OpenWhisk web action under the ActionLoop proxy ----

/// The ActionLoop protocol (see [`crate::platform::openwhisk::actionloop`]) for a web program: an activation
/// whose action is one of its functions (or any activation, with `FERRY_FUNCTION` set) runs that
/// function; any other is a web action activation of `router`.
fn serve_actionloop(registry: &'static Registry, router: Router) -> ExitCode {
    let function_action = crate::config::FUNCTION.text().is_some();
    crate::platform::openwhisk::actionloop::serve_lines(registry, move |runtime| {
        let router = router.layer(axum::Extension(runtime.context().clone()));
        move |line: String| {
            let (router, runtime) = (router.clone(), runtime.clone());
            async move {
                match serde_json::from_str::<Value>(&line) {
                    Ok(Value::Object(body))
                        if !function_action && !names_function(registry, &body) =>
                    {
                        web_activation(&router, runtime.context(), body).await
                    }
                    _ => crate::platform::openwhisk::actionloop::activate(&runtime, &line).await,
                }
            }
        }
    })
}

/// The context a handler gets during one web action activation: the app's context with the
/// activation's metadata as its [`crate::Invocation`].
#[derive(Clone)]
struct ActivationContext(Context);

/// Whether an activation's `action_name` (its last segment) is a function of the program.
fn names_function(registry: &'static Registry, body: &Map<String, Value>) -> bool {
    body.get("action_name")
        .and_then(Value::as_str)
        .and_then(|name| name.rsplit('/').next())
        .is_some_and(|name| registry.lookup(name).is_ok())
}

/// One web action activation (`{"value": {__ow_…}, "action_name": …}`): the activation context
/// reaches handlers as their `ctx`'s invocation metadata (`__OW_<KEY>`), the request runs
/// through the router, and its response is the activation's `{statusCode, headers, body}`.
async fn web_activation(router: &Router, ctx: &Context, mut body: Map<String, Value>) -> Value {
    let value = body.remove("value").unwrap_or(Value::Null);
    let metadata: BTreeMap<String, String> = body
        .into_iter()
        .map(|(key, value)| {
            let text = match value {
                Value::String(text) => text,
                other => other.to_string(),
            };
            (format!("__OW_{}", key.to_uppercase()), text)
        })
        .collect();
    let deadline = metadata
        .get("__OW_DEADLINE")
        .and_then(|d| d.parse::<u64>().ok())
        .map_or(std::time::Duration::from_secs(24 * 3600), |deadline_ms| {
            let now_ms = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_millis() as u64;
            std::time::Duration::from_millis(deadline_ms.saturating_sub(now_ms))
        });
    let activation = ctx.for_invocation(crate::Invocation {
        function: metadata
            .get("__OW_ACTION_NAME")
            .cloned()
            .unwrap_or_default(),
        id: crate::wire::InvocationId::next(),
        deadline: std::time::Instant::now() + deadline,
        metadata,
    });
    match web_action_request(&value) {
        Ok(mut request) => {
            request
                .extensions_mut()
                .insert(ActivationContext(activation));
            let (status, headers, body) = handle(router, request).await;
            web_action_response(status, &headers, &body)
        }
        Err(message) => json!({
            "statusCode": 400,
            "headers": {"content-type": "text/plain; charset=utf-8"},
            "body": message,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn openwhisk_base64s_binary_and_json_bodies() {
        for binary in [
            "application/octet-stream",
            "image/png",
            "application/json",
            "application/json; charset=utf-8",
            "application/vnd.api+json",
            "application/x-protobuf",
            "multipart/form-data; boundary=x; charset=utf-8",
        ] {
            assert!(openwhisk_base64(binary), "{binary}");
        }
        for text in [
            "text/plain",
            "text/html; charset=utf-8",
            "application/x-www-form-urlencoded",
            "application/xml",
            "application/javascript",
            "application/x-custom; charset=utf-8",
        ] {
            assert!(!openwhisk_base64(text), "{text}");
        }
    }

    #[test]
    fn web_action_responses_encode_by_content_type() {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        let response = web_action_response(StatusCode::OK, &headers, b"true");
        assert_eq!(response["body"], "dHJ1ZQ==");
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("text/plain"));
        let response = web_action_response(StatusCode::CREATED, &headers, b"true");
        assert_eq!(response["body"], "true");
        assert_eq!(response["statusCode"], 201);
        let response = web_action_response(StatusCode::OK, &HeaderMap::new(), &[0, 159]);
        assert_eq!(response["body"], "AJ8=");
        assert_eq!(
            response["headers"]["content-type"],
            "application/octet-stream"
        );
    }

    #[test]
    fn json_request_bodies_arrive_base64d() {
        let request = web_action_request(&json!({
            "__ow_method": "post",
            "__ow_path": "/echo",
            "__ow_headers": {"content-type": "application/json"},
            "__ow_body": "eyJhIjoxfQ==",
        }))
        .unwrap();
        let body =
            futures::executor::block_on(axum::body::to_bytes(request.into_body(), usize::MAX))
                .unwrap();
        assert_eq!(&body[..], br#"{"a":1}"#);
    }
}
