//! One axum router, served unchanged as a plain server, on Lambda and as an OpenWhisk web action.

use std::collections::HashMap;
use std::process::ExitCode;

use axum::Router;
use axum::body::Bytes;
use axum::extract::{Path, Query};
use axum::http::HeaderMap;
use axum::http::header::{CONTENT_TYPE, COOKIE, SET_COOKIE};
use axum::response::AppendHeaders;
use axum::routing::{get, post};

fn app() -> Router {
    Router::new()
        // Handlers reach functions through the context `ferry::web::serve` hands them.
        .route(
            "/add/{a}/{b}",
            get(|ctx: ferry::Context, Path((a, b)): Path<(i64, i64)>| async move {
                match ctx.call(ferry_tests::Add { a, b }).await {
                    Ok(sum) => sum.to_string(),
                    Err(error) => format!("error: {error}"),
                }
            }),
        )
        // A context built in the handler, as a program would outside ferry's web server: on the
        // local platform its workers are this program, which must serve functions, not the app.
        .route(
            "/add-from-env/{a}/{b}",
            get(|Path((a, b)): Path<(i64, i64)>| async move {
                let sum = async {
                    ferry::Context::from_env()?
                        .call(ferry_tests::Add { a, b })
                        .await
                };
                match sum.await {
                    Ok(sum) => sum.to_string(),
                    Err(error) => format!("error: {error}"),
                }
            }),
        )
        // What the platform said about this request, through the handler's context.
        .route(
            "/activation",
            get(|ctx: ferry::Context| async move {
                let metadata = ctx.invocation().map(|i| i.metadata.clone()).unwrap_or_default();
                let exported = std::env::var("__OW_ACTIVATION_ID").ok();
                format!("{:?} {exported:?}", metadata.get("__OW_ACTIVATION_ID"))
            }),
        )
        .route(
            "/hello/{name}",
            get(|Path(name): Path<String>, Query(query): Query<HashMap<String, String>>| async move {
                format!("hello {name}{}", query.get("mark").map_or("", String::as_str))
            }),
        )
        .route(
            "/bytes",
            get(|| async { ([(CONTENT_TYPE, "application/octet-stream")], vec![0u8, 159, 146, 150]) }),
        )
        .route(
            "/echo",
            post(|headers: HeaderMap, body: Bytes| async move {
                let content_type = headers
                    .get(CONTENT_TYPE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or("application/octet-stream")
                    .to_owned();
                ([(CONTENT_TYPE, content_type)], body)
            }),
        )
        .route(
            "/cookies",
            get(|headers: HeaderMap| async move {
                let sent = headers
                    .get(COOKIE)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .to_owned();
                (AppendHeaders([(SET_COOKIE, "session=abc"), (SET_COOKIE, "theme=dark")]), sent)
            }),
        )
}

fn main() -> ExitCode {
    ferry::web::serve(app())
}
