//! A real OCI registry for tests: Debian's reference registry (`docker-registry`, the CNCF
//! distribution project's server) on a free loopback port, storing blobs in a temporary
//! directory, killed and removed when dropped. `scripts/test.sh` installs the package.
//!
//! Images go in with skopeo ([`Registry::copy`]) or are written here as OCI layouts from files
//! of the host ([`Image`], [`Registry::push`], [`Registry::push_platforms`]), so a test can
//! put any program in an image without a container engine.

use std::io::Write as _;
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use sha2::{Digest as _, Sha256};

use crate::redis_server::free_port;

const REGISTRY: &str = "/usr/bin/docker-registry";

/// A running registry, serving plain HTTP on `127.0.0.1`.
#[derive(Debug)]
pub struct Registry {
    child: Child,
    port: u16,
    dir: tempfile::TempDir,
}

impl Registry {
    /// Starts one and waits until `GET /v2/` answers. Panics if `docker-registry` is not
    /// installed.
    pub fn start() -> Self {
        assert!(
            Path::new(REGISTRY).exists(),
            "{REGISTRY} is missing: run `apt-get install docker-registry` (scripts/test.sh does it)"
        );
        let dir = tempfile::Builder::new()
            .prefix("ferry-registry-")
            .tempdir()
            .expect("a temporary directory");
        // The port is free when chosen; another process may take it first, so a registry that
        // exits at once is started again on another.
        for _ in 0..5 {
            let port = free_port();
            let config = dir.path().join("config.yml");
            std::fs::write(
                &config,
                format!(
                    "version: 0.1\n\
                     log:\n  level: error\n  accesslog:\n    disabled: true\n\
                     storage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\n\
                     http:\n  addr: 127.0.0.1:{port}\n",
                    dir.path().join("storage").display()
                ),
            )
            .expect("write the registry's config");
            let mut child = Command::new(REGISTRY)
                .arg("serve")
                .arg(&config)
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .unwrap_or_else(|e| panic!("cannot start {REGISTRY}: {e}"));
            let started = Instant::now();
            loop {
                if answers_v2(port) {
                    return Self { child, port, dir };
                }
                if child.try_wait().expect("the registry's status").is_some() {
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "the registry never answered GET /v2/"
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        panic!("the registry did not start on any of 5 free ports");
    }

    /// `127.0.0.1:PORT`, the registry part of its images' names.
    pub fn host(&self) -> String {
        format!("127.0.0.1:{}", self.port)
    }

    /// Copies the image at `source`, a skopeo transport (`oci:<dir>`, `oci-archive:<tar>`…),
    /// to `name` (`repository:tag`) here, every platform of an index included; returns the
    /// image's full name, `127.0.0.1:PORT/repository:tag`.
    pub fn copy(&self, source: &str, name: &str) -> String {
        let image = format!("{}/{name}", self.host());
        let output = Command::new("skopeo")
            .args(["copy", "--quiet", "--all", "--dest-tls-verify=false"])
            .arg(source)
            .arg(format!("docker://{image}"))
            .output()
            .expect("skopeo is installed (`apt-get install skopeo`; scripts/test.sh does it)");
        assert!(
            output.status.success(),
            "skopeo copy {source} docker://{image}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        image
    }

    /// Pushes `image` for this host's platform (linux and this machine's architecture) as
    /// `name` (`repository:tag`); returns its full name.
    pub fn push(&self, image: &Image, name: &str) -> String {
        let layout = Layout::new(self.dir.path());
        let manifest = layout.manifest(image, &host_platform().1);
        layout.finish(&manifest);
        self.copy(&format!("oci:{}", layout.dir.display()), name)
    }

    /// Pushes an index of images by architecture (`amd64`, `arm64`…, all for linux) as `name`;
    /// returns its full name.
    pub fn push_platforms(&self, images: &[(&str, &Image)], name: &str) -> String {
        let layout = Layout::new(self.dir.path());
        let manifests: Vec<Value> = images
            .iter()
            .map(|(architecture, image)| {
                let mut descriptor = layout.manifest(image, architecture);
                descriptor["platform"] = json!({"os": "linux", "architecture": architecture});
                descriptor
            })
            .collect();
        let index = json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.index.v1+json",
            "manifests": manifests,
        });
        let descriptor = layout.blob(
            "application/vnd.oci.image.index.v1+json",
            &serde_json::to_vec(&index).unwrap(),
        );
        layout.finish(&descriptor);
        self.copy(&format!("oci:{}", layout.dir.display()), name)
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Whether `GET /v2/` answers (200, or 401 from a registry that wants credentials).
fn answers_v2(port: u16) -> bool {
    let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    let request =
        format!("GET /v2/ HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = String::new();
    let _ = std::io::Read::read_to_string(&mut stream, &mut answer);
    answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.1 401")
}

/// `("linux", architecture)` of this machine, as OCI names them.
pub fn host_platform() -> (&'static str, String) {
    let architecture = match std::env::consts::ARCH {
        "x86_64" => "amd64",
        "aarch64" => "arm64",
        "x86" => "386",
        "powerpc64" => "ppc64le",
        other => other,
    };
    ("linux", architecture.to_owned())
}

/// An image to push: one gzip'd layer of files, and its config.
#[derive(Debug, Default, Clone)]
pub struct Image {
    files: Vec<File>,
    entrypoint: Vec<String>,
    cmd: Vec<String>,
    env: Vec<String>,
    working_dir: Option<String>,
}

#[derive(Debug, Clone)]
enum File {
    Regular {
        path: String,
        contents: Vec<u8>,
        mode: u32,
    },
    Symlink {
        path: String,
        target: String,
    },
}

impl Image {
    pub fn new() -> Self {
        Self::default()
    }

    /// A file at `path` (absolute, in the image) with `contents` and `mode`; its directories
    /// are made.
    pub fn file(mut self, path: &str, contents: impl Into<Vec<u8>>, mode: u32) -> Self {
        self.files.push(File::Regular {
            path: path.to_owned(),
            contents: contents.into(),
            mode,
        });
        self
    }

    /// The host's file `from` at `path`, executable.
    pub fn executable(self, path: &str, from: impl AsRef<Path>) -> Self {
        let from = from.as_ref();
        let contents =
            std::fs::read(from).unwrap_or_else(|e| panic!("read {}: {e}", from.display()));
        self.file(path, contents, 0o755)
    }

    /// A symlink at `path` to `target`.
    pub fn symlink(mut self, path: &str, target: &str) -> Self {
        self.files.push(File::Symlink {
            path: path.to_owned(),
            target: target.to_owned(),
        });
        self
    }

    /// The config's `Entrypoint`.
    pub fn entrypoint(mut self, argv: &[&str]) -> Self {
        self.entrypoint = argv.iter().map(|a| (*a).to_owned()).collect();
        self
    }

    /// The config's `Cmd`.
    pub fn cmd(mut self, argv: &[&str]) -> Self {
        self.cmd = argv.iter().map(|a| (*a).to_owned()).collect();
        self
    }

    /// `KEY=value` in the config's `Env`.
    pub fn env(mut self, key: &str, value: &str) -> Self {
        self.env.push(format!("{key}={value}"));
        self
    }

    /// The config's `WorkingDir`.
    pub fn working_dir(mut self, dir: &str) -> Self {
        self.working_dir = Some(dir.to_owned());
        self
    }

    /// The layer: a gzip'd tar of the files, their directories first.
    fn layer(&self) -> Vec<u8> {
        let mut builder = tar::Builder::new(flate2::write::GzEncoder::new(
            Vec::new(),
            flate2::Compression::fast(),
        ));
        let mut directories: Vec<String> = Vec::new();
        for file in &self.files {
            let path = match file {
                File::Regular { path, .. } | File::Symlink { path, .. } => path,
            };
            let mut dir = Path::new(path.trim_start_matches('/')).parent();
            let mut chain = Vec::new();
            while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
                chain.push(d.to_string_lossy().into_owned());
                dir = d.parent();
            }
            for d in chain.into_iter().rev() {
                if !directories.contains(&d) {
                    let mut header = tar::Header::new_gnu();
                    header.set_entry_type(tar::EntryType::Directory);
                    header.set_mode(0o755);
                    header.set_size(0);
                    builder
                        .append_data(&mut header, format!("{d}/"), std::io::empty())
                        .unwrap();
                    directories.push(d);
                }
            }
        }
        for file in &self.files {
            let mut header = tar::Header::new_gnu();
            match file {
                File::Regular {
                    path,
                    contents,
                    mode,
                } => {
                    header.set_mode(*mode);
                    header.set_size(contents.len() as u64);
                    builder
                        .append_data(&mut header, path.trim_start_matches('/'), &contents[..])
                        .unwrap();
                }
                File::Symlink { path, target } => {
                    header.set_entry_type(tar::EntryType::Symlink);
                    header.set_mode(0o777);
                    header.set_size(0);
                    builder
                        .append_link(&mut header, path.trim_start_matches('/'), target)
                        .unwrap();
                }
            }
        }
        builder.into_inner().unwrap().finish().unwrap()
    }
}

/// An OCI image layout being written in a directory of its own.
struct Layout {
    dir: PathBuf,
}

impl Layout {
    fn new(parent: &Path) -> Self {
        let dir = tempfile::Builder::new()
            .prefix("layout-")
            .tempdir_in(parent)
            .expect("a layout directory")
            .keep();
        std::fs::create_dir_all(dir.join("blobs/sha256")).unwrap();
        Self { dir }
    }

    /// Writes a blob; its descriptor.
    fn blob(&self, media_type: &str, bytes: &[u8]) -> Value {
        let hex: String = Sha256::digest(bytes)
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        std::fs::write(self.dir.join("blobs/sha256").join(&hex), bytes).unwrap();
        json!({"mediaType": media_type, "digest": format!("sha256:{hex}"), "size": bytes.len()})
    }

    /// Writes the image's layer, config and manifest; the manifest's descriptor.
    fn manifest(&self, image: &Image, architecture: &str) -> Value {
        let layer = image.layer();
        let diff_id: String = {
            use std::io::Read as _;
            let mut tar = Vec::new();
            flate2::read::GzDecoder::new(&layer[..])
                .read_to_end(&mut tar)
                .unwrap();
            Sha256::digest(&tar)
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect()
        };
        let layer = self.blob("application/vnd.oci.image.layer.v1.tar+gzip", &layer);
        let mut config = json!({
            "Env": image.env,
            "Entrypoint": image.entrypoint,
            "Cmd": image.cmd,
        });
        if let Some(dir) = &image.working_dir {
            config["WorkingDir"] = json!(dir);
        }
        let config = json!({
            "architecture": architecture,
            "os": "linux",
            "config": config,
            "rootfs": {"type": "layers", "diff_ids": [format!("sha256:{diff_id}")]},
        });
        let config = self.blob(
            "application/vnd.oci.image.config.v1+json",
            &serde_json::to_vec(&config).unwrap(),
        );
        let manifest = json!({
            "schemaVersion": 2,
            "mediaType": "application/vnd.oci.image.manifest.v1+json",
            "config": config,
            "layers": [layer],
        });
        self.blob(
            "application/vnd.oci.image.manifest.v1+json",
            &serde_json::to_vec(&manifest).unwrap(),
        )
    }

    /// `index.json` and `oci-layout`, naming `descriptor` the layout's one image.
    fn finish(&self, descriptor: &Value) {
        std::fs::write(
            self.dir.join("oci-layout"),
            r#"{"imageLayoutVersion": "1.0.0"}"#,
        )
        .unwrap();
        let index = json!({"schemaVersion": 2, "manifests": [descriptor]});
        std::fs::write(
            self.dir.join("index.json"),
            serde_json::to_vec(&index).unwrap(),
        )
        .unwrap();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn images_pushed_are_served_over_the_distribution_api() {
        let registry = Registry::start();
        let image = Image::new()
            .file("/app/hello", "hello", 0o644)
            .entrypoint(&["/app/hello"]);
        let plain = registry.push(&image, "one/plain:1");
        let both = registry.push_platforms(&[("amd64", &image), ("arm64", &image)], "both:1");
        assert_eq!(plain, format!("{}/one/plain:1", registry.host()));
        let http = reqwest::Client::new();
        let manifest = |path: &str| {
            let request = http
                .get(format!("http://{}/v2/{path}", registry.host()))
                .header(
                    "accept",
                    "application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json",
                );
            async move {
                let response = request.send().await.unwrap();
                assert_eq!(response.status(), 200);
                response.json::<Value>().await.unwrap()
            }
        };
        let single = manifest("one/plain/manifests/1").await;
        assert_eq!(
            single["mediaType"],
            "application/vnd.oci.image.manifest.v1+json"
        );
        assert_eq!(single["layers"].as_array().unwrap().len(), 1);
        let index = manifest("both/manifests/1").await;
        let platforms: Vec<&Value> = index["manifests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| &m["platform"]["architecture"])
            .collect();
        assert_eq!(platforms, [&json!("amd64"), &json!("arm64")]);
        assert!(both.ends_with("/both:1"));
    }
}
