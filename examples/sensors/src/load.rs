//! `sensors load`: a bounded load test of the deployed flow, `hey`-like — N clients, each
//! running one flow after the other for a fixed time — chained against orchestrated.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use clap::{Args, ValueEnum};
use ferry::{Context, FlowMode};
use sensors::deploy::{Cpus, Deployment, Topology, cpu_time};
use sensors::pipeline::{Orchestrate, pipeline};
use sensors::service::Row;
use sensors::timing::{FlowTimings, StageStamp, Timed, monotonic_ns, stage_labels, timed_pipeline};
use serde::Serialize;

use crate::DataArgs;

/// How a client runs a flow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum LoadMode {
    /// The client invokes the first stage; each stage's service invokes the next.
    Chained,
    /// The client invokes each stage in turn.
    Orchestrated,
    /// The client invokes an orchestrating function, which invokes each stage in turn (the
    /// OpenFaaS orchestrator function).
    Orchestrator,
}

impl LoadMode {
    fn name(self) -> &'static str {
        match self {
            Self::Chained => "chained",
            Self::Orchestrated => "orchestrated",
            Self::Orchestrator => "orchestrator",
        }
    }

    /// Runs one flow: whether it reached the moving average, and with `timed` (chained and
    /// orchestrated only) the timed twin's stage stamps when it did.
    async fn run(self, ctx: &Context, row: Row, timed: bool) -> ferry::Result<Outcome> {
        let plain = |output: Option<f64>| Outcome {
            temperature: output.is_some(),
            stages: None,
        };
        let timed_flow = |output: Option<Timed<f64>>| Outcome {
            temperature: output.is_some(),
            stages: output.map(|output| output.stages),
        };
        match (self, timed) {
            (Self::Chained, false) => pipeline().run(ctx, row).await.map(plain),
            (Self::Orchestrated, false) => pipeline()
                .mode(FlowMode::Orchestrated)
                .run(ctx, row)
                .await
                .map(plain),
            (Self::Chained, true) => timed_pipeline()
                .run(ctx, Timed::new(row))
                .await
                .map(timed_flow),
            (Self::Orchestrated, true) => timed_pipeline()
                .mode(FlowMode::Orchestrated)
                .run(ctx, Timed::new(row))
                .await
                .map(timed_flow),
            (Self::Orchestrator, _) => ctx.call(Orchestrate { row }).await.map(plain),
        }
    }
}

/// What one flow gave.
struct Outcome {
    /// It reached the moving average.
    temperature: bool,
    /// The timed twin's stamps, when it ran and reached the moving average.
    stages: Option<Vec<StageStamp>>,
}

/// How the functions are deployed, as a flag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum TopologyArg {
    /// One service per function (Knative, Cloud Run).
    PerFunction,
    /// One service for every function.
    Single,
}

impl From<TopologyArg> for Topology {
    fn from(arg: TopologyArg) -> Self {
        match arg {
            TopologyArg::PerFunction => Self::PerFunction,
            TopologyArg::Single => Self::Single,
        }
    }
}

/// What the load test measures.
#[derive(Debug, Args)]
pub struct LoadArgs {
    /// Concurrent clients, one level after the other.
    #[arg(long, value_delimiter = ',', default_value = "1,5,10,50")]
    clients: Vec<usize>,
    /// Seconds each level runs in each mode.
    #[arg(long, default_value_t = 15.0)]
    seconds: f64,
    /// Seconds of unmeasured load before each measurement, at the same level.
    #[arg(long, default_value_t = 2.0)]
    warm_up: f64,
    /// Seconds a client waits for one flow before counting it as an error (hey's default).
    #[arg(long, default_value_t = 20.0)]
    timeout: f64,
    /// Modes to measure; at each level they take turns going first.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "chained,orchestrated,orchestrator"
    )]
    modes: Vec<LoadMode>,
    /// One service per function, or one for all.
    #[arg(long, default_value = "per-function")]
    pub topology: TopologyArg,
    #[command(flatten)]
    pub data: DataArgs,
    /// Hold each service to one CPU, the services taking the CPUs in turn (Dyninka's 1-vCPU
    /// machines); the load generator keeps every CPU.
    #[arg(long)]
    one_cpu_per_service: bool,
    /// Whether the client keeps its connections open between requests; `off` opens one per
    /// request, as Dyninka's `hey` did.
    #[arg(long, default_value = "on", value_parser = parse_on_off, action = clap::ArgAction::Set)]
    keep_alive: bool,
    /// Also write every measurement to this CSV.
    #[arg(long)]
    csv: Option<PathBuf>,
    /// Run the timed twin of the flow (chained and orchestrated only: `sensors::timing`) and
    /// write when each measured flow that reached the moving average was sent, when each stage's
    /// body started and finished, and when its output came back, to this CSV.
    #[arg(long, value_name = "CSV")]
    stage_timings: Option<PathBuf>,
    /// With --stage-timings, keep one timed flow in this many (each client keeps its 1st,
    /// N+1th…): every flow is timed alike, fewer are written.
    #[arg(long, default_value_t = 1, value_name = "N")]
    timings_every: u64,
    /// Write the flows completed and failed in each --bucket-ms of every measured run to this
    /// CSV: throughput over time.
    #[arg(long, value_name = "CSV")]
    timeline: Option<PathBuf>,
    /// The width of a --timeline bucket, in milliseconds.
    #[arg(long, default_value_t = 100, value_name = "MS")]
    bucket_ms: u64,
}

fn parse_on_off(text: &str) -> Result<bool, String> {
    match text {
        "on" => Ok(true),
        "off" => Ok(false),
        other => Err(format!("expected `on` or `off`, not `{other}`")),
    }
}

impl LoadArgs {
    /// The CPUs the deployment's processes run on.
    pub fn cpus(&self) -> Cpus {
        if self.one_cpu_per_service {
            Cpus::OneEach
        } else {
            Cpus::Shared
        }
    }

    /// Checks what clap cannot.
    pub fn validate(&self) -> Result<(), String> {
        if self.clients.is_empty() || self.clients.contains(&0) {
            return Err("--clients must be positive numbers, e.g. 1,5,10,50".into());
        }
        for (flag, value) in [("--seconds", self.seconds), ("--timeout", self.timeout)] {
            if !(value.is_finite() && value > 0.0) {
                return Err(format!(
                    "{flag} must be a positive number of seconds, not {value}"
                ));
            }
        }
        if !(self.warm_up.is_finite() && self.warm_up >= 0.0) {
            return Err(format!(
                "--warm-up must be a number of seconds (0 for none), not {}",
                self.warm_up
            ));
        }
        if self.modes.is_empty() {
            return Err("--modes needs one or more of chained, orchestrated, orchestrator".into());
        }
        if self.stage_timings.is_some() && self.modes.contains(&LoadMode::Orchestrator) {
            return Err(
                "--stage-timings times chained and orchestrated flows: add --modes chained,orchestrated"
                    .into(),
            );
        }
        if self.timings_every == 0 || self.bucket_ms == 0 {
            return Err("--timings-every and --bucket-ms must be positive".into());
        }
        Ok(())
    }
}

/// One level in one mode.
#[derive(Debug, Clone, Serialize)]
pub struct Measurement {
    mode: &'static str,
    clients: usize,
    seconds: f64,
    /// Flows that ended in an output (an average, or `None` for a non-temperature).
    flows: u64,
    /// Flows that failed or timed out.
    errors: u64,
    flows_per_second: f64,
    mean_ms: f64,
    p50_ms: f64,
    p99_ms: f64,
    error_rate: f64,
    /// Flows that reached the moving average.
    temperatures: u64,
    topology: &'static str,
    /// Whether the client kept its connections open between requests.
    keep_alive: bool,
    /// Whether each service was held to one CPU.
    one_cpu_per_service: bool,
    /// CPU time per completed flow, in microseconds: the caller (this load generator), the
    /// sensor service, the functions' services together, and all of them.
    cpu_caller_us: f64,
    cpu_sensor_service_us: f64,
    cpu_functions_us: f64,
    cpu_total_us: f64,
    /// CPU time per completed flow of each function's service, in deployment order.
    #[serde(skip)]
    cpu_by_service_us: Vec<f64>,
}

/// The processes whose CPU time a measurement splits: this one, then the deployment's.
struct Processes {
    pids: Vec<u32>,
    names: Vec<&'static str>,
    topology: &'static str,
}

impl Processes {
    fn of(deployment: &Deployment, topology: Topology) -> Self {
        let mut pids = vec![std::process::id()];
        let mut names = vec!["caller"];
        for (name, process) in deployment.processes() {
            pids.push(process.id());
            names.push(name);
        }
        Self {
            pids,
            names,
            topology: topology.name(),
        }
    }

    /// Each process's CPU time so far (zero for one that is gone).
    fn cpu_times(&self) -> Vec<Duration> {
        self.pids
            .iter()
            .map(|&pid| cpu_time(pid).unwrap_or_default())
            .collect()
    }
}

/// What one client saw.
#[derive(Debug, Default)]
struct Tally {
    latencies: Vec<Duration>,
    errors: u64,
    temperatures: u64,
    first_error: Option<String>,
    /// When each flow completed, and each error happened, since the run started.
    completed_at: Vec<Duration>,
    failed_at: Vec<Duration>,
    /// The timed flows kept, each with when it was sent since the run started.
    timings: Vec<(Duration, FlowTimings)>,
}

/// What a measured run saw over time, beyond its [`Measurement`].
#[derive(Debug, Default)]
struct Samples {
    completed_at: Vec<Duration>,
    failed_at: Vec<Duration>,
    timings: Vec<(Duration, FlowTimings)>,
}

pub async fn run(args: LoadArgs, deployment: Deployment) -> anyhow::Result<()> {
    eprintln!(
        "sensor service {} ({} rows, seed {})",
        deployment.sensor_url(),
        args.data.rows,
        args.data.seed
    );
    for (name, url) in deployment.routes() {
        eprintln!("{name}: {url}");
    }
    let config = deployment.http_config().keep_alive(args.keep_alive);
    let ctx = Context::http(config).context("cannot set up the http backend")?;
    let seconds = Duration::from_secs_f64(args.seconds);
    let warm_up = Duration::from_secs_f64(args.warm_up);
    let timeout = Duration::from_secs_f64(args.timeout);
    let processes = Processes::of(&deployment, args.topology.into());
    let timed = args.stage_timings.is_some().then_some(args.timings_every);
    let bucket = Duration::from_millis(args.bucket_ms);
    let mut measurements = Vec::new();
    let mut timeline = Vec::new();
    let mut stage_rows = Vec::new();
    for (level, &clients) in args.clients.iter().enumerate() {
        let mut modes = args.modes.clone();
        // No mode always runs on a machine another just warmed (or tired).
        let turn = level % modes.len();
        modes.rotate_left(turn);
        for mode in modes {
            let run = Run {
                mode,
                clients,
                timeout,
                timed,
            };
            if !warm_up.is_zero() {
                measure(&ctx, &processes, run, warm_up).await;
            }
            let (mut measurement, first_error, samples) =
                measure(&ctx, &processes, run, seconds).await;
            measurement.keep_alive = args.keep_alive;
            measurement.one_cpu_per_service = args.one_cpu_per_service;
            eprintln!(
                "{:>12} {clients:>3} clients: {:.1} flows/s, mean {:.2} ms, p99 {:.2} ms, {} errors",
                mode.name(),
                measurement.flows_per_second,
                measurement.mean_ms,
                measurement.p99_ms,
                measurement.errors
            );
            if let Some(error) = first_error {
                eprintln!("  first error: {error}");
            }
            if args.timeline.is_some() {
                timeline.extend(timeline_rows(&run, &samples, bucket));
            }
            if timed.is_some() {
                eprintln!("  {}", stage_summary(&samples));
                stage_rows.extend(samples.timings.into_iter().map(|(sent, timings)| StageRow {
                    mode: mode.name(),
                    clients,
                    sent,
                    timings,
                }));
            }
            measurements.push(measurement);
        }
    }
    println!("{}", table(&args.clients, &measurements));
    println!();
    println!("{}", cpu_table(&processes.names, &measurements));
    if let Some(path) = &args.csv {
        write_rows(path, &measurements)
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = &args.stage_timings {
        write_stage_timings(path, &stage_rows)
            .with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    if let Some(path) = &args.timeline {
        write_rows(path, &timeline).with_context(|| format!("cannot write {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// What one measured (or warm-up) run does.
#[derive(Debug, Clone, Copy)]
struct Run {
    mode: LoadMode,
    clients: usize,
    /// How long a client waits for one flow.
    timeout: Duration,
    /// Run the timed twin, keeping one timed flow in this many per client.
    timed: Option<u64>,
}

/// `clients` clients running one flow after the other in `mode` for `duration`; flows still
/// running at the end finish and count, as with `hey -z`.
async fn measure(
    ctx: &Context,
    processes: &Processes,
    run: Run,
    duration: Duration,
) -> (Measurement, Option<String>, Samples) {
    let Run {
        mode,
        clients,
        timeout,
        timed,
    } = run;
    let cpu_before = processes.cpu_times();
    let started = Instant::now();
    let deadline = started + duration;
    let tasks: Vec<_> = (0..clients)
        .map(|_| {
            let ctx = ctx.clone();
            tokio::spawn(async move {
                let mut tally = Tally::default();
                let mut timed_flows = 0u64;
                while Instant::now() < deadline {
                    let sent = Instant::now();
                    let sent_ns = monotonic_ns();
                    let outcome =
                        tokio::time::timeout(timeout, mode.run(&ctx, Row::Next, timed.is_some()))
                            .await;
                    let received_ns = monotonic_ns();
                    match outcome {
                        Ok(Ok(output)) => {
                            tally.latencies.push(sent.elapsed());
                            tally.completed_at.push(started.elapsed());
                            tally.temperatures += u64::from(output.temperature);
                            if let (Some(stages), Some(every)) = (output.stages, timed) {
                                if timed_flows % every == 0 {
                                    let timings = FlowTimings {
                                        sent_ns,
                                        stages,
                                        received_ns,
                                    };
                                    tally.timings.push((sent - started, timings));
                                }
                                timed_flows += 1;
                            }
                        }
                        Ok(Err(error)) => {
                            tally.errors += 1;
                            tally.failed_at.push(started.elapsed());
                            tally.first_error.get_or_insert_with(|| error.to_string());
                        }
                        Err(_) => {
                            tally.errors += 1;
                            tally.failed_at.push(started.elapsed());
                            tally.first_error.get_or_insert_with(|| {
                                format!("no answer within {} s", timeout.as_secs_f64())
                            });
                        }
                    }
                }
                tally
            })
        })
        .collect();
    let mut total = Tally::default();
    for task in tasks {
        match task.await {
            Ok(tally) => {
                total.latencies.extend(tally.latencies);
                total.completed_at.extend(tally.completed_at);
                total.failed_at.extend(tally.failed_at);
                total.timings.extend(tally.timings);
                total.errors += tally.errors;
                total.temperatures += tally.temperatures;
                if total.first_error.is_none() {
                    total.first_error = tally.first_error;
                }
            }
            Err(error) => {
                total.errors += 1;
                total
                    .first_error
                    .get_or_insert_with(|| format!("a client task failed: {error}"));
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let cpu_us: Vec<f64> = processes
        .cpu_times()
        .iter()
        .zip(&cpu_before)
        .map(|(after, before)| {
            after.saturating_sub(*before).as_secs_f64() * 1e6 / total.latencies.len().max(1) as f64
        })
        .collect();
    let cpu = |i: usize| cpu_us.get(i).copied().unwrap_or(0.0);
    total.latencies.sort_unstable();
    let flows = total.latencies.len() as u64;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    let mean_ms = if flows == 0 {
        0.0
    } else {
        total.latencies.iter().copied().map(ms).sum::<f64>() / flows as f64
    };
    let measurement = Measurement {
        mode: mode.name(),
        clients,
        seconds,
        flows,
        errors: total.errors,
        flows_per_second: flows as f64 / seconds,
        mean_ms,
        p50_ms: nearest_rank(&total.latencies, 0.50).map_or(0.0, ms),
        p99_ms: nearest_rank(&total.latencies, 0.99).map_or(0.0, ms),
        error_rate: total.errors as f64 / (flows + total.errors).max(1) as f64,
        temperatures: total.temperatures,
        topology: processes.topology,
        keep_alive: true,
        one_cpu_per_service: false,
        cpu_caller_us: cpu(0),
        cpu_sensor_service_us: cpu(1),
        cpu_functions_us: cpu_us.iter().skip(2).sum(),
        cpu_total_us: cpu_us.iter().sum(),
        cpu_by_service_us: cpu_us.iter().skip(2).copied().collect(),
    };
    let samples = Samples {
        completed_at: total.completed_at,
        failed_at: total.failed_at,
        timings: total.timings,
    };
    (measurement, total.first_error, samples)
}

/// Flows completed and failed in one bucket of a measured run.
#[derive(Debug, Clone, Serialize)]
struct TimelineRow {
    mode: &'static str,
    clients: usize,
    /// The bucket's start, in seconds since the run started.
    second: f64,
    /// The bucket's width, in seconds.
    bucket_seconds: f64,
    flows: u64,
    errors: u64,
    flows_per_second: f64,
}

/// `samples` counted per `bucket`, from the run's start to its last completion.
fn timeline_rows(run: &Run, samples: &Samples, bucket: Duration) -> Vec<TimelineRow> {
    let index = |at: &Duration| (at.as_nanos() / bucket.as_nanos().max(1)) as usize;
    let buckets = samples
        .completed_at
        .iter()
        .chain(&samples.failed_at)
        .map(index)
        .max()
        .map_or(0, |last| last + 1);
    let mut flows = vec![0u64; buckets];
    let mut errors = vec![0u64; buckets];
    for at in &samples.completed_at {
        flows[index(at)] += 1;
    }
    for at in &samples.failed_at {
        errors[index(at)] += 1;
    }
    let width = bucket.as_secs_f64();
    (0..buckets)
        .map(|i| TimelineRow {
            mode: run.mode.name(),
            clients: run.clients,
            second: i as f64 * width,
            bucket_seconds: width,
            flows: flows[i],
            errors: errors[i],
            flows_per_second: flows[i] as f64 / width,
        })
        .collect()
}

/// One timed flow of a measured run.
struct StageRow {
    mode: &'static str,
    clients: usize,
    /// When it was sent, since the run started.
    sent: Duration,
    timings: FlowTimings,
}

/// `p50 / p99` of every hop and stage body of `samples`' timed flows, in microseconds.
fn stage_summary(samples: &Samples) -> String {
    let flows: Vec<&FlowTimings> = samples.timings.iter().map(|(_, t)| t).collect();
    let quantiles = |mut ns: Vec<u64>| {
        ns.sort_unstable();
        let durations: Vec<Duration> = ns.into_iter().map(Duration::from_nanos).collect();
        let us = |q| nearest_rank(&durations, q).map_or(0.0, |d| d.as_secs_f64() * 1e6);
        format!("{:.0}/{:.0}", us(0.50), us(0.99))
    };
    let labels = stage_labels();
    let mut parts = vec![format!("{} timed flows, p50/p99 µs:", flows.len())];
    for (i, label) in labels.iter().enumerate() {
        let from = if i == 0 { "client" } else { labels[i - 1] };
        parts.push(format!(
            "{from}→{label} {}",
            quantiles(flows.iter().map(|t| t.hops_ns()[i]).collect())
        ));
        parts.push(format!(
            "{label} {}",
            quantiles(flows.iter().map(|t| t.bodies_ns()[i]).collect())
        ));
    }
    parts.push(format!(
        "→client {}",
        quantiles(flows.iter().map(|t| t.hops_ns()[labels.len()]).collect())
    ));
    parts.join(" ")
}

/// The timed flows, one row each: when it was sent (seconds since its run started), then each
/// stage's start and finish and the output's receipt, in microseconds since it was sent.
fn write_stage_timings(path: &std::path::Path, rows: &[StageRow]) -> anyhow::Result<()> {
    let mut writer = csv::Writer::from_path(path)?;
    let labels = stage_labels();
    let mut header = vec![
        "mode".to_owned(),
        "clients".into(),
        "flow".into(),
        "sent_second".into(),
    ];
    for label in labels {
        header.extend([
            format!("{label}_started_us"),
            format!("{label}_finished_us"),
        ]);
    }
    header.push("received_us".into());
    writer.write_record(&header)?;
    for (flow, row) in rows.iter().enumerate() {
        let since_sent =
            |ns: u64| format!("{:.3}", ns.saturating_sub(row.timings.sent_ns) as f64 / 1e3);
        let mut record = vec![
            row.mode.to_owned(),
            row.clients.to_string(),
            flow.to_string(),
            format!("{:.6}", row.sent.as_secs_f64()),
        ];
        record.extend(row.timings.instants()[1..].iter().map(|&ns| since_sent(ns)));
        writer.write_record(&record)?;
    }
    writer.flush()?;
    Ok(())
}

fn write_rows<T: Serialize>(path: &std::path::Path, rows: &[T]) -> anyhow::Result<()> {
    let mut writer = csv::Writer::from_path(path)?;
    for row in rows {
        writer.serialize(row)?;
    }
    writer.flush()?;
    Ok(())
}

/// The `q` quantile of sorted `values` by nearest rank.
fn nearest_rank(sorted: &[Duration], q: f64) -> Option<Duration> {
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted.get(rank.max(1) - 1).copied()
}

/// The results as a Markdown table, a row per client count, modes side by side.
fn table(levels: &[usize], measurements: &[Measurement]) -> String {
    let find = |clients: usize, mode: &str| {
        measurements
            .iter()
            .find(|m| m.clients == clients && m.mode == mode)
    };
    let modes: Vec<&str> = ["chained", "orchestrated", "orchestrator"]
        .into_iter()
        .filter(|mode| measurements.iter().any(|m| m.mode == *mode))
        .collect();
    let mut header = vec!["clients".to_owned()];
    for mode in &modes {
        header.extend([
            format!("{mode} flows/s"),
            "mean ms".into(),
            "p99 ms".into(),
            "errors".into(),
        ]);
    }
    let baselines: Vec<&str> = modes
        .iter()
        .copied()
        .filter(|mode| *mode != "chained" && modes.contains(&"chained"))
        .collect();
    for baseline in &baselines {
        header.push(format!("chained / {baseline}"));
    }
    let mut lines = vec![
        format!("| {} |", header.join(" | ")),
        format!("|{}", " --- |".repeat(header.len())),
    ];
    for &clients in levels {
        let mut cells = vec![clients.to_string()];
        for mode in &modes {
            match find(clients, mode) {
                Some(m) => cells.extend([
                    format!("{:.1}", m.flows_per_second),
                    format!("{:.2}", m.mean_ms),
                    format!("{:.2}", m.p99_ms),
                    format!("{:.2}%", 100.0 * m.error_rate),
                ]),
                None => cells.extend(["–".to_owned(), "–".into(), "–".into(), "–".into()]),
            }
        }
        for baseline in &baselines {
            match (find(clients, "chained"), find(clients, baseline)) {
                (Some(chained), Some(other)) => cells.push(format!(
                    "{:.2}x",
                    chained.flows_per_second / other.flows_per_second
                )),
                _ => cells.push("–".into()),
            }
        }
        lines.push(format!("| {} |", cells.join(" | ")));
    }
    lines.join("\n")
}

/// CPU time per flow by process, a row per measurement.
fn cpu_table(names: &[&str], measurements: &[Measurement]) -> String {
    let services = names.get(2..).unwrap_or_default();
    let mut header = vec!["clients", "mode", "caller", "sensor service"];
    header.extend(services);
    header.push("total");
    let mut lines = vec![
        format!("| {} |", header.join(" | ")),
        format!("|{}", " --- |".repeat(header.len())),
    ];
    for m in measurements {
        let mut cells = vec![
            m.clients.to_string(),
            m.mode.to_owned(),
            format!("{:.0}", m.cpu_caller_us),
            format!("{:.0}", m.cpu_sensor_service_us),
        ];
        cells.extend(m.cpu_by_service_us.iter().map(|us| format!("{us:.0}")));
        cells.push(format!("{:.0}", m.cpu_total_us));
        lines.push(format!("| {} |", cells.join(" | ")));
    }
    lines.join("\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_are_nearest_ranks() {
        let values: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        assert_eq!(nearest_rank(&values, 0.99), Some(Duration::from_millis(99)));
        assert_eq!(nearest_rank(&values, 0.50), Some(Duration::from_millis(50)));
        assert_eq!(
            nearest_rank(&values[..1], 0.99),
            Some(Duration::from_millis(1))
        );
        assert_eq!(nearest_rank(&[], 0.99), None);
    }
}
