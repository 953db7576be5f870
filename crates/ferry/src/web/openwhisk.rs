//! A web app as an OpenWhisk raw web action: behind the Action Interface (`/init` + `/run`,
//! `FERRY_ROLE=openwhisk`) or under the ActionLoop proxy, where a binary deployed by
//! `ferry deploy` also serves the activations of its functions' actions.

use std::collections::BTreeMap;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, Request, StatusCode};
use axum::response::IntoResponse;
use axum::routing::post;
use serde_json::{Map, Value, json};

use super::{ActivationContext, MAX_BODY, handle, header_values, request, string_pairs};
use crate::{Context, Registry};

struct WebAction {
    router: Router,
    initialized: AtomicBool,
}

pub(crate) async fn serve_web_action(router: Router) -> Result<(), String> {
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

/// The ActionLoop protocol (see [`crate::platform::openwhisk::actionloop`]) for a web program: an activation
/// whose action is one of its functions (or any activation, with `FERRY_FUNCTION` set) runs that
/// function; any other is a web action activation of `router`.
pub(crate) fn serve_actionloop(registry: &'static Registry, router: Router) -> ExitCode {
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
    use axum::http::HeaderValue;

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
