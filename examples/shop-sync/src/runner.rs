//! The ways a sync can run, behind one interface: [`Runner::sync`].
//!
//! - `mono`: an HTTP route of this process that calls the function inline (the monolith);
//! - `local`: ferry's local platform, warm worker processes of this binary;
//! - `http`: this binary in ferry's HTTP service mode (`FERRY_ROLE=http`) as a separate
//!   process, reached through ferry's `http` backend;
//! - `openwhisk`: this binary as an OpenWhisk action container (`FERRY_ROLE=openwhisk`, with
//!   `__OW_ALLOW_CONCURRENT=true` so activations overlap up to the function's concurrency),
//!   `/init`ed once and sent one `/run` per sync, as OpenWhisk's invoker drives a container. No
//!   OpenWhisk controller installs here, so this measures the runtime the thesis could not
//!   give intra-container concurrency, without the controller's hop.
//!
//! Another ferry backend is one more [`RunnerKind`] and one arm in [`Runner::start`] that
//! builds its [`Context`]: dispatch, metrics and checks are shared.

use std::future::Future;
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, bail};
use ferry::{Context, HttpConfig, LocalConfig};
use shop_sync::server::RunningServer;
use shop_sync::syncer::{PS_URL_VAR, SH_URL_VAR, SyncModel};
use tokio::io::{AsyncBufReadExt, BufReader};

/// `FERRY_ROLE` of the local platform's worker processes.
const LOCAL_WORKER_ROLE: &str = "local-worker";

/// How long a serving process may take to say where it listens.
const SERVICE_START_TIMEOUT: Duration = Duration::from_secs(30);

/// A runner by name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RunnerKind {
    /// The monolith: an HTTP route calling the function in-process.
    Mono,
    /// Serverless on ferry's local platform.
    Local,
    /// Serverless in ferry's HTTP service mode, in its own process.
    Http,
    /// Serverless as an OpenWhisk action container with intra-container concurrency.
    #[value(name = "openwhisk")]
    OpenWhisk,
}

impl RunnerKind {
    /// The name in CSV columns, `seconds(mono)`.
    pub fn column(self) -> &'static str {
        match self {
            Self::Mono => "mono",
            Self::Local => "serverless-local",
            Self::Http => "serverless-http",
            Self::OpenWhisk => "serverless-openwhisk",
        }
    }

    /// Whether it is one of the serverless runners.
    pub fn is_serverless(self) -> bool {
        self != Self::Mono
    }
}

/// A started runner.
pub struct Runner {
    kind: RunnerKind,
    dispatch: Dispatch,
}

enum Dispatch {
    /// `POST {base}/sync/{model}` on the monolith's route.
    Route {
        http: reqwest::Client,
        base: String,
        _server: RunningServer,
    },
    /// `POST {base}/run` on an OpenWhisk action container.
    Activation {
        http: reqwest::Client,
        base: String,
        service: ServiceProcess,
    },
    /// `ctx.call(SyncModel { .. })` on a ferry backend.
    Function {
        ctx: Context,
        service: Option<ServiceProcess>,
    },
}

impl Runner {
    /// Starts a runner; `workers` bounds the local platform.
    pub async fn start(kind: RunnerKind, workers: Option<usize>) -> anyhow::Result<Self> {
        let dispatch = match kind {
            RunnerKind::Mono => {
                let server = RunningServer::bind(
                    ([127, 0, 0, 1], 0).into(),
                    shop_sync::monolith::router(Context::inline()),
                )
                .await
                .context("cannot start the monolith's server")?;
                Dispatch::Route {
                    http: reqwest::Client::builder()
                        .tcp_nodelay(true)
                        .pool_max_idle_per_host(usize::MAX)
                        .build()
                        .context("cannot build an HTTP client")?,
                    base: server.url(),
                    _server: server,
                }
            }
            RunnerKind::Local => {
                let mut config = LocalConfig::from_env()?;
                if let Some(workers) = workers {
                    config = config.max_workers(workers);
                }
                Dispatch::Function {
                    ctx: Context::local(config)?,
                    service: None,
                }
            }
            RunnerKind::OpenWhisk => {
                let service = ServiceProcess::start("openwhisk").await?;
                let http = reqwest::Client::builder()
                    .tcp_nodelay(true)
                    .pool_max_idle_per_host(usize::MAX)
                    .build()
                    .context("cannot build an HTTP client")?;
                let init = serde_json::json!({"value": {
                    "name": "sync_model",
                    "main": "sync_model",
                    "binary": true,
                    "code": "",
                    "env": {},
                }});
                let response = http
                    .post(format!("{}/init", service.base))
                    .json(&init)
                    .send()
                    .await
                    .context("cannot /init the action container")?;
                if !response.status().is_success() {
                    bail!(
                        "the action container refused /init ({}): {}",
                        response.status(),
                        response.text().await.unwrap_or_default()
                    );
                }
                Dispatch::Activation {
                    http,
                    base: service.base.clone(),
                    service,
                }
            }
            RunnerKind::Http => {
                let service = ServiceProcess::start("http").await?;
                Dispatch::Function {
                    ctx: Context::http(HttpConfig::new(&service.base))?,
                    service: Some(service),
                }
            }
        };
        Ok(Self { kind, dispatch })
    }

    /// Which runner it is.
    pub fn kind(&self) -> RunnerKind {
        self.kind
    }

    /// Syncs one model; the error says why it failed.
    pub fn sync(
        &self,
        model_code: String,
    ) -> impl Future<Output = Result<(), String>> + Send + 'static {
        let dispatch = match &self.dispatch {
            Dispatch::Route { http, base, .. } => {
                Err((http.clone(), format!("{base}/sync/{model_code}"), None))
            }
            Dispatch::Activation { http, base, .. } => Err((
                http.clone(),
                format!("{base}/run"),
                Some(serde_json::json!({
                    "value": { "model_code": model_code },
                    "action_name": "/guest/sync_model",
                    "activation_id": format!("sync-{model_code}"),
                })),
            )),
            Dispatch::Function { ctx, .. } => Ok(ctx.call(SyncModel { model_code })),
        };
        async move {
            match dispatch {
                Ok(call) => call.await.map(drop).map_err(|e| e.to_string()),
                Err((http, url, activation)) => {
                    let mut request = http.post(&url);
                    if let Some(activation) = &activation {
                        request = request.json(activation);
                    }
                    let response = request.send().await.map_err(|e| e.to_string())?;
                    let status = response.status();
                    let body = response.text().await.unwrap_or_default();
                    // An OpenWhisk application error is a 200 whose result has `error`.
                    let application_error = activation.is_some()
                        && serde_json::from_str::<serde_json::Value>(&body)
                            .is_ok_and(|result| result.get("error").is_some());
                    if status.is_success() && !application_error {
                        return Ok(());
                    }
                    Err(format!("{url} answered {status}: {body}"))
                }
            }
        }
    }

    /// Its processes now, for [`crate::memory`]: the benchmarker's own for the monolith, the
    /// local platform's workers, or the service process.
    pub fn processes(&self) -> Vec<u32> {
        match &self.dispatch {
            Dispatch::Route { .. } => vec![std::process::id()],
            Dispatch::Activation { service, .. } => service.pid().into_iter().collect(),
            Dispatch::Function {
                service: Some(service),
                ..
            } => service.pid().into_iter().collect(),
            Dispatch::Function { service: None, .. } => {
                crate::memory::children_in_role(LOCAL_WORKER_ROLE)
            }
        }
    }

    /// Stops its workers or processes.
    pub async fn stop(self) {
        if let Dispatch::Function { ctx, .. } = &self.dispatch {
            ctx.shutdown().await;
        }
    }
}

/// Passes a serving process's output on, without OpenWhisk's end-of-activation markers.
fn echo(role: &str, line: &str) {
    if line != "XXX_THE_END_OF_A_WHISK_ACTIVATION_XXX" {
        eprintln!("[{role} service] {line}");
    }
}

/// This binary serving its functions in a ferry serving mode (`http` or `openwhisk`), killed
/// when dropped (and when this process dies, so an interrupted benchmark leaves nothing running).
pub struct ServiceProcess {
    child: tokio::process::Child,
    base: String,
}

impl ServiceProcess {
    /// Its process id, while it runs.
    fn pid(&self) -> Option<u32> {
        self.child.id()
    }

    async fn start(role: &str) -> anyhow::Result<Self> {
        let exe = std::env::current_exe().context("cannot locate this executable")?;
        let mut command = tokio::process::Command::new(exe);
        command
            .env("FERRY_ROLE", role)
            .env("__OW_ALLOW_CONCURRENT", "true")
            .env("FERRY_LISTEN", "127.0.0.1:0")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .kill_on_drop(true);
        for name in [PS_URL_VAR, SH_URL_VAR] {
            let value = std::env::var(name).with_context(|| format!("`{name}` is not set"))?;
            command.env(name, value);
        }
        // SAFETY: prctl is async-signal-safe; nothing else runs between fork and exec.
        unsafe {
            command.pre_exec(|| {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = command
            .spawn()
            .with_context(|| format!("cannot start the {role} service"))?;
        let stderr = child.stderr.take().expect("stderr is piped");
        let mut lines = BufReader::new(stderr).lines();
        let announced = tokio::time::timeout(SERVICE_START_TIMEOUT, async {
            while let Some(line) = lines.next_line().await? {
                if let Some(base) = line.strip_prefix("ferry: listening on ") {
                    return Ok(Some(base.trim().to_owned()));
                }
                echo(role, &line);
            }
            Ok::<_, std::io::Error>(None)
        })
        .await;
        let base = match announced {
            Ok(Ok(Some(base))) => base,
            Ok(Ok(None)) => bail!("the {role} service exited before it listened"),
            Ok(Err(error)) => bail!("cannot read the {role} service's output: {error}"),
            Err(_) => bail!(
                "the {role} service did not listen within {} s",
                SERVICE_START_TIMEOUT.as_secs()
            ),
        };
        // Its later output (errors, if any) still reaches the terminal.
        let role = role.to_owned();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                echo(&role, &line);
            }
        });
        Ok(Self { child, base })
    }
}
