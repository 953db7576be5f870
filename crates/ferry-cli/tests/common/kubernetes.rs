//! The schemas a Knative Service must satisfy, from their sources: Knative Serving's
//! `services.serving.knative.dev` CRD (its `v1` OpenAPI schema, what the API server checks every
//! Service against) and Kubernetes' OpenAPI spec of the core API (the `Container` and
//! `ObjectMeta` every Service holds), both read from their Go modules, which `go mod download`
//! fetches from the Go module proxy into the module cache (once per machine). Include it with
//! `#[path = "common/kubernetes.rs"] mod kubernetes;` next to `mod common;`.
//!
//! The OpenAPI schemas are made strict as kubeconform's `-strict` schemas are: an object that
//! lists its properties admits no others (unless it preserves unknown fields), so a misspelt
//! field fails as it would in `kubectl apply --validate=strict`. Kubernetes' checks beyond the
//! schemas that a generated Service could break are done here too: names are DNS labels, label
//! values and environment variable names have their syntax.

#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use serde_json::{Value, json};

/// Knative Serving's Go module (Knative 1.20's serving) and Kubernetes' (1.32).
pub const KNATIVE_SERVING: &str = "knative.dev/serving@v0.51.0";
pub const KUBERNETES: &str = "k8s.io/kubernetes@v1.32.4";

/// The directory of a Go module in the module cache, downloaded when missing.
pub fn go_module(module: &str) -> PathBuf {
    let output = Command::new("go")
        .args(["mod", "download", "-json", module])
        .output()
        .unwrap_or_else(|e| {
            panic!("go is needed to fetch {module}: install it (`apt-get install golang-go`; scripts/test.sh does it): {e}")
        });
    let info: Value = serde_json::from_slice(&output.stdout).unwrap_or(Value::Null);
    assert!(
        output.status.success() && info["Error"].is_null(),
        "go mod download {module}: {}{}",
        info["Error"],
        String::from_utf8_lossy(&output.stderr)
    );
    PathBuf::from(info["Dir"].as_str().expect("the module's directory"))
}

/// A compiled schema with its name, for messages.
pub struct Schemas {
    knative_service: jsonschema::Validator,
    container: jsonschema::Validator,
    object_meta: jsonschema::Validator,
}

/// The schemas, read once per test binary.
pub fn schemas() -> &'static Schemas {
    static SCHEMAS: OnceLock<Schemas> = OnceLock::new();
    SCHEMAS.get_or_init(|| {
        let crd_path = go_module(KNATIVE_SERVING).join("config/core/300-resources/service.yaml");
        let crd: Value = serde_norway::from_str(&read(&crd_path)).expect("the CRD's yaml");
        assert_eq!(crd["metadata"]["name"], "services.serving.knative.dev");
        let version = crd["spec"]["versions"]
            .as_array()
            .unwrap()
            .iter()
            .find(|v| v["name"] == "v1")
            .expect("the CRD serves v1");
        let mut service = version["schema"]["openAPIV3Schema"].clone();
        strict(&mut service);

        let spec_path = go_module(KUBERNETES).join("api/openapi-spec/v3/api__v1_openapi.json");
        let spec: Value = serde_json::from_str(&read(&spec_path)).expect("the openapi json");
        let mut definitions = spec["components"]["schemas"].clone();
        assert!(
            definitions.is_object(),
            "{} has no schemas",
            spec_path.display()
        );
        strict(&mut definitions);
        let rooted = |name: &str| {
            json!({
                "$ref": format!("#/components/schemas/{name}"),
                "components": { "schemas": definitions },
            })
        };
        Schemas {
            knative_service: compile(&service),
            container: compile(&rooted("io.k8s.api.core.v1.Container")),
            object_meta: compile(&rooted("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta")),
        }
    })
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn compile(schema: &Value) -> jsonschema::Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .build(schema)
        .expect("a valid json schema")
}

/// OpenAPI to strict JSON Schema: objects with listed properties admit no others, unless they
/// preserve unknown fields; `nullable` admits null.
fn strict(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            let preserves =
                map.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
            if map.contains_key("properties")
                && !map.contains_key("additionalProperties")
                && !preserves
            {
                map.insert("additionalProperties".to_owned(), Value::Bool(false));
            }
            if map.get("nullable") == Some(&Value::Bool(true)) {
                if let Some(Value::String(kind)) = map.get("type").cloned() {
                    map.insert("type".to_owned(), json!([kind, "null"]));
                }
            }
            for value in map.values_mut() {
                strict(value);
            }
        }
        Value::Array(items) => items.iter_mut().for_each(strict),
        _ => {}
    }
}

fn errors(validator: &jsonschema::Validator, value: &Value, what: &str) -> Vec<String> {
    validator
        .iter_errors(value)
        .map(|e| format!("{what}: {} at `{}`", e, e.instance_path()))
        .collect()
}

/// Everything wrong with `service` (a Knative Service as JSON): the schemas' errors and
/// Kubernetes' name checks; empty when it is valid.
pub fn problems(service: &Value) -> Vec<String> {
    let schemas = schemas();
    let mut found = errors(&schemas.knative_service, service, "knative service schema");
    found.extend(errors(
        &schemas.object_meta,
        &service["metadata"],
        "kubernetes ObjectMeta",
    ));
    let containers = service["spec"]["template"]["spec"]["containers"]
        .as_array()
        .cloned()
        .unwrap_or_default();
    if containers.is_empty() {
        found.push("no containers".to_owned());
    }
    for container in &containers {
        // A Knative container needs no name (Knative names it); a pod's needs one.
        let mut named = container.clone();
        named["name"] = json!("user-container");
        found.extend(errors(&schemas.container, &named, "kubernetes Container"));
        for env in container["env"].as_array().into_iter().flatten() {
            let name = env["name"].as_str().unwrap_or_default();
            if !is_c_identifier(name) {
                found.push(format!("env name `{name}` is not a C identifier"));
            }
        }
    }
    let name = service["metadata"]["name"].as_str().unwrap_or_default();
    // Knative Service names are DNS-1035 labels, and leave room for revision suffixes.
    if !is_dns_1035_label(name) || name.len() > 63 {
        found.push(format!("name `{name}` is not a DNS-1035 label"));
    }
    let namespace = service["metadata"]["namespace"]
        .as_str()
        .unwrap_or("default");
    if !is_dns_1123_label(namespace) {
        found.push(format!("namespace `{namespace}` is not a DNS-1123 label"));
    }
    for (key, value) in service["metadata"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
    {
        let value = value.as_str().unwrap_or_default();
        if !is_label_value(value) {
            found.push(format!("label `{key}` has an invalid value `{value}`"));
        }
    }
    found
}

fn is_c_identifier(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_alphabetic() || c == '_')
        && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn is_dns_1123_label(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 63
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && !name.starts_with('-')
        && !name.ends_with('-')
}

fn is_dns_1035_label(name: &str) -> bool {
    is_dns_1123_label(name) && name.starts_with(|c: char| c.is_ascii_lowercase())
}

fn is_label_value(value: &str) -> bool {
    value.is_empty()
        || (value.len() <= 63
            && value.starts_with(|c: char| c.is_ascii_alphanumeric())
            && value.ends_with(|c: char| c.is_ascii_alphanumeric())
            && value
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
}

/// A real Kubernetes API server on loopback: `kube-apiserver` built from Kubernetes' Go modules
/// (`FERRY_TEST_KUBE_APISERVER`; scripts/test.sh builds it once per machine) over Debian's etcd,
/// with static token authentication and Knative Serving's Service CRD installed. No controller
/// runs: Services are stored and validated, not served. Killed and removed when dropped.
pub struct ApiServer {
    processes: Vec<std::process::Child>,
    dir: crate::common::Scratch,
    /// `https://127.0.0.1:<port>`.
    pub url: String,
    /// A kubeconfig whose current context is this server's admin.
    pub kubeconfig: PathBuf,
    http: reqwest::Client,
}

/// The admin's bearer token.
const TOKEN: &str = "ferry-test-admin";

impl ApiServer {
    pub async fn start() -> Self {
        let apiserver = std::env::var_os("FERRY_TEST_KUBE_APISERVER")
            .map(PathBuf::from)
            .filter(|path| path.exists())
            .expect(
                "FERRY_TEST_KUBE_APISERVER names no kube-apiserver: scripts/test.sh builds one from \
                 Kubernetes' Go modules and sets it",
            );
        let dir = crate::common::Scratch::new("kube-apiserver");
        let free = ferry_tests::redis_server::free_port;
        let (client, peer, secure) = (free(), free(), free());
        let path = |name: &str| dir.path().join(name);
        let log = |name: &str| std::fs::File::create(path(name)).unwrap();
        let etcd = Command::new("etcd")
            .arg("--data-dir")
            .arg(path("etcd"))
            .args([
                "--name",
                "default",
                "--listen-client-urls",
                &format!("http://127.0.0.1:{client}"),
                "--advertise-client-urls",
                &format!("http://127.0.0.1:{client}"),
                "--listen-peer-urls",
                &format!("http://127.0.0.1:{peer}"),
                "--initial-advertise-peer-urls",
                &format!("http://127.0.0.1:{peer}"),
                "--initial-cluster",
                &format!("default=http://127.0.0.1:{peer}"),
            ])
            .stdout(log("etcd.log"))
            .stderr(log("etcd.err"))
            .spawn()
            .expect("etcd is installed (`apt-get install etcd-server`; scripts/test.sh does it)");
        // The service account keys the API server insists on; nothing here uses them.
        let key = Command::new("openssl")
            .args(["genpkey", "-algorithm", "RSA", "-out"])
            .arg(path("sa.key"))
            .output()
            .expect("openssl makes the service account key");
        assert!(key.status.success(), "{key:?}");
        std::fs::write(
            path("tokens.csv"),
            format!("{TOKEN},admin,admin,system:masters\n"),
        )
        .unwrap();
        let apiserver = Command::new(apiserver)
            .args([
                &format!("--etcd-servers=http://127.0.0.1:{client}"),
                "--bind-address=127.0.0.1",
                &format!("--secure-port={secure}"),
                "--authorization-mode=RBAC",
                "--service-account-issuer=https://kubernetes.default.svc",
                "--service-cluster-ip-range=10.96.0.0/24",
            ])
            .arg(format!("--cert-dir={}", path("certs").display()))
            .arg(format!(
                "--token-auth-file={}",
                path("tokens.csv").display()
            ))
            .arg(format!(
                "--service-account-key-file={}",
                path("sa.key").display()
            ))
            .arg(format!(
                "--service-account-signing-key-file={}",
                path("sa.key").display()
            ))
            .stdout(log("apiserver.log"))
            .stderr(log("apiserver.err"))
            .spawn()
            .expect("start kube-apiserver");
        let url = format!("https://127.0.0.1:{secure}");
        let kubeconfig = path("kubeconfig");
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\ncurrent-context: test\n\
                 clusters:\n- name: test\n  cluster:\n    server: {url}\n    insecure-skip-tls-verify: true\n\
                 users:\n- name: admin\n  user:\n    token: {TOKEN}\n\
                 contexts:\n- name: test\n  context:\n    cluster: test\n    user: admin\n"
            ),
        )
        .unwrap();
        let http = reqwest::Client::builder()
            .danger_accept_invalid_certs(true)
            .build()
            .unwrap();
        let server = Self {
            processes: vec![apiserver, etcd],
            dir,
            url,
            kubeconfig,
            http,
        };
        server.wait_for("/readyz").await;
        let crd_path = go_module(KNATIVE_SERVING).join("config/core/300-resources/service.yaml");
        let crd: Value = serde_norway::from_str(&read(&crd_path)).unwrap();
        let (status, answer) = server
            .send(
                reqwest::Method::POST,
                "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
                Some(&crd),
            )
            .await;
        assert_eq!(status, 201, "installing the knative service crd: {answer}");
        server
            .wait_for("/apis/serving.knative.dev/v1/services")
            .await;
        server
    }

    /// Waits until `path` answers 200.
    async fn wait_for(&self, path: &str) {
        let started = std::time::Instant::now();
        loop {
            let (status, _) = self.send(reqwest::Method::GET, path, None).await;
            if status == 200 {
                return;
            }
            assert!(
                started.elapsed() < std::time::Duration::from_secs(120),
                "{path} never answered 200 (last {status}); the api server says:\n{}",
                std::fs::read_to_string(self.dir.path().join("apiserver.err"))
                    .unwrap_or_default()
                    .lines()
                    .rev()
                    .take(20)
                    .collect::<Vec<_>>()
                    .join("\n")
            );
            tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        }
    }

    /// A request as the admin: the status (0 when the server is not reachable) and the JSON.
    pub async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> (u16, Value) {
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.url))
            .bearer_auth(TOKEN);
        if let Some(body) = body {
            request = request.json(body);
        }
        match request.send().await {
            Ok(response) => {
                let status = response.status().as_u16();
                (status, response.json().await.unwrap_or(Value::Null))
            }
            Err(_) => (0, Value::Null),
        }
    }
}

impl Drop for ApiServer {
    fn drop(&mut self) {
        for process in &mut self.processes {
            let _ = process.kill();
            let _ = process.wait();
        }
    }
}
