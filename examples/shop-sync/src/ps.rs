//! The mock PS server: the logistics system, source of truth, in memory. Every route is a GET.
//!
//! | route | answers |
//! | --- | --- |
//! | `/reset/all` | empties the store |
//! | `/generate/{models}/{x}/{y}` | replaces the store with `models` seeded models ([`crate::generate`]) |
//! | `/item/{code}`, `/stock/{code}` | one item, one stock (404 when unknown) |
//! | `/items/count`, `/models/count` | `{"content": n}` |
//! | `/items/page/{n}`, `/stocks/page/{n}`, `/models/page/{n}` | page `n` (1-based, [`PAGE_SIZE`] per page; 400 for page 0, empty past the end) |
//! | `/modelItem/{code}` | a model's items (404 when unknown) |
//! | `/allModelCodes` | every model code, in order |
//! | `/firstModelItemsAndStocks/{count}` | the first `count` models with their stocks |

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, RwLock, RwLockReadGuard};

use axum::Json;
use axum::Router;
use axum::extract::{Path, State};
use axum::routing::get;

use crate::generate::Catalogue;
use crate::model::{Count, ModelAndStocks, PsItem, PsModel, PsStock};
use crate::server::{ApiError, page};

/// Items, stocks or models per page.
pub const PAGE_SIZE: usize = 10_000;

/// The store behind the mock PS server.
#[derive(Debug, Default)]
pub struct PsStore {
    data: RwLock<PsData>,
}

#[derive(Debug, Default)]
struct PsData {
    /// Model codes in generation order, with their items.
    models: Vec<(String, Vec<PsItem>)>,
    model_index: HashMap<String, usize>,
    /// Item code → (model index, position in the model).
    item_index: HashMap<String, (usize, usize)>,
    stocks: Vec<PsStock>,
    stock_index: HashMap<String, usize>,
}

impl PsStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Replaces the contents with `catalogue`.
    pub fn load(&self, catalogue: Catalogue) {
        let Catalogue { models, stocks } = catalogue;
        let mut data = PsData {
            model_index: HashMap::with_capacity(models.len()),
            item_index: HashMap::new(),
            stock_index: HashMap::with_capacity(stocks.len()),
            models,
            stocks,
        };
        for (m, (code, items)) in data.models.iter().enumerate() {
            data.model_index.insert(code.clone(), m);
            for (i, item) in items.iter().enumerate() {
                data.item_index.insert(item.item_code_365.clone(), (m, i));
            }
        }
        for (s, stock) in data.stocks.iter().enumerate() {
            data.stock_index.insert(stock.item_code_365.clone(), s);
        }
        *self.write() = data;
    }

    /// Empties the store.
    pub fn reset(&self) {
        *self.write() = PsData::default();
    }

    fn read(&self) -> RwLockReadGuard<'_, PsData> {
        self.data
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, PsData> {
        self.data
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The mock PS server's routes over `store`.
pub fn router(store: Arc<PsStore>) -> Router {
    Router::new()
        .route("/", get(|| async { "mock PS server" }))
        .route("/reset/all", get(reset))
        .route("/generate/{models}/{x_seed}/{y_seed}", get(generate))
        .route("/item/{code}", get(item))
        .route("/items/count", get(items_count))
        .route("/items/page/{n}", get(items_page))
        .route("/stock/{code}", get(stock))
        .route("/stocks/page/{n}", get(stocks_page))
        .route("/modelItem/{code}", get(model_items))
        .route("/models/count", get(models_count))
        .route("/models/page/{n}", get(models_page))
        .route("/allModelCodes", get(all_model_codes))
        .route("/firstModelItemsAndStocks/{count}", get(first_models))
        .with_state(store)
}

type Store = State<Arc<PsStore>>;

async fn reset(State(store): Store) -> &'static str {
    store.reset();
    "reset"
}

async fn generate(
    State(store): Store,
    Path((models, x_seed, y_seed)): Path<(usize, u64, u64)>,
) -> String {
    // Generating thousands of models is CPU work: keep it off the async threads.
    let catalogue =
        tokio::task::spawn_blocking(move || crate::generate::catalogue(models, x_seed, y_seed))
            .await
            .expect("generation does not panic");
    store.load(catalogue);
    format!("generated {models} models")
}

async fn item(State(store): Store, Path(code): Path<String>) -> Result<Json<PsItem>, ApiError> {
    let data = store.read();
    let (m, i) = data
        .item_index
        .get(&code)
        .ok_or_else(|| ApiError::not_found(format!("no item `{code}`")))?;
    Ok(Json(data.models[*m].1[*i].clone()))
}

async fn items_count(State(store): Store) -> Json<Count> {
    Json(Count {
        content: store.read().item_index.len(),
    })
}

async fn items_page(
    State(store): Store,
    Path(n): Path<usize>,
) -> Result<Json<Vec<PsItem>>, ApiError> {
    let data = store.read();
    let items = data.models.iter().flat_map(|(_, items)| items).cloned();
    page(items, n, PAGE_SIZE)
        .map(Json)
        .ok_or_else(first_page_is_one)
}

async fn stock(State(store): Store, Path(code): Path<String>) -> Result<Json<PsStock>, ApiError> {
    let data = store.read();
    let index = data
        .stock_index
        .get(&code)
        .ok_or_else(|| ApiError::not_found(format!("no stock for item `{code}`")))?;
    Ok(Json(data.stocks[*index].clone()))
}

async fn stocks_page(
    State(store): Store,
    Path(n): Path<usize>,
) -> Result<Json<Vec<PsStock>>, ApiError> {
    let data = store.read();
    page(data.stocks.iter().cloned(), n, PAGE_SIZE)
        .map(Json)
        .ok_or_else(first_page_is_one)
}

async fn model_items(
    State(store): Store,
    Path(code): Path<String>,
) -> Result<Json<Vec<PsItem>>, ApiError> {
    let data = store.read();
    let index = data
        .model_index
        .get(&code)
        .ok_or_else(|| ApiError::not_found(format!("no model `{code}`")))?;
    Ok(Json(data.models[*index].1.clone()))
}

async fn models_count(State(store): Store) -> Json<Count> {
    Json(Count {
        content: store.read().models.len(),
    })
}

async fn models_page(
    State(store): Store,
    Path(n): Path<usize>,
) -> Result<Json<Vec<PsModel>>, ApiError> {
    let data = store.read();
    let models = data.models.iter().map(|(code, items)| {
        let first = &items[0];
        PsModel {
            model_code_365: code.clone(),
            model_name: first.model_name.clone(),
            price_incl: first.price_incl_1,
            category_name: first.category_name.clone(),
            brand_name: first.brand_name.clone(),
            specifications: first.specifications.clone(),
            notes: first.notes.clone(),
            item_count: items.len(),
        }
    });
    page(models, n, PAGE_SIZE)
        .map(Json)
        .ok_or_else(first_page_is_one)
}

async fn all_model_codes(State(store): Store) -> Json<Vec<String>> {
    Json(
        store
            .read()
            .models
            .iter()
            .map(|(code, _)| code.clone())
            .collect(),
    )
}

async fn first_models(
    State(store): Store,
    Path(count): Path<usize>,
) -> Result<Json<Vec<ModelAndStocks>>, ApiError> {
    let data = store.read();
    if count > data.models.len() {
        return Err(ApiError::bad_request(format!(
            "asked for the first {count} models, but there are {}",
            data.models.len()
        )));
    }
    let models = data.models[..count]
        .iter()
        .map(|(_, items)| ModelAndStocks {
            model: items.clone(),
            stocks: items
                .iter()
                .map(|item| {
                    let stock = data.stock_index[&item.item_code_365];
                    (item.item_code_365.clone(), data.stocks[stock].stock)
                })
                .collect::<BTreeMap<_, _>>(),
        })
        .collect();
    Ok(Json(models))
}

fn first_page_is_one() -> ApiError {
    ApiError::bad_request("pages start at 1")
}
