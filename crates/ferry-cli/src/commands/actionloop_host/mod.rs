//! `ferry actionloop-host`: serves the OpenWhisk Action Interface for ANY ActionLoop executable
//! (Swift, Go, C, Python…) delivered in `/init`, keeping up to `--copies` warm copies so
//! concurrent `/run` calls are served in parallel — the intra-container concurrency the official
//! Go proxy, which runs one copy and one activation at a time, does not have.
//!
//! Errors follow the Go proxy: a second `/init` is 403; no code, 403; an action that cannot be
//! unpacked, 502; a copy that exits before it is ready, 502 `cannot start action: …`; a copy that
//! exits during an activation, 400 `{"error":"command exited"}` (and a fresh copy serves the next
//! one); an answer that is not a JSON object or array, 502. After every activation the sentinel
//! goes to stdout and stderr.
//!
//! On SIGTERM or SIGINT the host stops accepting, lets the `/run`s in flight finish (for up to
//! `--drain-timeout`), kills every copy's process group, removes its work directory and exits 0.

mod copy;
mod extract;

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::time::Duration;

use anyhow::Context as _;
use axum::Router;
use axum::body::Bytes;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use serde_json::{Value, json};
use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::Semaphore;

use self::copy::{Copy, Failure, Groups};
use self::extract::WorkDir;

const SENTINEL: &str = "XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX";

/// After the drain budget, how long the `/run`s whose copies were killed get to answer, and
/// then how long the killed copies get to be reaped.
const LAST_ANSWERS: Duration = Duration::from_secs(1);

#[derive(Debug, clap::Args)]
pub struct Args {
    /// Address to listen on.
    #[arg(long, default_value = "0.0.0.0:8080", env = "FERRY_LISTEN")]
    pub listen: std::net::SocketAddr,
    /// Most copies of the executable running at once (concurrent activations).
    #[arg(long, default_value_t = default_copies(), value_parser = clap::value_parser!(u32).range(1..=1024))]
    pub copies: u32,
    /// Directory the action is unpacked into (default: a new one under the temp dir, removed on
    /// exit). Made 0700 if missing; an existing one must be this user's and writable by no one
    /// else.
    #[arg(long)]
    pub workdir: Option<PathBuf>,
    /// Expect `{"ok":true}` on fd 3 from every copy before its first activation.
    #[arg(long, env = "__OW_WAIT_FOR_ACK", value_parser = clap::builder::FalseyValueParser::new())]
    pub wait_for_ack: bool,
    /// Seconds that `/run`s in flight get to finish after SIGTERM or SIGINT before their copies
    /// are killed.
    #[arg(long, value_name = "SECONDS", default_value = "10", value_parser = parse_seconds)]
    pub drain_timeout: Duration,
}

fn default_copies() -> u32 {
    std::thread::available_parallelism().map_or(2, |n| n.get() as u32)
}

fn parse_seconds(text: &str) -> Result<Duration, String> {
    let seconds: f64 = text
        .parse()
        .map_err(|_| format!("`{text}` is not a number of seconds"))?;
    Duration::try_from_secs_f64(seconds).map_err(|_| format!("`{text}` is not a duration"))
}

pub fn run(args: &Args) -> anyhow::Result<()> {
    let workdir = match &args.workdir {
        Some(dir) => WorkDir::at(dir)?,
        None => WorkDir::fresh()?,
    };
    let host = Arc::new(Host {
        workdir,
        copies: args.copies,
        wait_for_ack: args.wait_for_ack,
        groups: Arc::default(),
        init: tokio::sync::Mutex::new(()),
        action: OnceLock::new(),
    });
    let runtime = tokio::runtime::Runtime::new()?;
    let served = runtime.block_on(serve(args, host.clone()));
    // Dropping the runtime drops any `/run` still pending, and with it its copy (killed).
    drop(runtime);
    // The last reference: the work directory goes with it.
    drop(host);
    served
}

async fn serve(args: &Args, host: Arc<Host>) -> anyhow::Result<()> {
    // Before the address is announced, so that a stop signal from then on is handled.
    let mut terminate = signal(SignalKind::terminate()).context("cannot handle SIGTERM")?;
    let mut interrupt = signal(SignalKind::interrupt()).context("cannot handle SIGINT")?;
    let listener = tokio::net::TcpListener::bind(args.listen).await?;
    eprintln!("ferry: listening on http://{}", listener.local_addr()?);
    let app = Router::new()
        .route("/init", post(init))
        .route("/run", post(run_activation))
        .layer(DefaultBodyLimit::max(64 << 20))
        .with_state(host.clone());
    let (stopping, stop) = tokio::sync::watch::channel(false);
    let server = axum::serve(listener, app)
        .with_graceful_shutdown(async move {
            let mut stop = stop;
            let _ = stop.wait_for(|stop| *stop).await;
        })
        .into_future();
    tokio::pin!(server);
    let served = tokio::select! {
        served = &mut server => served.map_err(Into::into),
        name = async {
            tokio::select! {
                _ = terminate.recv() => "SIGTERM",
                _ = interrupt.recv() => "SIGINT",
            }
        } => {
            eprintln!(
                "ferry: {name}: finishing the activations in flight (up to {:?})",
                args.drain_timeout
            );
            let _ = stopping.send(true);
            match tokio::time::timeout(args.drain_timeout, &mut server).await {
                Ok(served) => served.map_err(Into::into),
                Err(_) => {
                    eprintln!("ferry: the drain timed out; stopping the busy copies");
                    host.stop_busy();
                    let _ = tokio::time::timeout(LAST_ANSWERS, &mut server).await;
                    Ok(())
                }
            }
        }
    };
    host.stop_copies().await;
    served
}

struct Host {
    workdir: WorkDir,
    copies: u32,
    wait_for_ack: bool,
    groups: Arc<Groups>,
    /// One `/init` at a time: a second one waits and then sees the first's outcome.
    init: tokio::sync::Mutex<()>,
    action: OnceLock<Action>,
}

impl Host {
    /// Turns away activations still waiting for a copy and kills the copies at work, whose
    /// `/run`s then answer `command exited`.
    fn stop_busy(&self) {
        if let Some(action) = self.action.get() {
            action.slots.close();
        }
        self.groups.kill_all();
    }

    /// Kills every copy and reaps the idle ones (a busy one is reaped by its activation, which
    /// sees it exit).
    async fn stop_copies(&self) {
        self.stop_busy();
        if let Some(action) = self.action.get() {
            let idle = std::mem::take(&mut *action.idle());
            // Bounded: a copy stuck in the kernel is left to be reaped by whoever inherits it.
            let reaped = futures::future::join_all(idle.into_iter().map(Copy::stop));
            let _ = tokio::time::timeout(LAST_ANSWERS, reaped).await;
        }
    }
}

struct Action {
    exec: PathBuf,
    env: BTreeMap<String, String>,
    /// One permit per copy that may run.
    slots: Semaphore,
    idle: Mutex<Vec<Copy>>,
}

impl Action {
    fn idle(&self) -> std::sync::MutexGuard<'_, Vec<Copy>> {
        self.idle.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn answer(status: StatusCode, body: Value) -> Response {
    (status, axum::Json(body)).into_response()
}

fn error(status: StatusCode, message: impl std::fmt::Display) -> Response {
    answer(status, json!({ "error": message.to_string() }))
}

async fn init(State(host): State<Arc<Host>>, body: Bytes) -> Response {
    const TWICE: &str = "Cannot initialize the action more than once.";
    let _one_at_a_time = host.init.lock().await;
    if host.action.get().is_some() {
        return error(StatusCode::FORBIDDEN, TWICE);
    }
    let body: Value = serde_json::from_slice(&body).unwrap_or_default();
    let value = &body["value"];
    let code = value["code"].as_str().unwrap_or_default();
    if code.is_empty() {
        return error(StatusCode::FORBIDDEN, "Missing main/no code to execute.");
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
    let dir = match host.workdir.new_action_dir() {
        Ok(dir) => dir,
        Err(e) => return error(StatusCode::BAD_GATEWAY, format!("{e:#}")),
    };
    let exec = match extract::install(&dir, code, binary) {
        Ok(exec) => exec,
        Err(e) => {
            host.workdir.discard(&dir);
            return error(StatusCode::BAD_GATEWAY, format!("{e:#}"));
        }
    };
    // Start one copy now: a broken action fails its /init, not its first /run.
    let started = match Copy::start(&exec, &env, host.wait_for_ack, &host.groups).await {
        Ok(mut copy) if !host.wait_for_ack => copy.still_running().await.map(|()| copy),
        started => started,
    };
    let first = match started {
        Ok(copy) => copy,
        Err(e) => {
            host.workdir.discard(&dir);
            return error(
                StatusCode::BAD_GATEWAY,
                format!("cannot start action: {e:#}"),
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
        return error(StatusCode::FORBIDDEN, TWICE);
    }
    answer(StatusCode::OK, json!({"ok": true}))
}

async fn run_activation(State(host): State<Arc<Host>>, body: Bytes) -> Response {
    let Some(action) = host.action.get() else {
        return error(StatusCode::INTERNAL_SERVER_ERROR, "no action defined yet");
    };
    let response = activate(&host, action, &body).await;
    write_sentinels();
    response
}

async fn activate(host: &Host, action: &Action, body: &[u8]) -> Response {
    let Ok(body) = std::str::from_utf8(body) else {
        return error(StatusCode::BAD_REQUEST, "invalid /run body: not UTF-8");
    };
    // The activation goes to the executable as one line: re-encoded compactly, so never empty
    // and never split.
    let line = match serde_json::from_str::<Value>(body) {
        Ok(value) => value.to_string(),
        Err(e) => return error(StatusCode::BAD_REQUEST, format!("invalid /run body: {e}")),
    };
    let Ok(_slot) = action.slots.acquire().await else {
        return error(StatusCode::SERVICE_UNAVAILABLE, "shutting down");
    };
    let mut copy = loop {
        let Some(copy) = action.idle().pop() else {
            match Copy::start(&action.exec, &action.env, host.wait_for_ack, &host.groups).await {
                Ok(copy) => break copy,
                Err(e) => {
                    return error(
                        StatusCode::BAD_GATEWAY,
                        format!("cannot start action: {e:#}"),
                    );
                }
            }
        };
        // A copy that wrote more than its answers, or exited while idle, is replaced.
        if copy.in_step() {
            break copy;
        }
        tracing::debug!(copy = copy.id(), "retiring a copy out of step");
    };
    match copy.activate(line.as_bytes()).await {
        Ok(output) => {
            tracing::debug!(copy = copy.id(), "activation answered");
            action.idle().push(copy);
            match serde_json::from_slice::<Value>(&output) {
                Ok(value @ (Value::Object(_) | Value::Array(_))) => answer(StatusCode::OK, value),
                _ => error(
                    StatusCode::BAD_GATEWAY,
                    "The action did not return a dictionary or array.",
                ),
            }
        }
        // The copy is dropped (and killed); the next activation starts a fresh one.
        Err(Failure::Exited) => error(StatusCode::BAD_REQUEST, "command exited"),
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
