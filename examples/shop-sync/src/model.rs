//! The data of both systems as it travels over HTTP.
//!
//! PS (the logistics system, the source of truth) speaks snake_case with `_365` suffixes, as
//! Powersoft365 does (`item_code_365`); SH (the Shopify store) speaks Shopify's snake_case
//! (`body_html`, `inventory_item_id`). A model is a product, an item a variant (its sku is the
//! item code), a stock an inventory level at the store's one location.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// One item of the logistics system. Many items (sizes, colours) make one model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)] // the fields are Powersoft365's, named as there
pub struct PsItem {
    pub item_code_365: String,
    pub item_name: String,
    pub model_code_365: String,
    pub model_name: String,
    pub active: bool,
    pub price_incl_1: f64,
    pub price_excl_1: f64,
    pub price_incl_2: f64,
    pub price_excl_2: f64,
    /// The discounted price when the item is on sale; otherwise equal to `price_incl_1`.
    pub price_incl_3: f64,
    pub price_excl_3: f64,
    pub price_incl_4: f64,
    pub price_excl_4: f64,
    pub price_incl_5: f64,
    pub price_excl_5: f64,
    pub price_incl_6: f64,
    pub price_excl_6: f64,
    pub price_incl_7: f64,
    pub price_excl_7: f64,
    pub price_incl_8: f64,
    pub price_excl_8: f64,
    pub price_incl_9: f64,
    pub price_excl_9: f64,
    pub price_incl_10: f64,
    pub price_excl_10: f64,
    pub category_code_365: String,
    pub category_name: String,
    pub brand_name: String,
    pub dept_name: String,
    pub season_name: String,
    pub color_code_365: String,
    pub color_name: String,
    pub size_code_365: String,
    pub size_name: String,
    pub specifications: String,
    pub notes: String,
    pub list_item_barcodes: Vec<PsBarcode>,
}

/// A barcode of an item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PsBarcode {
    /// The digits.
    pub barcode: String,
    /// Printed on shelf labels only; the syncer prefers the others.
    pub is_label_barcode: bool,
    /// Whether it is an EAN-13.
    pub is_ean_13: bool,
}

/// How many of an item the store holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct PsStock {
    pub item_code_365: String,
    pub model_code_365: String,
    pub item_name: String,
    pub store_code_365: String,
    /// May be negative in a logistics system (sold before booked); the shop lists `max(stock, 0)`.
    pub stock: i64,
}

/// A model's metadata, as `/models/page/{n}` lists it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct PsModel {
    pub model_code_365: String,
    pub model_name: String,
    pub price_incl: f64,
    pub category_name: String,
    pub brand_name: String,
    pub specifications: String,
    pub notes: String,
    pub item_count: usize,
}

/// A model's items with their stocks by item code (`/firstModelItemsAndStocks/{count}`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelAndStocks {
    /// The model's items.
    pub model: Vec<PsItem>,
    /// Stock by item code.
    pub stocks: BTreeMap<String, i64>,
}

/// A count, wrapped as the mock PS server answers it: `{"content": 42}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Count {
    /// The number.
    pub content: usize,
}

/// A product of the Shopify store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct ShProduct {
    pub id: u64,
    pub title: String,
    pub body_html: String,
    pub vendor: String,
    pub product_type: String,
    /// The model code, lowercased: how the syncer finds a model's product.
    pub handle: String,
    pub tags: String,
    pub options: Vec<ShOption>,
    pub variants: Vec<ShVariant>,
}

/// A product option (`Color`, `Size`, or Shopify's `Title` for products without options).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShOption {
    /// The option's name.
    pub name: String,
    /// 1, 2 or 3: which of a variant's `option1..3` holds its value.
    pub position: u8,
    /// The values the variants take, in order of first appearance.
    pub values: Vec<String>,
}

/// A variant of a product: one PS item.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct ShVariant {
    pub id: u64,
    pub product_id: u64,
    pub inventory_item_id: u64,
    pub sku: String,
    pub title: String,
    /// Shopify's prices are decimal strings.
    pub price: String,
    pub compare_at_price: Option<String>,
    pub barcode: Option<String>,
    pub option1: Option<String>,
    pub option2: Option<String>,
    pub option3: Option<String>,
}

impl ShVariant {
    /// The fields the syncer sets, to compare with what PS says they should be.
    pub fn fields(&self) -> VariantFields {
        VariantFields {
            sku: self.sku.clone(),
            title: self.title.clone(),
            price: self.price.clone(),
            compare_at_price: self.compare_at_price.clone(),
            barcode: self.barcode.clone(),
            option1: self.option1.clone(),
            option2: self.option2.clone(),
            option3: self.option3.clone(),
        }
    }
}

/// What defines a variant, without the ids the store assigns: the body of a new variant.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct VariantFields {
    pub sku: String,
    pub title: String,
    pub price: String,
    pub compare_at_price: Option<String>,
    pub barcode: Option<String>,
    pub option1: Option<String>,
    pub option2: Option<String>,
    pub option3: Option<String>,
}

/// A product to create (`POST /products`, `POST /batchProductsAndStocks`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct NewProduct {
    pub title: String,
    pub body_html: String,
    pub vendor: String,
    pub product_type: String,
    pub handle: String,
    pub tags: String,
    pub options: Vec<ShOption>,
    pub variants: Vec<VariantFields>,
}

/// Changes to a product's own fields (`PUT /products`); absent fields stay as they are.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct ProductUpdate {
    pub id: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body_html: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vendor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub product_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub options: Option<Vec<ShOption>>,
}

impl ProductUpdate {
    /// Whether it changes nothing.
    pub fn is_empty(&self) -> bool {
        self.title.is_none()
            && self.body_html.is_none()
            && self.vendor.is_none()
            && self.product_type.is_none()
            && self.tags.is_none()
            && self.options.is_none()
    }
}

/// New values for an existing variant (`PUT /variants/multiple`): every field it carries
/// replaces the variant's. The sku, which identifies the item, never changes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[allow(missing_docs)]
pub struct VariantUpdate {
    pub id: u64,
    pub title: String,
    pub price: String,
    pub compare_at_price: Option<String>,
    pub barcode: Option<String>,
    pub option1: Option<String>,
    pub option2: Option<String>,
    pub option3: Option<String>,
}

impl VariantUpdate {
    /// Sets variant `id` to `fields`.
    pub fn new(id: u64, fields: VariantFields) -> Self {
        Self {
            id,
            title: fields.title,
            price: fields.price,
            compare_at_price: fields.compare_at_price,
            barcode: fields.barcode,
            option1: fields.option1,
            option2: fields.option2,
            option3: fields.option3,
        }
    }
}

/// How many of a variant's inventory item a location has; also the body of
/// `PUT /inventories/multiple`, which sets `available`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct InventoryLevel {
    /// The location (the store has one, [`crate::sh::DEFAULT_LOCATION_ID`]).
    pub location_id: u64,
    /// The variant's inventory item.
    pub inventory_item_id: u64,
    /// Units for sale.
    pub available: i64,
}

/// A product with the stock of each variant by sku, for `POST /batchProductsAndStocks`. A sku
/// without a stock gets no inventory level: its item is not stocked at the location.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProductAndStocks {
    /// The product to create.
    pub product: NewProduct,
    /// Available units by sku.
    pub stocks: BTreeMap<String, i64>,
}
