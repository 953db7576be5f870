//! HTTP clients of the two mock servers, as the syncer and the benchmarker use them.
//!
//! One pooled keep-alive [`reqwest::Client`] serves both. Each upstream also has a bound on
//! requests in flight from this process: a connection pool size. Without it a thousand
//! concurrent syncs would open thousands of connections to a server on the same two cores,
//! and spend their time in the kernel rather than in either program.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Bytes;
use reqwest::Method;
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::Semaphore;

use crate::model::{
    Count, InventoryLevel, ModelAndStocks, NewProduct, ProductAndStocks, ProductUpdate, PsItem,
    PsModel, PsStock, ShProduct, ShVariant, VariantFields, VariantUpdate,
};

/// Requests in flight to one upstream from one process, unless configured otherwise.
pub const DEFAULT_UPSTREAM_CONNECTIONS: usize = 32;
/// Longest wait for one answer.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(60);

/// Which server a request went to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Service {
    /// The mock PS server.
    Ps,
    /// The mock SH server.
    Sh,
}

impl std::fmt::Display for Service {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Self::Ps => "PS",
            Self::Sh => "SH",
        })
    }
}

/// A request to a mock server that did not give the expected answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestError {
    /// The server.
    pub service: Service,
    /// `GET /stock/Model1_0`.
    pub request: String,
    /// What went wrong.
    pub failure: RequestFailure,
}

/// How a request failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum RequestFailure {
    /// No answer: connection refused, reset, timed out.
    Transport(String),
    /// An answer with an error status.
    Status {
        /// The HTTP status.
        status: u16,
        /// The body, which the mock servers make `{"error": …}`.
        body: String,
    },
    /// An answer that is not the expected JSON.
    Decode(String),
}

impl std::fmt::Display for RequestError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let Self {
            service, request, ..
        } = self;
        match &self.failure {
            RequestFailure::Transport(message) => {
                write!(f, "{service} {request}: no answer: {message}")
            }
            RequestFailure::Status { status, body } => {
                write!(f, "{service} {request}: answered {status}: {}", body.trim())
            }
            RequestFailure::Decode(message) => {
                write!(f, "{service} {request}: unexpected answer: {message}")
            }
        }
    }
}

impl std::error::Error for RequestError {}

impl RequestError {
    /// Whether the server answered 404.
    pub fn is_not_found(&self) -> bool {
        matches!(self.failure, RequestFailure::Status { status: 404, .. })
    }
}

/// The pooled client both upstream clients share.
pub fn http_client(connections_per_upstream: usize) -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(connections_per_upstream)
        .tcp_nodelay(true)
        .timeout(REQUEST_TIMEOUT)
        .build()
        .expect("a plain HTTP client without TLS always builds")
}

/// One upstream: its base URL and its share of connections.
#[derive(Debug, Clone)]
struct Upstream {
    service: Service,
    base: String,
    http: reqwest::Client,
    in_flight: Arc<Semaphore>,
}

impl Upstream {
    fn new(service: Service, base: &str, http: reqwest::Client, connections: usize) -> Self {
        Self {
            service,
            base: base.trim_end_matches('/').to_owned(),
            http,
            in_flight: Arc::new(Semaphore::new(connections.max(1))),
        }
    }

    async fn call<B, T>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
    ) -> Result<T, RequestError>
    where
        B: Serialize + ?Sized,
        T: DeserializeOwned,
    {
        let bytes = self.send(method.clone(), path, body).await?;
        serde_json::from_slice(&bytes)
            .map_err(|e| self.error(&method, path, RequestFailure::Decode(e.to_string())))
    }

    async fn send<B>(
        &self,
        method: Method,
        path: &str,
        body: Option<&B>,
    ) -> Result<Bytes, RequestError>
    where
        B: Serialize + ?Sized,
    {
        let _permit = self
            .in_flight
            .acquire()
            .await
            .expect("the semaphore is never closed");
        let mut request = self
            .http
            .request(method.clone(), format!("{}{path}", self.base));
        if let Some(body) = body {
            request = request.json(body);
        }
        let transport =
            |e: reqwest::Error| self.error(&method, path, RequestFailure::Transport(e.to_string()));
        let response = request.send().await.map_err(transport)?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(transport)?;
        if !status.is_success() {
            return Err(self.error(
                &method,
                path,
                RequestFailure::Status {
                    status: status.as_u16(),
                    body: String::from_utf8_lossy(&bytes).into_owned(),
                },
            ));
        }
        Ok(bytes)
    }

    fn error(&self, method: &Method, path: &str, failure: RequestFailure) -> RequestError {
        RequestError {
            service: self.service,
            request: format!("{method} {path}"),
            failure,
        }
    }

    async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T, RequestError> {
        self.call::<(), T>(Method::GET, path, None).await
    }

    /// `None` for a 404.
    async fn find<T: DeserializeOwned>(&self, path: &str) -> Result<Option<T>, RequestError> {
        match self.get(path).await {
            Ok(found) => Ok(Some(found)),
            Err(error) if error.is_not_found() => Ok(None),
            Err(error) => Err(error),
        }
    }
}

/// A path segment with the characters that would change the path escaped.
fn segment(text: &str) -> String {
    let mut escaped = String::with_capacity(text.len());
    for byte in text.bytes() {
        match byte {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                escaped.push(byte as char)
            }
            _ => escaped.push_str(&format!("%{byte:02X}")),
        }
    }
    escaped
}

/// Client of the mock PS server.
#[derive(Debug, Clone)]
pub struct PsClient {
    upstream: Upstream,
}

impl PsClient {
    /// A client of the server at `base` (`http://127.0.0.1:8081`), over `http`, with at most
    /// `connections` requests in flight.
    pub fn new(base: &str, http: reqwest::Client, connections: usize) -> Self {
        Self {
            upstream: Upstream::new(Service::Ps, base, http, connections),
        }
    }

    /// `GET /modelItem/{code}`: a model's items; `None` when PS has no such model.
    pub async fn model_items(&self, model_code: &str) -> Result<Option<Vec<PsItem>>, RequestError> {
        self.upstream
            .find(&format!("/modelItem/{}", segment(model_code)))
            .await
    }

    /// `GET /stock/{code}`: an item's stock; `None` when PS has none.
    pub async fn stock(&self, item_code: &str) -> Result<Option<PsStock>, RequestError> {
        self.upstream
            .find(&format!("/stock/{}", segment(item_code)))
            .await
    }

    /// `GET /item/{code}`.
    pub async fn item(&self, item_code: &str) -> Result<Option<PsItem>, RequestError> {
        self.upstream
            .find(&format!("/item/{}", segment(item_code)))
            .await
    }

    /// `GET /reset/all`.
    pub async fn reset(&self) -> Result<(), RequestError> {
        self.upstream
            .send::<()>(Method::GET, "/reset/all", None)
            .await
            .map(drop)
    }

    /// `GET /generate/{models}/{x}/{y}`.
    pub async fn generate(
        &self,
        models: usize,
        x_seed: u64,
        y_seed: u64,
    ) -> Result<(), RequestError> {
        self.upstream
            .send::<()>(
                Method::GET,
                &format!("/generate/{models}/{x_seed}/{y_seed}"),
                None,
            )
            .await
            .map(drop)
    }

    /// `GET /items/count`.
    pub async fn items_count(&self) -> Result<usize, RequestError> {
        self.upstream
            .get::<Count>("/items/count")
            .await
            .map(|c| c.content)
    }

    /// `GET /models/count`.
    pub async fn models_count(&self) -> Result<usize, RequestError> {
        self.upstream
            .get::<Count>("/models/count")
            .await
            .map(|c| c.content)
    }

    /// `GET /items/page/{n}`.
    pub async fn items_page(&self, page: usize) -> Result<Vec<PsItem>, RequestError> {
        self.upstream.get(&format!("/items/page/{page}")).await
    }

    /// `GET /stocks/page/{n}`.
    pub async fn stocks_page(&self, page: usize) -> Result<Vec<PsStock>, RequestError> {
        self.upstream.get(&format!("/stocks/page/{page}")).await
    }

    /// `GET /models/page/{n}`.
    pub async fn models_page(&self, page: usize) -> Result<Vec<PsModel>, RequestError> {
        self.upstream.get(&format!("/models/page/{page}")).await
    }

    /// `GET /allModelCodes`.
    pub async fn all_model_codes(&self) -> Result<Vec<String>, RequestError> {
        self.upstream.get("/allModelCodes").await
    }

    /// `GET /firstModelItemsAndStocks/{count}`.
    pub async fn first_models_and_stocks(
        &self,
        count: usize,
    ) -> Result<Vec<ModelAndStocks>, RequestError> {
        self.upstream
            .get(&format!("/firstModelItemsAndStocks/{count}"))
            .await
    }

    /// Every item, page by page.
    pub async fn all_items(&self) -> Result<Vec<PsItem>, RequestError> {
        all_pages(|page| self.items_page(page), crate::ps::PAGE_SIZE).await
    }

    /// Every model's metadata, page by page.
    pub async fn all_models(&self) -> Result<Vec<PsModel>, RequestError> {
        all_pages(|page| self.models_page(page), crate::ps::PAGE_SIZE).await
    }

    /// Every stock, page by page.
    pub async fn all_stocks(&self) -> Result<Vec<PsStock>, RequestError> {
        all_pages(|page| self.stocks_page(page), crate::ps::PAGE_SIZE).await
    }
}

/// Client of the mock SH server.
#[derive(Debug, Clone)]
pub struct ShClient {
    upstream: Upstream,
}

impl ShClient {
    /// A client of the server at `base` (`http://127.0.0.1:8082`), over `http`, with at most
    /// `connections` requests in flight.
    pub fn new(base: &str, http: reqwest::Client, connections: usize) -> Self {
        Self {
            upstream: Upstream::new(Service::Sh, base, http, connections),
        }
    }

    /// `GET /handles/{handle}`: `None` when no product has the handle.
    pub async fn product_by_handle(&self, handle: &str) -> Result<Option<ShProduct>, RequestError> {
        self.upstream
            .find(&format!("/handles/{}", segment(handle)))
            .await
    }

    /// `POST /products`.
    pub async fn create_product(&self, product: &NewProduct) -> Result<ShProduct, RequestError> {
        self.upstream
            .call(Method::POST, "/products", Some(product))
            .await
    }

    /// `PUT /products`.
    pub async fn update_product(&self, update: &ProductUpdate) -> Result<ShProduct, RequestError> {
        self.upstream
            .call(Method::PUT, "/products", Some(update))
            .await
    }

    /// `PUT /variants/multiple`.
    pub async fn update_variants(
        &self,
        updates: &[VariantUpdate],
    ) -> Result<Vec<ShVariant>, RequestError> {
        self.upstream
            .call(Method::PUT, "/variants/multiple", Some(updates))
            .await
    }

    /// `POST /{product_id}/multiple`.
    pub async fn create_variants(
        &self,
        product_id: u64,
        variants: &[VariantFields],
    ) -> Result<Vec<ShVariant>, RequestError> {
        self.upstream
            .call(
                Method::POST,
                &format!("/{product_id}/multiple"),
                Some(variants),
            )
            .await
    }

    /// `POST /inventories/multiple`: the levels of these inventory items.
    pub async fn inventory_levels(
        &self,
        inventory_item_ids: &[u64],
    ) -> Result<Vec<InventoryLevel>, RequestError> {
        self.upstream
            .call(
                Method::POST,
                "/inventories/multiple",
                Some(inventory_item_ids),
            )
            .await
    }

    /// `PUT /inventories/multiple`.
    pub async fn set_inventory_levels(
        &self,
        levels: &[InventoryLevel],
    ) -> Result<Vec<InventoryLevel>, RequestError> {
        self.upstream
            .call(Method::PUT, "/inventories/multiple", Some(levels))
            .await
    }

    /// `GET /reset`.
    pub async fn reset(&self) -> Result<(), RequestError> {
        self.upstream
            .send::<()>(Method::GET, "/reset", None)
            .await
            .map(drop)
    }

    /// `POST /batchProductsAndStocks`.
    pub async fn batch_products_and_stocks(
        &self,
        batch: &[ProductAndStocks],
    ) -> Result<Vec<ShProduct>, RequestError> {
        self.upstream
            .call(Method::POST, "/batchProductsAndStocks", Some(batch))
            .await
    }

    /// `GET /products/page/{n}`.
    pub async fn products_page(&self, page: usize) -> Result<Vec<ShProduct>, RequestError> {
        self.upstream.get(&format!("/products/page/{page}")).await
    }

    /// `GET /inventories/page/{n}`.
    pub async fn inventories_page(&self, page: usize) -> Result<Vec<InventoryLevel>, RequestError> {
        self.upstream
            .get(&format!("/inventories/page/{page}"))
            .await
    }

    /// Every product, page by page.
    pub async fn all_products(&self) -> Result<Vec<ShProduct>, RequestError> {
        all_pages(|page| self.products_page(page), crate::sh::PAGE_SIZE).await
    }

    /// Every inventory level, page by page.
    pub async fn all_inventory_levels(&self) -> Result<Vec<InventoryLevel>, RequestError> {
        all_pages(|page| self.inventories_page(page), crate::sh::PAGE_SIZE).await
    }
}

/// Pages 1, 2, … until one is short.
async fn all_pages<T, F, Fut>(mut fetch: F, size: usize) -> Result<Vec<T>, RequestError>
where
    F: FnMut(usize) -> Fut,
    Fut: std::future::Future<Output = Result<Vec<T>, RequestError>>,
{
    let mut all = Vec::new();
    for page in 1.. {
        let batch = fetch(page).await?;
        let done = batch.len() < size;
        all.extend(batch);
        if done {
            break;
        }
    }
    Ok(all)
}
