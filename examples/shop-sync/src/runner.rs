//! The ways a sync can run, behind one interface: [`Runner::sync`].
//!
//! - `mono`: an HTTP route of this process that calls the function inline (the monolith);
//! - `local`: ferry's local platform, warm worker processes of this binary;
//! - `http`: this binary in ferry's HTTP service mode (`FERRY_ROLE=http`) as a separate
//!   process, reached through ferry's `http` backend.
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

/// How long the HTTP service may take to say where it listens.
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
}

impl RunnerKind {
    /// The name in CSV columns, `seconds(mono)`.
    pub fn column(self) -> &'static str {
        match self {
            Self::Mono => "mono",
            Self::Local => "serverless-local",
            Self::Http => "serverless-http",
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
    /// `ctx.call(SyncModel { .. })` on a ferry backend.
    Function {
        ctx: Context,
        _service: Option<ServiceProcess>,
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
                    _service: None,
                }
            }
            RunnerKind::Http => {
                let service = ServiceProcess::start().await?;
                Dispatch::Function {
                    ctx: Context::http(HttpConfig::new(&service.base))?,
                    _service: Some(service),
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
                Err((http.clone(), format!("{base}/sync/{model_code}")))
            }
            Dispatch::Function { ctx, .. } => Ok(ctx.call(SyncModel { model_code })),
        };
        async move {
            match dispatch {
                Ok(call) => call.await.map(drop).map_err(|e| e.to_string()),
                Err((http, url)) => {
                    let response = http.post(&url).send().await.map_err(|e| e.to_string())?;
                    let status = response.status();
                    if status.is_success() {
                        return Ok(());
                    }
                    let body = response.text().await.unwrap_or_default();
                    Err(format!("{url} answered {status}: {body}"))
                }
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

/// This binary serving its functions in ferry's HTTP service mode, killed when dropped (and
/// when this process dies, so an interrupted benchmark leaves nothing running).
pub struct ServiceProcess {
    _child: tokio::process::Child,
    base: String,
}

impl ServiceProcess {
    async fn start() -> anyhow::Result<Self> {
        let exe = std::env::current_exe().context("cannot locate this executable")?;
        let mut command = tokio::process::Command::new(exe);
        command
            .env("FERRY_ROLE", "http")
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
        let mut child = command.spawn().context("cannot start the HTTP service")?;
        let stderr = child.stderr.take().expect("stderr is piped");
        let mut lines = BufReader::new(stderr).lines();
        let announced = tokio::time::timeout(SERVICE_START_TIMEOUT, async {
            while let Some(line) = lines.next_line().await? {
                if let Some(base) = line.strip_prefix("ferry: listening on ") {
                    return Ok(Some(base.trim().to_owned()));
                }
                eprintln!("[http service] {line}");
            }
            Ok::<_, std::io::Error>(None)
        })
        .await;
        let base = match announced {
            Ok(Ok(Some(base))) => base,
            Ok(Ok(None)) => bail!("the HTTP service exited before it listened"),
            Ok(Err(error)) => bail!("cannot read the HTTP service's output: {error}"),
            Err(_) => bail!(
                "the HTTP service did not listen within {} s",
                SERVICE_START_TIMEOUT.as_secs()
            ),
        };
        // Its later output (errors, if any) still reaches the terminal.
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                eprintln!("[http service] {line}");
            }
        });
        Ok(Self {
            _child: child,
            base,
        })
    }
}
