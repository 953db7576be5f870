//! The accounts service of "Full-stack Swift with Kitura and Protocol Buffers", as one axum
//! router that ferry serves unchanged as a plain server, on AWS Lambda and as an OpenWhisk web
//! action (`ferry::web::serve`).
//!
//! - `GET /accountList`: every account with its transactions;
//! - `GET /account/{id}`: one account; a bad id answers `{"error" : "Invalid id provided."}`.
//!
//! JSON by default; Protocol Buffers (the article's schema, `proto/DataModel.proto`) when
//! `Accept` is `application/octet-stream`, `application/x-protobuf` or
//! `application/x-google-protobuf`.

pub mod data;
pub mod load;
pub mod model;

use std::sync::Arc;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::header::{ACCEPT, CONTENT_TYPE};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use prost::Message;

use crate::model::AccountList;

/// Media types that ask for Protocol Buffers, as the original service accepted them.
pub const PROTOBUF_TYPES: &[&str] = &[
    "application/octet-stream",
    "application/x-protobuf",
    "application/x-google-protobuf",
];

/// The service, with its data generated once.
pub fn router() -> Router {
    Router::new()
        .route("/accountList", get(account_list))
        .route("/account/{id}", get(account))
        .with_state(Arc::new(data::accounts()))
}

fn wants_protobuf(headers: &HeaderMap) -> Option<&'static str> {
    let accept = headers.get(ACCEPT)?.to_str().ok()?;
    PROTOBUF_TYPES.iter().copied().find(|media| {
        accept
            .split(',')
            .any(|part| part.split(';').next().unwrap_or_default().trim() == *media)
    })
}

fn encode<M: Message + serde::Serialize>(headers: &HeaderMap, message: &M) -> Response {
    match wants_protobuf(headers) {
        Some(media) => ([(CONTENT_TYPE, media)], message.encode_to_vec()).into_response(),
        None => match serde_json::to_vec(message) {
            Ok(json) => ([(CONTENT_TYPE, "application/json")], json).into_response(),
            Err(e) => (StatusCode::INTERNAL_SERVER_ERROR, e.to_string()).into_response(),
        },
    }
}

async fn account_list(State(accounts): State<Arc<AccountList>>, headers: HeaderMap) -> Response {
    encode(&headers, accounts.as_ref())
}

async fn account(
    State(accounts): State<Arc<AccountList>>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Response {
    match id
        .parse::<u64>()
        .ok()
        .and_then(|id| accounts.accounts.iter().find(|a| a.id == id))
    {
        Some(account) => encode(&headers, account),
        None => (
            StatusCode::BAD_REQUEST,
            [(CONTENT_TYPE, "application/json")],
            r#"{"error" : "Invalid id provided."}"#,
        )
            .into_response(),
    }
}
