//! The images of blackbox actions: their names read as OpenWhisk reads them (`ImageName` in
//! `ExecManifest.scala`), pulled over the OCI distribution API from the registry the name
//! holds (plain HTTP: test registries listen on loopback), each digest verified, the layers
//! unpacked into a directory, and the entrypoint found in that tree.

use std::collections::VecDeque;
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Component, Path, PathBuf};

use serde_json::Value;
use sha2::{Digest as _, Sha256};

const OCI_INDEX: &str = "application/vnd.oci.image.index.v1+json";
const DOCKER_LIST: &str = "application/vnd.docker.distribution.manifest.list.v2+json";
const OCI_MANIFEST: &str = "application/vnd.oci.image.manifest.v1+json";
const DOCKER_MANIFEST: &str = "application/vnd.docker.distribution.manifest.v2+json";

/// Docker's `PATH` for a container whose image sets none.
const DEFAULT_PATH: &str = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/// An image name: `[registry/][prefix/]name[:tag][@digest]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ImageName {
    registry: Option<String>,
    /// `prefix/name`.
    repository: String,
    tag: Option<String>,
}

impl ImageName {
    /// Parses as `ImageName.fromString` does (Docker's reference grammar, with a registry being
    /// a dotted host, with or without a port, or any host with a port); `None` where the
    /// controller answers "could not parse image name".
    pub(super) fn parse(text: &str) -> Option<Self> {
        let (name, digest) = match text.split_once('@') {
            Some((name, digest)) => (name, Some(digest)),
            None => (text, None),
        };
        if digest.is_some_and(|digest| !is_digest(digest)) {
            return None;
        }
        let (registry, rest) = match name.split_once('/') {
            Some((first, rest)) if is_domain(first) => (Some(first.to_owned()), rest),
            _ => (None, name),
        };
        let last_slash = rest.rfind('/').map_or(0, |i| i + 1);
        let (repository, tag) = match rest[last_slash..].rfind(':') {
            Some(i) => (&rest[..last_slash + i], Some(&rest[last_slash + i + 1..])),
            None => (rest, None),
        };
        if !repository.split('/').all(is_path_component) || tag.is_some_and(|t| !is_tag(t)) {
            return None;
        }
        Some(Self {
            registry,
            repository: repository.to_owned(),
            tag: tag.map(str::to_owned),
        })
    }

    /// `resolveImageName()`: the name as the controller stores it and the invoker pulls it (a
    /// digest is not kept).
    pub(super) fn resolved(&self) -> String {
        let mut text = String::new();
        if let Some(registry) = &self.registry {
            text.push_str(registry);
            text.push('/');
        }
        text.push_str(&self.repository);
        if let Some(tag) = self.tag.as_deref().filter(|t| !t.is_empty()) {
            text.push(':');
            text.push_str(tag);
        }
        text
    }

    /// Whether the name says which registry to pull from (this controller reaches no other).
    pub(super) fn has_registry(&self) -> bool {
        self.registry.is_some()
    }
}

/// `domain-component ('.' domain-component)+ (':' port)?` or `domain-component (':' port)`.
fn is_domain(text: &str) -> bool {
    let (host, port) = match text.rsplit_once(':') {
        Some((host, port)) => (host, Some(port)),
        None => (text, None),
    };
    if port.is_some_and(|p| p.is_empty() || !p.bytes().all(|b| b.is_ascii_digit())) {
        return false;
    }
    let components: Vec<&str> = host.split('.').collect();
    let valid = components
        .iter()
        .all(|c| c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'));
    valid && (components.len() >= 2 || port.is_some())
}

/// `[a-z0-9]+ (([_.]|__|-+) [a-z0-9]+)*`.
fn is_path_component(text: &str) -> bool {
    let bytes = text.as_bytes();
    let alnum = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
    if bytes.is_empty() || !alnum(&bytes[0]) || !alnum(&bytes[bytes.len() - 1]) {
        return false;
    }
    let mut separator = String::new();
    for &b in bytes {
        if alnum(&b) {
            let allowed = separator.is_empty()
                || matches!(separator.as_str(), "_" | "." | "__")
                || separator.bytes().all(|s| s == b'-');
            if !allowed {
                return false;
            }
            separator.clear();
        } else if matches!(b, b'_' | b'.' | b'-') {
            separator.push(b as char);
        } else {
            return false;
        }
    }
    true
}

/// `[\w][\w.-]{0,127}`.
fn is_tag(text: &str) -> bool {
    let word = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = text.as_bytes();
    !bytes.is_empty()
        && bytes.len() <= 128
        && word(bytes[0])
        && bytes.iter().all(|&b| word(b) || b == b'.' || b == b'-')
}

/// `algorithm:hex` with at least 32 hex digits.
fn is_digest(text: &str) -> bool {
    text.split_once(':').is_some_and(|(algorithm, hex)| {
        algorithm
            .bytes()
            .next()
            .is_some_and(|b| b.is_ascii_alphabetic())
            && algorithm
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'.' | b'-' | b'_'))
            && hex.len() >= 32
            && hex.bytes().all(|b| b.is_ascii_hexdigit())
    })
}

/// An image unpacked into `root`, with what its config says to run.
#[derive(Debug)]
pub(super) struct Unpacked {
    pub(super) root: PathBuf,
    pub(super) entrypoint: Vec<String>,
    pub(super) cmd: Vec<String>,
    /// `KEY=value` lines.
    pub(super) env: Vec<String>,
    pub(super) working_dir: String,
}

/// Pulls `image` from its registry and unpacks it into `root` (made afresh); why not, as a
/// sentence for the controller's log (the activation only says the pull failed, as OpenWhisk's
/// does).
pub(super) async fn pull(
    client: &reqwest::Client,
    image: &ImageName,
    root: &Path,
) -> Result<Unpacked, String> {
    let Some(registry) = &image.registry else {
        return Err("the name holds no registry, and no other is reachable here".to_owned());
    };
    let base = format!("http://{registry}/v2/{}", image.repository);
    let tag = image
        .tag
        .as_deref()
        .filter(|t| !t.is_empty())
        .unwrap_or("latest");
    let (mut media_type, mut manifest) = fetch_manifest(client, &base, tag, None).await?;
    if media_type == OCI_INDEX || media_type == DOCKER_LIST {
        let (_, architecture) = crate::registry::host_platform();
        let chosen = manifest["manifests"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|entry| {
                entry["platform"]["os"] == "linux"
                    && entry["platform"]["architecture"] == architecture.as_str()
            })
            .and_then(|entry| entry["digest"].as_str())
            .ok_or_else(|| format!("the index lists no linux/{architecture} image"))?
            .to_owned();
        (media_type, manifest) = fetch_manifest(client, &base, &chosen, Some(&chosen)).await?;
    }
    if media_type != OCI_MANIFEST && media_type != DOCKER_MANIFEST {
        return Err(format!("an image manifest of type `{media_type}`"));
    }
    let config_digest = manifest["config"]["digest"]
        .as_str()
        .ok_or("the manifest names no config")?;
    let config: Value = serde_json::from_slice(&fetch_blob(client, &base, config_digest).await?)
        .map_err(|e| format!("the image config: {e}"))?;
    if std::fs::symlink_metadata(root).is_ok() {
        std::fs::remove_dir_all(root).map_err(|e| format!("{}: {e}", root.display()))?;
    }
    std::fs::create_dir_all(root).map_err(|e| format!("{}: {e}", root.display()))?;
    for layer in manifest["layers"].as_array().into_iter().flatten() {
        let digest = layer["digest"].as_str().ok_or("a layer without a digest")?;
        let media_type = layer["mediaType"].as_str().unwrap_or_default().to_owned();
        let blob = fetch_blob(client, &base, digest).await?;
        if layer["size"]
            .as_u64()
            .is_some_and(|size| size != blob.len() as u64)
        {
            return Err(format!("layer {digest} is not the size its manifest says"));
        }
        let root = root.to_owned();
        tokio::task::spawn_blocking(move || unpack_layer(&root, &media_type, &blob))
            .await
            .map_err(|e| e.to_string())?
            .map_err(|e| format!("layer {digest}: {e}"))?;
    }
    let strings = |key: &str| -> Vec<String> {
        config["config"][key]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|v| v.as_str().map(str::to_owned))
            .collect()
    };
    Ok(Unpacked {
        root: root.to_owned(),
        entrypoint: strings("Entrypoint"),
        cmd: strings("Cmd"),
        env: strings("Env"),
        working_dir: config["config"]["WorkingDir"]
            .as_str()
            .unwrap_or_default()
            .to_owned(),
    })
}

/// `GET /v2/<name>/manifests/<reference>`: its media type and document, its digest checked
/// against `expected` or else the registry's `Docker-Content-Digest`.
async fn fetch_manifest(
    client: &reqwest::Client,
    base: &str,
    reference: &str,
    expected: Option<&str>,
) -> Result<(String, Value), String> {
    let response = client
        .get(format!("{base}/manifests/{reference}"))
        .header(
            "accept",
            [OCI_INDEX, DOCKER_LIST, OCI_MANIFEST, DOCKER_MANIFEST].join(", "),
        )
        .send()
        .await
        .map_err(|e| format!("the registry: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("manifest {reference}: {}", response.status()));
    }
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    let content_type = header("content-type");
    let announced = header("docker-content-digest");
    let body = response
        .bytes()
        .await
        .map_err(|e| format!("manifest {reference}: {e}"))?;
    if let Some(digest) = expected.map(str::to_owned).or(announced) {
        verify(&digest, &body)?;
    }
    let document: Value =
        serde_json::from_slice(&body).map_err(|e| format!("manifest {reference}: {e}"))?;
    let media_type = document["mediaType"]
        .as_str()
        .map(str::to_owned)
        .or_else(|| content_type.map(|t| t.split(';').next().unwrap_or_default().trim().to_owned()))
        .unwrap_or_default();
    Ok((media_type, document))
}

/// `GET /v2/<name>/blobs/<digest>`, checked against its digest.
async fn fetch_blob(client: &reqwest::Client, base: &str, digest: &str) -> Result<Vec<u8>, String> {
    let response = client
        .get(format!("{base}/blobs/{digest}"))
        .send()
        .await
        .map_err(|e| format!("the registry: {e}"))?;
    if !response.status().is_success() {
        return Err(format!("blob {digest}: {}", response.status()));
    }
    let body = response
        .bytes()
        .await
        .map_err(|e| format!("blob {digest}: {e}"))?;
    verify(digest, &body)?;
    Ok(body.to_vec())
}

fn verify(digest: &str, bytes: &[u8]) -> Result<(), String> {
    let Some(expected) = digest.strip_prefix("sha256:") else {
        return Err(format!("digest {digest}: only sha256 is supported"));
    };
    let actual: String = Sha256::digest(bytes)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    if actual != expected.to_ascii_lowercase() {
        return Err(format!("content does not match its digest {digest}"));
    }
    Ok(())
}

/// Applies one layer (a tar, gzip'd or not) to `root`, whiteouts included.
fn unpack_layer(root: &Path, media_type: &str, blob: &[u8]) -> std::io::Result<()> {
    let unsupported =
        |what: &str| std::io::Error::other(format!("{what} layers are not supported"));
    if media_type.ends_with("zstd") {
        return Err(unsupported("zstd"));
    }
    let gzip = media_type.ends_with("gzip") || blob.starts_with(&[0x1f, 0x8b]);
    let reader: Box<dyn Read + '_> = if gzip {
        Box::new(flate2::read::GzDecoder::new(blob))
    } else {
        Box::new(blob)
    };
    let mut archive = tar::Archive::new(reader);
    archive.set_preserve_permissions(true);
    archive.set_overwrite(true);
    archive.set_unpack_xattrs(false);
    for entry in archive.entries()? {
        let mut entry = entry?;
        let path = entry.path()?.into_owned();
        if path.components().any(|c| c == Component::ParentDir) {
            return Err(std::io::Error::other(format!(
                "`{}` leaves the image",
                path.display()
            )));
        }
        let relative: PathBuf = path
            .components()
            .filter(|c| matches!(c, Component::Normal(_)))
            .collect();
        let Some(name) = relative.file_name().and_then(|n| n.to_str()) else {
            continue;
        };
        if let Some(hidden) = name.strip_prefix(".wh.") {
            let parent = relative.parent().unwrap_or(Path::new(""));
            // A whiteout's directory is taken literally, never through a symlink.
            let Some(dir) = literal_dir(root, parent) else {
                continue;
            };
            if hidden == ".wh..opq" {
                // An opaque directory: what lower layers put in it is gone.
                for child in std::fs::read_dir(&dir)? {
                    remove(&child?.path())?;
                }
            } else {
                remove(&dir.join(hidden))?;
            }
            continue;
        }
        entry.unpack_in(root)?;
    }
    Ok(())
}

/// `root/relative` if every part of it is a real directory (or missing), not a symlink.
fn literal_dir(root: &Path, relative: &Path) -> Option<PathBuf> {
    let mut dir = root.to_owned();
    for component in relative.components() {
        dir.push(component);
        match std::fs::symlink_metadata(&dir) {
            Ok(meta) if meta.is_dir() => {}
            _ => return None,
        }
    }
    Some(dir)
}

fn remove(path: &Path) -> std::io::Result<()> {
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.is_dir() => std::fs::remove_dir_all(path),
        Ok(_) => std::fs::remove_file(path),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e),
    }
}

/// What an image's config says to run.
#[derive(Debug)]
pub(super) enum Start {
    /// The executable (its path under the root), the whole argv, and the working directory
    /// (under the root).
    Run {
        executable: PathBuf,
        argv: Vec<String>,
        cwd: PathBuf,
    },
    /// Neither `Entrypoint` nor `Cmd`.
    NoCommand,
    /// The executable is not in the image.
    NotFound,
}

impl Unpacked {
    /// `KEY=value` of the image's environment.
    fn env_var(&self, key: &str) -> Option<&str> {
        self.env
            .iter()
            .find_map(|line| line.strip_prefix(key)?.strip_prefix('='))
    }

    /// What the image runs, `Entrypoint` then `Cmd`, found in its tree.
    pub(super) fn command(&self) -> Start {
        let argv: Vec<String> = self.entrypoint.iter().chain(&self.cmd).cloned().collect();
        let Some(program) = argv.first() else {
            return Start::NoCommand;
        };
        let working_dir = if self.working_dir.is_empty() {
            "/"
        } else {
            &self.working_dir
        };
        let cwd = resolve_in(&self.root, working_dir);
        let executable = if program.contains('/') {
            let path = if program.starts_with('/') {
                program.clone()
            } else {
                format!("{working_dir}/{program}")
            };
            Some(resolve_in(&self.root, &path)).filter(|p| is_executable(p))
        } else {
            self.env_var("PATH")
                .unwrap_or(DEFAULT_PATH)
                .split(':')
                .filter(|dir| !dir.is_empty())
                .map(|dir| resolve_in(&self.root, &format!("{dir}/{program}")))
                .find(|p| is_executable(p))
        };
        match executable {
            Some(executable) => Start::Run {
                executable,
                argv,
                cwd,
            },
            None => Start::NotFound,
        }
    }

    /// The environment of the container: the image's, `PATH` Docker's default if it sets none.
    pub(super) fn environment(&self) -> Vec<(String, String)> {
        let mut env: Vec<(String, String)> = self
            .env
            .iter()
            .map(|line| match line.split_once('=') {
                Some((key, value)) => (key.to_owned(), value.to_owned()),
                None => (line.clone(), String::new()),
            })
            .collect();
        if self.env_var("PATH").is_none() {
            env.push(("PATH".to_owned(), DEFAULT_PATH.to_owned()));
        }
        env
    }
}

fn is_executable(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
}

/// `path`, a path inside the image, as a path under `root`: symlinks are followed as the
/// container would follow them, an absolute target starting again from `root`, and `..` never
/// climbs above it.
pub(super) fn resolve_in(root: &Path, path: &str) -> PathBuf {
    let parts = |path: &Path| -> VecDeque<OsString> {
        path.components()
            .filter_map(|c| match c {
                Component::Normal(part) => Some(part.to_owned()),
                Component::ParentDir => Some(OsString::from("..")),
                _ => None,
            })
            .collect()
    };
    let mut pending = parts(Path::new(path));
    let mut resolved = PathBuf::new();
    let mut hops = 0;
    while let Some(part) = pending.pop_front() {
        if part == ".." {
            resolved.pop();
            continue;
        }
        let candidate = resolved.join(&part);
        let on_host = root.join(&candidate);
        let link = std::fs::symlink_metadata(&on_host)
            .ok()
            .filter(|m| m.file_type().is_symlink())
            .and_then(|_| std::fs::read_link(&on_host).ok());
        match link {
            // Past 40 links (Linux's limit) the path is left as it is and fails to open.
            Some(target) if hops < 40 => {
                hops += 1;
                if target.is_absolute() {
                    resolved = PathBuf::new();
                }
                let mut next = parts(&target);
                next.extend(pending);
                pending = next;
            }
            _ => resolved = candidate,
        }
    }
    root.join(resolved)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_parse_as_openwhisk_parses_them() {
        let name = ImageName::parse("127.0.0.1:5000/ferry/app-fixture:v1.2").unwrap();
        assert_eq!(
            name,
            ImageName {
                registry: Some("127.0.0.1:5000".into()),
                repository: "ferry/app-fixture".into(),
                tag: Some("v1.2".into()),
            }
        );
        assert_eq!(name.resolved(), "127.0.0.1:5000/ferry/app-fixture:v1.2");
        // A first part without a dot or a port is a prefix, not a registry.
        let hub = ImageName::parse("openwhisk/dockerskeleton").unwrap();
        assert_eq!(hub.registry, None);
        assert_eq!(hub.resolved(), "openwhisk/dockerskeleton");
        for registry in ["localhost:5000", "registry.example.com"] {
            let name = ImageName::parse(&format!("{registry}/x")).unwrap();
            assert_eq!(name.registry.as_deref(), Some(registry));
        }
        // A digest is read and not kept.
        let digest = format!("reg.io/x:1@sha256:{}", "a".repeat(64));
        assert_eq!(ImageName::parse(&digest).unwrap().resolved(), "reg.io/x:1");
        for bad in [
            "Upper/case",
            "x:",
            "x::1",
            "",
            "a//b",
            "x@sha256:12",
            "-x",
            "x y",
        ] {
            assert_eq!(ImageName::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn paths_resolve_inside_the_root() {
        let root = tempfile::tempdir().unwrap();
        let root = root.path();
        std::fs::create_dir_all(root.join("app/bin")).unwrap();
        std::fs::write(root.join("app/bin/run"), "").unwrap();
        std::os::unix::fs::symlink("/app/bin", root.join("bin")).unwrap();
        std::os::unix::fs::symlink("../../../../etc", root.join("app/etc")).unwrap();
        std::os::unix::fs::symlink("loop", root.join("loop")).unwrap();
        assert_eq!(resolve_in(root, "/bin/run"), root.join("app/bin/run"));
        assert_eq!(resolve_in(root, "/app/etc/passwd"), root.join("etc/passwd"));
        assert_eq!(resolve_in(root, "/../../x"), root.join("x"));
        assert_eq!(resolve_in(root, "/loop"), root.join("loop"));
    }
}
