//! Seeded generation of the PS catalogue: `GET /generate/{count}/{x}/{y}` on the mock PS server.
//!
//! Model `i` is `model{i}` with 1–20 items. A model has a colour option, a size option, both or
//! neither (two coin flips); each item draws a price of 1.99–2019.99, a discount of 0–20 % (0: not
//! on sale), a 7-digit EAN barcode, a category, and a colour and size when the model has them.
//! Stocks (0–99999) are drawn after every model, in item order. Prices are whole cents, so the
//! same seeds give the same bytes everywhere.

use crate::model::{PsBarcode, PsItem, PsStock};
use crate::prng::Xorshift128Plus;

/// The categories an item belongs to.
pub const CATEGORIES: &[&str] = &["Shoes", "Neck", "Waist", "Leg", "Hand", "Torso"];
/// The colours of models with a colour option.
pub const COLORS: &[&str] = &[
    "Red", "Black", "Blue", "Green", "Yellow", "Purple", "Gray", "Orange", "Cyan", "Beige", "Pink",
];
/// The sizes of models with a size option.
pub const SIZES: &[&str] = &["Small", "Medium", "Large", "XLarge", "XXLarge"];
/// Most items one model has.
pub const MAX_ITEMS_PER_MODEL: u64 = 20;
/// Highest stock drawn.
pub const MAX_STOCK: u64 = 99_999;

/// A generated catalogue: the models in order with their items, and every item's stock.
#[derive(Debug, Clone, PartialEq)]
pub struct Catalogue {
    /// `(model code, items)`, model 0 first.
    pub models: Vec<(String, Vec<PsItem>)>,
    /// One stock per item, in the order of the items.
    pub stocks: Vec<PsStock>,
}

/// `models` models drawn from the generator seeded with `(x_seed, y_seed)`.
pub fn catalogue(models: usize, x_seed: u64, y_seed: u64) -> Catalogue {
    let mut random = Xorshift128Plus::new(x_seed, y_seed);
    let models: Vec<(String, Vec<PsItem>)> = (0..models)
        .map(|index| {
            let code = format!("model{index}");
            let items = model(&mut random, &code, index);
            (code, items)
        })
        .collect();
    let stocks = models
        .iter()
        .flat_map(|(_, items)| items)
        .map(|item| PsStock {
            item_code_365: item.item_code_365.clone(),
            model_code_365: item.model_code_365.clone(),
            item_name: item.item_name.clone(),
            store_code_365: "X".to_owned(),
            stock: random.between(0, MAX_STOCK) as i64,
        })
        .collect();
    Catalogue { models, stocks }
}

fn model(random: &mut Xorshift128Plus, code: &str, index: usize) -> Vec<PsItem> {
    let count = random.between(1, MAX_ITEMS_PER_MODEL) as usize;
    let has_color = random.coin();
    let has_size = random.coin();
    let model_name = format!("Model{index}");
    (0..count)
        .map(|position| {
            let price_cents = random.between(199, 201_999);
            let discount_percent = random.between(0, 20);
            let barcode = random.between(1_111_111, 9_999_999);
            let category = *random.pick(CATEGORIES);
            let color = if has_color { *random.pick(COLORS) } else { "" };
            let size = if has_size { *random.pick(SIZES) } else { "" };
            // Rounded to the cent, as a till would.
            let sale_cents = (price_cents * (100 - discount_percent) + 50) / 100;
            item(ItemDraw {
                code: format!("{model_name}_{position}"),
                // The original names only single-item models' items; the others take the
                // model's name as their title.
                name: if count > 1 {
                    String::new()
                } else {
                    format!("item {position}")
                },
                model_code: code,
                model_name: &model_name,
                price: cents(price_cents),
                sale_price: cents(sale_cents),
                barcode,
                category,
                color,
                size,
            })
        })
        .collect()
}

struct ItemDraw<'a> {
    code: String,
    name: String,
    model_code: &'a str,
    model_name: &'a str,
    price: f64,
    sale_price: f64,
    barcode: u64,
    category: &'a str,
    color: &'a str,
    size: &'a str,
}

fn item(draw: ItemDraw<'_>) -> PsItem {
    PsItem {
        item_code_365: draw.code,
        item_name: draw.name,
        model_code_365: draw.model_code.to_owned(),
        model_name: draw.model_name.to_owned(),
        active: true,
        price_incl_1: draw.price,
        price_excl_1: 0.0,
        price_incl_2: 0.0,
        price_excl_2: 0.0,
        price_incl_3: draw.sale_price,
        price_excl_3: 0.0,
        price_incl_4: 0.0,
        price_excl_4: 0.0,
        price_incl_5: 0.0,
        price_excl_5: 0.0,
        price_incl_6: 0.0,
        price_excl_6: 0.0,
        price_incl_7: 0.0,
        price_excl_7: 0.0,
        price_incl_8: 0.0,
        price_excl_8: 0.0,
        price_incl_9: 0.0,
        price_excl_9: 0.0,
        price_incl_10: 0.0,
        price_excl_10: 0.0,
        category_code_365: draw.category.to_lowercase(),
        category_name: draw.category.to_owned(),
        brand_name: String::new(),
        dept_name: String::new(),
        season_name: String::new(),
        color_code_365: draw.color.to_lowercase(),
        color_name: draw.color.to_owned(),
        size_code_365: draw.size.to_lowercase(),
        size_name: draw.size.to_owned(),
        specifications: String::new(),
        notes: String::new(),
        list_item_barcodes: vec![PsBarcode {
            barcode: draw.barcode.to_string(),
            is_label_barcode: false,
            is_ean_13: true,
        }],
    }
}

/// Whole cents as a price; exact to the cent when printed with two decimals.
fn cents(cents: u64) -> f64 {
    cents as f64 / 100.0
}
