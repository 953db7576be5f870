//! How arguments and results travel: [`Codec::Json`] for people and other languages,
//! [`Codec::Binary`] for Rust-to-Rust traffic, [`Codec::BinaryInJson`] where a transport only
//! carries JSON.

mod base64;
mod binary;
mod json;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::Result;

#[doc(hidden)]
pub use self::base64::{unwrap as base64_unwrap, wrap as base64_wrap};

/// A wire encoding for arguments and results.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "snake_case")]
pub enum Codec {
    /// JSON; arguments are an object keyed by parameter name.
    Json,
    /// ferry's compact binary encoding (see `docs/wire.md` for how it was chosen).
    #[default]
    Binary,
    /// The binary encoding, base64'd into a JSON string, for JSON-only transports.
    BinaryInJson,
}

impl Codec {
    /// Encodes a value.
    pub fn encode<T: Serialize + ?Sized>(self, value: &T) -> Result<Vec<u8>> {
        match self {
            Self::Json => json::encode(value),
            Self::Binary => binary::encode(value),
            Self::BinaryInJson => base64::encode(value),
        }
    }

    /// Decodes a value; a JSON error names the path of the offending field.
    pub fn decode<T: DeserializeOwned>(self, bytes: &[u8]) -> Result<T> {
        match self {
            Self::Json => json::decode(bytes),
            Self::Binary => binary::decode(bytes),
            Self::BinaryInJson => base64::decode(bytes),
        }
    }

    /// Decodes function arguments: as [`decode`](Self::decode), but an empty JSON body is `{}`,
    /// so a function without parameters can be invoked with no body at all.
    pub fn decode_args<T: DeserializeOwned>(self, bytes: &[u8]) -> Result<T> {
        if self == Self::Json && bytes.iter().all(u8::is_ascii_whitespace) {
            return json::decode(b"{}");
        }
        self.decode(bytes)
    }

    /// Encodes variant `index` (named `name`) of an externally tagged enum whose one field is
    /// already encoded as `field`, without decoding it: how a worker wraps an output it cannot
    /// name the type of.
    #[doc(hidden)]
    pub fn wrap_variant(self, index: u32, name: &str, field: &[u8]) -> Result<Vec<u8>> {
        match self {
            Self::Json => {
                let mut out = Vec::with_capacity(field.len() + name.len() + 5);
                out.extend_from_slice(b"{\"");
                out.extend_from_slice(name.as_bytes());
                out.extend_from_slice(b"\":");
                out.extend_from_slice(field);
                out.push(b'}');
                Ok(out)
            }
            // bincode writes a variant as its index (a fixed-width u32) followed by its field.
            Self::Binary => {
                let mut out = Vec::with_capacity(field.len() + 4);
                out.extend_from_slice(&index.to_le_bytes());
                out.extend_from_slice(field);
                Ok(out)
            }
            Self::BinaryInJson => {
                let binary = base64_unwrap(field)?;
                Ok(base64_wrap(
                    &Self::Binary.wrap_variant(index, name, &binary)?,
                ))
            }
        }
    }

    /// The media type of this encoding.
    pub fn content_type(self) -> &'static str {
        match self {
            Self::Json | Self::BinaryInJson => "application/json",
            Self::Binary => "application/x-ferry-binary",
        }
    }

    /// The name used on the command line and in envelopes.
    pub fn name(self) -> &'static str {
        match self {
            Self::Json => "json",
            Self::Binary => "binary",
            Self::BinaryInJson => "binary-in-json",
        }
    }
}

impl std::str::FromStr for Codec {
    type Err = crate::Error;

    fn from_str(s: &str) -> Result<Self> {
        match s {
            "json" => Ok(Self::Json),
            "binary" => Ok(Self::Binary),
            "binary-in-json" | "base64" => Ok(Self::BinaryInJson),
            other => Err(crate::Error::config(format!(
                "unknown codec `{other}`; expected one of `json`, `binary`, `binary-in-json`"
            ))),
        }
    }
}

impl std::fmt::Display for Codec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::{Deserialize, Serialize};

    use super::Codec;
    use crate::ErrorKind;

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Args {
        n: u32,
        tags: Vec<String>,
        nested: Inner,
        choice: Choice,
        map: BTreeMap<String, i64>,
        maybe: Option<f64>,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Inner {
        depth: u8,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    enum Choice {
        Unit,
        Tuple(i32, String),
        Struct { x: u64 },
    }

    fn sample() -> Args {
        Args {
            n: 12,
            tags: vec!["a".into(), "é".into()],
            nested: Inner { depth: 3 },
            choice: Choice::Struct { x: u64::MAX },
            map: BTreeMap::from([("k".into(), -5)]),
            maybe: Some(0.5),
        }
    }

    #[test]
    fn every_codec_round_trips() {
        for codec in [Codec::Json, Codec::Binary, Codec::BinaryInJson] {
            let bytes = codec.encode(&sample()).unwrap();
            assert_eq!(codec.decode::<Args>(&bytes).unwrap(), sample(), "{codec}");
            let bytes = codec.encode(&Choice::Tuple(-1, "t".into())).unwrap();
            assert_eq!(
                codec.decode::<Choice>(&bytes).unwrap(),
                Choice::Tuple(-1, "t".into())
            );
            let bytes = codec.encode(&Choice::Unit).unwrap();
            assert_eq!(codec.decode::<Choice>(&bytes).unwrap(), Choice::Unit);
        }
    }

    #[test]
    fn binary_in_json_is_a_json_string() {
        let bytes = Codec::BinaryInJson.encode(&sample()).unwrap();
        let text: String = serde_json::from_slice(&bytes).unwrap();
        assert!(!text.is_empty());
    }

    #[test]
    fn json_errors_name_the_field() {
        let error = Codec::Json
            .decode::<Args>(br#"{"n": 1, "tags": [], "nested": {"depth": "deep"}, "choice": "Unit", "map": {}, "maybe": null}"#)
            .unwrap_err();
        match error.kind() {
            ErrorKind::BadInput { path, message } => {
                assert_eq!(path, "nested.depth");
                assert!(message.contains("expected u8"), "{message}");
            }
            other => panic!("unexpected {other:?}"),
        }
        let error = Codec::Json.decode::<Inner>(b"{}").unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::BadInput { message, .. } if message.contains("missing field `depth`"))
        );
        let error = Codec::Json
            .decode::<Inner>(b"{\"depth\": 1} trailing")
            .unwrap_err();
        assert!(matches!(error.kind(), ErrorKind::BadInput { .. }));
    }

    #[test]
    fn empty_json_body_is_an_empty_object() {
        #[derive(Deserialize)]
        struct NoArgs {}
        Codec::Json.decode_args::<NoArgs>(b"").unwrap();
        Codec::Json.decode_args::<NoArgs>(b" \n").unwrap();
        Codec::Json.decode_args::<NoArgs>(b"{}").unwrap();
        assert!(Codec::Json.decode::<NoArgs>(b"").is_err());
    }

    #[test]
    fn truncated_binary_is_bad_input() {
        let bytes = Codec::Binary.encode(&sample()).unwrap();
        let error = Codec::Binary
            .decode::<Args>(&bytes[..bytes.len() - 3])
            .unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::BadInput { .. }),
            "{error}"
        );
        let error = Codec::BinaryInJson.decode::<Args>(b"\"%%%\"").unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::BadInput { .. }),
            "{error}"
        );
    }

    /// Any bytes, in any codec, decode to arguments of a function or to an error that says why.
    mod robustness {
        use proptest::prelude::*;
        use serde::Deserialize;

        use super::super::Codec;

        #[derive(Debug, Deserialize)]
        #[allow(dead_code)] // read by the decoder only
        struct Arguments {
            n: u64,
            text: String,
            items: Vec<(i32, Option<String>)>,
            nested: Option<Box<Arguments>>,
        }

        proptest! {
            #[test]
            fn any_bytes_decode_as_arguments_or_an_error(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
                for codec in [Codec::Json, Codec::Binary, Codec::BinaryInJson] {
                    let _ = codec.decode_args::<Arguments>(&bytes);
                }
            }

            #[test]
            fn any_json_text_decodes_as_arguments_or_an_error(text in "[{}\\[\\]\",:a-z0-9 .-]{0,300}") {
                if let Err(error) = Codec::Json.decode_args::<Arguments>(text.as_bytes()) {
                    prop_assert!(!error.to_string().is_empty());
                }
            }
        }
    }
}
