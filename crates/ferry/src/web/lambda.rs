//! A web app on AWS Lambda: Function URL / API Gateway HTTP API events (payload format 2.0)
//! through the custom runtime. A binary deployed by `ferry deploy` serves a function when
//! `_HANDLER` names one of its functions, and the router otherwise.

use std::process::ExitCode;

use axum::Router;
use axum::body::Body;
use axum::http::header::{COOKIE, SET_COOKIE};
use axum::http::{HeaderMap, Request, StatusCode};
use serde_json::{Map, Value, json};

use super::{encode_body, handle, header_values, request, string_pairs};
use crate::Registry;
use crate::platform::lambda::server as lambda;

/// Serves the function `_HANDLER` names, else `router`'s events.
pub(crate) fn serve(registry: &'static Registry, router: Router) -> ExitCode {
    let handler = std::env::var("_HANDLER").unwrap_or_default();
    if registry.lookup(&handler).is_ok() {
        return lambda::serve(registry);
    }
    crate::runtime::serve::run_to_exit("web app", async move {
        let ctx = crate::runtime::serve::worker_context().map_err(|e| e.to_string())?;
        serve_events(router.layer(axum::Extension(ctx))).await
    })
}

async fn serve_events(router: Router) -> Result<(), String> {
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
