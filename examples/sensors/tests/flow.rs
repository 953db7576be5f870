//! The flow over real instances: local worker processes and one HTTP service process per
//! function. Chained and orchestrated runs give the same outputs for the same readings, and a
//! sequential run's moving average is the average of the dataset's temperatures computed
//! directly.

use std::future::IntoFuture;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use ferry::{Context, ErrorKind, FlowMode, LocalConfig};
use sensors::dataset::{Reading, generate};
use sensors::deploy::{Cpus, Deployment, Topology};
use sensors::pipeline::{pipeline, stage_names};
use sensors::service::{self, Row, SENSORS_URL_VAR, SensorData};
use sensors::timing::{FlowTimings, Timed, monotonic_ns, timed_pipeline};

const ROWS: usize = 900;
const SEED: u64 = 11;
/// Rows read in each run: enough for dozens of temperatures from every sensor.
const READ: u64 = 400;

const PROGRAM: &str = env!("CARGO_BIN_EXE_sensors");

/// Fails the test instead of hanging.
async fn bounded<T>(future: impl IntoFuture<Output = T>) -> T {
    tokio::time::timeout(Duration::from_secs(60), future)
        .await
        .expect("a flow hung")
}

/// Rows `0..READ` through the flow one after the other: each row's output.
async fn run_sequentially(ctx: &Context, mode: FlowMode) -> Vec<Option<f64>> {
    let flow = pipeline().mode(mode);
    let mut outputs = Vec::new();
    for row in 0..READ {
        let output = bounded(flow.run(ctx, Row::At(row))).await;
        outputs.push(output.unwrap_or_else(|e| panic!("row {row} ({mode:?}): {e}")));
    }
    outputs
}

/// What every run must give: `None` for the rows that are not temperatures, and the average
/// of the temperatures so far for the others.
fn check_against_dataset(outputs: &[Option<f64>], readings: &[Reading]) {
    let read = &readings[..READ as usize];
    for (output, reading) in outputs.iter().zip(read) {
        assert_eq!(
            output.is_some(),
            reading.variable == "Temperature",
            "{reading:?}"
        );
    }
    let averages: Vec<f64> = outputs.iter().flatten().copied().collect();
    let (mut sum, mut count) = (0.0, 0.0);
    let expected: Vec<f64> = read
        .iter()
        .filter(|r| r.variable == "Temperature")
        .map(|r| {
            sum += r.value;
            count += 1.0;
            sum / count
        })
        .collect();
    assert!(expected.len() > 40, "{} temperatures", expected.len());
    // Bit for bit: one instance adds the same values in the same order.
    assert_eq!(averages, expected);
}

/// The sensor service as a task of the test's runtime.
async fn sensor_service(readings: &[Reading]) -> (String, tokio::task::JoinHandle<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    let data = Arc::new(SensorData::new(readings));
    let task = tokio::spawn(async move {
        service::serve(listener, data).await.unwrap();
    });
    (url, task)
}

/// One worker: one instance of `moving_average` for the whole run.
fn one_worker(sensors_url: &str) -> Context {
    Context::local(
        LocalConfig::default()
            .max_workers(1)
            .worker_exe(PROGRAM)
            .env(SENSORS_URL_VAR, sensors_url),
    )
    .expect("local platform")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chained_and_orchestrated_agree_on_the_local_platform() {
    let readings = generate(ROWS, SEED);
    let (url, _service) = sensor_service(&readings).await;
    // Fresh workers for each mode, so each starts its average from nothing.
    let chained_ctx = one_worker(&url);
    let chained = run_sequentially(&chained_ctx, FlowMode::Chained).await;
    chained_ctx.shutdown().await;
    let orchestrated_ctx = one_worker(&url);
    let orchestrated = run_sequentially(&orchestrated_ctx, FlowMode::Orchestrated).await;
    orchestrated_ctx.shutdown().await;
    assert_eq!(chained, orchestrated);
    check_against_dataset(&chained, &readings);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chained_and_orchestrated_agree_over_one_http_service_per_function() {
    let readings = generate(ROWS, SEED);
    let mut outputs = Vec::new();
    for mode in [FlowMode::Chained, FlowMode::Orchestrated] {
        // A fresh deployment for each mode: fresh placed averages.
        let deployment = Deployment::start(Path::new(PROGRAM), ROWS, SEED).expect("deploy");
        let routes = deployment.routes();
        assert_eq!(
            routes.iter().map(|(name, _)| *name).collect::<Vec<_>>(),
            stage_names()
        );
        let ctx = Context::http(deployment.http_config()).unwrap();
        outputs.push(run_sequentially(&ctx, mode).await);

        // The caller sends one request per chained flow (the services call each other), and
        // one per stage that runs when orchestrated.
        let before = ctx.stats().invocations;
        let temperature = readings
            .iter()
            .position(|r| r.variable == "Temperature")
            .unwrap();
        bounded(pipeline().mode(mode).run(&ctx, Row::At(temperature as u64)))
            .await
            .unwrap();
        let requests = ctx.stats().invocations - before;
        match mode {
            FlowMode::Chained => assert_eq!(requests, 1),
            _ => assert_eq!(requests, 4),
        }
    }
    assert_eq!(outputs[0], outputs[1]);
    check_against_dataset(&outputs[0], &readings);
}

/// The timed twin over one service per function (issue 14): every stage's stamps come back
/// with the output, in order — the caller sent before `read` started, each stage finished after
/// it started and before the next one started, and the output came back after the last.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stage_timings_come_back_in_order_chained_and_orchestrated() {
    let readings = generate(ROWS, SEED);
    let deployment = Deployment::start(Path::new(PROGRAM), ROWS, SEED).expect("deploy");
    let ctx = Context::http(deployment.http_config()).unwrap();
    let temperatures: Vec<u64> = (0..ROWS as u64)
        .filter(|&i| readings[i as usize].variable == "Temperature")
        .take(5)
        .collect();
    for mode in [FlowMode::Chained, FlowMode::Orchestrated] {
        for &row in &temperatures {
            let sent_ns = monotonic_ns();
            let output = bounded(
                timed_pipeline()
                    .mode(mode)
                    .run(&ctx, Timed::new(Row::At(row))),
            )
            .await
            .unwrap_or_else(|e| panic!("row {row} ({mode:?}): {e}"))
            .expect("a temperature reaches the moving average");
            let timings = FlowTimings {
                sent_ns,
                stages: output.stages,
                received_ns: monotonic_ns(),
            };
            assert_eq!(timings.stages.len(), stage_names().len(), "{mode:?}");
            assert!(timings.is_ordered(), "{mode:?}: {timings:?}");
            // Each stage ran in its own process: a hop between two is never free.
            assert!(
                timings.hops_ns()[1..4].iter().all(|&ns| ns > 0),
                "{timings:?}"
            );
        }
        // A flow a stage ends brings no stamps back, only its end.
        let other = readings.iter().position(|r| r.variable != "Temperature");
        let other = Row::At(other.unwrap() as u64);
        let ended = bounded(timed_pipeline().mode(mode).run(&ctx, Timed::new(other))).await;
        assert_eq!(ended.unwrap(), None, "{mode:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failures_name_the_read_stage() {
    let readings = generate(20, SEED);
    let (url, _service) = sensor_service(&readings).await;
    let ctx = one_worker(&url);
    for mode in [FlowMode::Chained, FlowMode::Orchestrated] {
        let error = bounded(pipeline().mode(mode).run(&ctx, Row::At(20)))
            .await
            .unwrap_err();
        assert_eq!(error.flow_stage(), Some(0), "{error}");
        assert!(
            matches!(error.kind(), ErrorKind::User { message, .. }
                if message.contains("answered 404: no row 20: the dataset has 20 rows")),
            "{error}"
        );
    }
    ctx.shutdown().await;

    let unconfigured = Context::local(
        LocalConfig::default()
            .max_workers(1)
            .worker_exe(PROGRAM)
            .env(SENSORS_URL_VAR, ""),
    )
    .unwrap();
    let error = bounded(pipeline().run(&unconfigured, Row::Next))
        .await
        .unwrap_err();
    assert!(
        error.to_string().contains("`SENSORS_URL` is not set"),
        "{error}"
    );
    unconfigured.shutdown().await;
}

/// Held to one CPU each, the services take the CPUs this process may use in turn.
#[test]
fn one_cpu_per_service_holds_each_service_to_one_cpu() {
    let deployment = Deployment::start_as(
        Path::new(PROGRAM),
        ROWS,
        SEED,
        Topology::PerFunction,
        Cpus::OneEach,
    )
    .expect("deploy");
    let allowed = |pid: u32| {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
        status
            .lines()
            .find_map(|line| line.strip_prefix("Cpus_allowed_list:"))
            .unwrap()
            .trim()
            .to_owned()
    };
    let own = allowed(std::process::id());
    let processes = deployment.processes();
    let cpus: Vec<String> = processes.iter().map(|(_, p)| allowed(p.id())).collect();
    for (cpu, (name, _)) in cpus.iter().zip(&processes) {
        assert!(cpu.parse::<usize>().is_ok(), "{name} may run on {cpu}");
    }
    // Two CPUs or more: the services use more than one.
    let used: std::collections::BTreeSet<&String> = cpus.iter().collect();
    if own.contains(['-', ',']) {
        assert!(used.len() >= 2, "{cpus:?}");
    }
}
