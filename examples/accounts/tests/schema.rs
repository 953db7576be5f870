//! `src/model.rs` against the article's schema, `proto/DataModel.proto`, compiled at test time by
//! protox (a Rust protobuf compiler: no `protoc`) into prost-reflect descriptors:
//!
//! - the `.proto` declares the model's messages and enum, with the same enum names and numbers;
//! - every message field by field: the same field names, and each Rust field under the `.proto`
//!   field's number, type and label. A fully populated Rust value, encoded by prost, decodes
//!   through the `.proto` (a `DynamicMessage`) to the same value in every field, and the
//!   `DynamicMessage`, encoded, decodes back into the same Rust value;
//! - the service's JSON is the proto3 JSON mapping of the same message (prost-reflect's
//!   serializer) but for the three deviations the README lists.

use std::collections::BTreeSet;
use std::fmt::Debug;

use accounts::model::{Account, AccountList, Transaction, TransactionType};
use axum::body::Body;
use axum::http::Request;
use prost::Message;
use prost_reflect::{
    DescriptorPool, DynamicMessage, Kind, MessageDescriptor, ReflectMessage, SerializeOptions,
    Value,
};
use serde_json::json;
use tower::ServiceExt;

/// `proto/DataModel.proto`, compiled as `protoc` would.
fn pool() -> DescriptorPool {
    let mut compiler = protox::Compiler::new([concat!(env!("CARGO_MANIFEST_DIR"), "/proto")])
        .expect("the proto directory is an include path");
    compiler
        .open_file("DataModel.proto")
        .unwrap_or_else(|e| panic!("proto/DataModel.proto does not compile: {e:?}"));
    compiler.descriptor_pool()
}

fn descriptor(pool: &DescriptorPool, name: &str) -> MessageDescriptor {
    pool.get_message_by_name(name)
        .unwrap_or_else(|| panic!("proto/DataModel.proto has no message `{name}`"))
}

/// `transaction_type` → `transactionType`: the `.proto` name prost-build turns into a Rust field.
fn lower_camel_case(rust: &str) -> String {
    let mut words = rust.split('_');
    let mut name = words.next().unwrap_or_default().to_owned();
    for word in words {
        let mut chars = word.chars();
        name.extend(chars.next().map(|c| c.to_ascii_uppercase()));
        name.push_str(chars.as_str());
    }
    name
}

/// The fields of a Rust message as `(.proto name, value)`: the name is the Rust field's in
/// lowerCamelCase, the value the Rust field's as the `.proto` type it stands for. The struct is
/// destructured without `..`, so a field added to or removed from `src/model.rs` does not compile
/// until it is listed here.
macro_rules! fields {
    ($message:expr, $type:ident { $($field:ident => $value:expr),* $(,)? }) => {{
        let $type { $($field),* } = $message;
        vec![$((lower_camel_case(stringify!($field)), $value)),*]
    }};
}

type Fields = Vec<(String, Value)>;

fn transaction_fields(_: &DescriptorPool, t: &Transaction) -> Fields {
    // A prost enumeration of `TransactionType`, not a plain `int32` (both encode the same).
    let _: TransactionType = t.transaction_type();
    fields!(t, Transaction {
        id => Value::U64(*id),
        transaction_type => Value::EnumNumber(*transaction_type),
        transaction_date => Value::String(transaction_date.clone()),
        booking_date => Value::String(booking_date.clone()),
        principal_disposal => Value::String(principal_disposal.clone()),
        ordering_customer => Value::String(ordering_customer.clone()),
        beneficiary => Value::String(beneficiary.clone()),
        beneficiary_account => Value::String(beneficiary_account.clone()),
        details => Value::String(details.clone()),
        amount => Value::F64(*amount),
    })
}

fn account_fields(pool: &DescriptorPool, a: &Account) -> Fields {
    fields!(a, Account {
        id => Value::U64(*id),
        name => Value::String(name.clone()),
        balance => Value::F64(*balance),
        available_funds => Value::F64(*available_funds),
        iban => Value::String(iban.clone()),
        currency => Value::String(currency.clone()),
        owner => Value::String(owner.clone()),
        owner_address => Value::String(owner_address.clone()),
        transactions => messages(pool, "Transaction", transactions, transaction_fields),
    })
}

fn account_list_fields(pool: &DescriptorPool, l: &AccountList) -> Fields {
    fields!(l, AccountList {
        accounts => messages(pool, "Account", accounts, account_fields),
    })
}

fn messages<M>(
    pool: &DescriptorPool,
    name: &str,
    items: &[M],
    fields: fn(&DescriptorPool, &M) -> Fields,
) -> Value {
    let desc = descriptor(pool, name);
    Value::List(
        items
            .iter()
            .map(|item| Value::Message(dynamic(&desc, fields(pool, item))))
            .collect(),
    )
}

/// The `.proto` type of a field, as it is written there.
fn proto_type(field: &prost_reflect::FieldDescriptor) -> String {
    let kind = match field.kind() {
        Kind::Double => "double".to_owned(),
        Kind::Float => "float".to_owned(),
        Kind::Int32 => "int32".to_owned(),
        Kind::Int64 => "int64".to_owned(),
        Kind::Uint32 => "uint32".to_owned(),
        Kind::Uint64 => "uint64".to_owned(),
        Kind::Sint32 => "sint32".to_owned(),
        Kind::Sint64 => "sint64".to_owned(),
        Kind::Fixed32 => "fixed32".to_owned(),
        Kind::Fixed64 => "fixed64".to_owned(),
        Kind::Sfixed32 => "sfixed32".to_owned(),
        Kind::Sfixed64 => "sfixed64".to_owned(),
        Kind::Bool => "bool".to_owned(),
        Kind::String => "string".to_owned(),
        Kind::Bytes => "bytes".to_owned(),
        Kind::Message(message) => message.full_name().to_owned(),
        Kind::Enum(enumeration) => enumeration.full_name().to_owned(),
    };
    if field.is_list() {
        format!("repeated {kind}")
    } else {
        kind
    }
}

/// The `.proto` type a Rust field's value stands for.
fn value_type(value: &Value) -> String {
    match value {
        Value::Bool(_) => "bool".to_owned(),
        Value::I32(_) => "int32".to_owned(),
        Value::I64(_) => "int64".to_owned(),
        Value::U32(_) => "uint32".to_owned(),
        Value::U64(_) => "uint64".to_owned(),
        Value::F32(_) => "float".to_owned(),
        Value::F64(_) => "double".to_owned(),
        Value::String(_) => "string".to_owned(),
        Value::Bytes(_) => "bytes".to_owned(),
        Value::EnumNumber(_) => "an enum".to_owned(),
        Value::Message(message) => message.descriptor().full_name().to_owned(),
        Value::List(items) => format!(
            "repeated {}",
            items.first().map_or("(empty)".to_owned(), value_type)
        ),
        Value::Map(_) => "a map".to_owned(),
    }
}

fn shorten(value: &impl Debug) -> String {
    let text = format!("{value:?}");
    match text.char_indices().nth(120) {
        Some((end, _)) => format!("{}…", &text[..end]),
        None => text,
    }
}

/// The Rust message's fields as a `DynamicMessage` of the `.proto` message: the same field names,
/// each value of the `.proto` field's type and label. Fields at their default stay unset, as
/// proto3 leaves them off the wire.
fn dynamic(desc: &MessageDescriptor, fields: Fields) -> DynamicMessage {
    let rust: BTreeSet<String> = fields.iter().map(|(name, _)| name.clone()).collect();
    let proto: BTreeSet<String> = desc.fields().map(|f| f.name().to_owned()).collect();
    assert_eq!(
        rust,
        proto,
        "the fields of `{}`: src/model.rs (left) against the .proto (right)",
        desc.name()
    );
    let mut message = DynamicMessage::new(desc.clone());
    for (name, value) in fields {
        let field = desc.get_field_by_name(&name).unwrap();
        assert!(
            value.is_valid_for_field(&field),
            "`{}.{name} = {}` is `{}` in the .proto, but src/model.rs holds `{}`",
            desc.name(),
            field.number(),
            proto_type(&field),
            value_type(&value)
        );
        if !value.is_default_for_field(&field) {
            message.set_field(&field, value);
        }
    }
    message
}

/// Checks one message both ways on the wire: prost's encoding of `rust` decodes through the
/// `.proto` to the same value in every field, and the `.proto` message decodes into `rust`.
fn check<M>(pool: &DescriptorPool, name: &str, rust: &M, fields: fn(&DescriptorPool, &M) -> Fields)
where
    M: Message + Default + PartialEq + serde::Serialize,
{
    let desc = descriptor(pool, name);
    let expected = dynamic(&desc, fields(pool, rust));

    let decoded = DynamicMessage::decode(desc.clone(), rust.encode_to_vec().as_slice())
        .unwrap_or_else(|e| panic!("prost's `{name}` does not decode as the .proto's: {e}"));
    let unknown: Vec<u32> = decoded.unknown_fields().map(|f| f.number()).collect();
    assert!(
        unknown.is_empty(),
        "prost's `{name}` writes field numbers the .proto does not have: {unknown:?}"
    );
    for field in desc.fields() {
        let (got, want) = (decoded.get_field(&field), expected.get_field(&field));
        if got != want {
            // Where inside the field, for a repeated message.
            let every_field = SerializeOptions::new().skip_default_fields(false);
            let at = difference(
                &to_json(&decoded, &every_field),
                &to_json(&expected, &every_field),
                "",
            );
            panic!(
                "`{name}.{} = {}` (`{}`): prost's encoding, decoded through the .proto (left), \
                 against src/model.rs (right) at {}",
                field.name(),
                field.number(),
                proto_type(&field),
                at.unwrap_or_else(|| format!("{} against {}", shorten(&got), shorten(&want)))
            );
        }
    }

    let back = M::decode(expected.encode_to_vec().as_slice())
        .unwrap_or_else(|e| panic!("the .proto's `{name}` does not decode into src/model.rs: {e}"));
    if back != *rust {
        let at = difference(
            &serde_json::to_value(&back).unwrap(),
            &serde_json::to_value(rust).unwrap(),
            "",
        );
        panic!(
            "the .proto's `{name}`, every field set, decoded into src/model.rs (left) against the \
             value (right) at {}",
            at.unwrap_or_default()
        );
    }
}

/// Every field set, each to a value no other field has, so a field under another's number cannot
/// decode to what is expected. Ids are past `i64::MAX` (an `int64` would read them negative).
fn transaction(n: u64, kind: TransactionType) -> Transaction {
    Transaction {
        id: u64::MAX - n,
        transaction_type: kind as i32,
        transaction_date: format!("transaction date {n}"),
        booking_date: format!("booking date {n}"),
        principal_disposal: format!("principal disposal {n}"),
        ordering_customer: format!("ordering customer {n}"),
        beneficiary: format!("beneficiary {n}"),
        beneficiary_account: format!("beneficiary account {n}"),
        details: format!("details {n}"),
        amount: -1234.5 - n as f64,
    }
}

fn account(n: u64) -> Account {
    Account {
        id: u64::MAX - 1_000 - n,
        name: format!("name {n}"),
        balance: 1_000_000.25 + n as f64,
        available_funds: 0.75 + n as f64,
        iban: format!("iban {n}"),
        currency: format!("currency {n}"),
        owner: format!("owner {n}"),
        owner_address: format!("owner address {n}"),
        // Two, so a singular field in the .proto would keep only one.
        transactions: vec![
            transaction(10 * n + 1, TransactionType::Debit),
            transaction(10 * n + 2, TransactionType::Credit),
        ],
    }
}

fn account_list() -> AccountList {
    AccountList {
        accounts: vec![account(1), account(2)],
    }
}

#[test]
fn the_proto_declares_the_models_messages_and_enum() {
    let pool = pool();
    let messages: BTreeSet<String> = pool
        .all_messages()
        .map(|m| m.full_name().to_owned())
        .collect();
    assert_eq!(
        messages,
        BTreeSet::from(["Account", "AccountList", "Transaction"].map(String::from))
    );
    let enums: Vec<String> = pool.all_enums().map(|e| e.full_name().to_owned()).collect();
    assert_eq!(enums, ["Transaction.TransactionType"]);

    let proto: BTreeSet<(String, i32)> = pool
        .get_enum_by_name("Transaction.TransactionType")
        .unwrap()
        .values()
        .map(|v| (v.name().to_owned(), v.number()))
        .collect();
    // Every Rust variant whose number lies in a window far wider than the .proto's.
    let rust: BTreeSet<(String, i32)> = (-1024..1024)
        .filter_map(|n| TransactionType::try_from(n).ok())
        .map(|v| (format!("{v:?}"), v as i32))
        .collect();
    assert_eq!(
        rust, proto,
        "`TransactionType`: src/model.rs (left) against the .proto (right)"
    );
}

#[test]
fn transaction_matches_the_proto() {
    let pool = pool();
    for kind in [TransactionType::Debit, TransactionType::Credit] {
        check(
            &pool,
            "Transaction",
            &transaction(1, kind),
            transaction_fields,
        );
    }
    check(
        &pool,
        "Transaction",
        &Transaction::default(),
        transaction_fields,
    );
}

#[test]
fn account_matches_the_proto() {
    let pool = pool();
    check(&pool, "Account", &account(1), account_fields);
}

#[test]
fn account_list_matches_the_proto() {
    let pool = pool();
    check(&pool, "AccountList", &account_list(), account_list_fields);
    check(
        &pool,
        "AccountList",
        &accounts::data::accounts(),
        account_list_fields,
    );
}

/// The mapping the service's JSON follows, as README.md states it: proto3 JSON (the `.proto`'s
/// lowerCamelCase `json_name`s, doubles as numbers, repeated fields as arrays) but
/// `uint64` as a number rather than a string, an enum as its number rather than its name, and
/// every field written, defaults too.
fn service_json_mapping() -> SerializeOptions {
    SerializeOptions::new()
        .stringify_64_bit_integers(false)
        .use_enum_numbers(true)
        .skip_default_fields(false)
}

fn to_json(message: &DynamicMessage, options: &SerializeOptions) -> serde_json::Value {
    message
        .serialize_with_options(serde_json::value::Serializer, options)
        .unwrap()
}

/// Where two JSON values first differ, as a JSON pointer with both sides.
fn difference(a: &serde_json::Value, b: &serde_json::Value, at: &str) -> Option<String> {
    use serde_json::Value::{Array, Object};
    match (a, b) {
        (Object(a), Object(b)) => {
            let keys: BTreeSet<&String> = a.keys().chain(b.keys()).collect();
            keys.into_iter()
                .find_map(|key| match (a.get(key), b.get(key)) {
                    (Some(x), Some(y)) => difference(x, y, &format!("{at}/{key}")),
                    (x, y) => Some(format!("{at}/{key}: {x:?} against {y:?}")),
                })
        }
        (Array(a), Array(b)) if a.len() == b.len() => a
            .iter()
            .zip(b)
            .enumerate()
            .find_map(|(i, (x, y))| difference(x, y, &format!("{at}/{i}"))),
        _ => (a != b).then(|| format!("{at}: {} against {}", shorten(a), shorten(b))),
    }
}

fn assert_json_eq(service: &serde_json::Value, mapping: &serde_json::Value, what: &str) {
    if let Some(at) = difference(service, mapping, "") {
        panic!("{what}: the service's JSON (left) against the mapping (right) at {at}");
    }
}

async fn get(path: &str, accept: Option<&str>) -> Vec<u8> {
    let mut request = Request::get(path);
    if let Some(accept) = accept {
        request = request.header("accept", accept);
    }
    let response = accounts::router()
        .oneshot(request.body(Body::empty()).unwrap())
        .await
        .unwrap();
    assert!(response.status().is_success(), "{path}");
    axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap()
        .to_vec()
}

#[tokio::test]
async fn the_services_json_is_proto3_json_but_for_the_documented_deviations() {
    let pool = pool();
    for (path, name) in [("/account/1", "Account"), ("/accountList", "AccountList")] {
        let json: serde_json::Value = serde_json::from_slice(&get(path, None).await).unwrap();
        let protobuf = get(path, Some("application/x-protobuf")).await;
        let message = DynamicMessage::decode(descriptor(&pool, name), protobuf.as_slice())
            .unwrap_or_else(|e| {
                panic!("{path}: the protobuf body does not decode as the .proto's: {e}")
            });
        assert_json_eq(&json, &to_json(&message, &service_json_mapping()), path);
        assert!(
            difference(&json, &to_json(&message, &SerializeOptions::new()), "").is_some(),
            "{path}: the service's JSON is canonical proto3 JSON now: drop the deviations from \
             README.md and from this test"
        );
    }

    // The deviations one by one, on the service's own first account.
    let json: serde_json::Value = serde_json::from_slice(&get("/account/1", None).await).unwrap();
    let protobuf = get("/account/1", Some("application/x-protobuf")).await;
    let message = DynamicMessage::decode(descriptor(&pool, "Account"), protobuf.as_slice())
        .expect("the body decodes as above");
    let canonical = to_json(&message, &SerializeOptions::new());
    let transactions = json["transactions"].as_array().unwrap();
    let canonical_transactions = canonical["transactions"].as_array().unwrap();
    let debit = transactions
        .iter()
        .position(|t| t["transactionType"] == 1)
        .expect("a debit, `transactionType: 1`");
    let credit = transactions
        .iter()
        .position(|t| t["transactionType"] == 0)
        .expect("a credit, `transactionType: 0`");
    // uint64: a number, where proto3 JSON (and the article's `jsonUTF8Data()`) writes a string.
    assert_eq!((&json["id"], &canonical["id"]), (&json!(1), &json!("1")));
    assert_eq!(
        (&transactions[0]["id"], &canonical_transactions[0]["id"]),
        (&json!(1_000_000), &json!("1000000"))
    );
    // An enum: its number, where proto3 JSON writes its name.
    assert_eq!(
        canonical_transactions[debit]["transactionType"],
        json!("Debit")
    );
    // A field at its default (`Credit`, 0): written, where proto3 JSON leaves it out.
    assert_eq!(
        canonical_transactions[credit].get("transactionType"),
        None,
        "{}",
        canonical_transactions[credit]
    );

    // The service's serializer (`serde_json` on the model, as `src/lib.rs` answers) on the
    // fully populated messages and on defaults: ids past 2^53, every field named by its json_name.
    let transaction_desc = descriptor(&pool, "Transaction");
    let samples: [(&str, serde_json::Value, DynamicMessage); 4] = [
        (
            "a populated AccountList",
            serde_json::to_value(account_list()).unwrap(),
            dynamic(
                &descriptor(&pool, "AccountList"),
                account_list_fields(&pool, &account_list()),
            ),
        ),
        (
            "a populated Transaction",
            serde_json::to_value(transaction(3, TransactionType::Debit)).unwrap(),
            dynamic(
                &transaction_desc,
                transaction_fields(&pool, &transaction(3, TransactionType::Debit)),
            ),
        ),
        (
            "a default Transaction",
            serde_json::to_value(Transaction::default()).unwrap(),
            DynamicMessage::new(transaction_desc.clone()),
        ),
        (
            "a default AccountList",
            serde_json::to_value(AccountList::default()).unwrap(),
            DynamicMessage::new(descriptor(&pool, "AccountList")),
        ),
    ];
    for (what, json, message) in &samples {
        assert_json_eq(json, &to_json(message, &service_json_mapping()), what);
    }
    assert_eq!(
        to_json(&samples[2].2, &SerializeOptions::new()),
        json!({}),
        "proto3 JSON leaves every default out"
    );
    assert_eq!(
        samples[2].1.as_object().unwrap().len(),
        transaction_desc.fields().len(),
        "the service writes every field"
    );
}
