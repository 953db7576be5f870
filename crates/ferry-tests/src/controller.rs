//! An OpenWhisk controller on loopback, written to the documented REST API, for testing ferry's
//! OpenWhisk client and deployer: no OpenWhisk installs here.
//!
//! - `PUT /api/v1/namespaces/{ns}/actions/{name}?overwrite=…` stores an action (`exec`,
//!   `limits`); `GET` reads it back, `GET …/actions` lists, `DELETE` removes.
//! - `POST /api/v1/namespaces/{ns}/actions/{name}?blocking=…&result=…` runs the action in a
//!   container: a real ferry program in `FERRY_ROLE=openwhisk`, started and `/init`ed on the
//!   first activation with the action's `main`, then sent `/run` — overlapping up to the action's
//!   concurrency limit, with `__OW_ALLOW_CONCURRENT` above 1, as OpenWhisk's invoker does (which
//!   would start more containers where this one queues).
//! - The answer follows the controller's rules: 200 with the result on success, 502 with the
//!   result on an application or developer error, 202 with the activation id when a blocking
//!   call outlives the blocking limit; `GET …/activations/{id}` is 404 until the record exists.
//! - Basic auth is checked (401), parameters over 1 MiB are refused (413), and a number of
//!   throttled answers (429) can be queued.

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Json, Response};
use axum::routing::get;
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::{OnceCell, watch};

/// OpenWhisk's default limit on an activation's parameters.
const MAX_PARAMETERS: usize = 1 << 20;

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
    /// A controller whose containers run `program` (a ferry program).
    pub async fn start(program: impl Into<PathBuf>) -> Self {
        let auth = "23bc46b1-71f6-4ed5-8c54-816aa4f8c502:ferry-test-key".to_owned();
        let state = Arc::new(ControllerState {
            auth: auth.clone(),
            program: program.into(),
            actions: Mutex::default(),
            containers: Mutex::default(),
            activations: Mutex::default(),
            throttled: AtomicU32::new(0),
            invocations: AtomicU64::new(0),
            accepted: AtomicU64::new(0),
            blocking_limit_ms: AtomicU64::new(60_000),
        });
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind the controller");
        let api_host = format!("http://{}", listener.local_addr().expect("address"));
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

    /// Invocation requests received, throttled ones included.
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

    /// Stores an action directly: `main` names the ferry function, `concurrency` its limit.
    pub fn put_action(&self, name: &str, main: &str, concurrency: u32, timeout_ms: u64) {
        self.state.actions.lock().unwrap().insert(
            name.to_owned(),
            action_document(
                name,
                json!({"kind": "native", "main": main, "binary": true, "code": ""}),
                json!({"concurrency": concurrency, "timeout": timeout_ms, "memory": 256}),
                1,
            ),
        );
    }
}

impl Drop for Controller {
    fn drop(&mut self) {
        self.server.abort();
        self.state.containers.lock().unwrap().clear();
    }
}

#[derive(Debug)]
struct ControllerState {
    auth: String,
    program: PathBuf,
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
    _child: tokio::process::Child,
}

fn router(state: Arc<ControllerState>) -> Router {
    Router::new()
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
        .layer(DefaultBodyLimit::max(64 << 20))
        .with_state(state)
}

fn whisk_error(status: StatusCode, message: &str) -> Response {
    (
        status,
        Json(json!({ "error": message, "code": "ferry-test-controller" })),
    )
        .into_response()
}

/// The 401 answer, unless the request carries the controller's credentials.
fn refusal(state: &ControllerState, headers: &HeaderMap) -> Option<Response> {
    let expected = format!(
        "Basic {}",
        base64_simd::STANDARD.encode_to_string(state.auth.as_bytes())
    );
    match headers.get("authorization").and_then(|v| v.to_str().ok()) {
        Some(given) if given == expected => None,
        _ => Some(whisk_error(
            StatusCode::UNAUTHORIZED,
            "The supplied authentication is invalid",
        )),
    }
}

fn action_document(name: &str, exec: Value, limits: Value, version: u64) -> Value {
    json!({
        "namespace": "guest",
        "name": name,
        "version": format!("0.0.{version}"),
        "exec": exec,
        "limits": limits,
        "annotations": [],
        "publish": false,
    })
}

#[derive(Deserialize)]
struct PutQuery {
    #[serde(default)]
    overwrite: bool,
}

async fn put_action(
    State(state): State<Arc<ControllerState>>,
    Path((_namespace, name)): Path<(String, String)>,
    Query(query): Query<PutQuery>,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    if let Some(refused) = refusal(&state, &headers) {
        return refused;
    }
    let Ok(body) = serde_json::from_slice::<Value>(&body) else {
        return whisk_error(StatusCode::BAD_REQUEST, "The request content was malformed");
    };
    let Some(exec) = body.get("exec").cloned() else {
        return whisk_error(
            StatusCode::BAD_REQUEST,
            "The request content was malformed:\nexec undefined",
        );
    };
    let limits = body.get("limits").cloned().unwrap_or_else(|| json!({}));
    let mut actions = state.actions.lock().unwrap();
    let version = match actions.get(&name) {
        Some(_) if !query.overwrite => {
            return whisk_error(StatusCode::CONFLICT, "resource already exists");
        }
        Some(existing) => {
            existing["version"]
                .as_str()
                .and_then(|v| v.rsplit('.').next()?.parse::<u64>().ok())
                .unwrap_or(0)
                + 1
        }
        None => 1,
    };
    let mut document = action_document(&name, exec, limits, version);
    if let Some(annotations) = body.get("annotations") {
        document["annotations"] = annotations.clone();
    }
    if let Some(parameters) = body.get("parameters") {
        document["parameters"] = parameters.clone();
    }
    actions.insert(name.clone(), document.clone());
    // A changed action gets a fresh container, as OpenWhisk's invoker does.
    state.containers.lock().unwrap().remove(&name);
    Json(document).into_response()
}

async fn get_action(
    State(state): State<Arc<ControllerState>>,
    Path((_namespace, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = refusal(&state, &headers) {
        return refused;
    }
    match state.actions.lock().unwrap().get(&name) {
        Some(action) => Json(action.clone()).into_response(),
        None => whisk_error(
            StatusCode::NOT_FOUND,
            "The requested resource does not exist.",
        ),
    }
}

async fn delete_action(
    State(state): State<Arc<ControllerState>>,
    Path((_namespace, name)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = refusal(&state, &headers) {
        return refused;
    }
    state.containers.lock().unwrap().remove(&name);
    match state.actions.lock().unwrap().remove(&name) {
        Some(action) => Json(action).into_response(),
        None => whisk_error(
            StatusCode::NOT_FOUND,
            "The requested resource does not exist.",
        ),
    }
}

async fn list_actions(State(state): State<Arc<ControllerState>>, headers: HeaderMap) -> Response {
    if let Some(refused) = refusal(&state, &headers) {
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
    Path((_namespace, id)): Path<(String, String)>,
    headers: HeaderMap,
) -> Response {
    if let Some(refused) = refusal(&state, &headers) {
        return refused;
    }
    match state.activations.lock().unwrap().get(&id) {
        Some(record) => Json(record.clone()).into_response(),
        None => whisk_error(
            StatusCode::NOT_FOUND,
            "The requested resource does not exist.",
        ),
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
    if let Some(refused) = refusal(&state, &headers) {
        return refused;
    }
    let throttle = state
        .throttled
        .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1));
    if throttle.is_ok() {
        return whisk_error(
            StatusCode::TOO_MANY_REQUESTS,
            "Too many requests in the last minute (count: 61, allowed: 60).",
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
    let parameters: Value = if body.is_empty() {
        json!({})
    } else {
        match serde_json::from_slice(&body) {
            Ok(value @ Value::Object(_)) => value,
            _ => {
                return whisk_error(
                    StatusCode::BAD_REQUEST,
                    "The request content was malformed:\nparameters must be an object",
                );
            }
        }
    };
    let Some(action) = state.actions.lock().unwrap().get(&name).cloned() else {
        return whisk_error(
            StatusCode::NOT_FOUND,
            "The requested resource does not exist.",
        );
    };
    let activation_id = new_activation_id();
    let (done_tx, mut done_rx) = watch::channel(None::<Value>);
    {
        let state = state.clone();
        let activation_id = activation_id.clone();
        let namespace = namespace.clone();
        tokio::spawn(async move {
            let record = activate(
                &state,
                &namespace,
                &name,
                &action,
                parameters,
                &activation_id,
            )
            .await;
            state
                .activations
                .lock()
                .unwrap()
                .insert(activation_id, record.clone());
            let _ = done_tx.send(Some(record));
        });
    }
    let accepted = || {
        state.accepted.fetch_add(1, Ordering::SeqCst);
        (
            StatusCode::ACCEPTED,
            Json(json!({ "activationId": activation_id })),
        )
    };
    if !query.blocking {
        return accepted().into_response();
    }
    let limit = Duration::from_millis(state.blocking_limit_ms.load(Ordering::SeqCst));
    let finished = tokio::time::timeout(limit, done_rx.wait_for(Option::is_some)).await;
    let record = match finished {
        Ok(Ok(record)) => record.clone().unwrap_or(Value::Null),
        _ => return accepted().into_response(),
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
    namespace: &str,
    name: &str,
    action: &Value,
    parameters: Value,
    activation_id: &str,
) -> Value {
    let timeout_ms = action["limits"]["timeout"].as_u64().unwrap_or(60_000);
    let start = epoch_ms();
    let outcome = async {
        let container = container(state, name, action).await?;
        let _slot = container
            .slots
            .acquire()
            .await
            .map_err(|_| "the container is gone".to_owned())?;
        let run = json!({
            "value": parameters,
            "namespace": namespace,
            "action_name": format!("/{namespace}/{name}"),
            "activation_id": activation_id,
            "transaction_id": format!("tid-{activation_id}"),
            "deadline": (start + timeout_ms).to_string(),
        });
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
            Ok(Err(e)) => Err(format!("the container did not answer: {e}")),
            Ok(Ok(response)) => {
                let ok = response.status().is_success();
                let result = response.json::<Value>().await.ok();
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
    // A container that cannot start or initialize fails the activation as the action's fault.
    let (status, result) =
        outcome.unwrap_or_else(|message| ("action developer error", json!({ "error": message })));
    let status_code = match status {
        "success" => 0,
        "application error" => 1,
        "action developer error" => 2,
        _ => 3,
    };
    json!({
        "activationId": activation_id,
        "namespace": namespace,
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
) -> Result<ContainerRef, String> {
    let cell = state
        .containers
        .lock()
        .unwrap()
        .entry(name.to_owned())
        .or_default()
        .clone();
    cell.get_or_try_init(|| start_container(&state.program, name, action))
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

async fn start_container(
    program: &std::path::Path,
    name: &str,
    action: &Value,
) -> Result<Container, String> {
    let concurrency = action["limits"]["concurrency"].as_u64().unwrap_or(1);
    let mut command = tokio::process::Command::new(program);
    command
        .env("FERRY_ROLE", "openwhisk")
        .env("FERRY_LISTEN", "127.0.0.1:0")
        .env_remove("AWS_LAMBDA_RUNTIME_API")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if concurrency > 1 {
        command.env("__OW_ALLOW_CONCURRENT", "true");
    }
    let mut child = command
        .spawn()
        .map_err(|e| format!("cannot start `{}`: {e}", program.display()))?;
    let mut lines = BufReader::new(child.stderr.take().expect("piped")).lines();
    let base = loop {
        match lines.next_line().await {
            Ok(Some(line)) => {
                if let Some(base) = line.strip_prefix("ferry: listening on ") {
                    break base.to_owned();
                }
            }
            _ => return Err("the container exited before listening".to_owned()),
        }
    };
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    let client = reqwest::Client::new();
    let main = action["exec"]["main"].as_str().unwrap_or("main");
    let init = client
        .post(format!("{base}/init"))
        .json(
            &json!({"value": {"name": name, "main": main, "code": "", "binary": true, "env": {}}}),
        )
        .send()
        .await
        .map_err(|e| format!("/init failed: {e}"))?;
    if !init.status().is_success() {
        return Err(format!(
            "/init answered {}: {}",
            init.status(),
            init.text().await.unwrap_or_default()
        ));
    }
    Ok(Container {
        base,
        client,
        slots: tokio::sync::Semaphore::new(concurrency.max(1) as usize),
        _child: child,
    })
}
