//! Binary inside a JSON string, for transports that only carry JSON (Cppless's default on Lambda).

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{Error, Result};

pub fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>> {
    let binary = super::binary::encode(value)?;
    let mut out = Vec::with_capacity(binary.len().div_ceil(3) * 4 + 2);
    out.push(b'"');
    out.resize(1 + base64::encoded_len(binary.len(), true).unwrap_or(0), 0);
    let written = STANDARD
        .encode_slice(&binary, &mut out[1..])
        .map_err(|e| Error::protocol(format!("cannot encode as base64: {e}")))?;
    out.truncate(1 + written);
    out.push(b'"');
    Ok(out)
}

pub fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    let trimmed = bytes.trim_ascii();
    // base64 never needs JSON escapes, so the common case skips the JSON parser.
    let text = match trimmed {
        [b'"', inner @ .., b'"'] if !inner.contains(&b'\\') => inner.to_vec(),
        _ => serde_json::from_slice::<String>(trimmed)
            .map_err(|e| Error::bad_input(".", format!("expected a base64 json string: {e}")))?
            .into_bytes(),
    };
    let binary = STANDARD
        .decode(&text)
        .map_err(|e| Error::bad_input(".", format!("invalid base64: {e}")))?;
    super::binary::decode(&binary)
}
