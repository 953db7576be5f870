//! A web app on AWS Lambda: Function URL / API Gateway HTTP API events (payload format 2.0) and
//! API Gateway REST API events (payload format 1.0, also what an HTTP API configured for 1.0
//! sends), through the custom runtime. Each event is answered in its own format. A binary
//! deployed by `ferry deploy` serves a function when `_HANDLER` names one of its functions, and
//! the router otherwise.

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
            Ok((format, request)) => {
                let (status, headers, body) = handle(&router, request).await;
                Ok(
                    serde_json::to_vec(&lambda_response(format, status, &headers, &body))
                        .unwrap_or_default(),
                )
            }
            Err(message) => Err(crate::Error::bad_input(".", message)),
        };
        lambda::post_result(&client, &base, &invocation.request_id, result).await?;
    }
}

/// The payload format of an event, which its answer keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// API Gateway REST APIs (and HTTP APIs set to 1.0): `httpMethod`, `path`,
    /// `multiValueHeaders`, `multiValueQueryStringParameters`.
    V1,
    /// Function URLs and HTTP APIs: `"version": "2.0"`, `rawPath`, `rawQueryString`, `cookies`.
    V2,
}

pub(crate) fn lambda_request(event: &[u8]) -> Result<(Format, Request<Body>), String> {
    let event: Value = serde_json::from_slice(event)
        .map_err(|e| format!("not an API Gateway or Function URL event: {e}"))?;
    let version = event.get("version").and_then(Value::as_str);
    let request = match version {
        Some("2.0") => (Format::V2, v2_request(&event)?),
        None | Some("1.0") if event.get("httpMethod").is_some_and(Value::is_string) => {
            (Format::V1, v1_request(&event)?)
        }
        _ => {
            return Err(format!(
                "not an API Gateway or Function URL event: expected `\"version\": \"2.0\"` \
                 (Function URL, HTTP API) or an `httpMethod` (REST API, payload 1.0), got \
                 version {}",
                version.map_or_else(|| "none".to_owned(), |v| format!("`{v}`"))
            ));
        }
    };
    Ok(request)
}

fn v2_request(event: &Value) -> Result<Request<Body>, String> {
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
    request(method, path, query, headers.into_iter(), body(event)?)
}

/// Payload 1.0: the values are decoded, so the query string is built again from them; the
/// multi-value maps hold every value, the single-value ones only the last of each.
fn v1_request(event: &Value) -> Result<Request<Body>, String> {
    let method = event["httpMethod"].as_str().unwrap_or("GET");
    let path = event["path"].as_str().unwrap_or("/");
    let query = query_string(
        &event["multiValueQueryStringParameters"],
        &event["queryStringParameters"],
    );
    let mut headers = Vec::new();
    let mut cookies = Vec::new();
    for (name, value) in multi_values(&event["multiValueHeaders"], &event["headers"]) {
        // Several `Cookie` headers reach the router as one, as HTTP/2's are joined.
        if name.eq_ignore_ascii_case(COOKIE.as_str()) {
            cookies.push(value);
        } else {
            headers.push((name, value));
        }
    }
    if !cookies.is_empty() {
        headers.push((COOKIE.as_str().to_owned(), cookies.join("; ")));
    }
    request(method, path, &query, headers.into_iter(), body(event)?)
}

/// Each name and value of a multi-value map, with the single-value map's names it lacks.
fn multi_values(multi: &Value, single: &Value) -> Vec<(String, String)> {
    let mut pairs = Vec::new();
    for (name, values) in multi.as_object().into_iter().flatten() {
        let values = values.as_array().map_or(&[][..], Vec::as_slice);
        pairs.extend(
            values
                .iter()
                .filter_map(Value::as_str)
                .map(|value| (name.clone(), value.to_owned())),
        );
    }
    let in_multi = |name: &str| {
        multi
            .as_object()
            .is_some_and(|m| m.keys().any(|k| k.eq_ignore_ascii_case(name)))
    };
    pairs.extend(string_pairs(single).filter(|(name, _)| !in_multi(name)));
    pairs
}

fn query_string(multi: &Value, single: &Value) -> String {
    form_urlencoded::Serializer::new(String::new())
        .extend_pairs(multi_values(multi, single))
        .finish()
}

fn body(event: &Value) -> Result<Vec<u8>, String> {
    Ok(match event["body"].as_str() {
        None => Vec::new(),
        Some(body) if event["isBase64Encoded"].as_bool() == Some(true) => base64_simd::STANDARD
            .decode_to_vec(body)
            .map_err(|e| format!("the body is not valid base64: {e}"))?,
        Some(body) => body.as_bytes().to_vec(),
    })
}

fn lambda_response(format: Format, status: StatusCode, headers: &HeaderMap, body: &[u8]) -> Value {
    let (body, base64) = encode_body(headers, body);
    let mut single = Map::new();
    match format {
        Format::V2 => {
            let mut cookies = Vec::new();
            for (name, values) in header_values(headers) {
                if name == SET_COOKIE {
                    cookies.extend(values.iter().map(|v| Value::String((*v).to_owned())));
                } else {
                    // Payload 2.0 carries one value per header: repeated ones are comma-joined.
                    single.insert(name.as_str().to_owned(), Value::String(values.join(", ")));
                }
            }
            json!({
                "statusCode": status.as_u16(),
                "headers": single,
                "cookies": cookies,
                "body": body,
                "isBase64Encoded": base64,
            })
        }
        Format::V1 => {
            // A header with several values (every `Set-Cookie`) goes to `multiValueHeaders`,
            // which API Gateway prefers to `headers` for a name in both.
            let mut multi = Map::new();
            for (name, values) in header_values(headers) {
                if name == SET_COOKIE || values.len() > 1 {
                    let values = values.iter().map(|v| Value::String((*v).to_owned()));
                    multi.insert(name.as_str().to_owned(), Value::Array(values.collect()));
                } else if let Some(value) = values.first() {
                    single.insert(name.as_str().to_owned(), Value::String((*value).to_owned()));
                }
            }
            json!({
                "statusCode": status.as_u16(),
                "headers": single,
                "multiValueHeaders": multi,
                "body": body,
                "isBase64Encoded": base64,
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_v1_query_is_encoded_again() {
        let event = json!({
            "httpMethod": "GET",
            "path": "/p",
            "queryStringParameters": {"q": "b", "x": "1"},
            "multiValueQueryStringParameters": {"q": ["a b", "&=ü"]},
        });
        let (format, request) = lambda_request(event.to_string().as_bytes()).unwrap();
        assert_eq!(format, Format::V1);
        // Form encoding, as a browser sends a query: a space is `+`.
        assert_eq!(request.uri(), "/p?q=a+b&q=%26%3D%C3%BC&x=1");
    }

    #[test]
    fn an_event_of_neither_version_is_bad_input() {
        for event in [
            json!({"version": "3.0", "httpMethod": "GET"}),
            json!({"path": "/"}),
        ] {
            let error = lambda_request(event.to_string().as_bytes()).unwrap_err();
            assert!(error.contains("httpMethod"), "{error}");
        }
    }
}
