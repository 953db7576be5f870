//! `proto/DataModel.proto` as Rust: prost messages that also serialize to (and read back) the
//! JSON the service answers by default: the `.proto`'s lowerCamelCase field names, as the original
//! Swift service, but ids and the transaction type as numbers and defaults written, where the
//! original's proto3 JSON has strings, enum names and leaves defaults out (README.md;
//! `tests/schema.rs`).

use serde::{Deserialize, Serialize};

/// One transaction of an account.
#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Transaction {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    /// A [`TransactionType`].
    #[prost(enumeration = "TransactionType", tag = "2")]
    pub transaction_type: i32,
    #[prost(string, tag = "3")]
    pub transaction_date: String,
    #[prost(string, tag = "4")]
    pub booking_date: String,
    #[prost(string, tag = "5")]
    pub principal_disposal: String,
    #[prost(string, tag = "6")]
    pub ordering_customer: String,
    #[prost(string, tag = "7")]
    pub beneficiary: String,
    #[prost(string, tag = "8")]
    pub beneficiary_account: String,
    #[prost(string, tag = "9")]
    pub details: String,
    #[prost(double, tag = "10")]
    pub amount: f64,
}

/// Whether money came in or went out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum TransactionType {
    Credit = 0,
    Debit = 1,
}

/// A bank account with its transactions.
#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Account {
    #[prost(uint64, tag = "1")]
    pub id: u64,
    #[prost(string, tag = "2")]
    pub name: String,
    #[prost(double, tag = "3")]
    pub balance: f64,
    #[prost(double, tag = "4")]
    pub available_funds: f64,
    #[prost(string, tag = "5")]
    pub iban: String,
    #[prost(string, tag = "6")]
    pub currency: String,
    #[prost(string, tag = "7")]
    pub owner: String,
    #[prost(string, tag = "8")]
    pub owner_address: String,
    #[prost(message, repeated, tag = "9")]
    pub transactions: Vec<Transaction>,
}

/// Every account.
#[derive(Clone, PartialEq, prost::Message, Serialize, Deserialize)]
pub struct AccountList {
    #[prost(message, repeated, tag = "1")]
    pub accounts: Vec<Account>,
}
