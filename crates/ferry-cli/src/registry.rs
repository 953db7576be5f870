//! Images in a container registry: `ferry deploy --registry` pushes an image `ferry build` wrote
//! as an `oci-archive` (ferry's OpenWhisk runtime image, or the HTTP image Knative Services run)
//! with skopeo, under a tag made of the archive's SHA-256. Builds are reproducible, so an
//! unchanged program pushes to the same reference, and a changed one never overwrites a tag a
//! running action or revision uses.

use std::path::Path;

use anyhow::{Context as _, bail};
use sha2::{Digest as _, Sha256};

/// Where an image is pushed (`ferry deploy --registry`).
#[derive(Debug, Clone, clap::Args)]
pub struct RegistryArgs {
    /// Push the program's image to this registry (`HOST[:PORT][/PATH]`, where the platform
    /// pulls from) with skopeo, which reads its usual credentials. OpenWhisk: deploy ferry's
    /// runtime image (`ferry build --platform openwhisk`, static) rather than the ActionLoop zip,
    /// serving up to each function's `concurrency` activations per container. HTTP (Knative):
    /// required; the Services run the pushed image.
    #[arg(long, value_name = "REGISTRY")]
    pub registry: Option<String>,
    /// Push over plain HTTP, without TLS (loopback registries always are).
    #[arg(long, requires = "registry")]
    pub insecure_registry: bool,
}

/// An image archive and the reference it is pushed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    /// `REGISTRY/REPOSITORY:TAG`, the tag being the first 16 hex digits of `sha256`.
    pub reference: String,
    /// Hex SHA-256 of the `oci-archive` (reproducible: one build, one digest).
    pub sha256: String,
}

/// The image `ferry build` wrote at `path`, as it will be known in `registry` under
/// `repository` (lowercased, as registries require). `hint` says how to build it.
pub fn image(path: &Path, registry: &str, repository: &str, hint: &str) -> anyhow::Result<Image> {
    let archive =
        std::fs::read(path).with_context(|| format!("cannot read `{}`: {hint}", path.display()))?;
    let sha256 = sha256_hex(&archive);
    Ok(Image {
        reference: format!(
            "{}/{}:{}",
            registry.trim_end_matches('/'),
            repository.to_ascii_lowercase(),
            &sha256[..16]
        ),
        sha256,
    })
}

/// Pushes the `oci-archive` at `path` to `reference` with skopeo, showing a spinner; plain HTTP
/// when `insecure` or the registry is on loopback (as container engines treat loopback
/// registries).
pub fn push(path: &Path, reference: &str, insecure: bool) -> anyhow::Result<()> {
    let bar = crate::commands::build::cargo::spinner(format!("pushing {reference}"));
    let pushed = push_quietly(path, reference, insecure);
    bar.finish_and_clear();
    pushed
}

fn push_quietly(path: &Path, reference: &str, insecure: bool) -> anyhow::Result<()> {
    let host = reference.split('/').next().unwrap_or_default();
    let loopback =
        host.starts_with("localhost") || host.starts_with("127.") || host.starts_with("[::1]");
    let mut skopeo = std::process::Command::new("skopeo");
    skopeo.args(["copy", "--quiet", "--retry-times", "2"]);
    if insecure || loopback {
        skopeo.arg("--dest-tls-verify=false");
    }
    let output = skopeo
        .arg(format!("oci-archive:{}", path.display()))
        .arg(format!("docker://{reference}"))
        .output()
        .map_err(|error| match error.kind() {
            std::io::ErrorKind::NotFound => anyhow::anyhow!(
                "`--registry` pushes the image with skopeo, which is not installed \
                 (`apt-get install skopeo`)"
            ),
            _ => anyhow::Error::new(error).context("cannot run skopeo"),
        })?;
    if !output.status.success() {
        bail!(
            "cannot push the image to `{reference}`: {}",
            String::from_utf8_lossy(&output.stderr).trim()
        );
    }
    Ok(())
}

/// Hex SHA-256 of `bytes`.
pub fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}
