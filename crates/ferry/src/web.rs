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
//! means Lambda events, `FERRY_ROLE=openwhisk` an OpenWhisk web action (`/init` + `/run`), and
//! anything else a plain server on `FERRY_LISTEN` / `$PORT` (8080) that drains on SIGTERM.
//!
//! - **Lambda**: `rawPath`, `rawQueryString`, `headers`, `cookies[]` and the (base64 when
//!   `isBase64Encoded`) `body` become the request; the response becomes `{statusCode, headers,
//!   cookies[], body, isBase64Encoded}`, with binary bodies base64'd.
//! - **OpenWhisk**: `__ow_method`, `__ow_path`, `__ow_query`, `__ow_headers` and `__ow_body`
//!   (base64 for binary content) become the request; the response becomes
//!   `{statusCode, headers, body}`, binary bodies base64'd with their content type kept.

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

use crate::Context;
use crate::run::Role;
use crate::serve::lambda;

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
/// is the one a worker's functions get (`FERRY_BACKEND=lambda|openwhisk` reaches the program's deployed
/// functions, otherwise they run in this process).
pub fn serve(router: Router) -> ExitCode {
    let role = Role::from_env().unwrap_or(Role::Host);
    crate::run::enter(role);
    match role {
        // A web app is a ferry program too: tools list its functions (often none).
        Role::Manifest => return crate::run::print_manifest(true),
        // The host's context started this program as a worker: serve its functions, not the app.
        Role::LocalWorker => {
            return match crate::Registry::global() {
                Ok(registry) => crate::serve::local::serve(registry),
                Err(error) => {
                    eprintln!("error: {error}");
                    ExitCode::from(2)
                }
            };
        }
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
    crate::serve::run_to_exit("web app", async move {
        let ctx = match backend {
            Some(backend) => Context::new(backend),
            None => crate::serve::worker_context(),
        }
        .map_err(|e| e.to_string())?;
        let router = router.layer(axum::Extension(ctx));
        match role {
            Role::Lambda => serve_lambda(router).await,
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
        parts.extensions.get::<Context>().cloned().ok_or((
            StatusCode::INTERNAL_SERVER_ERROR,
            "no ferry::Context here: serve the router with `ferry::web::serve`",
        ))
    }
}

async fn serve_plain(router: Router) -> Result<(), String> {
    let address = crate::serve::listen_address()?;
    let listener =
        crate::serve::bind(address).map_err(|e| format!("cannot listen on {address}: {e}"))?;
    crate::serve::announce(&listener).map_err(|e| e.to_string())?;
    axum::serve(listener, router)
        .with_graceful_shutdown(crate::serve::shutdown_signal())
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

fn lambda_response(status: StatusCode, headers: &HeaderMap, body: &[u8]) -> Value {
    let mut single = Map::new();
    let mut cookies = Vec::new();
    for name in headers.keys() {
        let values: Vec<&str> = headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
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
    let address = crate::serve::listen_address()?;
    let listener =
        crate::serve::bind(address).map_err(|e| format!("cannot listen on {address}: {e}"))?;
    crate::serve::announce(&listener).map_err(|e| e.to_string())?;
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
        .with_graceful_shutdown(crate::serve::shutdown_signal())
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
    crate::serve::openwhisk::write_sentinels();
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
            let mut probe = HeaderMap::new();
            if let Ok(value) = HeaderValue::from_str(content_type) {
                probe.insert(CONTENT_TYPE, value);
            }
            // OpenWhisk base64s bodies whose content type is not text.
            if !content_type.is_empty() && !is_text(&probe, b"") {
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

fn web_action_response(status: StatusCode, headers: &HeaderMap, body: &[u8]) -> Value {
    let mut out = Map::new();
    for name in headers.keys() {
        let values: Vec<&str> = headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .collect();
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
    let (body, _) = encode_body(headers, body);
    json!({ "statusCode": status.as_u16(), "headers": out, "body": body })
}
