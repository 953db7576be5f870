//! The OpenWhisk Action Interface: `POST /init` and `POST /run` on `$PORT` (default 8080), so the
//! program's binary is a native OpenWhisk runtime (`FERRY_ROLE=openwhisk`).
//!
//! - `/init` `{"value": {"name", "main", "code", "binary", "env"}}` picks the function by the
//!   runtime's one rule ([`crate::runtime`]): `FERRY_FUNCTION`, else `main` (unless it is the
//!   default `main`), else the action's own name, else the program's only function. `env` is
//!   exported, once, before any function runs, and is what the functions' context is configured
//!   from (`FERRY_BACKEND`, `__OW_API_KEY`…). The code is this binary, so `code` is ignored. A
//!   second `/init` is refused with 403, as the Go proxy does.
//! - `/run` decodes `value` as the function's parameters (absent or `{}` for none) and answers
//!   200 with a JSON object: an object output as it is, any other output as
//!   `{"result": output}`. A user error is 200 `{"error": message}` (an application error); bad
//!   input 400 `{"error": …}`; a panic, timeout or other failure 502 `{"error": …}` (a developer
//!   error). The other keys of the body (`activation_id`, `deadline`…) become the invocation's
//!   `__OW_*` metadata ([`crate::Invocation::metadata`]) and its deadline; they are not exported
//!   to the process environment, which activations running side by side would share.
//! - After every activation the sentinel line goes to stdout and to stderr.
//! - With `__OW_ALLOW_CONCURRENT=true` (in the environment or in `/init`'s `env`), `/run` calls
//!   overlap up to the function's `concurrency`; without it a `/run` that arrives while another
//!   runs is refused with 403, as the Node.js runtime does.
//! - A sync body that overruns its timeout retires the container: its activation gets its error,
//!   later `/run`s get 503, and the server exits once in-flight activations finish.

use std::io::Write;
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Json, Response};
use axum::routing::post;
use serde_json::{Map, Value, json};

use super::ACTIVATION_SENTINEL;
use crate::registry::Registration;
use crate::runtime::Runtime;
use crate::runtime::guard::{self, Bodies, Limits};
use crate::wire::Envelope;
use crate::{Codec, Error, ErrorKind, Registry};

/// OpenWhisk's largest action code is 48 MB; `/init` may carry it even though ferry ignores it.
const BODY_LIMIT: usize = 64 << 20;

/// Serves `/init` and `/run` until SIGTERM or SIGINT.
pub(crate) fn serve(registry: &'static Registry) -> ExitCode {
    match crate::runtime::serve::listen_address() {
        Ok(address) => crate::runtime::serve::run_to_exit(
            "openwhisk action interface",
            serve_on(registry, address),
        ),
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

async fn serve_on(registry: &'static Registry, address: SocketAddr) -> std::io::Result<()> {
    let listener = crate::runtime::serve::bind(address)?;
    crate::runtime::serve::announce(&listener)?;
    let state = Arc::new(ActionState {
        registry,
        action: OnceLock::new(),
        busy: AtomicBool::new(false),
        initialized: tokio::sync::Notify::new(),
    });
    let stopping = state.clone();
    // The invoker is the only client, and keeps its connections while the container is paused
    // between activations: an idle timeout would fire the moment the container resumes, closing
    // the connection the invoker is about to send `/run` on.
    let limits = Limits::from_env_idling(None).map_err(|e| std::io::Error::other(e.to_string()))?;
    let router = Bodies::new(&limits, BODY_LIMIT, refused).guard(router(state.clone()));
    guard::serve(listener, router, &limits, async move {
        tokio::select! {
            () = crate::runtime::serve::shutdown_signal() => {}
            () = stopping.retired() => {}
        }
    })
    .await?;
    match state.action.get().and_then(|a| a.runtime.retired_because()) {
        Some(reason) => Err(std::io::Error::other(format!("retired: {reason}"))),
        None => Ok(()),
    }
}

struct ActionState {
    registry: &'static Registry,
    action: OnceLock<Action>,
    /// An activation is running (only tracked without intra-container concurrency).
    busy: AtomicBool,
    /// Wakes [`ActionState::retired`] once `/init` has made the action.
    initialized: tokio::sync::Notify,
}

impl ActionState {
    /// Resolves once the initialized action's runtime retires.
    async fn retired(&self) {
        loop {
            let initialized = self.initialized.notified();
            if let Some(action) = self.action.get() {
                return action.runtime.retired().await;
            }
            initialized.await;
        }
    }
}

struct Action {
    registration: &'static Registration,
    concurrent: bool,
    /// Runs the activations; its context is where the action's functions invoke functions: this
    /// container unless `FERRY_BACKEND` (from `/init`'s `env` or the container's) says otherwise.
    runtime: Runtime,
}

fn router(state: Arc<ActionState>) -> Router {
    Router::new()
        .route("/init", post(init))
        .route("/run", post(run))
        .layer(DefaultBodyLimit::max(BODY_LIMIT))
        .with_state(state)
}

fn error(status: StatusCode, message: impl Into<String>) -> Response {
    (status, Json(json!({ "error": message.into() }))).into_response()
}

/// A request the server's guard refused (too large, too slow, too much in flight).
fn refused(status: StatusCode, failure: &Error) -> Response {
    (status, Json(error_result(failure))).into_response()
}

async fn init(State(state): State<Arc<ActionState>>, body: Bytes) -> Response {
    if state.action.get().is_some() {
        return error(
            StatusCode::FORBIDDEN,
            "Cannot initialize the action more than once.",
        );
    }
    let body: Value = match serde_json::from_slice(&body) {
        Ok(body) => body,
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("invalid /init body: {e}")),
    };
    let value = body.get("value").cloned().unwrap_or(Value::Null);
    let mut concurrent = std::env::var("__OW_ALLOW_CONCURRENT").is_ok_and(|v| v == "true");
    if let Some(env) = value.get("env").and_then(Value::as_object) {
        for (key, value) in env {
            let value = match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            if key == "__OW_ALLOW_CONCURRENT" {
                concurrent = value == "true";
            }
            if key.is_empty() || key.contains(['=', '\0']) || value.contains('\0') {
                // What the platform passes is exported as far as it can be; one odd key must
                // not cost the action its start.
                tracing::warn!(
                    key = key.escape_debug().to_string(),
                    "`/init` env: skipped a variable the environment cannot hold"
                );
                continue;
            }
            // SAFETY: no function has run yet and ferry's own threads do not read the
            // environment; OpenWhisk requires the values to be exported, once, at `/init`.
            unsafe { std::env::set_var(key, value) };
        }
    }
    let text = |key: &str| value.get(key).and_then(Value::as_str).unwrap_or_default();
    let ctx = match crate::runtime::serve::worker_context() {
        Ok(ctx) => ctx,
        Err(e) => return error(StatusCode::BAD_GATEWAY, e.to_string()),
    };
    let runtime = Runtime::new(state.registry, ctx);
    let (main, action) = (
        ("`main`", text("main")),
        ("the action's name", text("name")),
    );
    let names = match main.1 {
        "" | "main" => [action, main],
        _ => [main, action],
    };
    let registration = match runtime.choose(&names) {
        Ok(registration) => registration,
        Err(e) => return error(StatusCode::BAD_GATEWAY, e.to_string()),
    };
    let action = Action {
        registration,
        concurrent,
        runtime,
    };
    if state.action.set(action).is_err() {
        return error(
            StatusCode::FORBIDDEN,
            "Cannot initialize the action more than once.",
        );
    }
    state.initialized.notify_waiters();
    tracing::info!(
        function = registration.descriptor().id,
        concurrent,
        "openwhisk action initialized"
    );
    (StatusCode::OK, Json(json!({ "ok": true }))).into_response()
}

async fn run(State(state): State<Arc<ActionState>>, body: Bytes) -> Response {
    let Some(action) = state.action.get() else {
        return error(
            StatusCode::FORBIDDEN,
            "the action is not initialized: call /init first",
        );
    };
    if let Err(retiring) = action.runtime.admit() {
        return refused(StatusCode::SERVICE_UNAVAILABLE, &retiring);
    }
    let _exclusive = if action.concurrent {
        None
    } else {
        if state.busy.swap(true, Ordering::AcqRel) {
            return error(
                StatusCode::FORBIDDEN,
                "System not ready, status is running.",
            );
        }
        Some(BusyGuard(&state.busy))
    };
    let response = activate(action, &body).await;
    write_sentinels();
    response
}

struct BusyGuard<'a>(&'a AtomicBool);

impl Drop for BusyGuard<'_> {
    fn drop(&mut self) {
        self.0.store(false, Ordering::Release);
    }
}

async fn activate(action: &Action, body: &[u8]) -> Response {
    let body: Map<String, Value> = match serde_json::from_slice::<Value>(body) {
        Ok(Value::Object(map)) => map,
        Ok(_) => {
            return error(
                StatusCode::BAD_REQUEST,
                "the /run body must be a JSON object",
            );
        }
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("invalid /run body: {e}")),
    };
    match run_activation(&action.runtime, action.registration, body).await {
        Ok(result) => (StatusCode::OK, Json(result)).into_response(),
        Err(failure) => failure_response(&failure),
    }
}

/// Runs one activation of `registration` (a `/run` body or an ActionLoop line) and returns its
/// result object. With a store (`FERRY_STORE`), parameters that are a reference in it are
/// fetched, the shared values they refer to are fetched into the cache, and an output over
/// OpenWhisk's 1 MiB result limit is put there, the result then being its reference.
pub(crate) async fn run_activation(
    runtime: &Runtime,
    registration: &'static Registration,
    body: Map<String, Value>,
) -> crate::Result<Value> {
    let function = registration.descriptor().id;
    let run = async {
        #[cfg(feature = "store")]
        let mut body = body;
        #[cfg(feature = "store")]
        if let Some(value) = body.get("value") {
            if let Some(stored) = crate::platform::offload::resolve_value(value).await? {
                body.insert("value".to_owned(), stored);
            }
        }
        let (arguments, envelope) = activation_envelope(function, body)?;
        #[cfg(feature = "store")]
        let _pins = crate::platform::offload::pin_shared(&envelope.blobs).await?;
        let payload = serde_json::to_vec(&arguments).unwrap_or_default();
        let output = runtime
            .invoke(registration, &envelope, payload.into())
            .await?;
        // Without a store the platform applies its own limit, which its operator may have raised.
        #[cfg(feature = "store")]
        let output = if output.len() > super::MAX_PAYLOAD && crate::config::STORE.text().is_some() {
            crate::platform::offload::store_output(output, super::MAX_PAYLOAD).await?
        } else {
            output
        };
        let output: Value = serde_json::from_slice(&output)
            .map_err(|e| Error::protocol(format!("the output is not json: {e}")))?;
        Ok(Value::Object(super::wrap_result(output)))
    };
    run.await
        .map_err(|failure: Error| failure.in_function(function))
}

/// The envelope of an activation (a `/run` body or an ActionLoop line): `value` is the arguments
/// (absent or `null` for none; `{"__ferry_binary": "<base64>"}` from a ferry caller in the binary
/// codec), with the flow route and the ids of shared values a ferry caller added; every other key becomes `__OW_<KEY>` metadata, and `deadline` and `transaction_id`
/// the envelope's deadline and trace.
pub(crate) fn activation_envelope(
    function: &str,
    body: Map<String, Value>,
) -> crate::Result<(Value, Envelope)> {
    let mut envelope = Envelope::new(function, Codec::Json);
    let mut arguments = Value::Object(Map::new());
    for (key, value) in body {
        if key == "value" {
            if !value.is_null() {
                arguments = value;
            }
            continue;
        }
        let text = match value {
            Value::String(text) => text,
            other => other.to_string(),
        };
        envelope
            .metadata
            .insert(format!("__OW_{}", key.to_uppercase()), text);
    }
    envelope.deadline_ms = envelope
        .metadata
        .get("__OW_DEADLINE")
        .and_then(|d| d.parse().ok());
    envelope.trace = envelope.metadata.get("__OW_TRANSACTION_ID").cloned();
    envelope.flow = crate::platform::take_flow_param(&mut arguments)?;
    envelope.blobs = crate::platform::take_shared_param(&mut arguments)?;
    // A ferry caller's binary codec inside JSON: decoded, and answered, in that codec.
    if let Some(encoded) = crate::platform::take_binary_param(&mut arguments) {
        envelope.codec = Codec::BinaryInJson;
        arguments = encoded;
    }
    Ok((arguments, envelope))
}

fn failure_response(failure: &Error) -> Response {
    let status = match failure.kind() {
        ErrorKind::User { .. } => StatusCode::OK,
        ErrorKind::BadInput { .. } => StatusCode::BAD_REQUEST,
        _ => StatusCode::BAD_GATEWAY,
    };
    (status, Json(error_result(failure))).into_response()
}

/// The result object of a failed activation: OpenWhisk's `error` field (the user's message for
/// an application error), and the ferry error itself so a ferry caller gets its kind back.
pub(crate) fn error_result(failure: &Error) -> Value {
    let message = match failure.kind() {
        ErrorKind::User { message, .. } => message.clone(),
        _ => failure.to_string(),
    };
    json!({ "error": message, "ferry": failure })
}

/// Ends the activation's logs: flushes what the function wrote, then the sentinel on both streams.
pub(crate) fn write_sentinels() {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{ACTIVATION_SENTINEL}");
    let _ = stdout.flush();
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{ACTIVATION_SENTINEL}");
    let _ = stderr.flush();
}

#[cfg(test)]
mod tests {
    /// Any activation, whatever its keys and values, becomes arguments and an envelope, or an
    /// error: keys the environment could not hold are metadata like any other.
    mod robustness {
        use proptest::prelude::*;
        use serde_json::{Map, Value};

        use super::super::activation_envelope;

        fn values() -> impl Strategy<Value = Value> {
            prop_oneof![
                Just(Value::Null),
                any::<i64>().prop_map(Value::from),
                any::<String>().prop_map(Value::from),
                "[{}\\[\\]\",:a-z0-9 ]{0,80}".prop_map(|text| {
                    serde_json::from_str(&text).unwrap_or(Value::String(text))
                }),
            ]
        }

        proptest! {
            #[test]
            fn any_activation_becomes_an_envelope_or_an_error(
                entries in prop::collection::vec((any::<String>(), values()), 0..8),
                flow in values(),
            ) {
                let mut body: Map<String, Value> = entries.into_iter().collect();
                let mut value = Map::new();
                value.insert("__ferry_flow".to_owned(), flow);
                body.insert("value".to_owned(), Value::Object(value));
                let _ = activation_envelope("app::f", body);
            }
        }
    }
}
