//! The compact binary codec: bincode 1 with fixed-width little-endian integers.
//!
//! Chosen by measurement (docs/wire.md): fastest of the serde binary formats measured on the
//! vector-of-u64 and vector-of-structs workloads, stable wire format, and every serde data model
//! type that does not need `deserialize_any`.

use bincode::Options;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{Error, Result};

fn options() -> impl Options {
    bincode::DefaultOptions::new()
        .with_fixint_encoding()
        .with_little_endian()
        .reject_trailing_bytes()
}

pub(super) fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>> {
    options()
        .serialize(value)
        .map_err(|e| Error::protocol(format!("cannot encode as binary: {e}")))
}

pub(super) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    options()
        .deserialize(bytes)
        .map_err(|e| Error::bad_input(".", format!("invalid binary input: {e}")))
}
