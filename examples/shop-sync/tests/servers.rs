//! The mock servers' routes over real HTTP on loopback, and the syncer against them: a partially
//! synced model ends equal to PS, a missing inventory level fails the sync with a count
//! mismatch.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use serde_json::Value;
use shop_sync::check::{self, CheckError};
use shop_sync::client::{PsClient, ShClient, http_client};
use shop_sync::mapping;
use shop_sync::model::{
    InventoryLevel, ModelAndStocks, NewProduct, ProductAndStocks, ProductUpdate, VariantUpdate,
};
use shop_sync::prng::{DEFAULT_X_SEED, DEFAULT_Y_SEED};
use shop_sync::server::RunningServer;
use shop_sync::sh::DEFAULT_LOCATION_ID;
use shop_sync::syncer::{self, ProductChange, SyncError, Upstreams};
use shop_sync::{ps, sh, workload};

struct Servers {
    _ps: RunningServer,
    _sh: RunningServer,
    ps_url: String,
    sh_url: String,
    ps: PsClient,
    sh: ShClient,
    http: reqwest::Client,
}

async fn servers() -> Servers {
    let loopback = ([127, 0, 0, 1], 0).into();
    let ps_server = RunningServer::bind(loopback, ps::router(Arc::new(ps::PsStore::new())))
        .await
        .unwrap();
    let sh_server = RunningServer::bind(loopback, sh::router(Arc::new(sh::ShStore::new())))
        .await
        .unwrap();
    let http = http_client(8);
    Servers {
        ps: PsClient::new(&ps_server.url(), http.clone(), 8),
        sh: ShClient::new(&sh_server.url(), http.clone(), 8),
        ps_url: ps_server.url(),
        sh_url: sh_server.url(),
        _ps: ps_server,
        _sh: sh_server,
        http,
    }
}

impl Servers {
    async fn get(&self, url: String) -> (u16, Value) {
        let response = self.http.get(url).send().await.unwrap();
        let status = response.status().as_u16();
        let text = response.text().await.unwrap();
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
    }

    async fn ps_get(&self, path: &str) -> (u16, Value) {
        self.get(format!("{}{path}", self.ps_url)).await
    }

    async fn sh_get(&self, path: &str) -> (u16, Value) {
        self.get(format!("{}{path}", self.sh_url)).await
    }

    async fn send(&self, method: reqwest::Method, url: String, body: &Value) -> (u16, Value) {
        let response = self
            .http
            .request(method, url)
            .json(body)
            .send()
            .await
            .unwrap();
        let status = response.status().as_u16();
        (status, response.json().await.unwrap())
    }

    /// The PS model's items and stocks, as the benchmarker reads them.
    async fn model(&self, code: &str) -> ModelAndStocks {
        let items = self.ps.model_items(code).await.unwrap().unwrap();
        let mut stocks = BTreeMap::new();
        for item in &items {
            let stock = self.ps.stock(&item.item_code_365).await.unwrap().unwrap();
            stocks.insert(item.item_code_365.clone(), stock.stock);
        }
        ModelAndStocks {
            model: items,
            stocks,
        }
    }

    /// Compares one model on SH with PS.
    async fn check_model(&self, code: &str) -> Result<check::Checked, CheckError> {
        let model = self.model(code).await;
        let product = self
            .sh
            .product_by_handle(&mapping::handle(code))
            .await
            .unwrap()
            .into_iter()
            .collect::<Vec<_>>();
        let levels = self.sh.all_inventory_levels().await.unwrap();
        let stocks: HashMap<String, i64> = model.stocks.into_iter().collect();
        check::compare(&model.model, &stocks, &product, &levels)
    }
}

#[tokio::test]
async fn ps_generates_pages_and_serves_items_stocks_and_models() {
    let servers = servers().await;
    let (status, _) = servers
        .ps_get(&format!("/generate/25/{DEFAULT_X_SEED}/{DEFAULT_Y_SEED}"))
        .await;
    assert_eq!(status, 200);
    assert_eq!(
        servers.ps_get("/models/count").await,
        (200, serde_json::json!({"content": 25}))
    );
    let (_, count) = servers.ps_get("/items/count").await;
    let items_count = count["content"].as_u64().unwrap() as usize;
    let items = servers.ps.items_page(1).await.unwrap();
    assert_eq!(items.len(), items_count);
    assert!(
        servers.ps.items_page(2).await.unwrap().is_empty(),
        "past the end is empty"
    );
    assert_eq!(
        servers.ps_get("/items/page/0").await.0,
        400,
        "pages are 1-based"
    );

    // The generated data, as the formula draws it (tests/generation.rs).
    let (status, model0) = servers.ps_get("/modelItem/model0").await;
    assert_eq!(status, 200);
    let model0 = model0.as_array().unwrap();
    assert_eq!(model0.len(), 3);
    assert_eq!(model0[0]["item_code_365"], "Model0_0");
    assert_eq!(model0[0]["model_code_365"], "model0");
    assert_eq!(model0[0]["price_incl_1"], 373.6);
    assert_eq!(model0[0]["list_item_barcodes"][0]["barcode"], "9064933");
    assert_eq!(model0[0]["list_item_barcodes"][0]["is_ean_13"], true);
    assert_eq!(servers.ps_get("/modelItem/model25").await.0, 404);

    let (status, item) = servers.ps_get("/item/Model0_1").await;
    assert_eq!(status, 200);
    assert_eq!(item, model0[1]);
    assert_eq!(servers.ps_get("/item/nope").await.0, 404);
    let (status, stock) = servers.ps_get("/stock/Model0_1").await;
    assert_eq!(status, 200);
    assert_eq!(stock["item_code_365"], "Model0_1");
    assert!((0..=99_999).contains(&stock["stock"].as_i64().unwrap()));
    assert_eq!(servers.ps_get("/stock/nope").await.0, 404);
    let stocks = servers.ps.stocks_page(1).await.unwrap();
    assert_eq!(stocks.len(), items_count);
    assert_eq!(
        stocks.iter().map(|s| &s.item_code_365).collect::<Vec<_>>(),
        items.iter().map(|i| &i.item_code_365).collect::<Vec<_>>()
    );

    let codes = servers.ps.all_model_codes().await.unwrap();
    assert_eq!(
        codes,
        (0..25).map(|i| format!("model{i}")).collect::<Vec<_>>()
    );
    let models = servers.ps.models_page(1).await.unwrap();
    assert_eq!(models.len(), 25);
    assert_eq!(models[0].model_code_365, "model0");
    assert_eq!(models[0].item_count, 3);
    assert_eq!(
        models.iter().map(|m| m.item_count).sum::<usize>(),
        items_count
    );

    let first = servers.ps.first_models_and_stocks(2).await.unwrap();
    assert_eq!(first.len(), 2);
    assert_eq!(first[0].model.len(), 3);
    assert_eq!(
        first[0].stocks.keys().collect::<Vec<_>>(),
        ["Model0_0", "Model0_1", "Model0_2"]
    );
    assert_eq!(
        first[0].stocks["Model0_1"],
        stock["stock"].as_i64().unwrap()
    );
    assert_eq!(servers.ps_get("/firstModelItemsAndStocks/26").await.0, 400);

    // The same seeds serve the same bytes again; a reset empties the store.
    let before = servers
        .http
        .get(format!("{}/items/page/1", servers.ps_url))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    servers.ps.reset().await.unwrap();
    assert_eq!(servers.ps.items_count().await.unwrap(), 0);
    assert_eq!(servers.ps.models_count().await.unwrap(), 0);
    servers
        .ps
        .generate(25, DEFAULT_X_SEED, DEFAULT_Y_SEED)
        .await
        .unwrap();
    let after = servers
        .http
        .get(format!("{}/items/page/1", servers.ps_url))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(before, after);
}

#[tokio::test]
async fn ps_pages_hold_ten_thousand_items() {
    let servers = servers().await;
    servers
        .ps
        .generate(1_000, DEFAULT_X_SEED, DEFAULT_Y_SEED)
        .await
        .unwrap();
    let count = servers.ps.items_count().await.unwrap();
    assert!(count > ps::PAGE_SIZE, "1,000 models have {count} items");
    assert_eq!(servers.ps.items_page(1).await.unwrap().len(), ps::PAGE_SIZE);
    assert_eq!(
        servers.ps.items_page(2).await.unwrap().len(),
        count - ps::PAGE_SIZE
    );
    assert_eq!(servers.ps.all_items().await.unwrap().len(), count);
    assert_eq!(servers.ps.all_stocks().await.unwrap().len(), count);
}

fn product(handle: &str, skus: &[&str]) -> NewProduct {
    NewProduct {
        title: format!("Product {handle}"),
        body_html: "\n\n".into(),
        vendor: "Vendor".into(),
        product_type: "Shoes".into(),
        handle: handle.into(),
        tags: String::new(),
        options: vec![],
        variants: skus
            .iter()
            .map(|sku| shop_sync::model::VariantFields {
                sku: (*sku).into(),
                title: "Default Title".into(),
                price: "10.00".into(),
                compare_at_price: None,
                barcode: Some("1234567".into()),
                option1: Some("Default Title".into()),
                option2: None,
                option3: None,
            })
            .collect(),
    }
}

#[tokio::test]
async fn sh_ids_come_from_a_pool_that_a_reset_rewinds() {
    let servers = servers().await;
    let batch = vec![
        ProductAndStocks {
            product: product("a", &["A_0", "A_1"]),
            stocks: [("A_0".into(), 5), ("A_1".into(), 0)].into(),
        },
        ProductAndStocks {
            product: product("b", &["B_0"]),
            stocks: [("B_0".into(), 7)].into(),
        },
    ];
    let created = servers.sh.batch_products_and_stocks(&batch).await.unwrap();
    let ids = |products: &[shop_sync::model::ShProduct]| -> Vec<u64> {
        products
            .iter()
            .flat_map(|p| {
                std::iter::once(p.id)
                    .chain(p.variants.iter().flat_map(|v| [v.id, v.inventory_item_id]))
            })
            .collect()
    };
    let first = ids(&created);
    assert_eq!(first.len(), 2 + 3 * 2);
    assert!(
        first.iter().all(|id| (100_000..=999_999).contains(id)),
        "{first:?}"
    );
    let unique: std::collections::HashSet<_> = first.iter().collect();
    assert_eq!(unique.len(), first.len(), "ids are distinct");

    servers.sh.reset().await.unwrap();
    assert!(servers.sh.all_products().await.unwrap().is_empty());
    assert!(servers.sh.all_inventory_levels().await.unwrap().is_empty());
    let again = servers.sh.batch_products_and_stocks(&batch).await.unwrap();
    assert_eq!(
        ids(&again),
        first,
        "a reset and the same uploads reproduce the ids"
    );
    assert_eq!(again, created);

    let levels = servers.sh.all_inventory_levels().await.unwrap();
    assert_eq!(levels.len(), 3);
    assert!(levels.iter().all(|l| l.location_id == DEFAULT_LOCATION_ID));
    let a0 = &created[0].variants[0];
    assert_eq!(
        levels
            .iter()
            .find(|l| l.inventory_item_id == a0.inventory_item_id)
            .unwrap()
            .available,
        5
    );
    let page = servers.sh.products_page(1).await.unwrap();
    assert_eq!(page.len(), 2);
    assert!(page[0].id < page[1].id, "pages are ordered by id");
    assert_eq!(servers.sh_get("/products/page/0").await.0, 400);
    assert!(servers.sh.inventories_page(2).await.unwrap().is_empty());
}

#[tokio::test]
async fn sh_products_variants_and_inventories() {
    let servers = servers().await;
    let created = servers
        .sh
        .create_product(&product("shoe", &["S_0", "S_1"]))
        .await
        .unwrap();
    assert_eq!(created.variants.len(), 2);
    assert!(created.variants.iter().all(|v| v.product_id == created.id));
    let (status, found) = servers.sh_get("/handles/shoe").await;
    assert_eq!(status, 200);
    assert_eq!(found["id"], created.id);
    assert_eq!(
        found["variants"][0]["inventory_item_id"],
        created.variants[0].inventory_item_id
    );
    assert_eq!(found["body_html"], "\n\n", "Shopify's snake_case keys");
    assert_eq!(servers.sh_get("/handles/boot").await.0, 404);
    assert_eq!(servers.sh.product_by_handle("boot").await.unwrap(), None);
    // One product per handle.
    let (status, body) = servers
        .send(
            reqwest::Method::POST,
            format!("{}/products", servers.sh_url),
            &serde_json::to_value(product("shoe", &["X"])).unwrap(),
        )
        .await;
    assert_eq!(status, 422, "{body}");

    // PUT /products changes only the fields it carries.
    let updated = servers
        .sh
        .update_product(&ProductUpdate {
            id: created.id,
            title: Some("New".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(updated.title, "New");
    assert_eq!(updated.vendor, "Vendor");
    assert_eq!(updated.variants, created.variants);
    let (status, _) = servers
        .send(
            reqwest::Method::PUT,
            format!("{}/products", servers.sh_url),
            &serde_json::json!({"id": 1, "title": "x"}),
        )
        .await;
    assert_eq!(status, 404);

    // PUT /variants/multiple: all or nothing.
    let mut fields = created.variants[1].fields();
    fields.price = "12.50".into();
    fields.compare_at_price = Some("15.00".into());
    let change = VariantUpdate::new(created.variants[1].id, fields.clone());
    let unknown = VariantUpdate::new(1, fields.clone());
    let (status, _) = servers
        .send(
            reqwest::Method::PUT,
            format!("{}/variants/multiple", servers.sh_url),
            &serde_json::to_value([&change, &unknown]).unwrap(),
        )
        .await;
    assert_eq!(status, 404);
    assert_eq!(
        servers
            .sh
            .product_by_handle("shoe")
            .await
            .unwrap()
            .unwrap()
            .variants[1]
            .price,
        "10.00",
        "nothing changed"
    );
    let changed = servers.sh.update_variants(&[change]).await.unwrap();
    assert_eq!(changed[0].fields(), fields);
    assert_eq!(
        servers
            .sh
            .product_by_handle("shoe")
            .await
            .unwrap()
            .unwrap()
            .variants[1]
            .price,
        "12.50"
    );

    // POST /{product_id}/multiple adds variants, each with a level of 0.
    let mut new = fields.clone();
    new.sku = "S_2".into();
    let added = servers
        .sh
        .create_variants(created.id, &[new])
        .await
        .unwrap();
    assert_eq!(added.len(), 1);
    assert_eq!(added[0].product_id, created.id);
    assert_eq!(
        servers
            .sh
            .product_by_handle("shoe")
            .await
            .unwrap()
            .unwrap()
            .variants
            .len(),
        3
    );
    let (status, _) = servers
        .send(
            reqwest::Method::POST,
            format!("{}/1/multiple", servers.sh_url),
            &serde_json::json!([]),
        )
        .await;
    assert_eq!(status, 404);

    // POST /inventories/multiple answers in the order asked, leaving unknown ids out.
    let ids = [
        added[0].inventory_item_id,
        1,
        created.variants[0].inventory_item_id,
    ];
    let levels = servers.sh.inventory_levels(&ids).await.unwrap();
    assert_eq!(
        levels
            .iter()
            .map(|l| l.inventory_item_id)
            .collect::<Vec<_>>(),
        [ids[0], ids[2]]
    );
    assert!(
        levels
            .iter()
            .all(|l| l.available == 0 && l.location_id == DEFAULT_LOCATION_ID)
    );

    // PUT /inventories/multiple sets them; a wrong location or item sets none.
    let set = InventoryLevel {
        location_id: DEFAULT_LOCATION_ID,
        inventory_item_id: ids[0],
        available: 42,
    };
    let elsewhere = InventoryLevel {
        location_id: 6,
        ..set
    };
    let (status, _) = servers
        .send(
            reqwest::Method::PUT,
            format!("{}/inventories/multiple", servers.sh_url),
            &serde_json::to_value([elsewhere]).unwrap(),
        )
        .await;
    assert_eq!(status, 422);
    let unknown = InventoryLevel {
        inventory_item_id: 1,
        ..set
    };
    let (status, _) = servers
        .send(
            reqwest::Method::PUT,
            format!("{}/inventories/multiple", servers.sh_url),
            &serde_json::to_value([set, unknown]).unwrap(),
        )
        .await;
    assert_eq!(status, 404);
    assert_eq!(
        servers.sh.inventory_levels(&[ids[0]]).await.unwrap()[0].available,
        0
    );
    assert_eq!(
        servers.sh.set_inventory_levels(&[set]).await.unwrap(),
        [set]
    );
    assert_eq!(
        servers.sh.inventory_levels(&[ids[0]]).await.unwrap()[0].available,
        42
    );
}

/// PS with 30 models, one with several items uploaded to SH as stale as it gets.
async fn stale_model(servers: &Servers) -> (String, ModelAndStocks) {
    servers
        .ps
        .generate(30, DEFAULT_X_SEED, DEFAULT_Y_SEED)
        .await
        .unwrap();
    let mut chosen = None;
    for code in servers.ps.all_model_codes().await.unwrap() {
        let model = servers.model(&code).await;
        if model.model.len() >= 4 && !model.model[0].size_name.is_empty() {
            chosen = Some((code, model));
            break;
        }
    }
    chosen.expect("a model with 4 items and a size among 30")
}

#[tokio::test]
async fn the_syncer_brings_a_partially_synced_model_in_line_with_ps() {
    let servers = servers().await;
    let (code, model) = stale_model(&servers).await;
    let mut upload = workload::fully_synced(&model);
    // Every kind of staleness at once: a product field, its options, a missing variant, wrong
    // price, barcode, compare-at price and title, and a wrong stock.
    let removed = upload.product.variants.pop().unwrap();
    upload.stocks.remove(&removed.sku);
    upload.product.vendor = "Old vendor".into();
    upload.product.options[0].values.push("Gone".into());
    upload.product.variants[0].price = "0.01".into();
    upload.product.variants[1].barcode = Some("7654321".into());
    upload.product.variants[1].compare_at_price = Some("9999.00".into());
    upload.product.variants[2].title = "Stale".into();
    let first_sku = upload.product.variants[0].sku.clone();
    let stock = upload.stocks.get_mut(&first_sku).unwrap();
    *stock = (*stock + 1) % 100_000;
    servers
        .sh
        .batch_products_and_stocks(&[upload])
        .await
        .unwrap();
    assert!(
        matches!(servers.check_model(&code).await, Err(CheckError::Differs { count, .. }) if count >= 6)
    );

    let report = syncer::sync(&servers.ps, &servers.sh, &code).await.unwrap();
    assert_eq!(report.model_code, code);
    assert_eq!(report.product, ProductChange::Updated);
    assert_eq!(report.variants_updated, 3);
    assert_eq!(report.variants_created, 1);
    let new_stock = model.stocks[&removed.sku];
    assert_eq!(
        report.levels_set,
        1 + usize::from(new_stock != 0),
        "the wrong stock and the new variant's"
    );
    let checked = servers.check_model(&code).await.unwrap();
    assert_eq!(checked.items, model.model.len());

    // A second sync finds nothing to do.
    let again = syncer::sync(&servers.ps, &servers.sh, &code).await.unwrap();
    assert_eq!(
        (
            again.product,
            again.variants_updated,
            again.variants_created,
            again.levels_set
        ),
        (ProductChange::Unchanged, 0, 0, 0)
    );

    // A model SH does not have is created whole; one PS does not have fails.
    let created = syncer::sync(&servers.ps, &servers.sh, "model0")
        .await
        .unwrap();
    assert_eq!(created.product, ProductChange::Created);
    servers.check_model("model0").await.unwrap();
    let missing = syncer::sync(&servers.ps, &servers.sh, "model30")
        .await
        .unwrap_err();
    assert_eq!(
        missing,
        SyncError::ModelNotFound {
            model_code: "model30".into()
        }
    );
    assert_eq!(missing.to_string(), "model `model30` is not on PS");
}

#[tokio::test]
async fn a_missing_inventory_level_fails_the_sync_with_a_count_mismatch() {
    let servers = servers().await;
    let (code, model) = stale_model(&servers).await;
    let mut upload = workload::fully_synced(&model);
    // The item is not stocked at the location: SH returns one level fewer than asked for.
    let unstocked = upload.product.variants[1].sku.clone();
    upload.stocks.remove(&unstocked);
    servers
        .sh
        .batch_products_and_stocks(&[upload])
        .await
        .unwrap();

    let error = syncer::sync(&servers.ps, &servers.sh, &code)
        .await
        .unwrap_err();
    let items = model.model.len();
    assert_eq!(
        error,
        SyncError::CountMismatch {
            what: "inventory levels",
            expected: items,
            got: items - 1
        }
    );
    assert_eq!(
        error.to_string(),
        format!(
            "count mismatch: asked SH for {items} inventory levels, got {}",
            items - 1
        )
    );
    let differs = servers.check_model(&code).await.unwrap_err();
    assert!(
        differs
            .to_string()
            .contains(&format!("variant {unstocked} has no inventory level")),
        "{differs}"
    );
}

#[test]
fn the_function_says_which_variable_is_missing() {
    let error = Upstreams::from_lookup(|_| None).unwrap_err();
    assert!(
        matches!(&error, SyncError::Config(message) if message.contains("`SHOP_SYNC_PS_URL` is not set")),
        "{error}"
    );
    let error = Upstreams::from_lookup(|name| {
        (name == syncer::PS_URL_VAR).then(|| "http://127.0.0.1:1".to_owned())
    })
    .unwrap_err();
    assert!(
        error.to_string().contains("`SHOP_SYNC_SH_URL` is not set"),
        "{error}"
    );
    let error = Upstreams::from_lookup(|name| match name {
        syncer::CONNECTIONS_VAR => Some("zero".to_owned()),
        _ => Some("http://127.0.0.1:1".to_owned()),
    })
    .unwrap_err();
    assert!(
        error.to_string().contains("SHOP_SYNC_UPSTREAM_CONNECTIONS"),
        "{error}"
    );
    let urls_only =
        |name: &str| (name != syncer::CONNECTIONS_VAR).then(|| "http://127.0.0.1:1".to_owned());
    assert!(Upstreams::from_lookup(urls_only).is_ok());
}
