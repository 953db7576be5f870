//! `syncModel`: makes one model's product on SH match the model on PS, in five steps.
//!
//! 1. PS: the model's items (`GET /modelItem/{code}`), then each item's stock.
//! 2. SH: the product with the model's handle (`GET /handles/{handle}`), if any.
//! 3. Product: none → create it with every variant (`POST /products`); otherwise, when its
//!    title, body, vendor, type, tags or options differ, one `PUT /products`.
//! 4. Variants, matched by sku: the changed ones (title, price, compare-at price, barcode,
//!    options) in one `PUT /variants/multiple`, the missing ones in one
//!    `POST /{product_id}/multiple`.
//! 5. Inventory: every variant's level in one `POST /inventories/multiple`; where
//!    `max(stock, 0)` differs from what is available, one `PUT /inventories/multiple`.
//!
//! When SH answers with fewer or more records than asked for, the sync fails: SH and PS no
//! longer agree on what the model is, and writing on would hide it.

use std::collections::HashMap;

use ferry::Context;
use futures::future::try_join_all;
use serde::{Deserialize, Serialize};

use crate::client::{self, PsClient, RequestError, ShClient};
use crate::mapping;
use crate::model::{InventoryLevel, ShProduct, VariantFields, VariantUpdate};

/// Environment variable with the mock PS server's base URL.
pub const PS_URL_VAR: &str = "SHOP_SYNC_PS_URL";
/// Environment variable with the mock SH server's base URL.
pub const SH_URL_VAR: &str = "SHOP_SYNC_SH_URL";
/// Environment variable with the requests in flight per upstream per process
/// (default [`client::DEFAULT_UPSTREAM_CONNECTIONS`]).
pub const CONNECTIONS_VAR: &str = "SHOP_SYNC_UPSTREAM_CONNECTIONS";

/// What a sync changed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SyncReport {
    /// The model.
    pub model_code: String,
    /// What happened to the product itself.
    pub product: ProductChange,
    /// Existing variants rewritten.
    pub variants_updated: usize,
    /// Variants added to an existing product.
    pub variants_created: usize,
    /// Inventory levels set.
    pub levels_set: usize,
}

/// What step 3 did.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ProductChange {
    /// It was up to date.
    Unchanged,
    /// It did not exist and was created.
    Created,
    /// Its own fields were rewritten.
    Updated,
}

/// Why a sync failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum SyncError {
    /// PS has no such model, or it has no items.
    ModelNotFound {
        /// The model code asked for.
        model_code: String,
    },
    /// PS has an item but no stock for it.
    StockNotFound {
        /// The item.
        item_code: String,
    },
    /// SH answered with a different number of records than it was asked for.
    CountMismatch {
        /// What was asked for (`inventory levels`).
        what: &'static str,
        /// How many were asked for.
        expected: usize,
        /// How many came back.
        got: usize,
    },
    /// A request to PS or SH failed.
    Request(RequestError),
    /// The function does not know where PS or SH are.
    Config(String),
}

impl std::fmt::Display for SyncError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::ModelNotFound { model_code } => write!(f, "model `{model_code}` is not on PS"),
            Self::StockNotFound { item_code } => {
                write!(f, "PS has no stock for item `{item_code}`")
            }
            Self::CountMismatch {
                what,
                expected,
                got,
            } => write!(
                f,
                "count mismatch: asked SH for {expected} {what}, got {got}"
            ),
            Self::Request(error) => error.fmt(f),
            Self::Config(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for SyncError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Self::Request(error) => Some(error),
            _ => None,
        }
    }
}

impl From<RequestError> for SyncError {
    fn from(error: RequestError) -> Self {
        Self::Request(error)
    }
}

/// Clients of both servers for one process, made once from the environment.
#[derive(Debug, Clone)]
pub struct Upstreams {
    /// The PS client.
    pub ps: PsClient,
    /// The SH client.
    pub sh: ShClient,
}

impl Upstreams {
    /// Clients of the servers at these URLs.
    pub fn new(ps_url: &str, sh_url: &str, connections_per_upstream: usize) -> Self {
        let http = client::http_client(connections_per_upstream);
        Self {
            ps: PsClient::new(ps_url, http.clone(), connections_per_upstream),
            sh: ShClient::new(sh_url, http, connections_per_upstream),
        }
    }

    /// From [`PS_URL_VAR`], [`SH_URL_VAR`] and [`CONNECTIONS_VAR`] as `lookup` finds them.
    pub fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self, SyncError> {
        let url = |name: &str| {
            lookup(name)
                .filter(|v| !v.trim().is_empty())
                .ok_or_else(|| {
                    SyncError::Config(format!(
                        "`{name}` is not set: the host sets it to the mock server's URL \
                     (e.g. http://127.0.0.1:8081) before it starts the functions"
                    ))
                })
        };
        let (ps, sh) = (url(PS_URL_VAR)?, url(SH_URL_VAR)?);
        let connections = match lookup(CONNECTIONS_VAR) {
            Some(text) => text
                .trim()
                .parse::<usize>()
                .ok()
                .filter(|n| *n > 0)
                .ok_or_else(|| {
                    SyncError::Config(format!(
                        "`{CONNECTIONS_VAR}` must be a positive whole number, not `{text}`"
                    ))
                })?,
            None => client::DEFAULT_UPSTREAM_CONNECTIONS,
        };
        Ok(Self::new(&ps, &sh, connections))
    }

    /// From the process environment.
    pub fn from_env() -> Result<Self, SyncError> {
        Self::from_lookup(|name| std::env::var(name).ok())
    }
}

/// This process's upstream clients, or why there are none; created by the first sync and
/// kept for every later one, so connections stay warm.
struct ProcessUpstreams(Result<Upstreams, SyncError>);

/// Syncs one model from PS to SH: the case study's `syncModel(modelCode)`.
///
/// I/O-bound: a sync waits on about fifteen requests and computes little, so one instance runs
/// many at once (`concurrency`); without that, the thesis measured 28 syncs per second on 18
/// machines against 333 for one monolith.
#[ferry::function(concurrency = 64, timeout = "120s")]
pub async fn sync_model(ctx: Context, model_code: String) -> Result<SyncReport, SyncError> {
    let upstreams = ctx.instance(|| ProcessUpstreams(Upstreams::from_env()));
    let upstreams = upstreams.0.as_ref().map_err(Clone::clone)?;
    sync(&upstreams.ps, &upstreams.sh, &model_code).await
}

/// The five steps of a sync, against these clients.
pub async fn sync(ps: &PsClient, sh: &ShClient, model_code: &str) -> Result<SyncReport, SyncError> {
    let not_found = || SyncError::ModelNotFound {
        model_code: model_code.to_owned(),
    };
    // 1. PS: the model and its stocks.
    let items = ps.model_items(model_code).await?.ok_or_else(not_found)?;
    if items.is_empty() {
        return Err(not_found());
    }
    let stocks = try_join_all(items.iter().map(|item| async move {
        match ps.stock(&item.item_code_365).await? {
            Some(stock) => Ok(stock.stock),
            None => Err(SyncError::StockNotFound {
                item_code: item.item_code_365.clone(),
            }),
        }
    }))
    .await?;
    let wanted = mapping::product(&items);

    // 2. SH: the product, if there is one.
    let existing = sh.product_by_handle(&wanted.handle).await?;

    // 3. The product itself.
    let mut report = SyncReport {
        model_code: model_code.to_owned(),
        product: ProductChange::Unchanged,
        variants_updated: 0,
        variants_created: 0,
        levels_set: 0,
    };
    let mut product = match existing {
        None => {
            let created = sh.create_product(&wanted).await?;
            expect_count(
                "variants of the new product",
                wanted.variants.len(),
                created.variants.len(),
            )?;
            report.product = ProductChange::Created;
            created
        }
        Some(current) => match mapping::product_update(&current, &wanted) {
            Some(update) => {
                let updated = sh.update_product(&update).await?;
                report.product = ProductChange::Updated;
                updated
            }
            None => current,
        },
    };

    // 4. Variants, by sku.
    let (changed, missing) = variant_changes(&product, &wanted.variants);
    if !changed.is_empty() {
        let updated = sh.update_variants(&changed).await?;
        expect_count("updated variants", changed.len(), updated.len())?;
        report.variants_updated = updated.len();
    }
    if !missing.is_empty() {
        let created = sh.create_variants(product.id, &missing).await?;
        expect_count("new variants", missing.len(), created.len())?;
        report.variants_created = created.len();
        product.variants.extend(created);
    }

    // 5. Inventory levels, in item order.
    let inventory_of: HashMap<&str, u64> = product
        .variants
        .iter()
        .map(|v| (v.sku.as_str(), v.inventory_item_id))
        .collect();
    let ids = items
        .iter()
        .map(|item| {
            inventory_of
                .get(item.item_code_365.as_str())
                .copied()
                .ok_or(SyncError::CountMismatch {
                    what: "variants of the product",
                    expected: items.len(),
                    got: product.variants.len(),
                })
        })
        .collect::<Result<Vec<u64>, _>>()?;
    let levels = sh.inventory_levels(&ids).await?;
    expect_count("inventory levels", ids.len(), levels.len())?;
    let level_of: HashMap<u64, InventoryLevel> =
        levels.iter().map(|l| (l.inventory_item_id, *l)).collect();
    let mut corrections = Vec::new();
    for (id, stock) in ids.iter().zip(&stocks) {
        let Some(level) = level_of.get(id) else {
            return Err(SyncError::CountMismatch {
                what: "inventory levels",
                expected: ids.len(),
                got: level_of.len(),
            });
        };
        let listed = mapping::listed_stock(*stock);
        if level.available != listed {
            corrections.push(InventoryLevel {
                available: listed,
                ..*level
            });
        }
    }
    if !corrections.is_empty() {
        let set = sh.set_inventory_levels(&corrections).await?;
        expect_count("inventory levels set", corrections.len(), set.len())?;
        report.levels_set = set.len();
    }
    Ok(report)
}

/// Variants whose fields differ (as updates) and items without a variant (as new variants).
fn variant_changes(
    product: &ShProduct,
    wanted: &[VariantFields],
) -> (Vec<VariantUpdate>, Vec<VariantFields>) {
    let by_sku: HashMap<&str, _> = product
        .variants
        .iter()
        .map(|v| (v.sku.as_str(), v))
        .collect();
    let mut changed = Vec::new();
    let mut missing = Vec::new();
    for fields in wanted {
        match by_sku.get(fields.sku.as_str()) {
            Some(current) if current.fields() != *fields => {
                changed.push(VariantUpdate::new(current.id, fields.clone()));
            }
            Some(_) => {}
            None => missing.push(fields.clone()),
        }
    }
    (changed, missing)
}

fn expect_count(what: &'static str, expected: usize, got: usize) -> Result<(), SyncError> {
    if expected == got {
        Ok(())
    } else {
        Err(SyncError::CountMismatch {
            what,
            expected,
            got,
        })
    }
}
