//! A web app whose handlers call ferry functions.
//!
//! `app()` is an ordinary axum router (ferry re-exports axum as `ferry::web::axum`).
//! `ferry::web::serve` runs it as a plain server, behind a Lambda Function URL or as an OpenWhisk
//! web action, and gives every handler a `ctx: Context` argument: the functions it calls run
//! where that context sends them (worker processes of this binary by default).

use ferry::prelude::*;
use ferry::web::axum::extract::Path;
use ferry::web::axum::http::StatusCode;
use ferry::web::axum::routing::get;
use ferry::web::axum::{Json, Router};

/// Greets `name`.
#[ferry::function]
pub fn greet(name: String) -> String {
    format!("hello, {name}!")
}

/// The square of `n`.
#[ferry::function]
pub fn square(n: u64) -> u64 {
    n * n
}

/// The most squares one request may ask for.
const MAX_SQUARES: u64 = 100;

/// The routes.
pub fn app() -> Router {
    Router::new()
        .route("/hello/{name}", get(hello))
        .route("/squares/{n}", get(squares))
}

/// `GET /hello/{name}`: one invocation of `greet`.
async fn hello(ctx: Context, Path(name): Path<String>) -> Result<String, (StatusCode, String)> {
    ctx.call(Greet { name }).await.map_err(failed)
}

/// `GET /squares/{n}`: the squares of 1 to `n` as a JSON array, one invocation each.
async fn squares(ctx: Context, Path(n): Path<u64>) -> Result<Json<Vec<u64>>, (StatusCode, String)> {
    if n > MAX_SQUARES {
        let message = format!("at most {MAX_SQUARES} squares");
        return Err((StatusCode::BAD_REQUEST, message));
    }
    let squares = ctx
        .map((1..=n).map(|n| Square { n }))
        .await
        .map_err(failed)?;
    Ok(Json(squares))
}

/// A failed invocation, as a response.
fn failed(error: Error) -> (StatusCode, String) {
    (StatusCode::INTERNAL_SERVER_ERROR, error.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn greets_by_name() {
        assert_eq!(greet("ferry".to_owned()), "hello, ferry!");
    }
}
