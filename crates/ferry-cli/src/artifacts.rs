//! What `ferry build` writes for a program, and where (`target/ferry/<program>/` by default):
//!
//! ```text
//! build.json                  what was built: program, target, profile, linkage, architecture
//! manifest.json               the program's functions (`FERRY_ROLE=manifest`)
//! lambda/<program>.zip        `bootstrap` (mode 755): one zip for every function
//! openwhisk/<program>.zip     `exec` (mode 755): an ActionLoop native action
//! openwhisk/<program>.oci.tar ferry's OpenWhisk runtime image (`FERRY_ROLE=openwhisk`) for
//!                             `blackbox` actions with intra-container concurrency
//! http/oci/                   OCI image layout: FROM scratch + the static binary
//! http/<program>.oci.tar      the same layout as one `oci-archive` file
//! http/knative/<service>.yaml   a Knative Service per function (and a web program's web app)
//! http/routes.env             `ferry deploy --platform http`: FERRY_BACKEND and FERRY_HTTP_ROUTES
//!                             for host programs
//! ```

use std::path::{Path, PathBuf};

use anyhow::Context as _;
use ferry_core::Manifest;
use serde::{Deserialize, Serialize};

/// A platform ferry builds for and deploys to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Platform {
    /// AWS Lambda custom runtime (`provided.al2023`).
    Lambda,
    /// Apache OpenWhisk, as an ActionLoop native action.
    Openwhisk,
    /// Plain HTTP: an OCI image and Knative Services (also Cloud Run, OpenFaaS); `knative` is
    /// another name for it.
    #[value(alias = "knative")]
    Http,
}

impl Platform {
    pub fn name(self) -> &'static str {
        match self {
            Self::Lambda => "lambda",
            Self::Openwhisk => "openwhisk",
            Self::Http => "http",
        }
    }
}

/// How the binary was linked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Linkage {
    Static,
    Dynamic,
}

/// `build.json`: what was built.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildInfo {
    /// The binary's name.
    pub program: String,
    /// Its package.
    pub package: String,
    /// The package's version.
    pub version: String,
    /// The target triple.
    pub target: String,
    /// The cargo profile.
    pub profile: String,
    pub linkage: Linkage,
    /// The ELF machine: `x86_64` or `aarch64`.
    pub architecture: String,
    /// Where cargo wrote the binary: what `ferry invoke` runs as local workers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary: Option<PathBuf>,
}

/// The artifacts directory of one program.
#[derive(Debug, Clone)]
pub struct Artifacts {
    pub dir: PathBuf,
}

impl Artifacts {
    pub fn new(dir: PathBuf) -> Self {
        Self { dir }
    }

    pub fn build_info_path(&self) -> PathBuf {
        self.dir.join("build.json")
    }

    pub fn manifest_path(&self) -> PathBuf {
        self.dir.join("manifest.json")
    }

    pub fn lambda_zip(&self, program: &str) -> PathBuf {
        self.dir.join("lambda").join(format!("{program}.zip"))
    }

    pub fn openwhisk_zip(&self, program: &str) -> PathBuf {
        self.dir.join("openwhisk").join(format!("{program}.zip"))
    }

    pub fn openwhisk_image(&self, program: &str) -> PathBuf {
        self.dir
            .join("openwhisk")
            .join(format!("{program}.oci.tar"))
    }

    pub fn oci_layout(&self) -> PathBuf {
        self.dir.join("http").join("oci")
    }

    pub fn oci_archive(&self, program: &str) -> PathBuf {
        self.dir.join("http").join(format!("{program}.oci.tar"))
    }

    pub fn knative_dir(&self) -> PathBuf {
        self.dir.join("http").join("knative")
    }

    /// The routes `ferry deploy --platform http` writes for host programs.
    pub fn routes_env(&self) -> PathBuf {
        self.dir.join("http").join("routes.env")
    }

    /// `build.json`, with a hint to build first when it is missing.
    pub fn build_info(&self) -> anyhow::Result<BuildInfo> {
        let path = self.build_info_path();
        let text = read_or_hint(&path)?;
        serde_json::from_str(&text).with_context(|| format!("cannot parse `{}`", path.display()))
    }

    /// `manifest.json`, with a hint to build first when it is missing.
    pub fn manifest(&self) -> anyhow::Result<Manifest> {
        let path = self.manifest_path();
        let text = read_or_hint(&path)?;
        serde_json::from_str(&text).with_context(|| format!("cannot parse `{}`", path.display()))
    }
}

fn read_or_hint(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| {
        format!(
            "cannot read `{}`: run `ferry build` for this program first",
            path.display()
        )
    })
}

/// Writes `bytes` to `path` through a temporary file and a rename, so readers never see half a
/// file; creates the parent directory.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> anyhow::Result<()> {
    let parent = path.parent().unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .with_context(|| format!("cannot create `{}`", parent.display()))?;
    let temporary = path.with_extension(format!("tmp-{}", std::process::id()));
    std::fs::write(&temporary, bytes)
        .with_context(|| format!("cannot write `{}`", temporary.display()))?;
    std::fs::rename(&temporary, path)
        .with_context(|| format!("cannot write `{}`", path.display()))?;
    Ok(())
}
