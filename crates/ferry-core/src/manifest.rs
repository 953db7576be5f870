//! The manifest: every function of a program with its signature and configuration, printed by
//! `FERRY_ROLE=manifest <program>` and read by `ferry manifest`, `ferry build` and `ferry deploy`.

use serde::{Deserialize, Serialize};

use crate::{FunctionConfig, FunctionDescriptor};

/// Format version of the manifest JSON.
pub const MANIFEST_VERSION: u32 = 1;

/// Marker compiled into every ferry program so tools can recognise one before running it.
#[doc(hidden)]
pub const PROGRAM_MARKER: &str = "ferry-program-manifest-v1";

/// A program's functions.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Manifest {
    /// Always [`MANIFEST_VERSION`].
    pub manifest_version: u32,
    /// The ferry version the program was built with.
    pub ferry_version: String,
    /// Every function, ordered by id.
    pub functions: Vec<ManifestFunction>,
    /// The program serves a web app (`ferry::web::serve`): platforms deploy it as one web
    /// function (a Lambda with a Function URL, an OpenWhisk web action) besides its functions.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub web: bool,
}

/// One function in the manifest.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestFunction {
    /// Stable id (module path + name).
    pub id: String,
    /// Name.
    pub name: String,
    /// Parameters in order.
    pub params: Vec<ManifestParam>,
    /// Output type.
    pub output: String,
    /// Memory, timeout and concurrency.
    #[serde(flatten)]
    pub config: FunctionConfig,
    /// Whether the body is `async`.
    #[serde(rename = "async")]
    pub is_async: bool,
}

/// A parameter name and type.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestParam {
    /// Name (the JSON field).
    pub name: String,
    /// Type as written.
    #[serde(rename = "type")]
    pub ty: String,
}

impl Manifest {
    /// The manifest of a program with these functions, ordered as given.
    pub fn new<'a>(functions: impl IntoIterator<Item = &'a FunctionDescriptor>) -> Self {
        Self {
            manifest_version: MANIFEST_VERSION,
            ferry_version: env!("CARGO_PKG_VERSION").to_owned(),
            functions: functions
                .into_iter()
                .map(|d| ManifestFunction {
                    id: d.id.to_owned(),
                    name: d.name.to_owned(),
                    params: d
                        .params
                        .iter()
                        .map(|p| ManifestParam {
                            name: p.name.to_owned(),
                            ty: p.ty.to_owned(),
                        })
                        .collect(),
                    output: d.output.to_owned(),
                    config: d.config,
                    is_async: d.is_async,
                })
                .collect(),
            web: false,
        }
    }
}
