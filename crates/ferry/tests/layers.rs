//! The host side (contexts and the platforms' clients) never reaches into the worker side (the
//! runtime pipeline and the platforms' servers): a worker is built on top of a context, so the
//! two sides cannot form an import cycle. Checked on the source, line by line.

use std::path::{Path, PathBuf};

/// Modules that serve functions: the pipeline, each platform's server, the ActionLoop executable.
fn is_worker_side(path: &Path) -> bool {
    let path = path.to_string_lossy();
    path.starts_with("runtime/") || path.ends_with("/server.rs") || path.ends_with("/actionloop.rs")
}

/// Modules that start a process in its role, and so see both sides: the entry points, and a
/// web app's server on each platform.
fn is_entry(path: &Path) -> bool {
    let path = path.to_string_lossy();
    matches!(path.as_ref(), "lib.rs" | "private.rs" | "run.rs") || path.starts_with("web/")
}

/// How a host-side line would name the worker side or an entry module.
const WORKER_PATHS: &[&str] = &[
    "runtime::",
    "::server",
    "actionloop::",
    "crate::run::",
    "crate::web::",
    "web::",
    "super::server",
];

fn sources(dir: &Path, root: &Path, found: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            sources(&path, root, found);
        } else if path.extension().is_some_and(|e| e == "rs") {
            found.push(path.strip_prefix(root).unwrap().to_path_buf());
        }
    }
}

#[test]
fn the_host_side_never_imports_the_worker_side() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    sources(&root, &root, &mut files);
    assert!(files.len() > 30, "read only {files:?}");
    let host_side: Vec<_> = files
        .iter()
        .filter(|f| !is_worker_side(f) && !is_entry(f))
        .collect();
    assert!(host_side.iter().any(|f| f.ends_with("context.rs")));
    assert!(host_side.iter().any(|f| f.ends_with("local/client.rs")));
    let mut crossings = Vec::new();
    for file in host_side {
        let text = std::fs::read_to_string(root.join(file)).unwrap();
        for (number, line) in text.lines().enumerate() {
            let code = line.trim_start();
            if code.starts_with("//") {
                continue;
            }
            // tokio's runtime module is not ferry's.
            let code = code.replace("tokio::runtime::", "tokio::");
            if let Some(path) = WORKER_PATHS.iter().find(|p| code.contains(**p)) {
                crossings.push(format!(
                    "{}:{}: `{path}` in {code}",
                    file.display(),
                    number + 1
                ));
            }
        }
    }
    assert!(
        crossings.is_empty(),
        "host-side modules reach the worker side:\n{}",
        crossings.join("\n")
    );
}

#[test]
fn every_platform_has_one_folder_with_its_client_and_server() {
    let platforms = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/platform");
    for platform in ["local", "http", "openwhisk", "lambda"] {
        for side in ["mod.rs", "client.rs", "server.rs"] {
            assert!(
                platforms.join(platform).join(side).is_file(),
                "{platform}/{side} missing"
            );
        }
    }
    // `inline` runs functions in the calling process: a client only.
    assert!(platforms.join("inline/mod.rs").is_file());
}
