//! The monolith: `syncModel` behind an HTTP route of the same process, as OTMonolith served it.
//!
//! `POST /sync/{model}` runs the function inline (in this process, no encoding) and answers
//! 200 with its [`SyncReport`](crate::syncer::SyncReport), 422 with `{"error": …}` when the sync
//! failed, 500 when the function could not run.

use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use ferry::{Context, ErrorKind};

use crate::syncer::SyncModel;

/// The monolith's routes. `ctx` is normally [`Context::inline`].
pub fn router(ctx: Context) -> Router {
    Router::new()
        .route("/sync/{model}", post(sync))
        .with_state(ctx)
}

async fn sync(State(ctx): State<Context>, Path(model_code): Path<String>) -> Response {
    match ctx.call(SyncModel { model_code }).await {
        Ok(report) => Json(report).into_response(),
        Err(error) => {
            let status = match error.kind() {
                ErrorKind::User { .. } => StatusCode::UNPROCESSABLE_ENTITY,
                _ => StatusCode::INTERNAL_SERVER_ERROR,
            };
            let body = serde_json::json!({ "error": error.to_string() });
            (status, Json(body)).into_response()
        }
    }
}
