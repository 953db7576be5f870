//! How a PS model should look on SH: one function per rule, shared by the syncer (what to
//! write), the benchmarker (what a fully synced product is) and the consistency check (what SH
//! must hold after a run).
//!
//! - handle: the model code, lowercased, `/` as `-`;
//! - title: the item's name, or the model's when the item has none;
//! - body: specifications, a blank line, notes;
//! - vendor: the brand, or the store's name when there is none;
//! - product type: the first item's category; tags: model code, department, season;
//! - options: `Color` and `Size` when the items have them, else Shopify's `Title`;
//! - variant price: the sale price when the item is on sale, with the regular price as the
//!   compare-at price; barcode: the first non-label barcode;
//! - listed stock: `max(stock, 0)`.

use crate::model::{NewProduct, ProductUpdate, PsItem, ShOption, ShProduct, VariantFields};

/// Vendor of products whose items have no brand (the original store's name).
pub const DEFAULT_VENDOR: &str = "Orthohouse";
/// Shopify's option for products without options, and its one value.
pub const DEFAULT_OPTION: (&str, &str) = ("Title", "Default Title");

/// The product's handle for a model code.
pub fn handle(model_code: &str) -> String {
    model_code.replace('/', "-").to_lowercase()
}

/// How many units the shop lists for a PS stock: a negative stock is none.
pub fn listed_stock(stock: i64) -> i64 {
    stock.max(0)
}

/// A price as Shopify writes it.
pub fn price_text(price: f64) -> String {
    format!("{price:.2}")
}

/// Whether the item sells below its regular price.
pub fn on_sale(item: &PsItem) -> bool {
    item.price_incl_3 > 0.0 && item.price_incl_3 < item.price_incl_1
}

/// The product a model should be, with every item as a variant.
///
/// # Panics
///
/// When `items` is empty: a model has at least one item.
pub fn product(items: &[PsItem]) -> NewProduct {
    let first = items.first().expect("a model has at least one item");
    let kinds = option_kinds(items);
    let variants: Vec<VariantFields> = items.iter().map(|item| variant(item, &kinds)).collect();
    NewProduct {
        title: title(first),
        body_html: format!("{}\n\n{}", first.specifications, first.notes),
        vendor: if first.brand_name.is_empty() {
            DEFAULT_VENDOR.to_owned()
        } else {
            first.brand_name.clone()
        },
        product_type: first.category_name.clone(),
        handle: handle(&first.model_code_365),
        tags: format!(
            "{}, Dept:{}, Season:{}",
            first.model_code_365, first.dept_name, first.season_name
        ),
        options: options_of(&kinds, &variants),
        variants,
    }
}

/// What must change for `current` to match `wanted` at the product level (title, body,
/// vendor, type, tags, options); `None` when nothing must.
pub fn product_update(current: &ShProduct, wanted: &NewProduct) -> Option<ProductUpdate> {
    fn changed<T: PartialEq + Clone>(current: &T, wanted: &T) -> Option<T> {
        (current != wanted).then(|| wanted.clone())
    }
    let update = ProductUpdate {
        id: current.id,
        title: changed(&current.title, &wanted.title),
        body_html: changed(&current.body_html, &wanted.body_html),
        vendor: changed(&current.vendor, &wanted.vendor),
        product_type: changed(&current.product_type, &wanted.product_type),
        tags: changed(&current.tags, &wanted.tags),
        options: changed(&current.options, &wanted.options),
    };
    (!update.is_empty()).then_some(update)
}

/// Options derived from variants: each option's values in order of first appearance.
pub fn options_of(kinds: &[OptionKind], variants: &[VariantFields]) -> Vec<ShOption> {
    kinds
        .iter()
        .enumerate()
        .map(|(index, kind)| {
            let mut values: Vec<String> = Vec::new();
            for variant in variants {
                let value = match index {
                    0 => &variant.option1,
                    1 => &variant.option2,
                    _ => &variant.option3,
                };
                if let Some(value) = value {
                    if !values.contains(value) {
                        values.push(value.clone());
                    }
                }
            }
            ShOption {
                name: kind.name().to_owned(),
                position: index as u8 + 1,
                values,
            }
        })
        .collect()
}

/// Which options a model's variants have, in position order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionKind {
    /// The item's colour.
    Color,
    /// The item's size.
    Size,
    /// No options: Shopify's single `Title` option.
    Title,
}

impl OptionKind {
    /// The option's name on SH.
    pub fn name(self) -> &'static str {
        match self {
            Self::Color => "Color",
            Self::Size => "Size",
            Self::Title => DEFAULT_OPTION.0,
        }
    }

    fn value(self, item: &PsItem) -> String {
        let value = match self {
            Self::Color => &item.color_name,
            Self::Size => &item.size_name,
            Self::Title => return DEFAULT_OPTION.1.to_owned(),
        };
        // An item of a model with this option always has a value; a blank one still needs a
        // value on SH.
        if value.is_empty() {
            "-".to_owned()
        } else {
            value.clone()
        }
    }
}

/// The options of a model: colour if any item has one, size if any has one, else `Title`.
pub fn option_kinds(items: &[PsItem]) -> Vec<OptionKind> {
    let mut kinds = Vec::with_capacity(2);
    if items.iter().any(|i| !i.color_name.is_empty()) {
        kinds.push(OptionKind::Color);
    }
    if items.iter().any(|i| !i.size_name.is_empty()) {
        kinds.push(OptionKind::Size);
    }
    if kinds.is_empty() {
        kinds.push(OptionKind::Title);
    }
    kinds
}

/// The variant an item should be, given its model's options.
pub fn variant(item: &PsItem, kinds: &[OptionKind]) -> VariantFields {
    let values: Vec<String> = kinds.iter().map(|kind| kind.value(item)).collect();
    let (price, compare_at_price) = if on_sale(item) {
        (item.price_incl_3, Some(price_text(item.price_incl_1)))
    } else {
        (item.price_incl_1, None)
    };
    let barcode = item
        .list_item_barcodes
        .iter()
        .find(|b| !b.is_label_barcode)
        .or(item.list_item_barcodes.first())
        .map(|b| b.barcode.clone());
    VariantFields {
        sku: item.item_code_365.clone(),
        title: values.join(" / "),
        price: price_text(price),
        compare_at_price,
        barcode,
        option1: values.first().cloned(),
        option2: values.get(1).cloned(),
        option3: values.get(2).cloned(),
    }
}

fn title(item: &PsItem) -> String {
    if item.item_name.is_empty() {
        item.model_name.clone()
    } else {
        item.item_name.clone()
    }
}
