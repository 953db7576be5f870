//! Running an axum router on loopback, and the error bodies the mock servers answer with.

use std::net::SocketAddr;

use axum::Json;
use axum::Router;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// A server running as a task of this process; dropping it stops the server.
#[derive(Debug)]
pub struct RunningServer {
    address: SocketAddr,
    task: JoinHandle<()>,
}

impl RunningServer {
    /// Serves `router` on `listener`.
    pub fn serve(listener: TcpListener, router: Router) -> std::io::Result<Self> {
        let address = listener.local_addr()?;
        let task = tokio::spawn(async move {
            if let Err(error) = axum::serve(listener, router).await {
                eprintln!("error: the server on {address} stopped: {error}");
            }
        });
        Ok(Self { address, task })
    }

    /// Serves `router` on `address` (port 0: any free port).
    pub async fn bind(address: SocketAddr, router: Router) -> std::io::Result<Self> {
        Self::serve(TcpListener::bind(address).await?, router)
    }

    /// Serves `router` on a listener bound before the async runtime started.
    pub fn from_std(listener: std::net::TcpListener, router: Router) -> std::io::Result<Self> {
        listener.set_nonblocking(true)?;
        Self::serve(TcpListener::from_std(listener)?, router)
    }

    /// `http://address`, without a trailing slash.
    pub fn url(&self) -> String {
        format!("http://{}", self.address)
    }

    /// Where it listens.
    pub fn address(&self) -> SocketAddr {
        self.address
    }
}

impl Drop for RunningServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A failed request to a mock server: a status and `{"error": message}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    status: StatusCode,
    message: String,
}

impl ApiError {
    /// 404: no such resource.
    pub fn not_found(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::NOT_FOUND,
            message: message.into(),
        }
    }

    /// 400: the request makes no sense.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::BAD_REQUEST,
            message: message.into(),
        }
    }

    /// 422: the request is well formed but cannot be applied.
    pub fn unprocessable(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::UNPROCESSABLE_ENTITY,
            message: message.into(),
        }
    }

    /// 507: the store ran out of something (ids).
    pub fn exhausted(message: impl Into<String>) -> Self {
        Self {
            status: StatusCode::INSUFFICIENT_STORAGE,
            message: message.into(),
        }
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.status, self.message)
    }
}

impl std::error::Error for ApiError {}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        (
            self.status,
            Json(serde_json::json!({ "error": self.message })),
        )
            .into_response()
    }
}

/// One page (1-based) of `items`; `None` for page 0. Pages past the end are empty.
pub(crate) fn page<T: Clone>(
    items: impl Iterator<Item = T>,
    page: usize,
    size: usize,
) -> Option<Vec<T>> {
    let skip = page.checked_sub(1)?.checked_mul(size)?;
    Some(items.skip(skip).take(size).collect())
}
