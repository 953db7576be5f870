//! Web apps: an [`axum::Router`] served unchanged as a plain HTTP server, behind AWS Lambda
//! Function URL / API Gateway events (HTTP API payload 2.0, REST API payload 1.0), or as an
//! OpenWhisk web action.
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
//! the router otherwise (`_HANDLER=web`, an action without `FERRY_FUNCTION`). With
//! `FERRY_ROLE=http` (a Knative Service) it serves its functions when `FERRY_FUNCTION` is set,
//! and the router otherwise.
//!
//! - **Lambda**, payload 2.0: `rawPath`, `rawQueryString`, `headers`, `cookies[]` and the (base64
//!   when `isBase64Encoded`) `body` become the request; the response becomes `{statusCode,
//!   headers, cookies[], body, isBase64Encoded}`, with binary bodies base64'd. Payload 1.0 (an
//!   event with `httpMethod` and no `"version": "2.0"`): `path`, the query and header maps (the
//!   multi-value ones first) and `body`; the response puts repeated headers and every
//!   `Set-Cookie` in `multiValueHeaders`.
//! - **OpenWhisk** (a raw web action, `raw-http`): `__ow_method`, `__ow_path`, `__ow_query`,
//!   `__ow_headers` and `__ow_body` become the request, the body decoded from base64 when the
//!   controller encodes it (binary content types and `application/json`); the response becomes
//!   `{statusCode, headers, body}`, with binary and JSON bodies base64'd (the controller decodes
//!   them by their content type).

#[cfg(feature = "lambda")]
mod lambda;
#[cfg(feature = "openwhisk")]
mod openwhisk;

use std::process::ExitCode;

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, Request, Response, StatusCode};
use serde_json::Value;
use tower::ServiceExt;

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
        #[cfg(feature = "local")]
        Role::LocalWorker => {
            return match Registry::global() {
                Ok(registry) => crate::platform::local::server::serve(registry),
                Err(error) => fail(&error),
            };
        }
        // `ferry deploy` runs one binary as the web app and as each of its functions.
        #[cfg(feature = "lambda")]
        Role::Lambda => {
            return match Registry::global() {
                Ok(registry) => lambda::serve(registry, router),
                Err(error) => fail(&error),
            };
        }
        #[cfg(feature = "openwhisk")]
        Role::ActionLoop => {
            return match Registry::global() {
                Ok(registry) => openwhisk::serve_actionloop(registry, router),
                Err(error) => fail(&error),
            };
        }
        // `ferry deploy --platform http` runs one image as the web app and as each function's
        // Knative Service: a function's service (`FERRY_FUNCTION` set) serves the functions.
        #[cfg(feature = "http")]
        Role::Http if crate::config::FUNCTION.text().is_some() => {
            return match Registry::global() {
                Ok(registry) => crate::platform::http::server::serve(registry),
                Err(error) => fail(&error),
            };
        }
        Role::Host | Role::Http => {}
        #[cfg(feature = "openwhisk")]
        Role::OpenWhisk => {}
        #[allow(unreachable_patterns)]
        other => {
            return fail(&crate::Error::config(format!(
                "this program was built without the ferry feature that serves {other:?}"
            )));
        }
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
            #[cfg(feature = "openwhisk")]
            Role::OpenWhisk => openwhisk::serve_web_action(router).await,
            _ => serve_plain(router).await,
        }
    })
}

fn fail(error: &crate::Error) -> ExitCode {
    eprintln!("error: {error}");
    ExitCode::from(2)
}

/// The context a handler gets during one web action activation: the app's context with the
/// activation's metadata as its [`crate::Invocation`].
#[derive(Clone)]
pub(crate) struct ActivationContext(pub(crate) Context);

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
    // A web app reads its own bodies: connections and headers are guarded, bodies are its own.
    let limits = crate::runtime::guard::Limits::from_env().map_err(|e| e.to_string())?;
    crate::runtime::guard::serve(
        listener,
        router,
        &limits,
        crate::runtime::serve::shutdown_signal(),
    )
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
