//! `sensors`: runs readings through the flow, serves the sensor service, or load-tests chained
//! against orchestrated flows over one HTTP service per function.
//!
//! ```text
//! cargo run --release -p sensors                                 # the flow, on the local platform
//! cargo run --release -p sensors -- --backend inline --readings 5000 --clients 8
//! cargo run --release -p sensors -- serve --listen 127.0.0.1:8080
//! cargo run --release -p sensors -- load --clients 1,5,10,50 --seconds 15 --csv docs/sensors-load.csv
//! ```

mod load;

use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use anyhow::{Context as _, bail};
use clap::{Args, Parser, Subcommand, ValueEnum};
use ferry::{BackendKind, Context, FlowMode};
use sensors::dataset::{self, DEFAULT_ROWS, DEFAULT_SEED};
use sensors::pipeline::{expected_averages, pipeline};
use sensors::service::{self, Row, SENSORS_URL_VAR, SensorData};

#[derive(Debug, Parser)]
#[command(
    about = "The smart-building sensor dataflow on ferry: read → keep temperature → value → moving average",
    args_conflicts_with_subcommands = true
)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    #[command(flatten)]
    run: RunArgs,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serves the generated dataset, one reading per request, until stopped.
    Serve(ServeArgs),
    /// Deploys one HTTP service per function and load-tests chained and orchestrated flows.
    Load(load::LoadArgs),
}

/// Where the demo's flows run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum DemoBackend {
    /// Every stage a task of this process.
    Inline,
    /// Warm worker processes of this binary.
    Local,
}

/// How the flow runs, as a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// Each stage's instance invokes the next stage.
    Chained,
    /// The caller invokes each stage in turn.
    Orchestrated,
}

impl Mode {
    fn flow_mode(self) -> FlowMode {
        match self {
            Self::Chained => FlowMode::Chained,
            Self::Orchestrated => FlowMode::Orchestrated,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Self::Chained => "chained",
            Self::Orchestrated => "orchestrated",
        }
    }
}

/// The default run: the sensor service in this process, readings through the flow.
#[derive(Debug, Args)]
struct RunArgs {
    /// Where the functions run (`http` deployments: see `load`).
    #[arg(long, env = "FERRY_BACKEND", default_value = "local")]
    backend: DemoBackend,
    /// Readings to run through the flow: rows 0, 1, 2… of the dataset, wrapping around.
    #[arg(long, default_value_t = 2_000)]
    readings: u64,
    /// Flows in flight at once. Above 1, the average printed is the one of whichever instance
    /// ran the last flow to finish.
    #[arg(long, default_value_t = 1, value_parser = clap::value_parser!(u64).range(1..=10_000))]
    clients: u64,
    /// Chained (each stage calls the next) or orchestrated (this program calls each stage).
    #[arg(long, default_value = "chained")]
    mode: Mode,
    #[command(flatten)]
    data: DataArgs,
    /// Address of the sensor service (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: SocketAddr,
    /// Print a JSON summary as the last line.
    #[arg(long)]
    json: bool,
}

/// The generated dataset.
#[derive(Debug, Clone, Copy, Args)]
pub struct DataArgs {
    /// Rows of the generated dataset.
    #[arg(long, default_value_t = DEFAULT_ROWS, value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..=100_000_000))]
    rows: usize,
    /// Seed of the generated dataset.
    #[arg(long, default_value_t = DEFAULT_SEED)]
    seed: u64,
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// Address to listen on (port 0: any free port, announced on stderr).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: SocketAddr,
    #[command(flatten)]
    data: DataArgs,
}

fn main() -> ExitCode {
    // Local workers and HTTP services are this binary too: ferry serves the functions there, and
    // none of the host's arguments apply.
    if !matches!(ferry::Role::from_env(), Ok(ferry::Role::Host)) {
        return ferry::run(|_| async {});
    }
    let cli = Cli::parse();
    match cli.command {
        None => {
            let listener = match std::net::TcpListener::bind(cli.run.listen) {
                Ok(listener) => listener,
                Err(error) => {
                    eprintln!("error: cannot listen on {}: {error}", cli.run.listen);
                    return ExitCode::from(2);
                }
            };
            let url = listener
                .local_addr()
                .map(|a| format!("http://{a}"))
                .unwrap_or_default();
            // `read` finds the service through the environment, which local workers inherit.
            // SAFETY: no other thread exists yet (the runtime starts in `ferry::run`), so none
            // can read the environment meanwhile.
            unsafe { std::env::set_var(SENSORS_URL_VAR, &url) };
            ferry::run(move |ctx| exit_code(demo(ctx, cli.run, listener)))
        }
        Some(Command::Serve(args)) => ferry::run(move |_| exit_code(serve(args))),
        Some(Command::Load(args)) => {
            // The service processes are started from this thread, which lives as long as the
            // process: they die with it (see `sensors::deploy`).
            let program = match std::env::current_exe() {
                Ok(program) => program,
                Err(error) => {
                    eprintln!("error: cannot locate this executable: {error}");
                    return ExitCode::FAILURE;
                }
            };
            match args.validate() {
                Ok(()) => {}
                Err(error) => {
                    eprintln!("error: {error}");
                    return ExitCode::from(2);
                }
            }
            let deployment = match sensors::deploy::Deployment::start_as(
                &program,
                args.data.rows,
                args.data.seed,
                args.topology.into(),
                args.cpus(),
            ) {
                Ok(deployment) => deployment,
                Err(error) => {
                    eprintln!("error: {error}");
                    return ExitCode::FAILURE;
                }
            };
            ferry::run(move |_| exit_code(load::run(args, deployment)))
        }
    }
}

/// Runs `command` and reports its error with the chain of causes.
async fn exit_code(command: impl Future<Output = anyhow::Result<()>>) -> ExitCode {
    match command.await {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("error: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    let data = Arc::new(SensorData::generate(args.data.rows, args.data.seed));
    let listener = service::bind(args.listen)
        .await
        .with_context(|| format!("cannot listen on {}", args.listen))?;
    service::serve(listener, data)
        .await
        .context("the sensor service stopped")
}

async fn demo(ctx: Context, args: RunArgs, listener: std::net::TcpListener) -> anyhow::Result<()> {
    let readings = dataset::generate(args.data.rows, args.data.seed);
    let data = Arc::new(SensorData::new(&readings));
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let url = format!("http://{}", listener.local_addr()?);
    let server = tokio::spawn(service::serve(listener, data));

    let backend = match args.backend {
        DemoBackend::Inline => BackendKind::Inline,
        DemoBackend::Local => BackendKind::Local,
    };
    let ctx = if ctx.backend_kind() == backend {
        ctx
    } else {
        Context::new(backend)?
    };
    println!(
        "sensor service on {url}: {} rows (seed {}); {} readings through the flow, {}, {} at once, on {}",
        args.data.rows,
        args.data.seed,
        args.readings,
        args.mode.name(),
        args.clients,
        ctx.backend_kind()
    );

    let flow = pipeline().mode(args.mode.flow_mode());
    let rows = args.data.rows as u64;
    let next = Arc::new(std::sync::atomic::AtomicU64::new(0));
    // The outputs in the order flows finished: the last is the final average.
    let outputs = Arc::new(Mutex::new(Vec::<f64>::new()));
    let started = Instant::now();
    let clients: Vec<_> = (0..args.clients)
        .map(|_| {
            let (flow, ctx, next, outputs) =
                (flow.clone(), ctx.clone(), next.clone(), outputs.clone());
            let total = args.readings;
            tokio::spawn(async move {
                loop {
                    let i = next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if i >= total {
                        return Ok::<_, anyhow::Error>(());
                    }
                    let output = flow
                        .run(&ctx, Row::At(i % rows))
                        .await
                        .with_context(|| format!("the flow failed on row {}", i % rows))?;
                    if let Some(average) = output {
                        outputs
                            .lock()
                            .unwrap_or_else(|e| e.into_inner())
                            .push(average);
                    }
                }
            })
        })
        .collect();
    for client in clients {
        client.await.context("a client task panicked")??;
    }
    let seconds = started.elapsed().as_secs_f64();
    server.abort();

    let outputs = std::mem::take(&mut *outputs.lock().unwrap_or_else(|e| e.into_inner()));
    let read: Vec<&dataset::Reading> = (0..args.readings)
        .map(|i| &readings[(i % rows) as usize])
        .collect();
    let expected = expected_averages(read.iter().copied());
    if outputs.len() != expected.len() {
        bail!(
            "{} readings were temperatures, but the flow passed {}",
            expected.len(),
            outputs.len()
        );
    }
    let (Some(&average), Some(&direct)) = (outputs.last(), expected.last()) else {
        println!("no reading was a temperature: no average");
        return Ok(());
    };
    println!(
        "{} of {} readings were temperatures; moving average {average:.4} °C ({:.3} s, {:.1} flows/s)",
        outputs.len(),
        args.readings,
        seconds,
        args.readings as f64 / seconds
    );
    println!("computed directly from the dataset: {direct:.4} °C");
    if average.to_bits() != direct.to_bits() {
        // Not an error: each instance of `moving_average` averages what it was sent, in the
        // order it was sent.
        println!(
            "(they differ: more than one instance of `moving_average` ran, or flows finished out of order)"
        );
    }
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "readings": args.readings,
                "temperatures": outputs.len(),
                "moving_average": average,
                "direct_average": direct,
                "seconds": seconds,
                "mode": args.mode.name(),
                "backend": ctx.backend_kind().to_string(),
            })
        );
    }
    ctx.shutdown().await;
    Ok(())
}
