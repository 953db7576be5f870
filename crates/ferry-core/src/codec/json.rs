//! JSON through serde_json; decoding errors carry the JSON path (serde_path_to_error).

use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::{Error, Result};

pub(super) fn encode<T: Serialize + ?Sized>(value: &T) -> Result<Vec<u8>> {
    serde_json::to_vec(value).map_err(|e| Error::protocol(format!("cannot encode as json: {e}")))
}

pub(super) fn decode<T: DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = serde_path_to_error::deserialize(&mut deserializer).map_err(|e| {
        let path = e.path().to_string();
        Error::bad_input(path, e.into_inner().to_string())
    })?;
    deserializer
        .end()
        .map_err(|e| Error::bad_input(".", e.to_string()))?;
    Ok(value)
}
