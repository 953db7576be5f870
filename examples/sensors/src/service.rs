//! The sensor service: the generated dataset behind HTTP, one reading per request, as the sensor
//! service of Dyninka's evaluation served its CSV month.
//!
//! - `GET /reading`: the next row, round-robin over the dataset (the row's index is in the
//!   `X-Row` header);
//! - `GET /readings/{index}`: row `index` (0-based), or 404 past the end;
//! - `GET /header`: the header row, [`COLUMNS`] joined by commas;
//! - `GET /healthz`: 200.
//!
//! A reading is one CSV record ending in `\n`, its fields in the header's order, without the
//! header itself: `Content-Type: text/csv; charset=utf-8; header=absent` (RFC 4180's `header`
//! parameter). [`SensorClient`] fetches and parses them.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use axum::Router;
use axum::extract::{Path, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use bytes::Bytes;
use serde::{Deserialize, Serialize};

use crate::dataset::{self, COLUMNS, Reading};

/// Environment variable with the sensor service's base URL, read by the `read` function.
pub const SENSORS_URL_VAR: &str = "SENSORS_URL";

/// What the sensor service announces on stderr once it listens, followed by its URL.
pub const LISTENING: &str = "sensor service: listening on ";

const CSV_RECORD: &str = "text/csv; charset=utf-8; header=absent";

/// The rows the service serves, each already a CSV line, and the round-robin position.
#[derive(Debug)]
pub struct SensorData {
    lines: Vec<Bytes>,
    next: AtomicU64,
}

impl SensorData {
    /// The rows of `readings`.
    pub fn new(readings: &[Reading]) -> Self {
        Self {
            lines: readings
                .iter()
                .map(|r| Bytes::from(dataset::to_csv_line(r)))
                .collect(),
            next: AtomicU64::new(0),
        }
    }

    /// The generated dataset of `rows` rows from `seed`.
    pub fn generate(rows: usize, seed: u64) -> Self {
        Self::new(&dataset::generate(rows, seed))
    }

    /// How many rows it serves.
    pub fn rows(&self) -> usize {
        self.lines.len()
    }
}

/// The service's routes over `data`.
pub fn router(data: Arc<SensorData>) -> Router {
    Router::new()
        .route("/reading", get(next_reading))
        .route("/readings/{index}", get(reading_at))
        .route("/header", get(header_row))
        .route("/healthz", get(|| async { StatusCode::OK }))
        .with_state(data)
}

async fn next_reading(State(data): State<Arc<SensorData>>) -> Response {
    if data.lines.is_empty() {
        return (StatusCode::NOT_FOUND, "the dataset has no rows\n").into_response();
    }
    let index = data.next.fetch_add(1, Ordering::Relaxed) % data.lines.len() as u64;
    let mut response = record(&data.lines[index as usize]);
    response
        .headers_mut()
        .insert("x-row", HeaderValue::from(index));
    response
}

async fn reading_at(State(data): State<Arc<SensorData>>, Path(index): Path<u64>) -> Response {
    match usize::try_from(index).ok().and_then(|i| data.lines.get(i)) {
        Some(line) => record(line),
        None => (
            StatusCode::NOT_FOUND,
            format!(
                "no row {index}: the dataset has {} rows\n",
                data.lines.len()
            ),
        )
            .into_response(),
    }
}

async fn header_row() -> Response {
    let mut response = format!("{}\n", COLUMNS.join(",")).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/csv; charset=utf-8; header=present"),
    );
    response
}

fn record(line: &Bytes) -> Response {
    let mut response = line.clone().into_response();
    response
        .headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CSV_RECORD));
    response
}

/// Serves `data` on `listener` until the process ends.
pub async fn serve(
    listener: tokio::net::TcpListener,
    data: Arc<SensorData>,
) -> std::io::Result<()> {
    axum::serve(listener, router(data)).await
}

/// Binds `address` (port 0: any free port) and says where on stderr ([`LISTENING`]).
pub async fn bind(address: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    let listener = tokio::net::TcpListener::bind(address).await?;
    eprintln!("{LISTENING}http://{}", listener.local_addr()?);
    Ok(listener)
}

/// Which reading to fetch: the `read` function's one parameter, and so the flow's input.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Row {
    /// Whichever comes next on the service (`GET /reading`), as Dyninka's clients asked.
    Next,
    /// Row `n` (`GET /readings/{n}`): what tests use, to know what they read.
    At(u64),
}

/// A reading that could not be had.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ReadError {
    /// [`SENSORS_URL_VAR`] is not set where `read` runs.
    NoService,
    /// The service could not be reached, or the connection broke.
    Unreachable {
        /// What was asked for.
        url: String,
        /// Why.
        reason: String,
    },
    /// The service answered with an error status.
    Status {
        /// What was asked for.
        url: String,
        /// The status.
        status: u16,
        /// What it said.
        body: String,
    },
    /// The answer is not a record of the observatory's schema.
    NotAReading {
        /// What was asked for.
        url: String,
        /// Why.
        reason: String,
    },
}

impl std::fmt::Display for ReadError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::NoService => write!(
                f,
                "`{SENSORS_URL_VAR}` is not set: it is the sensor service's base url, e.g. http://127.0.0.1:8080"
            ),
            Self::Unreachable { url, reason } => write!(f, "cannot reach {url}: {reason}"),
            Self::Status { url, status, body } => {
                write!(f, "{url} answered {status}: {}", body.trim())
            }
            Self::NotAReading { url, reason } => {
                write!(f, "{url} did not answer a reading: {reason}")
            }
        }
    }
}

impl std::error::Error for ReadError {}

/// An HTTP client of the sensor service, with a pool of keep-alive connections.
#[derive(Debug, Clone)]
pub struct SensorClient {
    base: String,
    http: reqwest::Client,
}

impl SensorClient {
    /// A client of the service at `base` (`http://host:port`).
    pub fn new(base: &str) -> Self {
        let http = reqwest::Client::builder()
            .timeout(Duration::from_secs(30))
            .build()
            // Only a TLS backend that fails to initialise makes this fail; this is plain HTTP.
            .unwrap_or_default();
        Self {
            base: base.trim_end_matches('/').to_owned(),
            http,
        }
    }

    /// A client of the service at [`SENSORS_URL_VAR`].
    pub fn from_env() -> Result<Self, ReadError> {
        match std::env::var(SENSORS_URL_VAR) {
            Ok(base) if !base.trim().is_empty() => Ok(Self::new(base.trim())),
            _ => Err(ReadError::NoService),
        }
    }

    /// The service's base URL.
    pub fn base(&self) -> &str {
        &self.base
    }

    /// Fetches and parses one reading.
    pub async fn fetch(&self, row: Row) -> Result<Reading, ReadError> {
        let url = match row {
            Row::Next => format!("{}/reading", self.base),
            Row::At(index) => format!("{}/readings/{index}", self.base),
        };
        let unreachable = |e: reqwest::Error| ReadError::Unreachable {
            url: url.clone(),
            reason: e.to_string(),
        };
        let response = self.http.get(&url).send().await.map_err(unreachable)?;
        let status = response.status();
        let body = response.text().await.map_err(unreachable)?;
        if !status.is_success() {
            return Err(ReadError::Status {
                url,
                status: status.as_u16(),
                body,
            });
        }
        dataset::parse_csv_line(&body).map_err(|e| ReadError::NotAReading {
            url,
            reason: e.to_string(),
        })
    }
}
