//! The benchmark, as the thesis's OTBenchmark ran it: for each model count, set up PS and SH,
//! then for each runner reset SH to the same starting state, sync every model at once (or one
//! every `--delay-ms`), time it, and check that SH now equals PS. Unthrottled runs send every
//! sync at once with at most `--in-flight` in flight (`bounded`), or with no bound at all
//! (`all-at-once`, as the thesis did), or both (`--dispatch`).

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{Context as _, ensure};
use shop_sync::check;
use shop_sync::client::{self, PsClient, ShClient};
use shop_sync::model::{ProductAndStocks, PsModel};
use shop_sync::server::RunningServer;
use shop_sync::stats::LatencyStats;
use shop_sync::workload::{self, Plan, Workload};
use tokio::sync::Semaphore;

use crate::memory;
use crate::report::{self, Memory, RunResult, Sample};
use crate::runner::Runner;
use crate::{BenchArgs, Listeners};

/// Requests in flight from the benchmarker itself to each server (setup and checks).
const BENCH_CONNECTIONS: usize = 16;
/// Failures printed per run; the rest are counted.
const FAILURES_SHOWN: usize = 5;

/// How the syncs of an unthrottled run are sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum DispatchMode {
    /// Every sync at once, at most `--in-flight` of them in flight.
    Bounded,
    /// Every sync at once, all of them in flight, as the thesis's benchmarker sent them.
    AllAtOnce,
}

impl DispatchMode {
    /// Its name on the command line and in the results.
    pub fn name(self) -> &'static str {
        match self {
            Self::Bounded => "bounded",
            Self::AllAtOnce => "all-at-once",
        }
    }
}

/// Runs the whole benchmark.
pub async fn run(args: BenchArgs, listeners: Listeners) -> anyhow::Result<()> {
    ensure!(!args.runners.is_empty(), "no runner to measure");
    let ps_server = RunningServer::from_std(
        listeners.ps,
        shop_sync::ps::router(Arc::new(shop_sync::ps::PsStore::new())),
    )?;
    let sh_server = RunningServer::from_std(
        listeners.sh,
        shop_sync::sh::router(Arc::new(shop_sync::sh::ShStore::new())),
    )?;
    eprintln!(
        "mock PS server on {}, mock SH server on {}",
        ps_server.url(),
        sh_server.url()
    );
    let http = client::http_client(BENCH_CONNECTIONS);
    let servers = Servers {
        ps: PsClient::new(&ps_server.url(), http.clone(), BENCH_CONNECTIONS),
        sh: ShClient::new(&sh_server.url(), http, BENCH_CONNECTIONS),
    };

    let mut runners = Vec::with_capacity(args.runners.len());
    for kind in &args.runners {
        runners.push(
            Runner::start(*kind, args.workers)
                .await
                .with_context(|| format!("cannot start the {} runner", kind.column()))?,
        );
    }
    let outcome = measure_all(&args, &servers, &runners).await;
    for runner in runners {
        runner.stop().await;
    }
    let (unthrottled, throttled) = outcome?;

    let kinds = &args.runners;
    let mut csvs = Vec::new();
    for mode in &args.dispatch {
        let (path, title) = match mode {
            DispatchMode::Bounded => (
                &args.csv,
                format!("unthrottled, at most {} in flight", args.in_flight),
            ),
            DispatchMode::AllAtOnce => (&args.all_at_once_csv, "unthrottled, all at once".into()),
        };
        let results: Vec<RunResult> = unthrottled
            .iter()
            .filter(|r| r.dispatch == *mode)
            .cloned()
            .collect();
        report::write_csv(path, kinds, &results)?;
        eprintln!("wrote {}", path.display());
        println!("{}", report::table(&title, &results));
        csvs.push(path);
    }
    if !throttled.is_empty() {
        report::write_csv(&args.throttled_csv, kinds, &throttled)?;
        eprintln!("wrote {}", args.throttled_csv.display());
    }
    if !throttled.is_empty() {
        println!(
            "{}",
            report::table(&format!("one sync every {} ms", args.delay_ms), &throttled)
        );
    }
    if let Some(directory) = &args.plots {
        if !throttled.is_empty() {
            csvs.push(&args.throttled_csv);
        }
        for csv in csvs {
            for path in crate::plot::plot_csv(csv, directory)? {
                eprintln!("wrote {}", path.display());
            }
        }
    }
    if let Some(path) = &args.latencies {
        report::write_samples(path, &unthrottled, &throttled)?;
        eprintln!("wrote {}", path.display());
    }
    if args.json {
        println!("{}", report::json(&unthrottled, &throttled));
    }
    Ok(())
}

struct Servers {
    ps: PsClient,
    sh: ShClient,
}

type Results = (Vec<RunResult>, Vec<RunResult>);

async fn measure_all(
    args: &BenchArgs,
    servers: &Servers,
    runners: &[Runner],
) -> anyhow::Result<Results> {
    if args.warm_up > 0 {
        // Connections, worker processes and allocators warm up on a run nobody measures.
        eprintln!("warming up with {} models", args.warm_up);
        let dispatch = args
            .dispatch
            .first()
            .copied()
            .unwrap_or(DispatchMode::Bounded);
        measure(args, servers, runners, args.warm_up, dispatch, None).await?;
    }
    let mut unthrottled = Vec::new();
    for &models in &args.models {
        for &dispatch in &args.dispatch {
            unthrottled.extend(measure(args, servers, runners, models, dispatch, None).await?);
        }
    }
    // Ten syncs a second never fill the bound: throttled runs are sent bounded.
    let mut throttled = Vec::new();
    let delay = Duration::from_millis(args.delay_ms);
    for &models in args.throttled_models.iter().filter(|n| **n > 0) {
        throttled.extend(
            measure(
                args,
                servers,
                runners,
                models,
                DispatchMode::Bounded,
                Some(delay),
            )
            .await?,
        );
    }
    Ok((unthrottled, throttled))
}

/// One model count through every runner.
async fn measure(
    args: &BenchArgs,
    servers: &Servers,
    runners: &[Runner],
    models: usize,
    dispatch: DispatchMode,
    delay: Option<Duration>,
) -> anyhow::Result<Vec<RunResult>> {
    let workload = Workload {
        models,
        x_seed: args.x_seed,
        y_seed: args.y_seed,
    };
    let (plan, uploads, models_on_ps) =
        set_up(servers, &workload, args.partial, args.full)
            .await
            .with_context(|| format!("cannot set up {models} models"))?;
    let model_codes: Vec<String> = models_on_ps
        .iter()
        .map(|m| m.model_code_365.clone())
        .collect();
    let mut results = Vec::with_capacity(runners.len());
    for runner in runners {
        let name = runner.kind().column();
        // Every runner starts from the same SH: the same products, variants, stocks and ids.
        servers.sh.reset().await?;
        servers.sh.batch_products_and_stocks(&uploads).await?;
        let in_flight = match dispatch {
            DispatchMode::Bounded => args.in_flight as usize,
            DispatchMode::AllAtOnce => model_codes.len(),
        };
        // The peaks count from here: each process's high-water mark is reset to its RSS now.
        let bench_process = [std::process::id()];
        let runner_reset = memory::reset_peaks(&runner.processes());
        let reset = memory::reset_peaks(&bench_process) && runner_reset;
        let run = sync_all(runner, &model_codes, delay, in_flight).await;
        // Read before the check, which is the benchmarker's work, not the runner's; the runner's
        // processes are listed again, as the local platform may have started a worker meanwhile.
        let memory = Memory {
            runner_mib: memory::peak_mib(&runner.processes()).filter(|_| reset),
            bench_mib: memory::peak_mib(&bench_process).filter(|_| reset),
        };
        let checked = check::verify(&servers.ps, &servers.sh)
            .await
            .with_context(|| format!("after the {name} runner synced {models} models"))?;
        let mut result = RunResult::new(runner.kind(), models, plan, delay, &run);
        result.dispatch = dispatch;
        result.in_flight = in_flight;
        result.memory = memory;
        if args.latencies.is_some() {
            result.samples = models_on_ps
                .iter()
                .zip(&run.per_model)
                .map(|(model, (latency, ok))| Sample {
                    model: model.model_code_365.clone(),
                    items: model.item_count,
                    millis: latency.as_secs_f64() * 1e3,
                    ok: *ok,
                })
                .collect();
        }
        eprintln!(
            "{models} models (P={}, F={}), {name}, {}: {:.3} s, {} ok, {} failed, {:.1} syncs/s, median {:.1} ms, p99.9 {:.1} ms, peak RSS {} MiB (benchmarker {} MiB); SH equals PS ({} products, {} variants)",
            plan.partial,
            plan.full,
            dispatch.name(),
            result.seconds,
            result.successes,
            result.fails,
            result.qps(),
            result.latency.median,
            result.latency.p999,
            report::mib(result.memory.runner_mib),
            report::mib(result.memory.bench_mib),
            checked.models,
            checked.items,
        );
        for failure in run.failures.iter().take(FAILURES_SHOWN) {
            eprintln!("  failed: {failure}");
        }
        results.push(result);
    }
    Ok(results)
}

/// Generates PS, draws the plan and builds SH's starting state.
async fn set_up(
    servers: &Servers,
    workload: &Workload,
    partial: Option<usize>,
    full: Option<usize>,
) -> anyhow::Result<(Plan, Vec<ProductAndStocks>, Vec<PsModel>)> {
    servers.ps.reset().await?;
    servers.sh.reset().await?;
    servers
        .ps
        .generate(workload.models, workload.x_seed, workload.y_seed)
        .await?;
    let mut random = workload.random();
    let drawn = workload.draw_plan(&mut random);
    let plan = Plan {
        partial: partial.unwrap_or(drawn.partial),
        full: full.unwrap_or(drawn.full),
    };
    ensure!(
        plan.partial <= workload.models
            && plan.on_sh() <= workload.models
            && (plan.full < workload.models || workload.models == 0),
        "{} partially and {} fully synced models do not fit {} models",
        plan.partial,
        plan.full,
        workload.models
    );
    let source = servers.ps.first_models_and_stocks(plan.on_sh()).await?;
    let uploads = workload::uploads(&source, plan, &mut random);
    let models = servers.ps.all_models().await?;
    Ok((plan, uploads, models))
}

/// What one runner did with every model.
pub struct Run {
    /// From the first start to the last answer.
    pub elapsed: Duration,
    /// Each sync's time, successful or not.
    pub latencies: Vec<Duration>,
    /// Why syncs failed.
    pub failures: Vec<String>,
    /// Each model's latency and whether it synced, in model order.
    pub per_model: Vec<(Duration, bool)>,
}

impl Run {
    /// Per-model latency statistics.
    pub fn latency(&self) -> LatencyStats {
        LatencyStats::of(&self.latencies).unwrap_or(LatencyStats {
            median: 0.0,
            mean: 0.0,
            std_dev: 0.0,
            p95: 0.0,
            p99: 0.0,
            p999: 0.0,
        })
    }
}

/// Syncs every model concurrently: all at once, or starting one every `delay`; at most
/// `in_flight` at a time, as a client with that many connections would (as many as there are
/// models: every sync in flight at once). A sync's latency counts from when it is sent.
async fn sync_all(
    runner: &Runner,
    models: &[String],
    delay: Option<Duration>,
    in_flight: usize,
) -> Run {
    let start = Instant::now();
    let slots = Arc::new(Semaphore::new(in_flight.max(1)));
    let tasks: Vec<_> = models
        .iter()
        .enumerate()
        .map(|(index, model)| {
            let sync = runner.sync(model.clone());
            let not_before = delay.map(|d| start + d * index as u32);
            let slots = slots.clone();
            tokio::spawn(async move {
                if let Some(at) = not_before {
                    tokio::time::sleep_until(at.into()).await;
                }
                let _slot = slots
                    .acquire_owned()
                    .await
                    .expect("the semaphore is never closed");
                let began = Instant::now();
                let outcome = sync.await;
                (began.elapsed(), outcome)
            })
        })
        .collect();
    let mut latencies = Vec::with_capacity(tasks.len());
    let mut failures = Vec::new();
    let mut per_model = Vec::with_capacity(tasks.len());
    for (task, model) in tasks.into_iter().zip(models) {
        match task.await {
            Ok((latency, outcome)) => {
                latencies.push(latency);
                per_model.push((latency, outcome.is_ok()));
                if let Err(error) = outcome {
                    failures.push(format!("{model}: {error}"));
                }
            }
            Err(error) => {
                per_model.push((Duration::ZERO, false));
                failures.push(format!("{model}: the sync task ended: {error}"));
            }
        }
    }
    Run {
        elapsed: start.elapsed(),
        latencies,
        failures,
        per_model,
    }
}
