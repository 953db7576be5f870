//! An OpenWhisk controller on loopback, written to the documented REST API and to the Apache
//! OpenWhisk controller's and invoker's behaviour, for testing ferry's OpenWhisk client, deployer
//! and web actions: no OpenWhisk installs here.
//!
//! - `PUT /api/v1/namespaces/{ns}/actions/{name}?overwrite=…` stores an action (`exec`, `limits`,
//!   `parameters`, `annotations`; a new action gets `provide-api-key: false` unless it says
//!   otherwise, and every action an `exec` annotation with its kind, as the controller amends
//!   them); `GET` reads it back, `GET …/actions` lists, `DELETE` removes. The one user's
//!   namespace is `guest` (`_` in paths means it; any other is refused with 403). A new action
//!   needs an `exec` (400 `exec undefined`); an update keeps what it does not set, and merges
//!   its annotations into the stored ones. A `blackbox` exec is stored as the controller stores
//!   it: its `image` parsed and resolved, its code only when not blank, `binary` read off the
//!   code; other kinds as they come (no managed runtime runs here).
//! - Limits are the controller's ([`ControllerLimits`]; OpenWhisk's shipped defaults unless
//!   [`ControllerBuilder::limits`] or [`ControllerBuilder::intra_concurrency`] say otherwise):
//!   a `limits.memory`, `timeout`, `logs` or `concurrency` outside its range is refused with 400
//!   and OpenWhisk's message (`concurrency 8 exceeds allowed threshold of 1`, `memory size 1024
//!   MB exceeds allowed threshold of 512 MB`, `duration 50 milliseconds below allowed threshold
//!   of 100 milliseconds`…), a malformed one with `The request content was malformed:\n…`; a
//!   new action's missing limits are the standard ones, an update's the stored ones.
//!   [`Controller::put_action`] checks the same way and panics with the message.
//! - `GET /` answers the controller's info document, whose `limits` are those in force (memory
//!   and logs in bytes, durations in ms; it says nothing of intra-container concurrency), and
//!   `GET /api/v1` the API's document, without limits, as the real controller does.
//! - `POST /api/v1/namespaces/{ns}/actions/{name}?blocking=…&result=…` runs the action in a
//!   container, as the invoker does: `/init` once with the action's `name`, `main`, `binary`,
//!   code (if it has any) and environment (the `init: true` parameters plus `__OW_NAMESPACE`,
//!   `__OW_ACTION_NAME`, `__OW_DEADLINE`… and `__OW_API_KEY` unless the action's
//!   `provide-api-key` is false), then `/run` per activation with `value` (the action's other
//!   parameters, overridden by the request's) and the same context (`api_key` likewise). Runs
//!   overlap up to the action's concurrency limit (OpenWhisk would start more containers where
//!   this one queues); [`Controller::peak_runs`] tells how many did. As OpenWhisk's invoker, the
//!   controller tells a container nothing of its concurrency: every container's environment
//!   gets `__OW_API_HOST` and the operator's variables ([`ControllerBuilder::container_env`];
//!   [`ControllerBuilder::intra_concurrency`] adds `__OW_ALLOW_CONCURRENT=true` as OpenWhisk's
//!   `docs/intra-concurrency.md` tells operators to), over an image's own.
//! - Which container runs an action:
//!   - a `blackbox` action whose image names a registry (`host:port/name:tag`, as ferry deploys
//!     functions built into images) runs THAT image: pulled over the OCI distribution API (plain
//!     HTTP; an index followed to this host's linux platform; every digest checked), its gzip'd
//!     or plain tar layers unpacked (whiteouts applied) into a directory of the action's, and its
//!     config's `Entrypoint` + `Cmd` started from that tree — paths in the image, `PATH` lookups,
//!     symlinks and `WorkingDir` resolved under it — with the image's `Env`. There is no
//!     container network, so instead of listening on the container's port 8080 the program is
//!     given `FERRY_LISTEN=127.0.0.1:0` and must say `ferry: listening on <url>` on stderr, as
//!     ferry programs do. A pull that fails (unknown image, registry down, an image without a
//!     registry and without code) fails the activation as the invoker does, an action developer
//!     error `Failed to pull container image '<image>'.` (the cause goes to stderr); an image
//!     without its executable, `executable file not found in image <image>`;
//!   - an action with code (`ferry deploy`'s ActionLoop zips, image `openwhisk/dockerskeleton`)
//!     runs under an ActionLoop proxy — `ferry actionloop-host`, which follows the official Go
//!     proxy, given with [`ControllerBuilder::actionloop_proxy`] — that unpacks the zip and runs
//!     its `exec`;
//!   - an action with neither ([`Controller::put_action`]) runs the controller's program as a
//!     native runtime (`FERRY_ROLE=openwhisk`).
//!
//!   A container that ends before it answers `/init` fails the activation with `The action did
//!   not initialize and exited unexpectedly.`, an `/init` that outlives the action's timeout with
//!   `… during initialization.`
//! - The answer follows the controller's rules: 200 with the result on success, 502 with the
//!   result on an application or developer error, 202 with the activation id when a blocking
//!   call outlives the blocking limit; `GET …/activations/{id}` is 404 until the record exists.
//! - Basic auth is checked (401), parameters over 1 MiB are refused (413), a result over 1 MiB
//!   is the developer error `The action produced a response that exceeded the allowed length: …`
//!   (as the invoker truncates it), and a number of throttled answers (429) can be queued.
//! - Web actions, without authentication: `GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS
//!   /api/v1/web/{namespace}/{package}/{action}[.ext][/path]` (package `default` for actions
//!   outside packages; extensions `.http`, the default, `.json`, `.html`, `.svg`, `.text`) runs an
//!   action annotated `web-export: true` (any other is 404) with the request as `__ow_method`
//!   (lowercase), `__ow_headers` (lowercase names, the body's content type included), `__ow_path`
//!   (the rest of the path) and, for a `raw-http` action, `__ow_query` (the query string) and
//!   `__ow_body` (base64 for binary content types and `application/json`, text otherwise).
//!   Without `raw-http`, query parameters and a JSON object or form body become parameters, which
//!   may not override `__ow_*` nor, with `final`, the action's own (400). The `.http` result
//!   `{statusCode, headers, body}` becomes the response, the body decoded from base64 for binary
//!   content types (and for JSON ones when it is base64); an application error answers its
//!   `error` field the same way, a developer error 400. Unless the action has
//!   `web-custom-options: true`, the controller answers `OPTIONS` itself and adds CORS headers.

mod image;
mod limits;

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{HeaderMap, HeaderName, HeaderValue, Method, StatusCode, Uri};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::{any, get};
use serde::Deserialize;
use serde_json::{Map, Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{OnceCell, watch};

pub use self::limits::{ControllerLimits, LimitRange};

/// How long a container's program gets to say where it listens.
const STARTING: Duration = Duration::from_secs(60);
/// OpenWhisk's default limit on an activation's parameters and on its result
/// (`whisk.activation.payload.max`).
const MAX_PARAMETERS: usize = 1 << 20;
/// The namespace of the controller's one user.
pub const NAMESPACE: &str = "guest";
/// The request parameters a web action reserves.
const RESERVED: [&str; 6] = [
    "__ow_method",
    "__ow_headers",
    "__ow_path",
    "__ow_user",
    "__ow_query",
    "__ow_body",
];

/// A controller serving on a loopback port until dropped.
#[derive(Debug)]
pub struct Controller {
    /// e.g. `http://127.0.0.1:41234`.
    pub api_host: String,
    /// The `uuid:key` it accepts.
    pub auth: String,
    state: Arc<ControllerState>,
    server: tokio::task::JoinHandle<()>,
}

impl Controller {
    /// A controller with OpenWhisk's default limits whose containers for actions without code
    /// or image run `program` (a ferry program) as a native runtime. Actions with code need
    /// [`ControllerBuilder::actionloop_proxy`].
    pub async fn start(program: impl Into<PathBuf>) -> Self {
        Self::builder(program).start().await
    }

    /// A controller with OpenWhisk's default limits that also runs actions with code
    /// (ActionLoop zips with `exec`, as `ferry deploy` makes them) under the ActionLoop proxy
    /// `ferry` (`ferry actionloop-host`, one copy at a time as the official proxy).
    pub async fn with_actionloop_proxy(
        program: impl Into<PathBuf>,
        ferry: impl Into<PathBuf>,
    ) -> Self {
        Self::builder(program).actionloop_proxy(ferry).start().await
    }

    /// A controller to configure (limits, proxy, the containers' environment), then
    /// [`ControllerBuilder::start`]; `program` runs the actions without code or image.
    pub fn builder(program: impl Into<PathBuf>) -> ControllerBuilder {
        ControllerBuilder {
            program: program.into(),
            proxy: None,
            limits: ControllerLimits::default(),
            container_env: Vec::new(),
        }
    }

    async fn serve(builder: ControllerBuilder) -> Self {
        static NEXT: AtomicU32 = AtomicU32::new(0);
        builder.limits.check_ranges();
        let auth = "23bc46b1-71f6-4ed5-8c54-816aa4f8c502:ferry-test-key".to_owned();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the controller");
        let api_host = format!("http://{}", listener.local_addr().expect("address"));
        let workdir = std::env::temp_dir().join(format!(
            "ferry-controller-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        let state = Arc::new(ControllerState {
            auth: auth.clone(),
            api_host: api_host.clone(),
            program: builder.program,
            proxy: builder.proxy,
            limits: builder.limits,
            container_env: builder.container_env,
            workdir,
            registry_client: reqwest::Client::builder()
                .timeout(Duration::from_secs(120))
                .build()
                .expect("an HTTP client"),
            actions: Mutex::default(),
            containers: Mutex::default(),
            activations: Mutex::default(),
            throttled: AtomicU32::new(0),
            invocations: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            blocking_limit_ms: AtomicU64::new(60_000),
        });
        let app = router(state.clone());
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Self {
            api_host,
            auth,
            state,
            server,
        }
    }

    /// The limits it enforces.
    pub fn limits(&self) -> &ControllerLimits {
        &self.state.limits
    }

    /// Answers the next `n` invocations with 429.
    pub fn throttle_next(&self, n: u32) {
        self.state.throttled.store(n, Ordering::SeqCst);
    }

    /// How long a blocking invocation waits before answering 202 (60 s by default).
    pub fn set_blocking_limit(&self, limit: Duration) {
        self.state
            .blocking_limit_ms
            .store(limit.as_millis() as u64, Ordering::SeqCst);
    }

    /// Invocation requests received, throttled ones and web action requests included.
    pub fn invocations(&self) -> u64 {
        self.state.invocations.load(Ordering::SeqCst)
    }

    /// Invocations answered 202 (to be polled).
    pub fn accepted(&self) -> u64 {
        self.state.accepted.load(Ordering::SeqCst)
    }

    /// The stored action document, if any.
    pub fn action(&self, name: &str) -> Option<Value> {
        self.state.actions.lock().unwrap().get(name).cloned()
    }

    /// Every stored action document, by name.
    pub fn actions(&self) -> BTreeMap<String, Value> {
        self.state.actions.lock().unwrap().clone()
    }

    /// Stores an action directly, without code or image, so that it runs the controller's
    /// program: `main` names the ferry function, `concurrency` its limit. Limits outside the
    /// controller's are refused as `PUT` refuses them: this panics with the controller's
    /// message.
    pub fn put_action(&self, name: &str, main: &str, concurrency: u32, timeout_ms: u64) {
        let limits = self
            .state
            .limits
            .admit(
                Some(&json!({"concurrency": concurrency, "timeout": timeout_ms})),
                None,
            )
            .unwrap_or_else(|refusal| {
                let (limits::Refusal::Limit(message) | limits::Refusal::Malformed(message)) =
                    refusal;
                panic!(
                    "put_action({name:?}): {message} (a controller that allows more: Controller::builder(…).limits(…) or .intra_concurrency(…))"
                )
            });
        self.state.actions.lock().unwrap().insert(
            name.to_owned(),
            action_document(
                name,
                json!({"kind": "native", "main": main, "binary": true, "code": ""}),
                limits,
                1,
            ),
        );
    }

    /// The most `/run`s the action's current container has had in flight at once (0 when it
    /// has none).
    pub fn peak_runs(&self, action: &str) -> usize {
        let cell = self.state.containers.lock().unwrap().get(action).cloned();
        cell.and_then(|cell| cell.get().map(|c| c.peak.load(Ordering::SeqCst)))
            .unwrap_or(0)
    }
}

/// A [`Controller`] being configured: [`Controller::builder`].
#[derive(Debug)]
pub struct ControllerBuilder {
    program: PathBuf,
    proxy: Option<PathBuf>,
    limits: ControllerLimits,
    container_env: Vec<(String, String)>,
}

impl ControllerBuilder {
    /// The action limits to enforce (OpenWhisk's defaults otherwise).
    pub fn limits(mut self, limits: ControllerLimits) -> Self {
        self.limits = limits;
        self
    }

    /// Runs actions with code under the ActionLoop proxy `ferry` (`ferry actionloop-host`).
    pub fn actionloop_proxy(mut self, ferry: impl Into<PathBuf>) -> Self {
        self.proxy = Some(ferry.into());
        self
    }

    /// A variable for the environment of every container, as the invoker's
    /// `whisk.container-factory.container-args.extra-env-vars` (after `__OW_API_HOST`).
    pub fn container_env(mut self, key: &str, value: &str) -> Self {
        self.container_env.push((key.to_owned(), value.to_owned()));
        self
    }

    /// An operator who enabled intra-container concurrency as OpenWhisk's
    /// `docs/intra-concurrency.md` says: `whisk.concurrency-limit.max` raised to `max`, and
    /// `__OW_ALLOW_CONCURRENT=true` in every container's environment.
    pub fn intra_concurrency(self, max: u64) -> Self {
        let limits = self.limits.clone().with_max_concurrency(max);
        self.limits(limits)
            .container_env("__OW_ALLOW_CONCURRENT", "true")
    }

    /// Starts it on a free loopback port.
    pub async fn start(self) -> Controller {
        Controller::serve(self).await
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.server.abort();
        self.state.containers.lock().unwrap().clear();
        let _ = std::fs::remove_dir_all(&self.state.workdir);
    }
}

#[derive(Debug)]
struct ControllerState {
    auth: String,
    api_host: String,
    program: PathBuf,
    proxy: Option<PathBuf>,
    limits: ControllerLimits,
    /// The operator's extra environment of every container.
    container_env: Vec<(String, String)>,
    /// Where ActionLoop containers unpack their actions and images are unpacked.
    workdir: PathBuf,
    /// Pulls images.
    registry_client: reqwest::Client,
    actions: Mutex<BTreeMap<String, Value>>,
    containers: Mutex<HashMap<String, Arc<OnceCell<Container>>>>,
    activations: Mutex<HashMap<String, Value>>,
    throttled: AtomicU32,
    invocations: AtomicU64,
    accepted: AtomicU64,
    blocking_limit_ms: AtomicU64,
}

/// A started, initialized runtime for one action.
#[derive(Debug)]
struct Container {
    base: String,
    client: reqwest::Client,
    /// Runs beyond the action's concurrency limit wait here (OpenWhisk would start another
    /// container; one is enough for tests).
    slots: tokio::sync::Semaphore,
    /// `/run`s in flight, and the most at once.
    running: AtomicUsize,
    peak: AtomicUsize,
    _child: tokio::process::Child,
}

fn router(state: Arc<ControllerState>) -> Router {
    Router::new()
        .route("/", get(info))
        .route("/api/v1", get(api_info))
        .route("/api/v1/", get(api_info))
        .route(
            "/api/v1/namespaces/{namespace}/actions/{*name}",
            get(get_action)
                .put(put_action)
                .delete(delete_action)
                .post(invoke),
        )
        .route("/api/v1/namespaces/{namespace}/actions", get(list_actions))
        .route(
            "/api/v1/namespaces/{namespace}/activations/{id}",
            get(get_activation),
        )
        .route("/api/v1/web/{*path}", any(web))
        .layer(DefaultBodyLimit::max(64 << 20))
        .with_state(state)
}

/// `GET /`: the controller's info document, its limits those the controller enforces.
async fn info(State(state): State<Arc<ControllerState>>) -> Json<Value> {
    Json(state.limits.info())
}

/// `GET /api/v1`: the API's own document (`RestAPIs.scala`); it holds no limits.
async fn api_info() -> Json<Value> {
    Json(json!({
        "description": "OpenWhisk API",
        "api_version": "1.0.0",
        "api_version_path": "v1",
        "build": "ferry-tests",
        "buildno": "ferry-tests",
        "swagger_paths": {"ui": "/docs", "api-docs": "/api-docs"},
    }))
}

fn whisk_error(status: StatusCode, message: &str) -> Response {
    (
        status,
        Json(json!({ "error": message, "code": "ferry-test-controller" })),
    )
        .into_response()
}

fn not_found() -> Response {
    whisk_error(
        StatusCode::NOT_FOUND,
        "The requested resource does not exist.",
    )
}

/// The 401 answer, unless the request carries the controller's credentials; 403 for a namespace
/// that is not the user's.
fn refusal(state: &ControllerState, headers: &HeaderMap, namespace: &str) -> Option<Response> {
    let expected = format!(
        "Basic {}",
        base64_simd::STANDARD.encode_to_string(state.auth.as_bytes())
    );
    match headers.get("authorization").and_then(|v| v.to_str().ok()) {
        Some(given) if given == expected => {}
        _ => {
            return Some(whisk_error(
                StatusCode::UNAUTHORIZED,
                "The supplied authentication is invalid",
            ));
        }
    }
    if namespace != "_" && namespace != NAMESPACE {
        return Some(whisk_error(
            StatusCode::FORBIDDEN,
            &format!("The supplied authentication is not authorized to access '{namespace}'."),
        ));
    }
    None
}

fn action_document(name: &str, exec: Value, limits: Value, version: u64) -> Value {
    json!({
        "namespace": NAMESPACE,
        "name": name,
        "version": format!("0.0.{version}"),
        "exec": exec,
        "limits": limits,
        "parameters": [],
        "annotations": [],
        "publish": false,
    })
}

/// An annotation's value.
fn annotation<'a>(action: &'a Value, key: &str) -> Option<&'a Value> {
    action["annotations"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

/// An annotation that must be the boolean `true` (how the controller reads `web-export`,
/// `raw-http` and `web-custom-options`).
fn annotation_is_true(action: &Value, key: &str) -> bool {
    annotation(action, key) == Some(&Value::Bool(true))
}

/// OpenWhisk's `isTruthy`: `true`, a non-zero number, a non-empty string, any other non-null
/// value; `absent` when there is no such annotation.
fn annotation_truthy(action: &Value, key: &str, absent: bool) -> bool {
    match annotation(action, key) {
        None => absent,
        Some(Value::Bool(b)) => *b,
        Some(Value::Number(n)) => n.as_f64() != Some(0.0),
        Some(Value::String(s)) => !s.is_empty(),
        Some(Value::Null) => false,
        Some(_) => true,
    }
}

/// The action's parameters: `(init parameters, the others)`.
fn partition_parameters(action: &Value) -> (Map<String, Value>, Map<String, Value>) {
    let (mut init, mut other) = (Map::new(), Map::new());
    for parameter in action["parameters"].as_array().into_iter().flatten() {
        let Some(key) = parameter["key"].as_str() else {
            continue;
        };
        let value = parameter["value"].clone();
        if parameter["init"] == true {
            init.insert(key.to_owned(), value);
        } else {
            other.insert(key.to_owned(), value);
        }
    }
    (init, other)
}

#[derive(Deserialize)]
struct PutQuery {
    #[serde(default)]
    overwrite: bool,
}

async fn put_action(
    State(state): State<Arc<ControllerState>>,
    Path((namespace, name)): Path<(String, String)>,
    Query(query): Query<PutQuery>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(refused) = refusal(&state, &headers, &namespace) {
        return refused;
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return whisk_error(StatusCode::BAD_REQUEST, "The request content was malformed");
    };
    let malformed = |message: &str| {
        whisk_error(
            StatusCode::BAD_REQUEST,
            &format!("The request content was malformed:\n{message}"),
        )
    };
    // The body decodes as `WhiskActionPut`, `exec` first.
    if !body.is_object() {
        return malformed("Object expected in field 'exec'");
    }
    let exec = match body.get("exec") {
        None | Some(Value::Null) => None,
        Some(exec) => match decode_exec(exec) {
            Ok(exec) => Some(exec),
            Err(message) => return malformed(&message),
        },
    };
    let mut actions = state.actions.lock().unwrap();
    let existing = actions.get(&name).cloned();
    // The limits are checked before the action is looked at, an update's missing ones then
    // taken from the stored action.
    let stored_limits = existing.as_ref().map(|a| &a["limits"]);
    let limits = match state.limits.admit(body.get("limits"), stored_limits) {
        Ok(limits) => limits,
        Err(limits::Refusal::Malformed(message)) => return malformed(&message),
        Err(limits::Refusal::Limit(message)) => {
            return whisk_error(StatusCode::BAD_REQUEST, &message);
        }
    };
    let given_annotations = body.get("annotations").and_then(Value::as_array).cloned();
    let document = match existing {
        Some(_) if !query.overwrite => {
            return whisk_error(StatusCode::CONFLICT, "resource already exists");
        }
        // An update: what the request does not set stays as it was; annotations are merged.
        Some(existing) => {
            let version = existing["version"]
                .as_str()
                .and_then(|v| v.rsplit('.').next()?.parse::<u64>().ok())
                .unwrap_or(0)
                + 1;
            let exec = exec.unwrap_or_else(|| existing["exec"].clone());
            let mut document = action_document(&name, exec.clone(), limits, version);
            document["parameters"] = body
                .get("parameters")
                .filter(|p| !p.is_null())
                .unwrap_or(&existing["parameters"])
                .clone();
            let mut annotations: Vec<Value> = existing["annotations"]
                .as_array()
                .cloned()
                .unwrap_or_default();
            for given in given_annotations.into_iter().flatten() {
                annotations.retain(|a| a["key"] != given["key"]);
                annotations.push(given);
            }
            document["annotations"] = amend_annotations(annotations, &exec, false);
            document
        }
        None => {
            let Some(exec) = exec else {
                return whisk_error(StatusCode::BAD_REQUEST, "exec undefined");
            };
            let mut document = action_document(&name, exec.clone(), limits, 1);
            if let Some(parameters) = body.get("parameters").filter(|p| !p.is_null()) {
                document["parameters"] = parameters.clone();
            }
            document["annotations"] =
                amend_annotations(given_annotations.unwrap_or_default(), &exec, true);
            document
        }
    };
    actions.insert(name.clone(), document.clone());
    // A changed action gets a fresh container, as OpenWhisk's invoker does.
    state.containers.lock().unwrap().remove(&name);
    Json(document).into_response()
}

/// The controller amends annotations: `provide-api-key: false` on a new action that does not
/// say, and always `exec` with the action's kind.
fn amend_annotations(mut annotations: Vec<Value>, exec: &Value, create: bool) -> Value {
    if create && !annotations.iter().any(|a| a["key"] == "provide-api-key") {
        annotations.push(json!({ "key": "provide-api-key", "value": false }));
    }
    annotations.retain(|a| a["key"] != "exec");
    annotations.push(json!({ "key": "exec", "value": exec["kind"].clone() }));
    Value::Array(annotations)
}

/// A PUT's `exec` as the controller decodes and stores it (`Exec.scala`); why it does not
/// decode. A blackbox's image is parsed and stored resolved, its code kept only when not blank
/// and `binary` then read off the code; other kinds are stored as they come (no managed
/// runtime runs here).
fn decode_exec(exec: &Value) -> Result<Value, String> {
    let Some(fields) = exec.as_object() else {
        return Err("JSON object expected".to_owned());
    };
    let Some(kind) = fields.get("kind").and_then(Value::as_str) else {
        return Err("'kind' must be a string defined in 'exec'".to_owned());
    };
    let kind = kind.trim().to_lowercase();
    if kind != "blackbox" {
        let mut exec = exec.clone();
        exec["kind"] = json!(kind);
        return Ok(exec);
    }
    let Some(image) = fields.get("image").and_then(Value::as_str) else {
        return Err("'image' must be a string defined in 'exec' for 'blackbox' actions".to_owned());
    };
    let Some(image) = image::ImageName::parse(image) else {
        return Err("could not parse image name".to_owned());
    };
    let mut stored = Map::new();
    stored.insert("kind".into(), json!(kind));
    stored.insert("image".into(), json!(image.resolved()));
    let (code, binary) = match fields.get("code") {
        None => (None, false),
        Some(Value::String(code)) if code.trim().is_empty() => (None, false),
        Some(Value::String(code)) => (Some(json!(code)), is_binary_code(code)),
        // An attachment.
        Some(code) => (
            Some(code.clone()),
            fields
                .get("binary")
                .and_then(Value::as_bool)
                .unwrap_or(false),
        ),
    };
    stored.insert("binary".into(), json!(binary));
    if let Some(code) = code {
        stored.insert("code".into(), code);
    }
    match fields.get("main") {
        None => {}
        Some(Value::String(main)) => {
            stored.insert("main".into(), json!(main));
        }
        Some(_) => {
            return Err(format!(
                "if defined, 'main' be a string in 'exec' for '{kind}' actions"
            ));
        }
    }
    Ok(Value::Object(stored))
}

async fn get_action(
    State(state): State<Arc<ControllerState>>,
    Path((namespace, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = refusal(&state, &headers, &namespace) {
        return refused;
    }
    match state.actions.lock().unwrap().get(&name) {
        Some(action) => Json(action.clone()).into_response(),
        None => not_found(),
    }
}

async fn delete_action(
    State(state): State<Arc<ControllerState>>,
    Path((namespace, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = refusal(&state, &headers, &namespace) {
        return refused;
    }
    state.containers.lock().unwrap().remove(&name);
    match state.actions.lock().unwrap().remove(&name) {
        Some(action) => Json(action).into_response(),
        None => not_found(),
    }
}

async fn list_actions(
    State(state): State<Arc<ControllerState>>,
    Path(namespace): Path<String>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = refusal(&state, &headers, &namespace) {
        return refused;
    }
    let actions: Vec<Value> = state
        .actions
        .lock()
        .unwrap()
        .values()
        .map(|a| {
            let mut summary = a.clone();
            if let Some(exec) = summary.get_mut("exec").and_then(Value::as_object_mut) {
                exec.remove("code");
            }
            summary
        })
        .collect();
    Json(actions).into_response()
}

async fn get_activation(
    State(state): State<Arc<ControllerState>>,
    Path((namespace, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = refusal(&state, &headers, &namespace) {
        return refused;
    }
    match state.activations.lock().unwrap().get(&id) {
        Some(record) => Json(record.clone()).into_response(),
        None => not_found(),
    }
}

#[derive(Deserialize)]
struct InvokeQuery {
    #[serde(default)]
    blocking: bool,
    #[serde(default)]
    result: bool,
}

async fn invoke(
    State(state): State<Arc<ControllerState>>,
    Path((namespace, name)): Path<(String, String)>,
    Query(query): Query<InvokeQuery>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    state.invocations.fetch_add(1, Ordering::SeqCst);
    if let Some(refused) = refusal(&state, &headers, &namespace) {
        return refused;
    }
    let throttle = state
        .throttled
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    if throttle.is_ok() {
        let allowed = limits::ACTIONS_PER_MINUTE;
        return whisk_error(
            StatusCode::TOO_MANY_REQUESTS,
            &format!(
                "Too many requests in the last minute (count: {}, allowed: {allowed}).",
                allowed + 1
            ),
        );
    }
    if body.len() > MAX_PARAMETERS {
        return whisk_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!(
                "The request content was malformed:\nrequest entity too large: {} > {MAX_PARAMETERS} bytes",
                body.len()
            ),
        );
    }
    let parameters: Map<String, Value> = if body.is_empty() {
        Map::new()
    } else {
        match serde_json::from_slice(&body) {
            Ok(Value::Object(parameters)) => parameters,
            _ => {
                return whisk_error(
                    StatusCode::BAD_REQUEST,
                    "The request content was malformed:\nparameters must be an object",
                );
            }
        }
    };
    let Some(action) = state.actions.lock().unwrap().get(&name).cloned() else {
        return not_found();
    };
    let activation = start_activation(&state, &name, action, parameters);
    if !query.blocking {
        return activation.accepted(&state).into_response();
    }
    let record = match activation.wait(&state).await {
        Ok(record) => record,
        Err(accepted) => return accepted.into_response(),
    };
    let status = match record["response"]["status"].as_str() {
        Some("success") => StatusCode::OK,
        Some("whisk internal error") => StatusCode::INTERNAL_SERVER_ERROR,
        _ => StatusCode::BAD_GATEWAY,
    };
    let body = if query.result {
        record["response"]["result"].clone()
    } else {
        record
    };
    (status, Json(body)).into_response()
}

/// An activation running in the background.
struct Running {
    id: String,
    done: watch::Receiver<Option<Value>>,
}

impl Running {
    /// The 202 answer: the activation is to be polled.
    fn accepted(&self, state: &ControllerState) -> (StatusCode, Json<Value>) {
        state.accepted.fetch_add(1, Ordering::SeqCst);
        (
            StatusCode::ACCEPTED,
            Json(json!({ "activationId": self.id })),
        )
    }

    /// The activation's record, or the 202 answer when it outlives the blocking limit.
    async fn wait(mut self, state: &ControllerState) -> Result<Value, (StatusCode, Json<Value>)> {
        let limit = Duration::from_millis(state.blocking_limit_ms.load(Ordering::SeqCst));
        let finished = tokio::time::timeout(limit, self.done.wait_for(Option::is_some))
            .await
            .ok()
            .and_then(|record| record.ok().map(|record| record.clone()));
        match finished {
            Some(record) => Ok(record.unwrap_or(Value::Null)),
            None => Err(self.accepted(state)),
        }
    }
}

/// Runs an activation of `action` with `arguments` (merged over its own parameters) in the
/// background; its record is kept for `GET …/activations/{id}`.
fn start_activation(
    state: &Arc<ControllerState>,
    name: &str,
    action: Value,
    arguments: Map<String, Value>,
) -> Running {
    let id = new_activation_id();
    let (done_tx, done) = watch::channel(None::<Value>);
    let state = state.clone();
    let activation_id = id.clone();
    let name = name.to_owned();
    tokio::spawn(async move {
        let record = activate(&state, &name, &action, arguments, &activation_id).await;
        state
            .activations
            .lock()
            .unwrap()
            .insert(activation_id, record.clone());
        let _ = done_tx.send(Some(record));
    });
    Running { id, done }
}

fn new_activation_id() -> String {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    format!("{:032x}", NEXT.fetch_add(1, Ordering::Relaxed))
}

fn epoch_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
        .as_millis() as u64
}

/// Runs one activation and returns its record.
async fn activate(
    state: &Arc<ControllerState>,
    name: &str,
    action: &Value,
    arguments: Map<String, Value>,
    activation_id: &str,
) -> Value {
    let timeout_ms = action["limits"]["timeout"].as_u64().unwrap_or(60_000);
    let start = epoch_ms();
    // The invoker's activation context: the run's metadata, and (prefixed `__OW_`) the
    // container's environment at /init.
    let mut context = Map::new();
    context.insert("namespace".into(), json!(NAMESPACE));
    context.insert("action_name".into(), json!(format!("/{NAMESPACE}/{name}")));
    context.insert("action_version".into(), action["version"].clone());
    context.insert("activation_id".into(), json!(activation_id));
    context.insert(
        "transaction_id".into(),
        json!(format!("tid-{activation_id}")),
    );
    context.insert("deadline".into(), json!((start + timeout_ms).to_string()));
    if annotation_truthy(action, "provide-api-key", true) {
        context.insert("api_key".into(), json!(state.auth));
    }
    let (init_parameters, mut value) = partition_parameters(action);
    value.extend(arguments);
    let outcome = async {
        let container = container(state, name, action, &init_parameters, &context).await?;
        let _slot = container
            .slots
            .acquire()
            .await
            .map_err(|_| Failure::developer("the container is gone"))?;
        let _in_flight = InFlight::start(&container);
        let mut run = context.clone();
        run.insert("value".into(), Value::Object(value));
        let sent = container
            .client
            .post(format!("{}/run", container.base))
            .json(&run)
            .send();
        match tokio::time::timeout(Duration::from_millis(timeout_ms), sent).await {
            Err(_) => Ok((
                "action developer error",
                json!({ "error": format!("The action exceeded its time limits of {timeout_ms} milliseconds.") }),
            )),
            Ok(Err(e)) => Err(Failure::developer(format!(
                "the container did not answer: {e}"
            ))),
            Ok(Ok(response)) => {
                let ok = response.status().is_success();
                let body = response.bytes().await.unwrap_or_default();
                // The invoker reads at most the payload limit of a result.
                if body.len() > MAX_PARAMETERS {
                    let error = format!(
                        "The action produced a response that exceeded the allowed length: {} > {MAX_PARAMETERS} bytes. The truncated response was: {}",
                        body.len(),
                        String::from_utf8_lossy(&body[..128])
                    );
                    return Ok(("action developer error", json!({ "error": error })));
                }
                let result = serde_json::from_slice::<Value>(&body).ok();
                Ok(match result {
                    Some(result @ Value::Object(_)) if ok && result.get("error").is_some() => {
                        ("application error", result)
                    }
                    Some(result @ (Value::Object(_) | Value::Array(_))) if ok => ("success", result),
                    Some(result @ Value::Object(_)) if result.get("error").is_some() => {
                        ("action developer error", result)
                    }
                    _ => (
                        "action developer error",
                        json!({ "error": "The action did not produce a valid response and exited unexpectedly." }),
                    ),
                })
            }
        }
    }
    .await;
    let (status, result) =
        outcome.unwrap_or_else(|failure| (failure.status, json!({ "error": failure.error })));
    let status_code = match status {
        "success" => 0,
        "application error" => 1,
        "action developer error" => 2,
        _ => 3,
    };
    json!({
        "activationId": activation_id,
        "namespace": NAMESPACE,
        "name": name,
        "start": start,
        "end": epoch_ms(),
        "response": {
            "status": status,
            "statusCode": status_code,
            "success": status_code == 0,
            "result": result,
        },
        "logs": [],
    })
}

/// The action's container, started and initialized on its first activation.
async fn container(
    state: &Arc<ControllerState>,
    name: &str,
    action: &Value,
    init_parameters: &Map<String, Value>,
    context: &Map<String, Value>,
) -> Result<ContainerRef, Failure> {
    let cell = state
        .containers
        .lock()
        .unwrap()
        .entry(name.to_owned())
        .or_default()
        .clone();
    cell.get_or_try_init(|| start_container(state, name, action, init_parameters, context))
        .await?;
    Ok(ContainerRef(cell))
}

struct ContainerRef(Arc<OnceCell<Container>>);

impl std::ops::Deref for ContainerRef {
    type Target = Container;

    fn deref(&self) -> &Container {
        self.0.get().expect("initialized above")
    }
}

/// Why an activation ran no code, as the invoker reports it: its status and `error`.
#[derive(Debug)]
struct Failure {
    status: &'static str,
    error: Value,
}

impl Failure {
    /// The action's fault.
    fn developer(error: impl Into<Value>) -> Self {
        Self {
            status: "action developer error",
            error: error.into(),
        }
    }

    /// The platform's fault.
    fn whisk(error: impl Into<Value>) -> Self {
        Self {
            status: "whisk internal error",
            error: error.into(),
        }
    }
}

/// A `/run` in flight in a container, counted while it lives.
struct InFlight<'a>(&'a Container);

impl<'a> InFlight<'a> {
    fn start(container: &'a Container) -> Self {
        let now = container.running.fetch_add(1, Ordering::SeqCst) + 1;
        container.peak.fetch_max(now, Ordering::SeqCst);
        Self(container)
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.running.fetch_sub(1, Ordering::SeqCst);
    }
}

/// `ImageName` of a stored action's image, if it has one.
fn image_of(action: &Value) -> Option<image::ImageName> {
    action["exec"]["image"]
        .as_str()
        .and_then(image::ImageName::parse)
}

async fn start_container(
    state: &ControllerState,
    name: &str,
    action: &Value,
    init_parameters: &Map<String, Value>,
    context: &Map<String, Value>,
) -> Result<Container, Failure> {
    let concurrency = action["limits"]["concurrency"].as_u64().unwrap_or(1);
    let timeout_ms = action["limits"]["timeout"].as_u64().unwrap_or(60_000);
    let code = action["exec"]["code"].as_str().unwrap_or_default();
    let version = action["version"].as_str().unwrap_or("0");
    let image = image_of(action);
    let mut command = match image {
        // The image named, pulled from its registry.
        Some(image) if image.has_registry() => {
            let root = state.workdir.join(format!("{name}-{version}-image"));
            let unpacked = image::pull(&state.registry_client, &image, &root)
                .await
                .map_err(|cause| {
                    eprintln!(
                        "ferry-tests controller: pulling {} for `{name}`: {cause}",
                        image.resolved()
                    );
                    Failure::developer(format!(
                        "Failed to pull container image '{}'.",
                        image.resolved()
                    ))
                })?;
            let (executable, argv, cwd) = match unpacked.command() {
                image::Start::Run {
                    executable,
                    argv,
                    cwd,
                } => (executable, argv, cwd),
                // `docker run` fails: the invoker blames itself.
                image::Start::NoCommand => {
                    return Err(Failure::whisk(
                        "Failed to provision resources to run the action.",
                    ));
                }
                image::Start::NotFound => {
                    return Err(Failure::developer(format!(
                        "executable file not found in image {}",
                        image.resolved()
                    )));
                }
            };
            std::fs::create_dir_all(&cwd)
                .map_err(|e| Failure::whisk(format!("cannot make the working directory: {e}")))?;
            let mut command = tokio::process::Command::new(executable);
            command
                .arg0(&argv[0])
                .args(&argv[1..])
                .current_dir(cwd)
                .env_clear()
                .envs(unpacked.environment())
                .env("__OW_API_HOST", &state.api_host)
                .envs(state.container_env.iter().cloned())
                // No container network: the program listens on a loopback port of its choice
                // rather than the container's 8080, and says which.
                .env("FERRY_LISTEN", "127.0.0.1:0");
            command
        }
        // Code, for the ActionLoop proxy (`openwhisk/dockerskeleton`).
        _ if !code.trim().is_empty() => {
            let Some(proxy) = &state.proxy else {
                return Err(Failure::developer(format!(
                    "action `{name}` has code, which this controller runs under an ActionLoop proxy: start it with `ControllerBuilder::actionloop_proxy`"
                )));
            };
            let workdir = state.workdir.join(format!("{name}-{version}"));
            // The runtime image's own environment: the proxy passes `__OW_*` on to the executable.
            let mut command = tokio::process::Command::new(proxy);
            command
                .args([
                    "actionloop-host",
                    "--listen",
                    "127.0.0.1:0",
                    "--copies",
                    "1",
                ])
                .arg("--wait-for-ack")
                .arg("--workdir")
                .arg(&workdir)
                .env_clear()
                .env("__OW_API_HOST", &state.api_host)
                .envs(state.container_env.iter().cloned());
            command
        }
        // An image from no registry, without code: nowhere to pull it from.
        Some(image) => {
            eprintln!(
                "ferry-tests controller: `{name}`'s image {} names no registry; this controller pulls from none other",
                image.resolved()
            );
            return Err(Failure::developer(format!(
                "Failed to pull container image '{}'.",
                image.resolved()
            )));
        }
        // Neither code nor image: the controller's own program, as a native runtime.
        None => {
            let mut command = tokio::process::Command::new(&state.program);
            command
                .env_remove("AWS_LAMBDA_RUNTIME_API")
                .env("__OW_API_HOST", &state.api_host)
                .envs(state.container_env.iter().cloned())
                .env("FERRY_ROLE", "openwhisk")
                .env("FERRY_LISTEN", "127.0.0.1:0");
            command
        }
    };
    command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .map_err(|e| Failure::whisk(format!("cannot start the container of `{name}`: {e}")))?;
    let stderr = child.stderr.take().expect("piped");
    let (base, client) = initialize(
        name,
        action,
        code,
        timeout_ms,
        init_parameters,
        context,
        stderr,
    )
    .await?;
    Ok(Container {
        base,
        client,
        slots: tokio::sync::Semaphore::new(concurrency.max(1) as usize),
        running: AtomicUsize::new(0),
        peak: AtomicUsize::new(0),
        _child: child,
    })
}

/// Waits for a started container to listen, then `/init`s it as the invoker does: `name`,
/// `main`, `binary`, the code if the action has any, and `env` (the init parameters, then the
/// activation context as `__OW_*`). Its address and a client.
async fn initialize(
    name: &str,
    action: &Value,
    code: &str,
    timeout_ms: u64,
    init_parameters: &Map<String, Value>,
    context: &Map<String, Value>,
    stderr: tokio::process::ChildStderr,
) -> Result<(String, reqwest::Client), Failure> {
    let abnormal = || Failure::developer("The action did not initialize and exited unexpectedly.");
    let mut lines = BufReader::new(stderr).lines();
    let listening = async {
        loop {
            match lines.next_line().await {
                Ok(Some(line)) => {
                    if let Some(base) = line.strip_prefix("ferry: listening on ") {
                        break Some(base.to_owned());
                    }
                }
                _ => break None,
            }
        }
    };
    // Starting the process stands for `docker run`, which has no deadline of the action's; a
    // program that never says where it listens is given up after a minute.
    let base = match tokio::time::timeout(STARTING, listening).await {
        Ok(Some(base)) => base,
        Ok(None) | Err(_) => return Err(abnormal()),
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let client = reqwest::Client::new();
    let main = action["exec"]["main"].as_str().unwrap_or("main");
    let mut env = Map::new();
    for (key, value) in init_parameters {
        let text = match value {
            Value::String(text) => text.clone(),
            Value::Null => String::new(),
            other => other.to_string(),
        };
        env.insert(key.clone(), Value::String(text));
    }
    for (key, value) in context {
        let text = value
            .as_str()
            .map_or_else(|| value.to_string(), str::to_owned);
        env.insert(format!("__OW_{}", key.to_uppercase()), Value::String(text));
    }
    let mut value = json!({
        "name": name,
        "main": main,
        "binary": action["exec"]["binary"].as_bool().unwrap_or(false),
        "env": env,
    });
    if !code.trim().is_empty() {
        value["code"] = json!(code);
    }
    // `/init` has the action's time limit.
    let init = client
        .post(format!("{base}/init"))
        .json(&json!({ "value": value }))
        .timeout(Duration::from_millis(timeout_ms))
        .send()
        .await
        .map_err(|e| {
            if e.is_timeout() {
                Failure::developer(format!(
                    "The action exceeded its time limits of {timeout_ms} milliseconds during initialization."
                ))
            } else {
                abnormal()
            }
        })?;
    if !init.status().is_success() {
        // The container's `error`, else what it said.
        let text = init.text().await.unwrap_or_default();
        let error = match serde_json::from_str::<Value>(&text) {
            Ok(Value::Object(mut fields)) if fields.contains_key("error") => {
                fields.remove("error").unwrap_or_default()
            }
            _ if text.is_empty() => json!("The action failed during initialization."),
            _ => json!(format!("The action failed during initialization: {text}")),
        };
        return Err(Failure::developer(error));
    }
    Ok((base, client))
}

// ---- Web actions ----

/// The media extensions a web action URL may end in; `.http` when there is none.
const EXTENSIONS: [&str; 5] = [".http", ".json", ".html", ".svg", ".text"];

/// Headers the controller adds to web action responses unless the action handles `OPTIONS`.
const CORS: [(&str, &str); 3] = [
    ("access-control-allow-origin", "*"),
    (
        "access-control-allow-methods",
        "OPTIONS, GET, DELETE, POST, PUT, HEAD, PATCH",
    ),
    (
        "access-control-allow-headers",
        "Authorization, Origin, X-Requested-With, Content-Type, Accept, User-Agent",
    ),
];

async fn web(
    State(state): State<Arc<ControllerState>>,
    method: Method,
    uri: Uri,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let allowed = [
        Method::GET,
        Method::POST,
        Method::PUT,
        Method::PATCH,
        Method::DELETE,
        Method::HEAD,
        Method::OPTIONS,
    ];
    if !allowed.contains(&method) {
        return whisk_error(
            StatusCode::METHOD_NOT_ALLOWED,
            "HTTP method not allowed, supported methods: GET, DELETE, POST, PUT, HEAD, OPTIONS, PATCH",
        );
    }
    state.invocations.fetch_add(1, Ordering::SeqCst);
    let path = uri.path().strip_prefix("/api/v1/web/").unwrap_or_default();
    let mut segments = path.splitn(4, '/');
    let (Some(namespace), Some(package), Some(action_segment)) =
        (segments.next(), segments.next(), segments.next())
    else {
        return not_found();
    };
    let rest = segments
        .next()
        .map_or(String::new(), |rest| format!("/{rest}"));
    let (name, extension) = match EXTENSIONS.iter().find(|e| action_segment.ends_with(*e)) {
        Some(extension) => (
            &action_segment[..action_segment.len() - extension.len()],
            *extension,
        ),
        None => (action_segment, ".http"),
    };
    // Only the user's own namespace, spelled out (`_` names no one here), and actions outside
    // packages: this controller has none.
    if namespace != NAMESPACE || package != "default" || name.is_empty() {
        return not_found();
    }
    let Some(action) = state.actions.lock().unwrap().get(name).cloned() else {
        return not_found();
    };
    if !annotation_is_true(&action, "web-export") {
        return not_found();
    }
    if body.len() > MAX_PARAMETERS {
        return whisk_error(
            StatusCode::PAYLOAD_TOO_LARGE,
            &format!(
                "The request content was malformed:\nrequest entity too large: {} > {MAX_PARAMETERS} bytes",
                body.len()
            ),
        );
    }
    let custom_options = annotation_is_true(&action, "web-custom-options");
    let cors = |mut response: Response| {
        if !custom_options {
            for (name, value) in CORS {
                response.headers_mut().insert(
                    HeaderName::from_static(name),
                    HeaderValue::from_static(value),
                );
            }
        }
        response
    };
    if method == Method::OPTIONS && !custom_options {
        return cors(StatusCode::OK.into_response());
    }
    let arguments = match web_arguments(&action, &method, &uri, &headers, &body, &rest) {
        Ok(arguments) => arguments,
        Err(refused) => return cors(whisk_error(StatusCode::BAD_REQUEST, refused)),
    };
    let running = start_activation(&state, name, action, arguments);
    let id = running.id.clone();
    let mut response = match running.wait(&state).await {
        Ok(record) => web_response(&record, extension),
        Err(_) => whisk_error(StatusCode::ACCEPTED, "Response not yet ready."),
    };
    if let Ok(id) = HeaderValue::from_str(&id) {
        response
            .headers_mut()
            .insert("x-openwhisk-activation-id", id);
    }
    cors(response)
}

/// The parameters of a web action activation, as the controller makes them of the request, or
/// why the request is refused (400).
fn web_arguments(
    action: &Value,
    method: &Method,
    uri: &Uri,
    headers: &HeaderMap,
    body: &[u8],
    rest: &str,
) -> Result<Map<String, Value>, &'static str> {
    let raw = annotation_is_true(action, "raw-http");
    let mut header_map = Map::new();
    for (name, value) in headers {
        if let Ok(value) = value.to_str() {
            header_map.insert(name.as_str().to_owned(), json!(value));
        }
    }
    // A body without a content type is `application/octet-stream`, as the HTTP stack sees it.
    let content_type = match headers.get("content-type").and_then(|v| v.to_str().ok()) {
        Some(content_type) => Some(content_type.to_owned()),
        None if !body.is_empty() => {
            header_map.insert("content-type".to_owned(), json!("application/octet-stream"));
            Some("application/octet-stream".to_owned())
        }
        None => None,
    };
    let media = content_type.as_deref().map(Media::parse);
    let body_value = match (&media, body.is_empty()) {
        (_, true) => None,
        (Some(media), false) if media.is_json() && !raw => Some(
            serde_json::from_slice::<Value>(body)
                .map_err(|_| "The request content was malformed.")?,
        ),
        (Some(media), false) if media.essence == "application/x-www-form-urlencoded" && !raw => {
            Some(Value::Object(query_pairs(&String::from_utf8_lossy(body))))
        }
        (media, false) => {
            if media.as_ref().is_none_or(Media::base64_in_requests) {
                Some(json!(base64_simd::STANDARD.encode_to_string(body)))
            } else {
                Some(json!(String::from_utf8_lossy(body)))
            }
        }
    };
    let query = uri.query().unwrap_or_default();
    let mut arguments = Map::new();
    arguments.insert("__ow_method".into(), json!(method.as_str().to_lowercase()));
    arguments.insert("__ow_headers".into(), Value::Object(header_map));
    arguments.insert("__ow_path".into(), json!(rest));
    if raw {
        arguments.insert("__ow_query".into(), json!(query));
        arguments.insert("__ow_body".into(), body_value.unwrap_or_else(|| json!("")));
        return Ok(arguments);
    }
    let query = query_pairs(query);
    let body_fields = match body_value {
        Some(Value::Object(fields)) => fields,
        Some(other) => Map::from_iter([("__ow_body".to_owned(), other)]),
        None => Map::new(),
    };
    // Neither the query nor a body object may set a reserved parameter or, with `final`, one of
    // the action's own.
    let (init, other) = partition_parameters(action);
    let immutable = annotation_truthy(action, "final", false);
    let refused = query
        .keys()
        .chain(body_fields.keys().filter(|k| *k != "__ow_body"));
    for key in refused {
        if RESERVED.contains(&key.as_str())
            || (immutable && (init.contains_key(key) || other.contains_key(key)))
        {
            return Err(
                "Request defines parameters that are not allowed (e.g., reserved properties).",
            );
        }
    }
    arguments.extend(query);
    arguments.extend(body_fields);
    Ok(arguments)
}

/// `a=1&b=2` as string parameters.
fn query_pairs(text: &str) -> Map<String, Value> {
    let url = reqwest::Url::parse(&format!("http://query/?{text}")).expect("a url");
    url.query_pairs()
        .map(|(key, value)| (key.into_owned(), json!(value)))
        .collect()
}

/// A content type as the controller's HTTP stack classifies it.
struct Media {
    /// `type/subtype`, lowercase.
    essence: String,
    charset: bool,
}

impl Media {
    fn parse(content_type: &str) -> Self {
        let mut parts = content_type.split(';');
        let essence = parts.next().unwrap_or_default().trim().to_ascii_lowercase();
        let charset = parts.any(|p| p.trim().to_ascii_lowercase().starts_with("charset="));
        Self { essence, charset }
    }

    fn valid(&self) -> bool {
        self.essence
            .split_once('/')
            .is_some_and(|(main, sub)| !main.is_empty() && !sub.is_empty())
    }

    fn is_json(&self) -> bool {
        self.essence == "application/json" || self.essence.ends_with("+json")
    }

    /// Whether the media type is binary: all but `text/*`, the registered textual
    /// `application/*` types, and unregistered types given a charset.
    fn binary(&self) -> bool {
        const REGISTERED_TEXT: [&str; 9] = [
            "application/json",
            "application/javascript",
            "application/x-www-form-urlencoded",
            "application/xml",
            "application/xhtml+xml",
            "application/rss+xml",
            "application/atom+xml",
            "application/soap+xml",
            "application/xml-dtd",
        ];
        if self.essence.starts_with("text/") || REGISTERED_TEXT.contains(&self.essence.as_str()) {
            return false;
        }
        let registered_binary = self.essence.starts_with("image/")
            || self.essence.starts_with("audio/")
            || self.essence.starts_with("video/")
            || self.essence.starts_with("multipart/")
            || self.essence == "application/octet-stream";
        registered_binary || !self.charset
    }

    /// A request body of this type reaches the action base64'd: binary, or `application/json`
    /// (the controller's legacy).
    fn base64_in_requests(&self) -> bool {
        self.binary() || self.essence == "application/json"
    }
}

/// The HTTP response of a finished web action activation.
fn web_response(record: &Value, extension: &str) -> Response {
    let result = &record["response"]["result"];
    let projected = match record["response"]["status"].as_str() {
        Some("success") => result,
        // An application error answers its `error` field.
        Some("application error") => match result.get("error") {
            Some(error) => error,
            None => {
                return whisk_error(
                    StatusCode::NOT_FOUND,
                    "The requested property does not exist.",
                );
            }
        },
        _ => {
            return whisk_error(StatusCode::BAD_REQUEST, "Request could not be processed.");
        }
    };
    match extension {
        ".json" => match projected {
            Value::Object(_) | Value::Array(_) => Json(projected.clone()).into_response(),
            _ => invalid_media("application/json"),
        },
        ".html" | ".svg" | ".text" => {
            let field = &extension[1..];
            let value = match projected {
                Value::Object(fields) => fields.get("body").or_else(|| fields.get(field)),
                other => Some(other),
            };
            let content_type = match extension {
                ".html" => "text/html; charset=UTF-8",
                ".svg" => "image/svg+xml",
                _ => "text/plain; charset=UTF-8",
            };
            match value {
                Some(Value::String(text)) => {
                    ([("content-type", content_type)], text.clone()).into_response()
                }
                Some(other) if extension == ".text" => {
                    ([("content-type", content_type)], other.to_string()).into_response()
                }
                None if extension == ".text" => whisk_error(
                    StatusCode::NOT_FOUND,
                    "The requested property does not exist.",
                ),
                _ => invalid_media(content_type),
            }
        }
        _ => http_response(projected),
    }
}

fn invalid_media(media: &str) -> Response {
    whisk_error(
        StatusCode::BAD_REQUEST,
        &format!("Resource representation is only available with these types:\n{media}"),
    )
}

/// A `.http` result, `{statusCode, headers, body}`, as the HTTP response.
fn http_response(result: &Value) -> Response {
    let Some(fields) = result.as_object() else {
        return invalid_media("message/http");
    };
    let mut headers: Vec<(String, String)> = Vec::new();
    match fields.get("headers") {
        None => {}
        Some(Value::Object(given)) => {
            for (name, value) in given {
                let values = match value {
                    Value::Array(values) => values.clone(),
                    single => vec![single.clone()],
                };
                for value in values {
                    let text = match value {
                        Value::String(text) => text,
                        Value::Bool(b) => b.to_string(),
                        Value::Number(n) => n.to_string(),
                        _ => return invalid_media("message/http"),
                    };
                    headers.push((name.clone(), text));
                }
            }
        }
        Some(_) => return invalid_media("message/http"),
    }
    // A number or a string of one, a valid status code.
    let code = match fields.get("statusCode") {
        None => None,
        Some(Value::Number(n)) => Some(n.as_u64()),
        Some(Value::String(s)) => Some(s.parse::<u64>().ok()),
        Some(_) => Some(None),
    };
    let code = match code {
        None => None,
        Some(code) => match code
            .and_then(|c| u16::try_from(c).ok())
            .and_then(|c| StatusCode::from_u16(c).ok())
        {
            Some(code) => Some(code),
            None => return invalid_media("message/http"),
        },
    };
    let content_type = headers
        .iter()
        .find(|(name, _)| name.eq_ignore_ascii_case("content-type"))
        .map(|(_, value)| value.clone());
    headers.retain(|(name, _)| !name.eq_ignore_ascii_case("content-type"));
    let content_error = || {
        whisk_error(
            StatusCode::BAD_REQUEST,
            "Response type in header did not match generated content type.",
        )
    };
    let (status, content_type, body) = match fields.get("body") {
        Some(Value::String(text)) if !text.is_empty() => {
            let content_type = content_type.unwrap_or_else(|| "text/html".to_owned());
            let media = Media::parse(&content_type);
            if !media.valid() {
                return whisk_error(
                    StatusCode::BAD_REQUEST,
                    "Response type in header did not match generated content type.",
                );
            }
            let bytes = if media.binary() || (media.is_json() && looks_base64(text)) {
                match base64_simd::STANDARD.decode_to_vec(text.trim()) {
                    Ok(bytes) => bytes,
                    Err(_) => return content_error(),
                }
            } else {
                text.clone().into_bytes()
            };
            (code.unwrap_or(StatusCode::OK), Some(content_type), bytes)
        }
        None | Some(Value::Null) | Some(Value::String(_)) => {
            (code.unwrap_or(StatusCode::NO_CONTENT), None, Vec::new())
        }
        Some(json) => {
            let content_type = content_type.unwrap_or_else(|| "application/json".to_owned());
            if !Media::parse(&content_type).is_json() {
                return content_error();
            }
            (
                code.unwrap_or(StatusCode::OK),
                Some(content_type),
                serde_json::to_vec(json).unwrap_or_default(),
            )
        }
    };
    let mut response = Response::builder().status(status);
    for (name, value) in &headers {
        response = response.header(name.as_str(), value.as_str());
    }
    if let Some(content_type) = content_type {
        response = response.header("content-type", content_type);
    }
    response
        .body(Body::from(body))
        .unwrap_or_else(|_| invalid_media("message/http"))
}

/// `Exec.isBinaryCode`: the trimmed code is non-empty, whole base64 blocks, padding only at the
/// end.
fn is_binary_code(code: &str) -> bool {
    let code = code.trim().as_bytes();
    let alphabet = |b: &u8| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/');
    if code.is_empty() || code.len() % 4 != 0 {
        return false;
    }
    let padding = code.iter().rev().take_while(|b| **b == b'=').count();
    padding <= 2 && code[..code.len() - padding].iter().all(alphabet)
}

/// The controller's test for a legacy base64 JSON body: non-empty, a multiple of 4 long, only
/// base64 characters.
fn looks_base64(text: &str) -> bool {
    let text = text.trim();
    !text.is_empty()
        && text.len() % 4 == 0
        && text
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn web_action(annotations: Value, parameters: Value) -> Value {
        let mut action = action_document("app", json!({"kind": "blackbox"}), json!({}), 1);
        action["annotations"] = annotations;
        action["parameters"] = parameters;
        action
    }

    async fn body_of(response: Response) -> (StatusCode, HeaderMap, Vec<u8>) {
        let (parts, body) = response.into_parts();
        let bytes = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        (parts.status, parts.headers, bytes.to_vec())
    }

    #[tokio::test]
    async fn http_results_become_responses_as_the_controller_makes_them() {
        let (status, headers, body) = body_of(http_response(&json!({
            "statusCode": 201,
            "headers": {"content-type": "application/octet-stream", "x-n": 1, "set-cookie": ["a=1", "b=2"]},
            "body": "AJ8=",
        })))
        .await;
        assert_eq!((status, &body[..]), (StatusCode::CREATED, &[0u8, 159][..]));
        assert_eq!(headers["x-n"], "1");
        assert_eq!(headers.get_all("set-cookie").iter().count(), 2);
        // JSON that is base64 is decoded; other JSON text, and text, pass as they are.
        let (_, _, body) = body_of(http_response(&json!({
            "headers": {"content-type": "application/json"}, "body": "eyJhIjoxfQ==",
        })))
        .await;
        assert_eq!(body, br#"{"a":1}"#);
        let (_, headers, body) = body_of(http_response(&json!({"body": "<p>hi</p>"}))).await;
        assert_eq!(
            (headers["content-type"].to_str().unwrap(), &body[..]),
            ("text/html", &b"<p>hi</p>"[..])
        );
        // No body: 204; a JSON value body: JSON.
        assert_eq!(
            body_of(http_response(&json!({}))).await.0,
            StatusCode::NO_CONTENT
        );
        let (_, headers, body) = body_of(http_response(&json!({"body": {"a": 1}}))).await;
        assert_eq!(
            (headers["content-type"].to_str().unwrap(), &body[..]),
            ("application/json", &br#"{"a":1}"#[..])
        );
        // Malformed results are the controller's 400.
        for bad in [
            json!("text"),
            json!({"statusCode": "x"}),
            json!({"headers": "x"}),
            json!({"headers": {"content-type": "image/png"}, "body": "not base64!"}),
            json!({"headers": {"content-type": "text/plain"}, "body": {"a": 1}}),
        ] {
            assert_eq!(
                body_of(http_response(&bad)).await.0,
                StatusCode::BAD_REQUEST,
                "{bad}"
            );
        }
    }

    #[test]
    fn requests_become_raw_or_merged_parameters() {
        let uri: Uri = "/api/v1/web/guest/default/app/x?name=Jane".parse().unwrap();
        let mut headers = HeaderMap::new();
        headers.insert("content-type", HeaderValue::from_static("application/json"));
        let raw = web_action(json!([{"key": "raw-http", "value": true}]), json!([]));
        let arguments =
            web_arguments(&raw, &Method::POST, &uri, &headers, br#"{"a":1}"#, "/x").unwrap();
        assert_eq!(arguments["__ow_method"], "post");
        assert_eq!(arguments["__ow_path"], "/x");
        assert_eq!(arguments["__ow_query"], "name=Jane");
        assert_eq!(arguments["__ow_body"], "eyJhIjoxfQ==");
        assert_eq!(
            arguments["__ow_headers"]["content-type"],
            "application/json"
        );
        // Not raw: the query and a JSON object are parameters, and may not override final ones.
        let merged = web_action(
            json!([{"key": "final", "value": true}]),
            json!([{"key": "a", "value": 0}]),
        );
        let refused = web_arguments(&merged, &Method::POST, &uri, &headers, br#"{"a":1}"#, "");
        assert!(refused.is_err());
        let arguments =
            web_arguments(&merged, &Method::POST, &uri, &headers, br#"{"b":1}"#, "").unwrap();
        assert_eq!(
            (arguments["name"].clone(), arguments["b"].clone()),
            (json!("Jane"), json!(1))
        );
        assert!(arguments.get("__ow_query").is_none() && arguments.get("__ow_body").is_none());
        // A binary body without a content type is application/octet-stream, base64'd.
        let arguments =
            web_arguments(&raw, &Method::PUT, &uri, &HeaderMap::new(), &[0, 159], "").unwrap();
        assert_eq!(arguments["__ow_body"], "AJ8=");
        assert_eq!(
            arguments["__ow_headers"]["content-type"],
            "application/octet-stream"
        );
    }
}
