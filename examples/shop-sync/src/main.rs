//! `shop-sync`: the case study's benchmarker, its mock servers, and — started by ferry as a
//! worker — the `sync_model` function.
//!
//! ```text
//! cargo run --release -p shop-sync -- bench --models 250,500,1000,2000 --dispatch bounded,all-at-once
//! cargo run --release -p shop-sync -- serve --ps-listen 127.0.0.1:8081 --sh-listen 127.0.0.1:8082
//! cargo run --release -p shop-sync -- plot --csv target/shop-sync/shop-sync.csv --out target/shop-sync
//! ```

mod bench;
mod memory;
mod plot;
mod report;
mod runner;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::error::ErrorKind;
use clap::parser::ValueSource;
use clap::{ArgMatches, Args, CommandFactory, FromArgMatches, Parser, Subcommand};
use shop_sync::prng::{DEFAULT_X_SEED, DEFAULT_Y_SEED};
use shop_sync::syncer::{PS_URL_VAR, SH_URL_VAR};

use crate::bench::DispatchMode;
use crate::runner::RunnerKind;

#[derive(Debug, Parser)]
#[command(about = "The e-commerce synchronisation case study on ferry")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Syncs every model through each runner, checks SH against PS, writes CSVs (and plots).
    Bench(Box<BenchArgs>),
    /// Runs the mock PS and SH servers until Ctrl-C.
    Serve(ServeArgs),
    /// Draws the PNG plots of a results CSV.
    Plot(PlotArgs),
}

/// What `bench` measures and where it writes.
#[derive(Debug, Clone, Args)]
pub struct BenchArgs {
    /// Model counts of the unthrottled runs.
    #[arg(long, value_delimiter = ',', default_value = "250,500,1000,2000")]
    pub models: Vec<usize>,
    /// Model counts of the throttled runs (`--delay-ms` between sync starts); `0` for none.
    #[arg(long, value_delimiter = ',', default_value = "100")]
    pub throttled_models: Vec<usize>,
    /// Least time between the starts of two syncs in throttled runs, in milliseconds (the
    /// thesis's rate limiter: 100 ms caps a run at 10 syncs per second).
    #[arg(long, default_value_t = 100)]
    pub delay_ms: u64,
    /// Most syncs in flight at once in `bounded` runs: the benchmarker's connections. Thousands
    /// of connections opened at once overflow a server's accept queue, and the retried SYNs then
    /// add a second to the latency of whichever syncs they hit.
    #[arg(long, default_value_t = 256, value_parser = clap::value_parser!(u32).range(1..))]
    pub in_flight: u32,
    /// How unthrottled runs send their syncs, each listed mode in turn for every model count:
    /// `bounded` (at most `--in-flight` at once) or `all-at-once` (every sync in flight at once,
    /// as the thesis sent them).
    #[arg(long, value_delimiter = ',', default_value = "bounded")]
    pub dispatch: Vec<DispatchMode>,
    /// Models of an unmeasured run through every runner first, so that connections and
    /// worker processes are warm; 0 for none.
    #[arg(long, default_value_t = 250)]
    pub warm_up: usize,
    /// Runners, in the order they run.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "mono,local,http,openwhisk"
    )]
    pub runners: Vec<RunnerKind>,
    /// First seed of the workload.
    #[arg(long, default_value_t = DEFAULT_X_SEED)]
    pub x_seed: u64,
    /// Second seed of the workload.
    #[arg(long, default_value_t = DEFAULT_Y_SEED)]
    pub y_seed: u64,
    /// Partially synced models on SH, instead of a seeded draw.
    #[arg(long)]
    pub partial: Option<usize>,
    /// Fully synced models on SH, instead of a seeded draw.
    #[arg(long)]
    pub full: Option<usize>,
    /// Worker processes of the local platform (default: `FERRY_LOCAL_WORKERS`, else the cores).
    #[arg(long)]
    pub workers: Option<usize>,
    /// Where the unthrottled `bounded` results go.
    #[arg(long, default_value = "target/shop-sync/shop-sync.csv")]
    pub csv: PathBuf,
    /// Where the unthrottled `all-at-once` results go.
    #[arg(long, default_value = "target/shop-sync/shop-sync-all-at-once.csv")]
    pub all_at_once_csv: PathBuf,
    /// Where the throttled results go.
    #[arg(long, default_value = "target/shop-sync/shop-sync-throttled.csv")]
    pub throttled_csv: PathBuf,
    /// Also draw PNG plots of both CSVs into this directory (needs `rsvg-convert`).
    #[arg(long)]
    pub plots: Option<PathBuf>,
    /// Also write every sync's latency, with its model's item count, to this CSV.
    #[arg(long)]
    pub latencies: Option<PathBuf>,
    /// Print a JSON summary as the last line.
    #[arg(long)]
    pub json: bool,
    /// Address of the mock PS server (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub ps_listen: SocketAddr,
    /// Address of the mock SH server (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub sh_listen: SocketAddr,
}

impl BenchArgs {
    /// What clap cannot check alone: each dispatch mode once, and `--in-flight` only where a
    /// `bounded` run uses it.
    fn check(&self, matches: &ArgMatches) -> Result<(), String> {
        for (index, mode) in self.dispatch.iter().enumerate() {
            if self.dispatch[..index].contains(mode) {
                return Err(format!(
                    "`--dispatch` names `{}` twice: list each of `bounded` and `all-at-once` once",
                    mode.name()
                ));
            }
        }
        if matches.value_source("in_flight") == Some(ValueSource::CommandLine)
            && !self.dispatch.contains(&DispatchMode::Bounded)
        {
            return Err(
                "`--in-flight` bounds `bounded` runs, and `--dispatch` runs none: add `bounded` to `--dispatch` or drop `--in-flight`"
                    .to_owned(),
            );
        }
        Ok(())
    }
}

#[derive(Debug, Args)]
struct ServeArgs {
    /// Address of the mock PS server.
    #[arg(long, default_value = "127.0.0.1:8081")]
    ps_listen: SocketAddr,
    /// Address of the mock SH server.
    #[arg(long, default_value = "127.0.0.1:8082")]
    sh_listen: SocketAddr,
}

#[derive(Debug, Args)]
struct PlotArgs {
    /// A CSV written by `bench`.
    #[arg(long)]
    csv: PathBuf,
    /// Directory of the PNGs, named after the CSV (`shop-sync-qps.png`…).
    #[arg(long)]
    out: PathBuf,
}

/// The mock servers' listeners, bound before the async runtime starts.
#[derive(Debug)]
pub struct Listeners {
    ps: std::net::TcpListener,
    sh: std::net::TcpListener,
}

fn main() -> ExitCode {
    // Local workers and HTTP service processes are this binary too: ferry serves the
    // functions there, and none of the host's arguments apply.
    if !matches!(ferry::Role::from_env(), Ok(ferry::Role::Host)) {
        return ferry::run(|_| async {});
    }
    let matches = Cli::command().get_matches();
    let cli = Cli::from_arg_matches(&matches).unwrap_or_else(|error| error.exit());
    if let (Command::Bench(args), Some(("bench", bench))) = (&cli.command, matches.subcommand()) {
        if let Err(message) = args.check(bench) {
            Cli::command()
                .find_subcommand_mut("bench")
                .expect("`bench` is a subcommand")
                .error(ErrorKind::ArgumentConflict, message)
                .exit();
        }
    }
    match cli.command {
        Command::Bench(args) => {
            let listeners = match bind(args.ps_listen, args.sh_listen) {
                Ok(listeners) => listeners,
                Err(error) => {
                    eprintln!("error: {error:#}");
                    return ExitCode::from(2);
                }
            };
            // Every runner's functions find the servers through the environment: local
            // workers inherit it, the HTTP service gets it from `runner`. It is set here,
            // while this process has a single thread: the runtime starts in `ferry::run`.
            let (ps_url, sh_url) = (url(&listeners.ps), url(&listeners.sh));
            // SAFETY: no other thread exists yet, so none can read the environment meanwhile.
            unsafe {
                std::env::set_var(PS_URL_VAR, ps_url);
                std::env::set_var(SH_URL_VAR, sh_url);
            }
            ferry::run(move |_| exit_code(bench::run(*args, listeners)))
        }
        Command::Serve(args) => ferry::run(move |_| exit_code(serve(args))),
        Command::Plot(args) => match plot::plot_csv(&args.csv, &args.out) {
            Ok(written) => {
                for path in written {
                    println!("{}", path.display());
                }
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("error: {error:#}");
                ExitCode::FAILURE
            }
        },
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

fn bind(ps: SocketAddr, sh: SocketAddr) -> anyhow::Result<Listeners> {
    use anyhow::Context as _;
    Ok(Listeners {
        ps: std::net::TcpListener::bind(ps).with_context(|| format!("cannot listen on {ps}"))?,
        sh: std::net::TcpListener::bind(sh).with_context(|| format!("cannot listen on {sh}"))?,
    })
}

fn url(listener: &std::net::TcpListener) -> String {
    listener
        .local_addr()
        .map(|a| format!("http://{a}"))
        .unwrap_or_default()
}

async fn serve(args: ServeArgs) -> anyhow::Result<()> {
    use shop_sync::server::RunningServer;
    use std::sync::Arc;
    let ps = RunningServer::bind(
        args.ps_listen,
        shop_sync::ps::router(Arc::new(shop_sync::ps::PsStore::new())),
    )
    .await?;
    let sh = RunningServer::bind(
        args.sh_listen,
        shop_sync::sh::router(Arc::new(shop_sync::sh::ShStore::new())),
    )
    .await?;
    eprintln!("mock PS server on {}", ps.url());
    eprintln!("mock SH server on {}", sh.url());
    tokio::signal::ctrl_c().await?;
    Ok(())
}
