//! The mock SH server: a Shopify store with one location, in memory.
//!
//! | route | does |
//! | --- | --- |
//! | `GET /reset` | empties the store and rewinds the id pool, so the same uploads get the same ids |
//! | `POST /products` | creates a product with its variants and a level of 0 for each |
//! | `PUT /products` | changes a product's own fields ([`ProductUpdate`]) |
//! | `GET /handles/{handle}` | the product with that handle (404 when none) |
//! | `PUT /variants/multiple` | updates variants ([`VariantUpdate`]); none if one is unknown |
//! | `POST /{product_id}/multiple` | adds variants to a product, each with a level of 0 |
//! | `POST /inventories/multiple` | the levels of the given inventory item ids, in order; unknown ids are left out |
//! | `PUT /inventories/multiple` | sets levels (`[{location_id, inventory_item_id, available}]`) |
//! | `POST /batchProductsAndStocks` | creates products with the given stock per sku ([`ProductAndStocks`]) |
//! | `GET /products/page/{n}`, `GET /inventories/page/{n}` | page `n` (1-based, [`PAGE_SIZE`], by id) |
//!
//! Ids come from one pool of 100000…999999 shuffled once with a fixed seed: the store takes them
//! in order and a reset starts over, so a reset followed by the same uploads reproduces every id.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, OnceLock, RwLock};

use axum::Json;
use axum::Router;
use axum::extract::{DefaultBodyLimit, Path, State};
use axum::routing::{get, post, put};

use crate::model::{
    InventoryLevel, NewProduct, ProductAndStocks, ProductUpdate, ShProduct, ShVariant,
    VariantFields, VariantUpdate,
};
use crate::prng::Xorshift128Plus;
use crate::server::{ApiError, page};

/// The store's one location.
pub const DEFAULT_LOCATION_ID: u64 = 5;
/// Products or inventory levels per page.
pub const PAGE_SIZE: usize = 10_000;
/// The lowest and highest id the store hands out.
pub const ID_RANGE: (u32, u32) = (100_000, 999_999);
/// Largest request body: a benchmark's whole starting state comes in one request.
pub const MAX_BODY: usize = 256 << 20;
/// Seeds of the shuffle of the id pool.
const ID_POOL_SEEDS: (u64, u64) = (0x5EED_0F1D_5EED_0F1D, 0x0DDB_A115_CAFE_F00D);

/// Every id the store can hand out, in the order it hands them out.
fn id_pool() -> &'static [u32] {
    static POOL: OnceLock<Vec<u32>> = OnceLock::new();
    POOL.get_or_init(|| {
        let mut ids: Vec<u32> = (ID_RANGE.0..=ID_RANGE.1).collect();
        Xorshift128Plus::new(ID_POOL_SEEDS.0, ID_POOL_SEEDS.1).shuffle(&mut ids);
        ids
    })
}

/// The store behind the mock SH server.
#[derive(Debug, Default)]
pub struct ShStore {
    data: RwLock<ShData>,
}

#[derive(Debug, Default)]
struct ShData {
    /// How many ids of the pool are taken.
    ids_taken: usize,
    products: BTreeMap<u64, ShProduct>,
    by_handle: HashMap<String, u64>,
    product_of_variant: HashMap<u64, u64>,
    levels: BTreeMap<u64, InventoryLevel>,
}

impl ShData {
    fn next_id(&mut self) -> Result<u64, ApiError> {
        let id = id_pool()
            .get(self.ids_taken)
            .ok_or_else(|| ApiError::exhausted("the store ran out of ids; reset it"))?;
        self.ids_taken += 1;
        Ok(u64::from(*id))
    }

    fn new_variant(
        &mut self,
        product_id: u64,
        fields: VariantFields,
    ) -> Result<ShVariant, ApiError> {
        let id = self.next_id()?;
        let inventory_item_id = self.next_id()?;
        self.product_of_variant.insert(id, product_id);
        Ok(ShVariant {
            id,
            product_id,
            inventory_item_id,
            sku: fields.sku,
            title: fields.title,
            price: fields.price,
            compare_at_price: fields.compare_at_price,
            barcode: fields.barcode,
            option1: fields.option1,
            option2: fields.option2,
            option3: fields.option3,
        })
    }

    /// Creates a product; a variant gets a level with its sku's stock, or none when `stocks`
    /// has no entry for it.
    fn create(
        &mut self,
        new: NewProduct,
        stocks: impl Fn(&str) -> Option<i64>,
    ) -> Result<ShProduct, ApiError> {
        if self.by_handle.contains_key(&new.handle) {
            return Err(ApiError::unprocessable(format!(
                "a product with handle `{}` exists",
                new.handle
            )));
        }
        let id = self.next_id()?;
        let mut variants = Vec::with_capacity(new.variants.len());
        for fields in new.variants {
            let variant = self.new_variant(id, fields)?;
            if let Some(available) = stocks(&variant.sku) {
                self.levels.insert(
                    variant.inventory_item_id,
                    InventoryLevel {
                        location_id: DEFAULT_LOCATION_ID,
                        inventory_item_id: variant.inventory_item_id,
                        available,
                    },
                );
            }
            variants.push(variant);
        }
        let product = ShProduct {
            id,
            title: new.title,
            body_html: new.body_html,
            vendor: new.vendor,
            product_type: new.product_type,
            handle: new.handle,
            tags: new.tags,
            options: new.options,
            variants,
        };
        self.by_handle.insert(product.handle.clone(), id);
        self.products.insert(id, product.clone());
        Ok(product)
    }
}

impl ShStore {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn read(&self) -> std::sync::RwLockReadGuard<'_, ShData> {
        self.data
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn write(&self) -> std::sync::RwLockWriteGuard<'_, ShData> {
        self.data
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The mock SH server's routes over `store`.
pub fn router(store: Arc<ShStore>) -> Router {
    // Shuffle the pool now rather than in the first request.
    let _ = id_pool();
    Router::new()
        .route("/", get(|| async { "mock SH server" }))
        .route("/reset", get(reset))
        .route("/products", post(create_product).put(update_product))
        .route("/handles/{handle}", get(product_by_handle))
        .route("/variants/multiple", put(update_variants))
        .route("/{product_id}/multiple", post(create_variants))
        .route(
            "/inventories/multiple",
            post(inventory_levels).put(set_inventory_levels),
        )
        .route("/batchProductsAndStocks", post(batch_products_and_stocks))
        .route("/products/page/{n}", get(products_page))
        .route("/inventories/page/{n}", get(inventories_page))
        .layer(DefaultBodyLimit::max(MAX_BODY))
        .with_state(store)
}

type Store = State<Arc<ShStore>>;

async fn reset(State(store): Store) -> &'static str {
    *store.write() = ShData::default();
    "reset"
}

async fn create_product(
    State(store): Store,
    Json(new): Json<NewProduct>,
) -> Result<Json<ShProduct>, ApiError> {
    store.write().create(new, |_| Some(0)).map(Json)
}

async fn update_product(
    State(store): Store,
    Json(update): Json<ProductUpdate>,
) -> Result<Json<ShProduct>, ApiError> {
    let mut data = store.write();
    let product = data
        .products
        .get_mut(&update.id)
        .ok_or_else(|| ApiError::not_found(format!("no product {}", update.id)))?;
    let ProductUpdate {
        id: _,
        title,
        body_html,
        vendor,
        product_type,
        tags,
        options,
    } = update;
    if let Some(options) = options {
        if options.len() > 3 {
            return Err(ApiError::unprocessable("a product has at most 3 options"));
        }
        product.options = options;
    }
    let fields = [
        (title, &mut product.title),
        (body_html, &mut product.body_html),
        (vendor, &mut product.vendor),
        (product_type, &mut product.product_type),
        (tags, &mut product.tags),
    ];
    for (new, field) in fields {
        if let Some(new) = new {
            *field = new;
        }
    }
    Ok(Json(product.clone()))
}

async fn product_by_handle(
    State(store): Store,
    Path(handle): Path<String>,
) -> Result<Json<ShProduct>, ApiError> {
    let data = store.read();
    data.by_handle
        .get(&handle)
        .and_then(|id| data.products.get(id))
        .cloned()
        .map(Json)
        .ok_or_else(|| ApiError::not_found(format!("no product with handle `{handle}`")))
}

async fn update_variants(
    State(store): Store,
    Json(updates): Json<Vec<VariantUpdate>>,
) -> Result<Json<Vec<ShVariant>>, ApiError> {
    let mut data = store.write();
    // All or nothing: check every id before changing any variant.
    let mut places = Vec::with_capacity(updates.len());
    for update in &updates {
        let product_id = *data
            .product_of_variant
            .get(&update.id)
            .ok_or_else(|| ApiError::not_found(format!("no variant {}", update.id)))?;
        let position = data.products[&product_id]
            .variants
            .iter()
            .position(|v| v.id == update.id)
            .expect("the variant index follows the products");
        places.push((product_id, position));
    }
    let mut updated = Vec::with_capacity(updates.len());
    for (update, (product_id, position)) in updates.into_iter().zip(places) {
        let product = data.products.get_mut(&product_id).expect("checked above");
        let variant = &mut product.variants[position];
        variant.title = update.title;
        variant.price = update.price;
        variant.compare_at_price = update.compare_at_price;
        variant.barcode = update.barcode;
        variant.option1 = update.option1;
        variant.option2 = update.option2;
        variant.option3 = update.option3;
        updated.push(variant.clone());
    }
    Ok(Json(updated))
}

async fn create_variants(
    State(store): Store,
    Path(product_id): Path<u64>,
    Json(new): Json<Vec<VariantFields>>,
) -> Result<Json<Vec<ShVariant>>, ApiError> {
    let mut data = store.write();
    if !data.products.contains_key(&product_id) {
        return Err(ApiError::not_found(format!("no product {product_id}")));
    }
    let mut created = Vec::with_capacity(new.len());
    for fields in new {
        let variant = data.new_variant(product_id, fields)?;
        data.levels.insert(
            variant.inventory_item_id,
            InventoryLevel {
                location_id: DEFAULT_LOCATION_ID,
                inventory_item_id: variant.inventory_item_id,
                available: 0,
            },
        );
        created.push(variant);
    }
    let product = data.products.get_mut(&product_id).expect("checked above");
    product.variants.extend(created.iter().cloned());
    Ok(Json(created))
}

async fn inventory_levels(
    State(store): Store,
    Json(ids): Json<Vec<u64>>,
) -> Json<Vec<InventoryLevel>> {
    let data = store.read();
    Json(
        ids.iter()
            .filter_map(|id| data.levels.get(id).copied())
            .collect(),
    )
}

async fn set_inventory_levels(
    State(store): Store,
    Json(levels): Json<Vec<InventoryLevel>>,
) -> Result<Json<Vec<InventoryLevel>>, ApiError> {
    let mut data = store.write();
    for level in &levels {
        if level.location_id != DEFAULT_LOCATION_ID {
            return Err(ApiError::unprocessable(format!(
                "no location {}; the store has only {DEFAULT_LOCATION_ID}",
                level.location_id
            )));
        }
        if !data.levels.contains_key(&level.inventory_item_id) {
            return Err(ApiError::not_found(format!(
                "inventory item {} is not stocked at location {DEFAULT_LOCATION_ID}",
                level.inventory_item_id
            )));
        }
    }
    for level in &levels {
        data.levels.insert(level.inventory_item_id, *level);
    }
    Ok(Json(levels))
}

async fn batch_products_and_stocks(
    State(store): Store,
    Json(batch): Json<Vec<ProductAndStocks>>,
) -> Result<Json<Vec<ShProduct>>, ApiError> {
    let mut data = store.write();
    let mut created = Vec::with_capacity(batch.len());
    for ProductAndStocks { product, stocks } in batch {
        created.push(data.create(product, |sku| stocks.get(sku).copied())?);
    }
    Ok(Json(created))
}

async fn products_page(
    State(store): Store,
    Path(n): Path<usize>,
) -> Result<Json<Vec<ShProduct>>, ApiError> {
    let data = store.read();
    page(data.products.values().cloned(), n, PAGE_SIZE)
        .map(Json)
        .ok_or_else(|| ApiError::bad_request("pages start at 1"))
}

async fn inventories_page(
    State(store): Store,
    Path(n): Path<usize>,
) -> Result<Json<Vec<InventoryLevel>>, ApiError> {
    let data = store.read();
    page(data.levels.values().copied(), n, PAGE_SIZE)
        .map(Json)
        .ok_or_else(|| ApiError::bad_request("pages start at 1"))
}
