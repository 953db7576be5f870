//! `ferry deploy --platform knative` (`http`): the image pushed to a real registry on loopback
//! (Debian's docker-registry), Knative Services whose routes name every function's service,
//! validated against Knative Serving's and Kubernetes' schemas, and those services run on
//! loopback as Knative would run them (the fixture's binary with exactly the env its Service
//! sets, the in-cluster hostnames mapped to loopback ports): chained flows and nested calls
//! cross services, each request reaching the service of its function.
//!
//! `--apply` runs against a real Kubernetes API server on loopback (kube-apiserver over etcd, with
//! Knative Serving's Service CRD and no controllers: Services are stored, not served).

mod common;
#[path = "common/kubernetes.rs"]
mod kubernetes;

use std::collections::{BTreeMap, BTreeSet};
use std::io::{BufRead as _, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, Instant};

use common::{Scratch, fails, ferry_in, fixture, manifest, ok, stdout, web_fixture, workspace};
use ferry::{Context, ErrorKind, Flow, FlowMode, HttpConfig};
use ferry_tests::registry::Registry;
use ferry_tests::{AtMostThousand, Describe, Double, NestedRemaining, ParseNumber};
use serde_json::{Value, json};

/// What `ferry deploy` reads of a build, copied so that each test's deploy writes its own
/// `http/knative/` and `http/routes.env`.
fn copy_of_build(built: &Path, program: &str, scratch: &Scratch) -> PathBuf {
    let dir = scratch.path().join("built");
    std::fs::create_dir_all(dir.join("http")).unwrap();
    for file in [
        "build.json".to_owned(),
        "manifest.json".to_owned(),
        format!("http/{program}.oci.tar"),
    ] {
        std::fs::copy(built.join(&file), dir.join(&file)).unwrap();
    }
    dir
}

/// `ferry deploy --platform knative --dir <dir> <args>`, with no kubeconfig of this machine's
/// (`HOME` is `home`).
fn deploy(dir: &Path, home: &Path, args: &[&str], env: &[(&str, &str)]) -> Output {
    let mut all = vec![
        "deploy",
        "--platform",
        "knative",
        "--dir",
        dir.to_str().unwrap(),
    ];
    all.extend(args);
    let home = home.to_str().unwrap();
    let mut vars = vec![
        ("HOME", home),
        ("KUBECONFIG", ""),
        ("KUBERNETES_SERVICE_HOST", ""),
    ];
    vars.extend(env);
    ferry_in(&workspace(), &all, &vars)
}

/// The Services in `dir`'s `http/knative/`, by name.
fn services(dir: &Path) -> BTreeMap<String, Value> {
    let mut services = BTreeMap::new();
    for entry in std::fs::read_dir(dir.join("http/knative")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let service: Value =
            serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let name = service["metadata"]["name"].as_str().unwrap().to_owned();
        assert_eq!(
            path.file_name().unwrap().to_str().unwrap(),
            format!("{name}.yaml")
        );
        services.insert(name, service);
    }
    services
}

/// A Service's container env, in order.
fn env_of(service: &Value) -> Vec<(String, String)> {
    service["spec"]["template"]["spec"]["containers"][0]["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            (
                e["name"].as_str().unwrap().to_owned(),
                e["value"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

fn env_value<'a>(env: &'a [(String, String)], key: &str) -> Option<&'a str> {
    env.iter().find(|(k, _)| k == key).map(|(_, v)| v.as_str())
}

/// `FERRY_HTTP_ROUTES` as function → URL.
fn routes(value: &str) -> BTreeMap<String, String> {
    ferry::config::HTTP_ROUTES
        .routes_in(&[("FERRY_HTTP_ROUTES", value)][..])
        .unwrap()
}

/// The image reference `ferry deploy` says it pushed.
fn pushed(output: &str) -> String {
    output
        .lines()
        .find_map(|line| line.strip_prefix("pushed "))
        .unwrap_or_else(|| panic!("no `pushed` line in:\n{output}"))
        .to_owned()
}

fn skopeo(args: &[&str]) -> Value {
    let output = Command::new("skopeo").args(args).output().expect(
        "skopeo is needed for these tests: `apt-get install skopeo` (scripts/test.sh installs it)",
    );
    assert!(
        output.status.success(),
        "skopeo {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The function handlers of the fixture's manifest (every name is unique there).
fn handlers(dir: &Path) -> BTreeSet<String> {
    manifest(dir)["functions"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["name"].as_str().unwrap().to_owned())
        .collect()
}

#[test]
fn deploy_pushes_the_image_and_writes_services_with_routes_to_each_other() {
    let scratch = Scratch::new("knative-deploy");
    let dir = copy_of_build(fixture("http"), "ferry-fixture", &scratch);
    let registry = Registry::start();
    let repository = format!("{}/ferry", registry.host());
    let output = deploy(
        &dir,
        scratch.path(),
        &[
            "--registry",
            &repository,
            "--namespace",
            "shop",
            "--domain",
            "example.com",
            "--env",
            "GREETING=hi",
        ],
        &[],
    );
    let text = ok(&output, "ferry deploy --platform knative");
    let reference = pushed(&text);
    let tag = reference
        .strip_prefix(&format!("{repository}/ferry-fixture:"))
        .unwrap_or_else(|| panic!("{reference}"));
    assert!(
        tag.len() == 16 && tag.chars().all(|c| c.is_ascii_hexdigit()),
        "{reference}"
    );
    // The registry holds the image `ferry build` wrote.
    let archive = format!(
        "oci-archive:{}",
        dir.join("http/ferry-fixture.oci.tar").display()
    );
    let remote = skopeo(&[
        "inspect",
        "--tls-verify=false",
        &format!("docker://{reference}"),
    ]);
    assert_eq!(remote["Digest"], skopeo(&["inspect", &archive])["Digest"]);
    assert!(text.contains("kubectl apply -f"), "{text}");

    let services = services(&dir);
    let handlers = handlers(&dir);
    assert_eq!(services.len(), handlers.len());
    // Each function's service, by handler.
    let by_handler: BTreeMap<String, String> = services
        .iter()
        .map(|(name, service)| {
            let env = env_of(service);
            (
                env_value(&env, "FERRY_FUNCTION").unwrap().to_owned(),
                name.clone(),
            )
        })
        .collect();
    assert_eq!(
        by_handler.keys().cloned().collect::<BTreeSet<_>>(),
        handlers
    );
    for (name, service) in &services {
        assert_eq!(service["metadata"]["namespace"], "shop");
        let container = &service["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(container["image"], reference.as_str());
        let env = env_of(service);
        let keys: Vec<&str> = env.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(
            keys,
            [
                "FERRY_ROLE",
                "FERRY_FUNCTION",
                "FERRY_BACKEND",
                "FERRY_HTTP_ROUTES",
                "GREETING"
            ],
            "{name}"
        );
        assert_eq!(env_value(&env, "FERRY_ROLE"), Some("http"));
        assert_eq!(env_value(&env, "FERRY_BACKEND"), Some("http"));
        assert_eq!(env_value(&env, "GREETING"), Some("hi"));
        // Every function at its own service's in-cluster URL.
        let routes = routes(env_value(&env, "FERRY_HTTP_ROUTES").unwrap());
        assert_eq!(routes.len(), handlers.len(), "{name}");
        for (handler, url) in &routes {
            assert_eq!(
                url,
                &format!(
                    "http://{}.shop.svc.cluster.local/functions/{handler}",
                    by_handler[handler]
                )
            );
        }
    }

    // Host programs outside the cluster: the external URLs under `--domain`.
    let env = std::fs::read_to_string(dir.join("http/routes.env")).unwrap();
    let mut lines = env.lines();
    assert_eq!(lines.next(), Some("FERRY_BACKEND=http"));
    let external = routes(
        lines
            .next()
            .and_then(|l| l.strip_prefix("FERRY_HTTP_ROUTES="))
            .unwrap(),
    );
    assert_eq!(external.len(), handlers.len());
    for (handler, url) in &external {
        assert_eq!(
            url,
            &format!(
                "http://{}.shop.example.com/functions/{handler}",
                by_handler[handler]
            )
        );
    }
    assert!(text.contains("env $(cat "), "{text}");

    // The same build pushes to the same reference again.
    let again = ok(
        &deploy(&dir, scratch.path(), &["--registry", &repository], &[]),
        "second deploy",
    );
    assert_eq!(pushed(&again), reference);
    assert!(again.contains("in-cluster urls"), "{again}");
}

#[test]
fn deploy_refuses_what_it_cannot_deploy() {
    let scratch = Scratch::new("knative-refusals");
    let dir = copy_of_build(fixture("http"), "ferry-fixture", &scratch);
    let error = fails(&deploy(&dir, scratch.path(), &[], &[]), "no registry");
    assert!(error.contains("`--registry HOST[:PORT][/PATH]`"), "{error}");
    let cases: [(&[&str], &str); 3] = [
        (
            &["--namespace", "Shop"],
            "the namespace `Shop` is not a dns label",
        ),
        (
            &["--env", "FERRY_ROLE=worker"],
            "`--env FERRY_ROLE=…` is not allowed",
        ),
        (
            &["--env", "FERRY_FUNCTION=add"],
            "`--env FERRY_FUNCTION=…` is not allowed",
        ),
    ];
    for (args, message) in cases {
        let args = [&["--registry", "127.0.0.1:1/ferry"][..], args].concat();
        let error = fails(&deploy(&dir, scratch.path(), &args, &[]), message);
        assert!(error.contains(message), "{error}");
    }
    // Nothing was built for http here.
    let empty = scratch.path().join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    std::fs::copy(dir.join("build.json"), empty.join("build.json")).unwrap();
    std::fs::copy(dir.join("manifest.json"), empty.join("manifest.json")).unwrap();
    let error = fails(
        &deploy(
            &empty,
            scratch.path(),
            &["--registry", "127.0.0.1:1/ferry"],
            &[],
        ),
        "unbuilt",
    );
    assert!(
        error.contains("run `ferry build --platform http` first"),
        "{error}"
    );
}

/// `--apply` without a kubeconfig, or with one whose server is not there, stops before the
/// image is pushed, and says what is missing.
#[test]
fn apply_needs_a_kubeconfig_and_a_reachable_cluster() {
    let scratch = Scratch::new("knative-apply");
    let dir = copy_of_build(fixture("http"), "ferry-fixture", &scratch);
    let registry = Registry::start();
    let repository = format!("{}/ferry", registry.host());
    let args = ["--registry", &repository, "--apply"];

    let output = deploy(&dir, scratch.path(), &args, &[]);
    let error = fails(&output, "--apply without a kubeconfig");
    let config = scratch.path().join(".kube/config");
    assert!(
        error.contains(&format!(
            "`--apply` needs a kubeconfig: there is no `{}`",
            config.display()
        )) && error.contains("set `KUBECONFIG`"),
        "{error}"
    );
    assert!(!stdout(&output).contains("pushed"), "{}", stdout(&output));

    // A kubeconfig whose API server is a closed loopback port.
    let closed = ferry_tests::redis_server::free_port();
    let kubeconfig = scratch.path().join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: here\n\
             clusters:\n- name: here\n  cluster:\n    server: http://127.0.0.1:{closed}\n\
             users:\n- name: me\n  user:\n    token: secret\n\
             contexts:\n- name: here\n  context:\n    cluster: here\n    user: me\n"
        ),
    )
    .unwrap();
    let output = deploy(
        &dir,
        scratch.path(),
        &args,
        &[("KUBECONFIG", kubeconfig.to_str().unwrap())],
    );
    let error = fails(&output, "--apply to a closed port");
    assert!(
        error.contains(&format!(
            "cannot reach the kubernetes api server at http://127.0.0.1:{closed}/"
        )),
        "{error}"
    );
    assert!(!stdout(&output).contains("pushed"), "{}", stdout(&output));

    // A kubeconfig that is not one.
    std::fs::write(&kubeconfig, "clusters: 7\n").unwrap();
    let output = deploy(
        &dir,
        scratch.path(),
        &args,
        &[("KUBECONFIG", kubeconfig.to_str().unwrap())],
    );
    let error = fails(&output, "--apply with a broken kubeconfig");
    assert!(
        error.contains(&format!(
            "cannot use the kubeconfig `{}`",
            kubeconfig.display()
        )),
        "{error}"
    );
}

/// The Services `ferry build` and `ferry deploy` write, for a program of functions and for a web
/// program, are valid Knative Services by the schemas the API server checks them against, and
/// their containers and metadata valid by Kubernetes' core schemas.
#[test]
fn the_services_validate_against_the_knative_and_kubernetes_schemas() {
    let scratch = Scratch::new("knative-schemas");
    let registry = Registry::start();
    let repository = format!("{}/ferry", registry.host());
    let mut all = services(fixture("http"));
    assert!(!all.is_empty());
    let dir = copy_of_build(fixture("http"), "ferry-fixture", &scratch);
    ok(
        &deploy(
            &dir,
            scratch.path(),
            &[
                "--registry",
                &repository,
                "--namespace",
                "team-a",
                "--env",
                "GREETING=hi",
            ],
            &[],
        ),
        "deploy",
    );
    all.extend(
        services(&dir)
            .into_iter()
            .map(|(k, v)| (format!("deployed {k}"), v)),
    );
    let web_scratch = Scratch::new("knative-schemas-web");
    let web_dir = copy_of_build(web_fixture("http"), "web-fixture", &web_scratch);
    ok(
        &deploy(
            &web_dir,
            web_scratch.path(),
            &["--registry", &repository],
            &[],
        ),
        "deploy of the web program",
    );
    let web = services(&web_dir);
    assert!(
        web.values()
            .any(|s| s["metadata"]["annotations"]["ferry.dev/web"] == "true"),
        "the web app has a service"
    );
    all.extend(web.into_iter().map(|(k, v)| (format!("web {k}"), v)));
    for (name, service) in &all {
        let problems = kubernetes::problems(service);
        assert!(problems.is_empty(), "{name}:\n  {}", problems.join("\n  "));
    }

    // The schemas do catch what the API server would refuse.
    let good = all.values().next().unwrap();
    let mut typo = good.clone();
    typo["spec"]["template"]["spec"]["containerConcurency"] = json!(1);
    let mut number = good.clone();
    number["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] = json!(8);
    let mut probe = good.clone();
    probe["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"] =
        json!({"path": "/readyz"});
    let mut named = good.clone();
    named["metadata"]["name"] = json!("Not_A_Label");
    for (what, bad, expected) in [
        ("a misspelt field", typo, "containerConcurency"),
        (
            "an env value that is a number",
            number,
            "is not of type \"string\"",
        ),
        (
            "a probe without a port",
            probe,
            "\"port\" is a required property",
        ),
        (
            "a name that is no dns label",
            named,
            "is not a DNS-1035 label",
        ),
    ] {
        let problems = kubernetes::problems(&bad).join("\n");
        assert!(problems.contains(expected), "{what}: {problems}");
    }
}

/// A loopback stand-in for one Service's in-cluster address: forwards every request to the
/// service's process and records its path.
struct Proxy {
    port: u16,
    target: Arc<OnceLock<String>>,
    seen: Arc<Mutex<Vec<String>>>,
}

impl Proxy {
    async fn start() -> Self {
        use axum::body::{Body, to_bytes};
        use axum::http::{Request, Response};

        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let target: Arc<OnceLock<String>> = Arc::default();
        let seen: Arc<Mutex<Vec<String>>> = Arc::default();
        let client = reqwest::Client::new();
        let (to, log) = (target.clone(), seen.clone());
        let app = axum::Router::new().fallback(move |request: Request<Body>| {
            let (to, log, client) = (to.clone(), log.clone(), client.clone());
            async move {
                let path = request.uri().path().to_owned();
                log.lock().unwrap().push(path.clone());
                let base = to.get().expect("the service started").clone();
                let (parts, body) = request.into_parts();
                let body = to_bytes(body, usize::MAX).await.unwrap();
                let mut forward = client.request(parts.method, format!("{base}{path}"));
                for (name, value) in &parts.headers {
                    if name != "host" && name != "content-length" {
                        forward = forward.header(name, value);
                    }
                }
                let answer = forward
                    .body(body)
                    .send()
                    .await
                    .expect("the service answers");
                let mut response = Response::builder().status(answer.status());
                for (name, value) in answer.headers() {
                    if name != "content-length" && name != "transfer-encoding" {
                        response = response.header(name, value);
                    }
                }
                response
                    .body(Body::from(answer.bytes().await.unwrap()))
                    .unwrap()
            }
        });
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        Self { port, target, seen }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// The paths it forwarded since the last call.
    fn take(&self) -> Vec<String> {
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

/// A Service's process, killed when dropped.
struct Running(Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// The deployed program on loopback: a proxy per Service standing in for its in-cluster
/// address, and the program started as the Services named in `start`, each with exactly its
/// container's env (the in-cluster hostnames replaced by the proxies' addresses) and the
/// address to listen on, which Knative gives as `PORT`.
struct Cluster {
    proxies: BTreeMap<String, Proxy>,
    /// Service name → handler (`web` for the web app).
    handlers: BTreeMap<String, String>,
    running: Vec<Running>,
    /// `FERRY_HTTP_ROUTES` of `http/routes.env`, mapped to loopback.
    routes: String,
}

impl Cluster {
    async fn start(dir: &Path, binary: &Path, start: &[&str]) -> Self {
        let services = services(dir);
        let mut proxies = BTreeMap::new();
        let mut handlers = BTreeMap::new();
        for (name, service) in &services {
            proxies.insert(name.clone(), Proxy::start().await);
            let env = env_of(service);
            let handler = match env_value(&env, "FERRY_FUNCTION") {
                Some(handler) => handler.to_owned(),
                None => "web".to_owned(),
            };
            handlers.insert(name.clone(), handler);
        }
        // Every service address (in-cluster, or external under `--domain`) becomes its proxy's;
        // nothing else is left, so no name is ever looked up.
        let to_loopback = |text: &str| {
            let mut text = text.to_owned();
            for (name, proxy) in &proxies {
                for scheme in ["http://", "https://"] {
                    let host = format!("{scheme}{name}.");
                    while let Some(at) = text.find(&host) {
                        let after = at + host.len();
                        let end = text[after..].find('/').map_or(text.len(), |i| after + i);
                        text.replace_range(at..end, &proxy.url());
                    }
                }
            }
            assert!(
                text.split("://")
                    .skip(1)
                    .all(|rest| rest.starts_with("127.0.0.1:")),
                "an address is left unmapped: {text}"
            );
            text
        };
        let mut running = Vec::new();
        for handler in start {
            let (name, _) = handlers
                .iter()
                .find(|(_, h)| h.as_str() == *handler)
                .unwrap_or_else(|| panic!("no service for {handler}"));
            let mut command = Command::new(binary);
            command.env_clear();
            for (key, value) in env_of(&services[name]) {
                command.env(key, to_loopback(&value));
            }
            let mut child = command
                .env("FERRY_LISTEN", "127.0.0.1:0")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .expect("start the service's program");
            let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
            let base = lines
                .by_ref()
                .map_while(Result::ok)
                .find_map(|line| line.strip_prefix("ferry: listening on ").map(str::to_owned))
                .expect("the service announces where it listens");
            std::thread::spawn(move || lines.for_each(drop));
            proxies[name].target.set(base).unwrap();
            running.push(Running(child));
        }
        let routes_env = std::fs::read_to_string(dir.join("http/routes.env")).unwrap();
        let routes = routes_env
            .lines()
            .find_map(|line| line.strip_prefix("FERRY_HTTP_ROUTES="))
            .expect("routes in routes.env");
        Self {
            routes: to_loopback(routes),
            proxies,
            handlers,
            running,
        }
    }

    /// The host program's context: the http backend with `http/routes.env`'s routes.
    fn host(&self) -> Context {
        let mut config = HttpConfig::new("http://127.0.0.1:1");
        for (function, url) in routes(&self.routes) {
            config = config.route(function, url);
        }
        Context::http(config).unwrap()
    }

    /// Which handler's service got how many requests since the last call; asserts each got
    /// requests for its own function only.
    fn hits(&self) -> BTreeMap<String, usize> {
        let mut hits = BTreeMap::new();
        for (name, proxy) in &self.proxies {
            let paths = proxy.take();
            if paths.is_empty() {
                continue;
            }
            let handler = &self.handlers[name];
            if handler != "web" {
                let own = format!("/functions/{handler}");
                assert!(
                    paths.iter().all(|p| *p == own),
                    "the service of {handler} got {paths:?}"
                );
            }
            hits.insert(handler.clone(), paths.len());
        }
        hits
    }
}

fn counts(pairs: &[(&str, usize)]) -> BTreeMap<String, usize> {
    pairs.iter().map(|(h, n)| ((*h).to_owned(), *n)).collect()
}

/// The built program's binary (the one in its image).
fn binary(dir: &Path) -> PathBuf {
    let info: Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("build.json")).unwrap()).unwrap();
    PathBuf::from(info["binary"].as_str().unwrap())
}

async fn bounded<T>(future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), future)
        .await
        .expect("finished within a minute")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chained_flows_and_nested_calls_cross_services_with_the_env_the_yaml_sets() {
    let built = fixture("http");
    let scratch = Scratch::new("knative-loopback");
    let dir = copy_of_build(built, "ferry-fixture", &scratch);
    let registry = Registry::start();
    let repository = format!("{}/ferry", registry.host());
    let (dir_, home) = (dir.clone(), scratch.path().to_owned());
    let output = tokio::task::spawn_blocking(move || {
        deploy(
            &dir_,
            &home,
            &["--registry", &repository, "--namespace", "flows"],
            &[],
        )
    })
    .await
    .unwrap();
    ok(&output, "deploy");
    let stages = ["parse_number", "double", "at_most_thousand", "describe"];
    let nested = ["nested_remaining", "remaining_ms"];
    let cluster = Cluster::start(&dir, &binary(built), &[&stages[..], &nested[..]].concat()).await;
    let ctx = cluster.host();
    let flow = || {
        Flow::start::<ParseNumber>()
            .then::<Double>()
            .then::<AtMostThousand>()
            .then::<Describe>()
    };

    // Chained: the host calls the first stage's service, whose worker calls the next stage's.
    let started = Instant::now();
    assert_eq!(
        bounded(flow().run(&ctx, " 21".to_owned())).await.unwrap(),
        Some("n=42".to_owned())
    );
    assert!(started.elapsed() < Duration::from_secs(30));
    assert_eq!(ctx.stats().invocations, 1, "one request from the host");
    let every_stage = counts(&stages.map(|s| (s, 1)));
    assert_eq!(cluster.hits(), every_stage);
    // Orchestrated: the host calls each stage's service itself.
    let orchestrated = flow().mode(FlowMode::Orchestrated);
    assert_eq!(
        bounded(orchestrated.run(&ctx, "7".to_owned()))
            .await
            .unwrap(),
        Some("n=14".to_owned())
    );
    assert_eq!(cluster.hits(), every_stage);
    // A non-number ends the flow at the first stage; a failing middle stage is named.
    assert_eq!(
        bounded(flow().run(&ctx, "x".to_owned())).await.unwrap(),
        None
    );
    assert_eq!(cluster.hits(), counts(&[("parse_number", 1)]));
    let error = bounded(flow().run(&ctx, "501".to_owned()))
        .await
        .unwrap_err();
    assert_eq!(error.flow_stage(), Some(2), "{error}");
    assert!(matches!(error.kind(), ErrorKind::User { .. }), "{error}");
    assert!(error.to_string().contains("1002 is above 1000"), "{error}");
    assert_eq!(
        cluster.hits(),
        counts(&[("parse_number", 1), ("double", 1), ("at_most_thousand", 1)])
    );

    // A nested call: the function's service calls another function's service.
    let left = bounded(ctx.call(NestedRemaining {})).await.unwrap();
    assert!(left > 0, "{left}");
    assert_eq!(
        cluster.hits(),
        counts(&[("nested_remaining", 1), ("remaining_ms", 1)])
    );
    drop(cluster.running);
}

/// A web program's web app serves its router and reaches its functions through the routes;
/// its functions' services serve the functions, not the router.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_apps_handlers_reach_the_functions_services() {
    let built = web_fixture("http");
    let scratch = Scratch::new("knative-web");
    let dir = copy_of_build(built, "web-fixture", &scratch);
    let registry = Registry::start();
    let repository = format!("{}/ferry", registry.host());
    let (dir_, home) = (dir.clone(), scratch.path().to_owned());
    let output = tokio::task::spawn_blocking(move || {
        deploy(
            &dir_,
            &home,
            &[
                "--registry",
                &repository,
                "--domain",
                "https://apps.example",
            ],
            &[],
        )
    })
    .await
    .unwrap();
    let text = ok(&output, "deploy");
    let cluster = Cluster::start(&dir, &binary(built), &["web", "add"]).await;
    let web = cluster
        .handlers
        .iter()
        .find(|(_, h)| h.as_str() == "web")
        .map(|(name, _)| name.clone())
        .unwrap();
    assert!(web.starts_with("web-fixture-web-"), "{web}");
    assert!(
        text.contains(&format!("web app: https://{web}.default.apps.example/")),
        "{text}"
    );

    let page = reqwest::get(format!("{}/add/2/3", cluster.proxies[&web].url()))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    assert_eq!(page, "5");
    assert_eq!(cluster.hits(), counts(&[("web", 1), ("add", 1)]));
    // The host reaches the function's service directly too.
    let sum = bounded(cluster.host().call(ferry_tests::Add { a: 40, b: 2 }))
        .await
        .unwrap();
    assert_eq!(sum, 42);
    assert_eq!(cluster.hits(), counts(&[("add", 1)]));
}

/// `--apply` against a real Kubernetes API server (with Knative's Service CRD, no controllers):
/// server-side apply creates every Service as written, leaves them alone when nothing changed,
/// updates them when something did, notes the app's Services the program no longer has, and
/// explains what the server refuses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn apply_creates_updates_and_keeps_services_on_a_real_api_server() {
    let server = kubernetes::ApiServer::start().await;
    let (status, answer) = server
        .send(
            reqwest::Method::POST,
            "/api/v1/namespaces",
            Some(&json!({"metadata": {"name": "shop"}})),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let scratch = Scratch::new("knative-apply-real");
    let dir = copy_of_build(fixture("http"), "ferry-fixture", &scratch);
    let registry = Registry::start();
    let repository = format!("{}/ferry", registry.host());
    let kubeconfig = server.kubeconfig.to_str().unwrap().to_owned();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "--registry".to_owned(),
            repository.clone(),
            "--apply".to_owned(),
        ];
        if !extra.contains(&"--namespace") {
            args.extend(["--namespace".to_owned(), "shop".to_owned()]);
        }
        args.extend(extra.iter().map(|a| (*a).to_owned()));
        let (dir, home, kubeconfig) = (dir.clone(), scratch.path().to_owned(), kubeconfig.clone());
        tokio::task::spawn_blocking(move || {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            deploy(&dir, &home, &args, &[("KUBECONFIG", &kubeconfig)])
        })
    };
    let functions = handlers(&dir).len();
    let summary = |created: usize, updated: usize, unchanged: usize| {
        format!(
            "knative {}/ namespace shop: {created} created, {updated} updated, {unchanged} unchanged",
            server.url
        )
    };

    let text = ok(&run(&[]).await.unwrap(), "first apply");
    assert!(text.contains(&summary(functions, 0, 0)), "{text}");
    // What the API server stored is what was written, under ferry's field manager.
    let written = services(&dir);
    for (name, service) in &written {
        let (status, stored) = server
            .send(
                reqwest::Method::GET,
                &format!("/apis/serving.knative.dev/v1/namespaces/shop/services/{name}"),
                None,
            )
            .await;
        assert_eq!(status, 200, "{name}: {stored}");
        // The CRD defaults the port's protocol; the rest is as written.
        let mut spec = stored["spec"].clone();
        let port = &mut spec["template"]["spec"]["containers"][0]["ports"][0];
        assert_eq!(port["protocol"], "TCP");
        port.as_object_mut().unwrap().remove("protocol");
        assert_eq!(spec, service["spec"], "{name}");
        assert_eq!(stored["metadata"]["labels"], service["metadata"]["labels"]);
        assert_eq!(
            stored["metadata"]["annotations"],
            service["metadata"]["annotations"]
        );
        let managers = &stored["metadata"]["managedFields"];
        assert_eq!(managers[0]["manager"], "ferry", "{managers}");
        assert_eq!(managers[0]["operation"], "Apply", "{managers}");
    }

    let text = ok(&run(&[]).await.unwrap(), "apply again");
    assert!(text.contains(&summary(0, 0, functions)), "{text}");
    let text = ok(
        &run(&["--env", "GREETING=hi"]).await.unwrap(),
        "apply a change",
    );
    assert!(text.contains(&summary(0, functions, 0)), "{text}");
    let (name, _) = written.iter().next().unwrap();
    let (_, stored) = server
        .send(
            reqwest::Method::GET,
            &format!("/apis/serving.knative.dev/v1/namespaces/shop/services/{name}"),
            None,
        )
        .await;
    assert_eq!(
        stored["spec"]["template"]["spec"]["containers"][0]["env"][4],
        json!({"name": "GREETING", "value": "hi"})
    );

    // A Service of the app that the program no longer has is named, not deleted.
    let mut old = written.values().next().unwrap().clone();
    old["metadata"]["name"] = json!("ferry-fixture-gone-00000000");
    let (status, answer) = server
        .send(
            reqwest::Method::POST,
            "/apis/serving.knative.dev/v1/namespaces/shop/services",
            Some(&old),
        )
        .await;
    assert_eq!(status, 201, "{answer}");
    let text = ok(
        &run(&["--env", "GREETING=hi"]).await.unwrap(),
        "apply with an extra",
    );
    assert!(
        text.contains(
            "note: 1 knative service(s) of app `ferry-fixture` are no longer in the program"
        ) && text.contains("ferry-fixture-gone-00000000"),
        "{text}"
    );

    // What the server refuses, explained: a namespace that does not exist, and a cluster
    // without Knative Serving.
    let output = run(&["--namespace", "nowhere"]).await.unwrap();
    let error = fails(&output, "apply to a missing namespace");
    assert!(
        error.contains("answered 404 NotFound: namespaces \"nowhere\" not found")
            && error.contains("create the namespace first"),
        "{error}"
    );
    let stranger = scratch.path().join("stranger-kubeconfig");
    std::fs::write(
        &stranger,
        std::fs::read_to_string(&server.kubeconfig)
            .unwrap()
            .replace("token: ", "token: not-"),
    )
    .unwrap();
    let output = deploy(
        &dir,
        scratch.path(),
        &["--registry", &repository, "--apply"],
        &[("KUBECONFIG", stranger.to_str().unwrap())],
    );
    let error = fails(&output, "apply with credentials the server refuses");
    assert!(
        error.contains("answered 401 Unauthorized")
            && error.contains("the kubeconfig's credentials were not accepted"),
        "{error}"
    );
    let (status, answer) = server
        .send(
            reqwest::Method::DELETE,
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/services.serving.knative.dev",
            None,
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let started = Instant::now();
    loop {
        let (status, _) = server
            .send(reqwest::Method::GET, "/apis/serving.knative.dev/v1", None)
            .await;
        if status == 404 {
            break;
        }
        assert!(started.elapsed() < Duration::from_secs(60), "the crd stays");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let output = run(&[]).await.unwrap();
    let error = fails(&output, "apply without knative");
    assert!(
        error.contains("is Knative Serving installed in this cluster?"),
        "{error}"
    );
    assert!(!stdout(&output).contains("pushed"), "{}", stdout(&output));
}
