//! `ferry build` on the fixture program for every platform: the Lambda and OpenWhisk zips (names,
//! modes, a static binary that prints the same manifest), the OCI image as `skopeo` reads it
//! (entrypoint, env, port, architecture, digests), the Knative Services (limits from each
//! function's config), reproducibility, and the errors for bad input.

mod common;

use std::collections::BTreeMap;
use std::io::Read as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::Path;
use std::process::Command;

use common::{Scratch, fails, ferry, ferry_in, fixture, manifest, ok, only_zip_entry};
use object::Object as _;
use object::read::elf::FileHeader as _;
use object::read::elf::ProgramHeader as _;

const ALL: &str = "lambda,openwhisk,http";
const PROGRAM: &str = "ferry-fixture";

/// A static x86_64 ELF executable: no `PT_INTERP`, so it runs without a C library.
fn assert_static_elf(bytes: &[u8]) {
    let file = object::File::parse(bytes).expect("an executable");
    assert_eq!(file.format(), object::BinaryFormat::Elf);
    assert_eq!(file.architecture(), object::Architecture::X86_64);
    let elf = object::read::elf::ElfFile64::<object::Endianness>::parse(bytes).unwrap();
    let endian = elf.endian();
    assert!(
        !elf.elf_program_headers()
            .iter()
            .any(|h| h.p_type(endian) == object::elf::PT_INTERP),
        "the binary names a dynamic loader"
    );
}

/// Runs `bytes` as a program with `FERRY_ROLE=manifest` and returns what it prints.
fn manifest_of_binary(bytes: &[u8]) -> serde_json::Value {
    let dir = Scratch::new("binary");
    let path = dir.path().join("program");
    std::fs::write(&path, bytes).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    // An empty environment, as on the platforms: a static binary needs nothing from here.
    let output = Command::new(&path)
        .env_clear()
        .env("FERRY_ROLE", "manifest")
        .output()
        .expect("run the packaged binary");
    assert!(output.status.success(), "{output:?}");
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn lambda_zip_holds_an_executable_static_bootstrap() {
    let dir = fixture(ALL);
    let (name, mode, bytes) = only_zip_entry(&dir.join(format!("lambda/{PROGRAM}.zip")));
    assert_eq!(name, "bootstrap");
    assert_eq!(mode & 0o777, 0o755, "mode {mode:o}");
    assert_eq!(mode & 0o170000, 0o100000, "a regular file: {mode:o}");
    assert_static_elf(&bytes);
    // Linked at a fixed address: nothing to relocate at start-up (a static-pie is `ET_DYN`).
    let elf = object::read::elf::ElfFile64::<object::Endianness>::parse(&bytes[..]).unwrap();
    assert_eq!(
        elf.elf_header().e_type(elf.endian()),
        object::elf::ET_EXEC,
        "a position-independent binary"
    );
    // The packaged binary is the program whose manifest was written.
    assert_eq!(manifest_of_binary(&bytes), manifest(dir));

    let info: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("build.json")).unwrap()).unwrap();
    assert_eq!(info["program"], PROGRAM);
    assert_eq!(info["package"], "ferry-tests");
    assert_eq!(info["linkage"], "static");
    assert_eq!(info["architecture"], "x86_64");
    assert_eq!(info["profile"], "dev");
}

#[test]
fn openwhisk_zip_holds_exec_at_the_top_level() {
    let dir = fixture(ALL);
    let (name, mode, bytes) = only_zip_entry(&dir.join(format!("openwhisk/{PROGRAM}.zip")));
    assert_eq!(name, "exec");
    assert_eq!(mode & 0o777, 0o755, "mode {mode:o}");
    let (_, _, bootstrap) = only_zip_entry(&dir.join(format!("lambda/{PROGRAM}.zip")));
    assert!(bytes == bootstrap, "exec and bootstrap are the same binary");
}

#[test]
fn the_openwhisk_image_serves_the_openwhisk_role() {
    let dir = fixture(ALL);
    let reference = format!(
        "oci-archive:{}",
        dir.join(format!("openwhisk/{PROGRAM}.oci.tar")).display()
    );
    let image = skopeo(&["inspect", &reference]);
    assert!(
        image["Env"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("FERRY_ROLE=openwhisk")),
        "{image}"
    );
    let config = skopeo(&["inspect", "--config", &reference]);
    assert_eq!(
        config["config"]["Entrypoint"],
        serde_json::json!([format!("/app/{PROGRAM}")])
    );
    // The same binary as the HTTP image: only the role differs.
    let http = skopeo(&[
        "inspect",
        &format!(
            "oci-archive:{}",
            dir.join(format!("http/{PROGRAM}.oci.tar")).display()
        ),
    ]);
    assert_eq!(image["Layers"], http["Layers"]);
}

#[test]
fn the_manifest_lists_every_function() {
    let manifest = manifest(fixture(ALL));
    let functions = manifest["functions"].as_array().unwrap();
    assert!(functions.iter().any(|f| f["id"] == "ferry_tests::add"));
    // The same functions as the program itself lists, built the ordinary way.
    let program = common::workspace_binary("ferry-tests", "ferry-fixture");
    let listed = ok(
        &ferry(&["manifest", "--compact", program.to_str().unwrap()]),
        "ferry manifest",
    );
    let listed: serde_json::Value = serde_json::from_str(&listed).unwrap();
    assert_eq!(manifest["functions"], listed["functions"]);
}

fn skopeo(args: &[&str]) -> serde_json::Value {
    let output = Command::new("skopeo").args(args).output().expect(
        "skopeo is needed for these tests: `apt-get install skopeo` (scripts/test.sh installs it)",
    );
    assert!(
        output.status.success(),
        "skopeo {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap_or(serde_json::Value::Null)
}

#[test]
fn the_oci_archive_is_an_image_skopeo_reads() {
    let dir = fixture(ALL);
    let archive = dir.join(format!("http/{PROGRAM}.oci.tar"));
    let reference = format!("oci-archive:{}", archive.display());

    let image = skopeo(&["inspect", &reference]);
    assert_eq!(image["Architecture"], "amd64");
    assert_eq!(image["Os"], "linux");
    assert_eq!(image["Layers"].as_array().unwrap().len(), 1);
    assert!(
        image["Env"]
            .as_array()
            .unwrap()
            .contains(&serde_json::json!("FERRY_ROLE=http")),
        "{image}"
    );

    let config = skopeo(&["inspect", "--config", &reference]);
    assert_eq!(
        config["config"]["Entrypoint"],
        serde_json::json!([format!("/app/{PROGRAM}")])
    );
    assert_eq!(
        config["config"]["ExposedPorts"],
        serde_json::json!({"8080/tcp": {}})
    );
    assert_eq!(config["config"]["User"], "65532:65532");

    // The layout directory is the same image.
    let layout = format!("oci:{}:0.1.0", dir.join("http/oci").display());
    assert_eq!(skopeo(&["inspect", &layout])["Digest"], image["Digest"]);

    // Copying checks every blob against its digest.
    let copy = Scratch::new("oci-copy");
    skopeo(&[
        "copy",
        "--quiet",
        &reference,
        &format!("oci:{}:copied", copy.path().display()),
    ]);
}

#[test]
fn the_image_layer_holds_the_binary_as_its_entrypoint() {
    let dir = fixture(ALL);
    let index: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.join("http/oci/index.json")).unwrap()).unwrap();
    let blob = |digest: &str| {
        std::fs::read(
            dir.join("http/oci/blobs/sha256")
                .join(digest.strip_prefix("sha256:").unwrap()),
        )
        .unwrap()
    };
    let manifest: serde_json::Value =
        serde_json::from_slice(&blob(index["manifests"][0]["digest"].as_str().unwrap())).unwrap();
    let layer = blob(manifest["layers"][0]["digest"].as_str().unwrap());
    assert_eq!(
        manifest["layers"][0]["mediaType"],
        "application/vnd.oci.image.layer.v1.tar+gzip"
    );
    let mut entries = BTreeMap::new();
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(&layer[..]));
    for entry in tar.entries().unwrap() {
        let mut entry = entry.unwrap();
        let path = entry.path().unwrap().display().to_string();
        let mode = entry.header().mode().unwrap();
        let mut bytes = Vec::new();
        entry.read_to_end(&mut bytes).unwrap();
        entries.insert(path, (mode, bytes));
    }
    assert_eq!(
        entries.keys().collect::<Vec<_>>(),
        ["app/", &format!("app/{PROGRAM}"), "tmp/"]
    );
    let (mode, binary) = &entries[&format!("app/{PROGRAM}")];
    assert_eq!(*mode, 0o755);
    assert_eq!(entries["tmp/"].0, 0o1777);
    assert_static_elf(binary);
}

#[test]
fn a_knative_service_per_function_with_its_limits() {
    let dir = fixture(ALL);
    let manifest = manifest(dir);
    let mut services = BTreeMap::new();
    for entry in std::fs::read_dir(dir.join("http/knative")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let yaml: serde_json::Value =
            serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = yaml["metadata"]["name"].as_str().unwrap().to_owned();
        assert_eq!(
            path.file_name().unwrap().to_str(),
            Some(&*format!("{name}.yaml"))
        );
        let id = yaml["metadata"]["annotations"]["ferry.dev/function-id"]
            .as_str()
            .unwrap()
            .to_owned();
        services.insert(id, yaml);
    }
    let functions = manifest["functions"].as_array().unwrap();
    assert_eq!(services.len(), functions.len());
    for function in functions {
        let service = &services[function["id"].as_str().unwrap()];
        let name = function["name"].as_str().unwrap();
        assert_eq!(service["apiVersion"], "serving.knative.dev/v1");
        assert_eq!(service["kind"], "Service");
        let service_name = service["metadata"]["name"].as_str().unwrap();
        assert!(
            service_name.starts_with(&format!("ferry-fixture-{}-", name.replace('_', "-"))),
            "{service_name}"
        );
        assert!(service_name.len() <= 57);
        let spec = &service["spec"]["template"]["spec"];
        assert_eq!(
            spec["containerConcurrency"], function["concurrency"],
            "{name}"
        );
        let timeout_ms = function["timeout_ms"].as_u64().unwrap();
        assert_eq!(
            spec["timeoutSeconds"],
            timeout_ms.div_ceil(1000).max(1),
            "{name}"
        );
        let container = &spec["containers"][0];
        assert_eq!(container["image"], "ferry-fixture:0.1.0");
        let memory = format!("{}Mi", function["memory_mb"]);
        assert_eq!(container["resources"]["limits"]["memory"], memory, "{name}");
        assert_eq!(container["resources"]["requests"]["memory"], memory);
        // The function's service serves it over HTTP and reaches every other function (nested
        // calls, flow stages) at its service's in-cluster URL.
        let env = &container["env"];
        assert_eq!(
            env[0],
            serde_json::json!({"name": "FERRY_ROLE", "value": "http"})
        );
        assert_eq!(env[1]["name"], "FERRY_FUNCTION");
        assert_eq!(env[1]["value"], name);
        assert_eq!(
            env[2],
            serde_json::json!({"name": "FERRY_BACKEND", "value": "http"})
        );
        assert_eq!(env[3]["name"], "FERRY_HTTP_ROUTES");
        assert_eq!(env.as_array().unwrap().len(), 4);
        let route =
            format!("{name}=http://{service_name}.default.svc.cluster.local/functions/{name}");
        assert!(
            env[3]["value"]
                .as_str()
                .unwrap()
                .split(',')
                .any(|r| r == route),
            "{route} in {}",
            env[3]["value"]
        );
        assert_eq!(service["metadata"]["namespace"], "default");
        assert_eq!(container["ports"][0]["containerPort"], 8080);
        assert_eq!(
            service["metadata"]["annotations"]["ferry.dev/route"],
            format!("/functions/{name}")
        );
    }
    // Settings that differ from the defaults reach the service.
    let hog = &services["ferry_tests::hog_memory"]["spec"]["template"]["spec"];
    assert_eq!(
        hog["containers"][0]["resources"]["limits"]["memory"],
        "128Mi"
    );
    assert_eq!(hog["timeoutSeconds"], 20);
    let noop = &services["ferry_tests::noop"]["spec"]["template"]["spec"];
    assert_eq!(noop["containerConcurrency"], 100_000);
}

/// An unchanged binary gives byte-identical packages, which is what lets `ferry deploy` skip
/// unchanged code by its hash.
#[test]
fn packages_are_reproducible() {
    let dir = fixture(ALL);
    let again = Scratch::new("again");
    ok(
        &ferry(&[
            "build",
            "--platform",
            "lambda,http",
            "-p",
            "ferry-tests",
            "--bin",
            PROGRAM,
            "--profile",
            "dev",
            "--strip",
            "--dir",
            again.path().to_str().unwrap(),
        ]),
        "second build",
    );
    for file in [
        format!("lambda/{PROGRAM}.zip"),
        format!("http/{PROGRAM}.oci.tar"),
    ] {
        let first = std::fs::read(dir.join(&file)).unwrap();
        let second = std::fs::read(again.path().join(&file)).unwrap();
        assert!(first == second, "{file} differs between two builds");
    }
}

#[test]
fn bad_input_is_refused_with_a_clear_error() {
    // Not a platform: clap's usage error.
    let output = ferry(&["build", "--platform", "gcp"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(common::stderr(&output).contains("invalid value 'gcp' for '--platform"));

    // Each mistake, and what its message must say.
    let build = |rest: &[&'static str]| [&["build", "--platform"][..], rest].concat();
    let riscv = "riscv64gc-unknown-linux-gnu";
    let cases: [(Vec<&str>, &str, Vec<&str>); 5] = [
        (
            build(&["http", "--dynamic", "-p", "ferry-tests"]),
            "dynamic http",
            vec!["needs a static binary; drop `--dynamic`"],
        ),
        (
            build(&["lambda", "-p", "no-such-package"]),
            "unknown package",
            vec!["no package `no-such-package` in this workspace"],
        ),
        (
            build(&["lambda", "-p", "ferry-tests"]),
            "several binaries",
            vec!["has several binaries", "`ferry-fixture`"],
        ),
        (
            build(&["lambda", "-p", "fib", "--target", riscv]),
            "target without std",
            vec![
                "the standard library for `riscv64gc-unknown-linux-gnu` is not installed",
                "rustup target add riscv64gc-unknown-linux-gnu",
            ],
        ),
        (
            build(&["lambda", "-p", "fib", "--target", "x86_64-pc-windows-msvc"]),
            "static windows",
            vec!["static binaries for Linux targets only"],
        ),
    ];
    for (args, what, said) in cases {
        let stderr = fails(&ferry(&args), what);
        for expected in said {
            assert!(stderr.contains(expected), "{what}: {stderr}");
        }
    }
}

#[test]
fn a_program_that_is_not_a_ferry_program_is_refused() {
    let project = Scratch::new("plain");
    std::fs::create_dir_all(project.path().join("src")).unwrap();
    std::fs::write(
        project.path().join("Cargo.toml"),
        "[package]\nname = \"plain\"\nversion = \"0.1.0\"\nedition = \"2021\"\n\n[workspace]\n",
    )
    .unwrap();
    std::fs::write(
        project.path().join("src/main.rs"),
        "fn main() { println!(\"hello\"); }\n",
    )
    .unwrap();
    let output = ferry_in(
        project.path(),
        &["build", "--platform", "lambda", "--profile", "dev"],
        &[],
    );
    let stderr = fails(&output, "plain program");
    assert!(stderr.contains("is not a ferry program"), "{stderr}");
    assert!(!Path::new(&project.path().join("target/ferry/plain/lambda")).exists());
}
