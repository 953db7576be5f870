//! An OCI image FROM scratch holding only the static binary, written as an image layout
//! directory and as an `oci-archive` tar of that layout (what `skopeo`, `podman load` and
//! `crane` read). Reproducible: fixed time stamps, owners and modes, no creation date.
//!
//! One layer:
//!
//! ```text
//! app/            755
//! app/<program>   755   the binary; the entrypoint
//! tmp/            1777  scratch has no /tmp, and programs expect one
//! ```
//!
//! The configuration: entrypoint `/app/<program>`, `FERRY_ROLE` = the role the image serves
//! (`http` for Knative and the like, `openwhisk` for OpenWhisk's `blackbox` actions, with
//! `__OW_ALLOW_CONCURRENT=true`), port
//! 8080/tcp, user 65532 (an unprivileged id, as distroless's `nonroot`).

use std::collections::HashMap;
use std::io::Write;
use std::path::Path;

use anyhow::Context as _;
use flate2::Compression;
use flate2::write::GzEncoder;
use oci_spec::image::{
    Arch, ConfigBuilder, Descriptor, DescriptorBuilder, ImageConfigurationBuilder,
    ImageIndexBuilder, ImageManifestBuilder, MediaType, OciLayoutBuilder, Os, PlatformBuilder,
    RootFsBuilder, Sha256Digest,
};
use sha2::{Digest as _, Sha256};

use crate::commands::build::binary::{self, Binary};

/// The port the image exposes (ferry's default `$PORT`).
pub const PORT: u16 = 8080;
/// The unprivileged user the image runs as.
pub const USER: &str = "65532:65532";

/// The image: its blobs (content-addressed) and the index that points at them.
pub struct Image {
    /// `(sha256 hex, bytes)` of the layer, the configuration and the manifest.
    blobs: Vec<(String, Vec<u8>)>,
    index: Vec<u8>,
    layout: Vec<u8>,
}

/// The image's environment: the role, and for OpenWhisk leave to overlap activations (the
/// invoker sends a container up to its action's concurrency at once but tells it nothing; the
/// runtime still runs at most each function's `concurrency`).
fn env(role: &str) -> Vec<String> {
    let mut env = vec![
        format!("{}={role}", ferry::ROLE_VAR),
        "PATH=/app".to_owned(),
    ];
    if role == "openwhisk" {
        env.push("__OW_ALLOW_CONCURRENT=true".to_owned());
    }
    env
}

/// Builds the image for `binary` (which must be static: scratch has no C library), serving as
/// `role` (`FERRY_ROLE`).
pub fn image(program: &str, version: &str, binary: &Binary, role: &str) -> anyhow::Result<Image> {
    let entrypoint = format!("/app/{program}");
    let (layer, diff_id) = layer(program, &binary.bytes)?;
    let layer_digest = sha256_hex(&layer);
    let architecture = match binary.architecture {
        binary::Arch::X86_64 => Arch::Amd64,
        binary::Arch::Aarch64 => Arch::ARM64,
    };

    let config = ImageConfigurationBuilder::default()
        .architecture(architecture.clone())
        .os(Os::Linux)
        .config(
            ConfigBuilder::default()
                .entrypoint(vec![entrypoint])
                .env(env(role))
                .exposed_ports(vec![format!("{PORT}/tcp")])
                .user(USER.to_owned())
                .working_dir("/".to_owned())
                // One label only: labels are a hash map, and more than one would make the
                // JSON's key order, and so the digest, vary between builds.
                .labels(HashMap::from([(
                    "org.opencontainers.image.title".to_owned(),
                    program.to_owned(),
                )]))
                .build()?,
        )
        .rootfs(
            RootFsBuilder::default()
                .typ("layers")
                .diff_ids(vec![format!("sha256:{diff_id}")])
                .build()?,
        )
        .build()?;
    let config = serde_json::to_vec(&config)?;
    let config_digest = sha256_hex(&config);

    let manifest = ImageManifestBuilder::default()
        .schema_version(2_u32)
        .media_type(MediaType::ImageManifest)
        .config(descriptor(
            MediaType::ImageConfig,
            &config_digest,
            config.len(),
        )?)
        .layers(vec![descriptor(
            MediaType::ImageLayerGzip,
            &layer_digest,
            layer.len(),
        )?])
        .build()?;
    let manifest = serde_json::to_vec(&manifest)?;
    let manifest_digest = sha256_hex(&manifest);

    let mut manifest_descriptor =
        descriptor(MediaType::ImageManifest, &manifest_digest, manifest.len())?;
    manifest_descriptor.set_platform(Some(
        PlatformBuilder::default()
            .architecture(architecture)
            .os(Os::Linux)
            .build()?,
    ));
    manifest_descriptor.set_annotations(Some(HashMap::from([(
        "org.opencontainers.image.ref.name".to_owned(),
        version.to_owned(),
    )])));
    let index = ImageIndexBuilder::default()
        .schema_version(2_u32)
        .media_type(MediaType::ImageIndex)
        .manifests(vec![manifest_descriptor])
        .build()?;
    let layout = OciLayoutBuilder::default()
        .image_layout_version("1.0.0")
        .build()?;

    Ok(Image {
        blobs: vec![
            (layer_digest, layer),
            (config_digest, config),
            (manifest_digest, manifest),
        ],
        index: serde_json::to_vec(&index)?,
        layout: serde_json::to_vec(&layout)?,
    })
}

impl Image {
    /// The files of the layout, as `(relative path, bytes)`.
    fn files(&self) -> impl Iterator<Item = (String, &[u8])> {
        [
            ("oci-layout".to_owned(), self.layout.as_slice()),
            ("index.json".to_owned(), self.index.as_slice()),
        ]
        .into_iter()
        .chain(
            self.blobs
                .iter()
                .map(|(digest, bytes)| (format!("blobs/sha256/{digest}"), bytes.as_slice())),
        )
    }

    /// Writes the image layout into `dir`, replacing what was there.
    pub fn write_layout(&self, dir: &Path) -> anyhow::Result<()> {
        if dir.exists() {
            std::fs::remove_dir_all(dir)
                .with_context(|| format!("cannot replace `{}`", dir.display()))?;
        }
        for (path, bytes) in self.files() {
            let path = dir.join(path);
            if let Some(parent) = path.parent() {
                std::fs::create_dir_all(parent)
                    .with_context(|| format!("cannot create `{}`", parent.display()))?;
            }
            std::fs::write(&path, bytes)
                .with_context(|| format!("cannot write `{}`", path.display()))?;
        }
        Ok(())
    }

    /// The layout as one tar: an `oci-archive`.
    pub fn archive(&self) -> anyhow::Result<Vec<u8>> {
        let mut tar = tar::Builder::new(Vec::new());
        for dir in ["blobs/", "blobs/sha256/"] {
            tar.append(&header(dir, 0, 0o755, tar::EntryType::Directory), &[][..])?;
        }
        for (path, bytes) in self.files() {
            tar.append(
                &header(&path, bytes.len(), 0o644, tar::EntryType::Regular),
                bytes,
            )?;
        }
        Ok(tar.into_inner()?)
    }
}

fn descriptor(media_type: MediaType, digest: &str, size: usize) -> anyhow::Result<Descriptor> {
    let digest: Sha256Digest = digest.parse()?;
    Ok(DescriptorBuilder::default()
        .media_type(media_type)
        .digest(digest)
        .size(size as u64)
        .build()?)
}

/// The gzipped layer and the SHA-256 of its uncompressed tar (the "diff id"), in one pass.
fn layer(program: &str, binary: &[u8]) -> anyhow::Result<(Vec<u8>, String)> {
    let gzip = GzEncoder::new(Vec::new(), Compression::default());
    let mut tar = tar::Builder::new(HashingWriter {
        inner: gzip,
        hasher: Sha256::new(),
    });
    tar.append(
        &header("app/", 0, 0o755, tar::EntryType::Directory),
        &[][..],
    )?;
    tar.append(
        &header(
            &format!("app/{program}"),
            binary.len(),
            0o755,
            tar::EntryType::Regular,
        ),
        binary,
    )?;
    tar.append(
        &header("tmp/", 0, 0o1777, tar::EntryType::Directory),
        &[][..],
    )?;
    let hashing = tar.into_inner()?;
    let diff_id = hex(&hashing.hasher.finalize());
    let layer = hashing.inner.finish()?;
    Ok((layer, diff_id))
}

/// A tar header owned by root, dated 0.
fn header(path: &str, size: usize, mode: u32, kind: tar::EntryType) -> tar::Header {
    let mut header = tar::Header::new_ustar();
    header
        .set_path(path)
        .expect("ferry's own paths are short and relative");
    header.set_size(size as u64);
    header.set_mode(mode);
    header.set_entry_type(kind);
    header.set_uid(0);
    header.set_gid(0);
    header.set_mtime(0);
    header.set_cksum();
    header
}

/// Hashes what passes through on the way to `inner`.
struct HashingWriter<W> {
    inner: W,
    hasher: Sha256,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let written = self.inner.write(buf)?;
        self.hasher.update(&buf[..written]);
        Ok(written)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    hex(&Sha256::digest(bytes))
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}
