//! Binary inside a JSON string, for transports that only carry JSON (Cppless's default on Lambda).
//! SIMD base64; the quotes are written by hand since base64 never needs JSON escapes.

use base64_simd::STANDARD;
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{Error, Result};

pub(super) fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>> {
    Ok(wrap(&super::binary::encode(value)?))
}

/// Binary bytes as a base64 JSON string.
#[doc(hidden)]
pub fn wrap(binary: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(STANDARD.encoded_length(binary.len()) + 2);
    out.push(b'"');
    STANDARD.encode_append(binary, &mut out);
    out.push(b'"');
    out
}

pub(super) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    super::binary::decode(&unwrap(bytes)?)
}

/// The binary bytes inside a base64 JSON string.
#[doc(hidden)]
pub fn unwrap(bytes: &[u8]) -> Result<Vec<u8>> {
    let trimmed = bytes.trim_ascii();
    let binary = match trimmed {
        [b'"', inner @ .., b'"'] if !inner.contains(&b'\\') => STANDARD.decode_to_vec(inner),
        // Escaped or otherwise unusual JSON: let the JSON parser unquote it first.
        _ => {
            let text = serde_json::from_slice::<String>(trimmed).map_err(|e| {
                Error::bad_input(".", format!("expected a base64 json string: {e}"))
            })?;
            STANDARD.decode_to_vec(text)
        }
    }
    .map_err(|e| Error::bad_input(".", format!("invalid base64: {e}")))?;
    Ok(binary)
}
