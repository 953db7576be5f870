//! The consistency check after a run: SH must now say what PS says, for every model.
//!
//! Every PS model has exactly one product with its handle, whose own fields, options and
//! variants (one per item, matched by sku: title, price, compare-at price, barcode, options) are
//! what [`crate::mapping`] derives from the items, and every variant's inventory level at the
//! store's location lists `max(stock, 0)`. SH has no other products.

use std::collections::{BTreeMap, HashMap};

use crate::client::{PsClient, RequestError, ShClient};
use crate::mapping;
use crate::model::{InventoryLevel, PsItem, ShProduct};
use crate::sh::DEFAULT_LOCATION_ID;

/// Differences listed in a [`CheckError`]'s message; the rest are counted.
const LISTED: usize = 10;

/// What the check compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Checked {
    /// Models (products).
    pub models: usize,
    /// Items (variants and levels).
    pub items: usize,
}

/// Why the check failed.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum CheckError {
    /// Reading either server failed.
    Request(RequestError),
    /// SH differs from PS.
    Differs {
        /// How many differences.
        count: usize,
        /// The first few, described.
        first: Vec<String>,
    },
}

impl std::fmt::Display for CheckError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Request(error) => write!(f, "cannot read the servers to compare them: {error}"),
            Self::Differs { count, first } => {
                write!(f, "SH differs from PS in {count} places")?;
                for difference in first {
                    write!(f, "\n  - {difference}")?;
                }
                if *count > first.len() {
                    write!(f, "\n  - … and {} more", count - first.len())?;
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for CheckError {}

impl From<RequestError> for CheckError {
    fn from(error: RequestError) -> Self {
        Self::Request(error)
    }
}

/// Reads both servers in full and compares them.
pub async fn verify(ps: &PsClient, sh: &ShClient) -> Result<Checked, CheckError> {
    let (items, stocks, products, levels) = futures::try_join!(
        ps.all_items(),
        ps.all_stocks(),
        sh.all_products(),
        sh.all_inventory_levels()
    )?;
    let stocks: HashMap<String, i64> = stocks
        .into_iter()
        .map(|s| (s.item_code_365, s.stock))
        .collect();
    compare(&items, &stocks, &products, &levels)
}

/// Compares PS's items and stocks with SH's products and levels.
pub fn compare(
    items: &[PsItem],
    stocks: &HashMap<String, i64>,
    products: &[ShProduct],
    levels: &[InventoryLevel],
) -> Result<Checked, CheckError> {
    let mut models: BTreeMap<&str, Vec<PsItem>> = BTreeMap::new();
    for item in items {
        models
            .entry(item.model_code_365.as_str())
            .or_default()
            .push(item.clone());
    }
    let mut by_handle: HashMap<&str, Vec<&ShProduct>> = HashMap::new();
    for product in products {
        by_handle
            .entry(product.handle.as_str())
            .or_default()
            .push(product);
    }
    let levels: HashMap<u64, &InventoryLevel> =
        levels.iter().map(|l| (l.inventory_item_id, l)).collect();

    let mut differences = Differences::default();
    for (model, items) in &models {
        let wanted = mapping::product(items);
        let product = match by_handle.remove(wanted.handle.as_str()).as_deref() {
            Some([product]) => *product,
            Some(several) => {
                differences.note(format!(
                    "{model}: {} products with handle `{}`",
                    several.len(),
                    wanted.handle
                ));
                continue;
            }
            None => {
                differences.note(format!(
                    "{model}: no product with handle `{}`",
                    wanted.handle
                ));
                continue;
            }
        };
        let fields = [
            ("title", &product.title, &wanted.title),
            ("body", &product.body_html, &wanted.body_html),
            ("vendor", &product.vendor, &wanted.vendor),
            ("product type", &product.product_type, &wanted.product_type),
            ("tags", &product.tags, &wanted.tags),
        ];
        for (name, is, should) in fields {
            if is != should {
                differences.note(format!("{model}: {name} is {is:?}, PS says {should:?}"));
            }
        }
        if product.options != wanted.options {
            differences.note(format!(
                "{model}: options are {:?}, PS says {:?}",
                product.options, wanted.options
            ));
        }
        if product.variants.len() != wanted.variants.len() {
            differences.note(format!(
                "{model}: {} variants for {} items",
                product.variants.len(),
                wanted.variants.len()
            ));
        }
        let variants: HashMap<&str, _> = product
            .variants
            .iter()
            .map(|v| (v.sku.as_str(), v))
            .collect();
        for fields in &wanted.variants {
            let sku = fields.sku.as_str();
            let Some(variant) = variants.get(sku) else {
                differences.note(format!("{model}: item {sku} has no variant"));
                continue;
            };
            let is = variant.fields();
            if is != *fields {
                differences.note(format!(
                    "{model}: variant {sku} is {is:?}, PS says {fields:?}"
                ));
            }
            let listed = stocks.get(sku).map(|s| mapping::listed_stock(*s));
            match (levels.get(&variant.inventory_item_id), listed) {
                (_, None) => differences.note(format!("{model}: PS has no stock for {sku}")),
                (None, _) => {
                    differences.note(format!("{model}: variant {sku} has no inventory level"))
                }
                (Some(level), Some(listed)) => {
                    if level.location_id != DEFAULT_LOCATION_ID || level.available != listed {
                        differences.note(format!(
                            "{model}: {sku} has {} available at location {}, PS says {listed} at {DEFAULT_LOCATION_ID}",
                            level.available, level.location_id
                        ));
                    }
                }
            }
        }
    }
    for (handle, extra) in by_handle {
        differences.note(format!(
            "SH has {} product(s) with handle `{handle}`, which is no PS model",
            extra.len()
        ));
    }
    if differences.count > 0 {
        return Err(CheckError::Differs {
            count: differences.count,
            first: differences.first,
        });
    }
    Ok(Checked {
        models: models.len(),
        items: items.len(),
    })
}

#[derive(Default)]
struct Differences {
    count: usize,
    first: Vec<String>,
}

impl Differences {
    fn note(&mut self, difference: String) {
        self.count += 1;
        if self.first.len() < LISTED {
            self.first.push(difference);
        }
    }
}
