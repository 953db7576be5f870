//! A workload: how many models PS has, the seeds, and which of them SH already holds.
//!
//! As in the thesis's benchmarker, `P` models are partially synced on SH (some variants
//! missing, some prices, barcodes, compare-at prices, titles or stocks wrong), `F` are fully
//! synced and the rest are missing, with `P ≤ N`, `F < N` and `P + F ≤ N` drawn from the seeded
//! generator: `P` uniform in `0..=N`, then `F` uniform in `0..=min(N − 1, N − P)`. They are the
//! first `P + F` models of PS (`/firstModelItemsAndStocks`), the first `P` partial.

use std::collections::BTreeMap;

use crate::mapping;
use crate::model::{ModelAndStocks, NewProduct, ProductAndStocks};
use crate::prng::{DEFAULT_X_SEED, DEFAULT_Y_SEED, Xorshift128Plus};

/// A workload to set up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Workload {
    /// Models on PS (`N`).
    pub models: usize,
    /// First seed.
    pub x_seed: u64,
    /// Second seed.
    pub y_seed: u64,
}

/// How SH starts: `partial` + `full` models already there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Plan {
    /// Partially synced models (`P`).
    pub partial: usize,
    /// Fully synced models (`F`).
    pub full: usize,
}

impl Workload {
    /// `models` models with the thesis's default seeds.
    pub fn new(models: usize) -> Self {
        Self {
            models,
            x_seed: DEFAULT_X_SEED,
            y_seed: DEFAULT_Y_SEED,
        }
    }

    /// The generator the benchmarker draws from. It is seeded like PS's: the same seeds name
    /// the whole workload.
    pub fn random(&self) -> Xorshift128Plus {
        Xorshift128Plus::new(self.x_seed, self.y_seed)
    }

    /// Draws `P` and `F`.
    pub fn draw_plan(&self, random: &mut Xorshift128Plus) -> Plan {
        let n = self.models as u64;
        if n == 0 {
            return Plan {
                partial: 0,
                full: 0,
            };
        }
        let partial = random.between(0, n);
        let full = random.between(0, (n - 1).min(n - partial));
        Plan {
            partial: partial as usize,
            full: full as usize,
        }
    }
}

impl Plan {
    /// Models already on SH.
    pub fn on_sh(&self) -> usize {
        self.partial + self.full
    }
}

/// SH's starting state: the first `plan.partial` of `models` partially synced, the next
/// `plan.full` fully synced, for one `POST /batchProductsAndStocks`.
///
/// # Panics
///
/// When `models` holds fewer than `plan.on_sh()` models.
pub fn uploads(
    models: &[ModelAndStocks],
    plan: Plan,
    random: &mut Xorshift128Plus,
) -> Vec<ProductAndStocks> {
    let (partial, full) = models[..plan.on_sh()].split_at(plan.partial);
    let mut uploads: Vec<ProductAndStocks> = partial
        .iter()
        .map(|model| partially_synced(model, random))
        .collect();
    uploads.extend(full.iter().map(fully_synced));
    uploads
}

/// The product exactly as a sync leaves it.
pub fn fully_synced(model: &ModelAndStocks) -> ProductAndStocks {
    let product = mapping::product(&model.model);
    let stocks = model
        .stocks
        .iter()
        .map(|(sku, stock)| (sku.clone(), mapping::listed_stock(*stock)))
        .collect();
    ProductAndStocks { product, stocks }
}

/// The product as a stale copy: each variant is missing with probability 1/4 (one always
/// stays), its price wrong with 1/5, its barcode with 1/5, its compare-at price with 1/8, its
/// title with 1/8, its stock with 1/3; the product's title, vendor and tags are each wrong with
/// 1/4. Its options are what its remaining variants imply.
pub fn partially_synced(model: &ModelAndStocks, random: &mut Xorshift128Plus) -> ProductAndStocks {
    let wanted = mapping::product(&model.model);
    let kinds = mapping::option_kinds(&model.model);
    let keep_anyway = random.below(wanted.variants.len() as u64) as usize;
    let mut variants = Vec::with_capacity(wanted.variants.len());
    let mut stocks = BTreeMap::new();
    for (index, mut variant) in wanted.variants.iter().cloned().enumerate() {
        if random.chance(1, 4) && index != keep_anyway {
            continue;
        }
        if random.chance(1, 5) {
            variant.price = mapping::price_text(random.between(199, 201_999) as f64 / 100.0);
        }
        if random.chance(1, 5) {
            variant.barcode = Some(random.between(1_111_111, 9_999_999).to_string());
        }
        if random.chance(1, 8) {
            variant.compare_at_price = match variant.compare_at_price {
                Some(_) => None,
                None => Some(variant.price.clone()),
            };
        }
        if random.chance(1, 8) {
            variant.title = format!("{} (old)", variant.title);
        }
        let stock = mapping::listed_stock(model.stocks[&variant.sku]);
        let stock = if random.chance(1, 3) {
            random.between(0, crate::generate::MAX_STOCK) as i64
        } else {
            stock
        };
        stocks.insert(variant.sku.clone(), stock);
        variants.push(variant);
    }
    let mut product = NewProduct {
        options: mapping::options_of(&kinds, &variants),
        variants,
        ..wanted
    };
    if random.chance(1, 4) {
        product.title = format!("{} (old title)", product.title);
    }
    if random.chance(1, 4) {
        product.vendor = "Old vendor".to_owned();
    }
    if random.chance(1, 4) {
        product.tags = String::new();
    }
    ProductAndStocks { product, stocks }
}
