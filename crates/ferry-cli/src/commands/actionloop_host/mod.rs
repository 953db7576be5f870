//! `ferry actionloop-host`: serves the OpenWhisk Action Interface for ANY ActionLoop executable
//! (Swift, Go, C, Python…) delivered in `/init`, keeping up to `--copies` warm copies so
//! concurrent `/run` calls are served in parallel — the intra-container concurrency the official
//! Go proxy, which runs one copy and one activation at a time, does not have.
//!
//! Errors follow the Go proxy: a second `/init` is 403; no code, 403; a copy that cannot start,
//! 502; a copy that exits during an activation, 400 `{"error":"command exited"}` (and a fresh
//! copy serves the next one); an answer that is not a JSON object or array, 502. After every
//! activation the sentinel goes to stdout and stderr.

mod copy;
mod extract;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock};

use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use self::copy::{Copy, Failure};

const SENTINEL: &str = "XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX";

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0:8080", env = "FERRY_LISTEN")]
    pub listen: std::net::SocketAddr,
    /// Most copies of the executable running at once (concurrent activations).
    #[arg(long, default_value_t = default_copies(), value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub copies: u32,
    /// Directory the action is unpacked into (default: a fresh one under the temp dir).
    #[arg(long)]
    pub workdir: Option<PathBuf>,
    /// Expect `{"ok":true}` on fd 3 from every copy before its first activation.
    #[arg(long, env = "__OW_WAIT_FOR_ACK", value_parser = clap::builder::FalseyValueParser::new())]
    pub wait_for_ack: bool,
}

fn default_copies() -> u32 {
    std::thread::available_parallelism().map_or(2, |n| n.get() as u32)
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let workdir = args.workdir.clone().unwrap_or_else(|| {
        std::env::temp_dir().join(format!("ferry-actionloop-{}", std::process::id()))
    });
    let runtime = tokio::runtime::Runtime::new()?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(args.listen).await?;
        eprintln!("ferry: listening on http://{}", listener.local_addr()?);
        let host = Arc::new(Host {
            workdir,
            copies: args.copies,
            wait_for_ack: args.wait_for_ack,
            action: OnceLock::new(),
        });
        let app = Router::new()
            .route("/init", post(init))
            .route("/run", post(run_activation))
            .layer(DefaultBodyLimit::max(64 << 20))
            .with_state(host);
        axum::serve(listener, app)
            .with_graceful_shutdown(async {
                let _ = tokio::signal::ctrl_c().await;
            })
            .await?;
        Ok(())
    })
}

struct Host {
    workdir: PathBuf,
    copies: u32,
    wait_for_ack: bool,
    action: OnceLock<Action>,
}

struct Action {
    exec: PathBuf,
    env: BTreeMap<String, String>,
    /// One permit per copy that may run.
    slots: Semaphore,
    idle: Mutex<Vec<Copy>>,
}

fn answer(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

async fn init(State(host): State<Arc<Host>>, body: Bytes) -> Response {
    if host.action.get().is_some() {
        return answer(
            StatusCode::FORBIDDEN,
            json!({"error": "Cannot initialize the action more than once."}),
        );
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or_default();
    let value = &body["value"];
    let code = value["code"].as_str().unwrap_or_default();
    if code.is_empty() {
        return answer(
            StatusCode::FORBIDDEN,
            json!({"error": "Missing main/no code to execute."}),
        );
    }
    let binary = value["binary"].as_bool().unwrap_or(false);
    let env: BTreeMap<String, String> = value["env"]
        .as_object()
        .map(|env| {
            env.iter()
                .map(|(k, v)| {
                    (
                        k.clone(),
                        v.as_str().map_or_else(|| v.to_string(), str::to_owned),
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    let exec = match extract::install(&host.workdir, code, binary) {
        Ok(exec) => exec,
        Err(error) => {
            return answer(
                StatusCode::BAD_GATEWAY,
                json!({"error": format!("{error:#}")}),
            );
        }
    };
    // Start one copy now: a broken action fails its /init, not its first /run.
    let first = match Copy::start(&exec, &env, host.wait_for_ack).await {
        Ok(copy) => copy,
        Err(error) => {
            return answer(
                StatusCode::BAD_GATEWAY,
                json!({"error": format!("{error:#}")}),
            );
        }
    };
    let action = Action {
        exec,
        env,
        slots: Semaphore::new(host.copies as usize),
        idle: Mutex::new(vec![first]),
    };
    if host.action.set(action).is_err() {
        return answer(
            StatusCode::FORBIDDEN,
            json!({"error": "Cannot initialize the action more than once."}),
        );
    }
    answer(StatusCode::OK, json!({"ok": true}))
}

async fn run_activation(State(host): State<Arc<Host>>, body: Bytes) -> Response {
    let Some(action) = host.action.get() else {
        return answer(
            StatusCode::INTERNAL_SERVER_ERROR,
            json!({"error": "no action defined yet"}),
        );
    };
    let response = activate(host.wait_for_ack, action, &body).await;
    write_sentinels();
    response
}

async fn activate(wait_for_ack: bool, action: &Action, body: &[u8]) -> Response {
    // The activation goes to the proxy's executable as one line: re-encode compactly.
    let line = match serde_json::from_slice::<Value>(body) {
        Ok(value) => serde_json::to_vec(&value).unwrap_or_default(),
        Err(e) => {
            return answer(
                StatusCode::BAD_REQUEST,
                json!({"error": format!("invalid /run body: {e}")}),
            );
        }
    };
    let Ok(_slot) = action.slots.acquire().await else {
        return answer(
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"error": "shutting down"}),
        );
    };
    let idle = action
        .idle
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .pop();
    let mut copy = match idle {
        Some(copy) => copy,
        None => match Copy::start(&action.exec, &action.env, wait_for_ack).await {
            Ok(copy) => copy,
            Err(error) => {
                return answer(
                    StatusCode::BAD_GATEWAY,
                    json!({"error": format!("{error:#}")}),
                );
            }
        },
    };
    match copy.activate(&line).await {
        Ok(output) => {
            tracing::debug!(copy = ?copy.id(), "activation answered");
            action
                .idle
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .push(copy);
            match serde_json::from_slice::<Value>(&output) {
                Ok(value @ (Value::Object(_) | Value::Array(_))) => answer(StatusCode::OK, value),
                _ => answer(
                    StatusCode::BAD_GATEWAY,
                    json!({"error": "The action did not return a dictionary or array."}),
                ),
            }
        }
        // The copy is dropped (and killed); the next activation starts a fresh one.
        Err(Failure::Exited) => answer(StatusCode::BAD_REQUEST, json!({"error": "command exited"})),
    }
}

fn write_sentinels() {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{SENTINEL}");
    let _ = stdout.flush();
    let mut stderr = std::io::stderr().lock();
    let _ = writeln!(stderr, "{SENTINEL}");
    let _ = stderr.flush();
}
