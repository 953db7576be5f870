//! Invocation latency against the number of invocations dispatched at once, per backend: the
//! client curve of Cppless's figure 5.19 (there: a constant Lambda function, 1…2,000
//! invocations, 16 HTTP/2 connections of 100 streams).
//!
//! For each count N, N no-op invocations start together (`ctx.call`, each timed on its own) and
//! the round ends when the last answers; each count runs `--rounds` times after one warm-up
//! round. Backends:
//!
//! - `local`: the fixture program's two local workers;
//! - `http`: the fixture as an HTTP service (`FERRY_ROLE=http`) on loopback;
//! - `lambda-emulator`: the fixture as the `bootstrap` of `cargo lambda watch`, in Managed
//!   Instances mode (`AWS_LAMBDA_MAX_CONCURRENCY`), invoked through the Invoke API with SigV4;
//! - `lambda-client`: the same client against an Invoke endpoint that answers at once, which is
//!   what the figure isolates: the client's own limit.
//!
//! `cargo bench -p ferry-tests --bench client_curve -- [--quick] [--counts 1,8,64] [--out FILE.jsonl]` prints a
//! Markdown table and, with `--out`, one JSON record per backend and count
//! (`scripts/reproduce.sh client-curve` renders them).

use std::io::{BufRead, BufReader, Write as _};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ferry::aws::{AwsConfig, Credentials};
use ferry::{Context, HttpConfig, LambdaConfig, LocalConfig};
use ferry_tests::Noop;
use serde_json::json;

mod instant_endpoint;

const FIXTURE: &str = env!("CARGO_BIN_EXE_ferry-fixture");
/// Invocations the emulated runtime runs side by side: Lambda's instances, scaled to 2 cores.
const EMULATOR_CONCURRENCY: usize = 64;
/// The most invocations sent to `cargo lambda watch` at once. Its queue of waiting invocations
/// holds 100, and an invocation that finds it full waits while holding the lock that `/next`
/// needs to take from it: past ~100 waiting, the emulator stops for good, whatever the runtime
/// (`lambda_runtime`'s `run_concurrent` stops the same way).
const EMULATOR_MAX_AT_ONCE: usize = EMULATOR_CONCURRENCY;

#[derive(Clone)]
struct Options {
    counts: Vec<usize>,
    rounds: usize,
    out: Option<std::path::PathBuf>,
}

impl Options {
    fn parse() -> Self {
        let mut options = Self {
            counts: (0..=12).map(|power| 1 << power).collect(),
            rounds: 5,
            out: None,
        };
        let mut args = std::env::args().skip(1);
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--quick" => {
                    options.counts = vec![1, 8, 64];
                    options.rounds = 2;
                }
                "--out" => options.out = Some(args.next().expect("--out takes a file").into()),
                "--counts" => {
                    options.counts = args
                        .next()
                        .expect("--counts takes a list")
                        .split(',')
                        .map(|count| count.parse().expect("--counts takes whole numbers"))
                        .collect();
                }
                // `cargo bench` passes `--bench`; a filter means nothing here.
                _ => {}
            }
        }
        options
    }
}

/// One count's measurements over its rounds.
struct Point {
    invocations: usize,
    /// The time until the last invocation answered, per round.
    walls: Vec<Duration>,
    /// Every invocation's own latency, over all rounds.
    latencies: Vec<Duration>,
}

impl Point {
    fn median_wall(&self) -> Duration {
        let mut walls = self.walls.clone();
        walls.sort_unstable();
        walls[walls.len() / 2]
    }

    fn percentile(&self, percent: usize) -> Duration {
        self.latencies[(self.latencies.len() - 1) * percent / 100]
    }
}

async fn curve(backend: &str, ctx: &Context, options: &Options) -> Vec<Point> {
    let mut points = Vec::new();
    let most = if backend == "lambda-emulator" {
        EMULATOR_MAX_AT_ONCE
    } else {
        usize::MAX
    };
    for &invocations in options.counts.iter().filter(|&&count| count <= most) {
        let mut point = Point {
            invocations,
            walls: Vec::new(),
            latencies: Vec::new(),
        };
        for round in 0..=options.rounds {
            let started = Instant::now();
            let calls = (0..invocations).map(|_| async {
                let began = Instant::now();
                ctx.call(Noop {}).await.expect("a no-op invocation");
                began.elapsed()
            });
            let latencies = futures::future::join_all(calls).await;
            let wall = started.elapsed();
            // Round 0 warms connections, workers and emulated instances up.
            if round > 0 {
                point.walls.push(wall);
                point.latencies.extend(latencies);
            }
        }
        point.latencies.sort_unstable();
        eprintln!(
            "{backend}: {invocations} at once: all in {:.2} ms, p50 {:.2} ms, p99 {:.2} ms",
            ms(point.median_wall()),
            ms(point.percentile(50)),
            ms(point.percentile(99))
        );
        points.push(point);
    }
    points
}

/// A child process killed when dropped, or when this process dies first.
struct Process(Child);

/// `command` whose child the kernel kills when this process dies, however it dies.
fn dies_with_parent(mut command: Command) -> Command {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: prctl is async-signal-safe and touches only the child being started.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    command
}

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

fn wait_for_port(port: u16, what: &str) {
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{what} never listened"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn http_service() -> (Process, String) {
    let mut child = dies_with_parent(Command::new(FIXTURE))
        .env("FERRY_ROLE", "http")
        .env("FERRY_LISTEN", "127.0.0.1:0")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the fixture as an HTTP service");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let base = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|line| line.strip_prefix("ferry: listening on ").map(str::to_owned))
        .expect("the service announces where it listens");
    std::thread::spawn(move || lines.for_each(drop));
    (Process(child), base)
}

/// `cargo lambda watch` with the fixture as its default function's `bootstrap`.
fn lambda_emulator() -> (Process, Process, String) {
    let port = free_port();
    let emulator = dies_with_parent(Command::new("cargo-lambda"))
        .args(["lambda", "watch", "--only-lambda-apis", "-A", "127.0.0.1"])
        .args(["-P", &port.to_string()])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("cargo-lambda is installed (`pip install cargo-lambda`; scripts/test.sh does it)");
    let emulator = Process(emulator);
    wait_for_port(port, "cargo lambda watch");
    let bootstrap = dies_with_parent(Command::new(FIXTURE))
        .env_remove("FERRY_ROLE")
        .env(
            "AWS_LAMBDA_RUNTIME_API",
            format!("http://127.0.0.1:{port}/.rt"),
        )
        .env("AWS_LAMBDA_FUNCTION_NAME", "_")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "1")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "1769")
        .env(
            "AWS_LAMBDA_MAX_CONCURRENCY",
            EMULATOR_CONCURRENCY.to_string(),
        )
        .env("_HANDLER", "noop")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the bootstrap");
    (
        emulator,
        Process(bootstrap),
        format!("http://127.0.0.1:{port}"),
    )
}

fn lambda_context(endpoint: &str) -> Context {
    let aws = AwsConfig::new(
        "eu-west-1",
        Credentials::new("AKIDFERRYBENCH", "ferry-bench-secret", None),
    )
    .with_lambda_endpoint(endpoint)
    .expect("a loopback endpoint");
    Context::lambda(LambdaConfig::new(aws).route("noop", "_")).expect("a lambda context")
}

fn ms(duration: Duration) -> f64 {
    duration.as_secs_f64() * 1e3
}

fn main() {
    if instant_endpoint::serve_if_asked() {
        return;
    }
    let options = Options::parse();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let _entered = runtime.enter();
    let mut out = options.out.as_ref().map(|path| {
        std::fs::File::create(path).unwrap_or_else(|e| panic!("cannot write {path:?}: {e}"))
    });
    let mut report = String::from(
        "| backend | invocations at once | all answered (median) | per invocation p50 | p99 |\n|---|---|---|---|---|\n",
    );
    for backend in ["local", "http", "lambda-emulator", "lambda-client"] {
        // Each backend's processes live while its curve is measured, then go.
        let (_processes, ctx): (Vec<Box<dyn std::any::Any>>, Context) = match backend {
            "local" => (
                Vec::new(),
                Context::local(LocalConfig::default().worker_exe(FIXTURE)).expect("local"),
            ),
            "http" => {
                let (service, base) = http_service();
                (
                    vec![Box::new(service)],
                    Context::http(HttpConfig::new(&base)).expect("http"),
                )
            }
            "lambda-emulator" => {
                let (emulator, bootstrap, endpoint) = lambda_emulator();
                (
                    vec![Box::new(bootstrap), Box::new(emulator)],
                    lambda_context(&endpoint),
                )
            }
            _ => {
                let endpoint = instant_endpoint::start();
                let ctx = lambda_context(&endpoint.url);
                (vec![Box::new(endpoint)], ctx)
            }
        };
        // Host code runs as a task on the runtime, as `ferry::run` runs `main`.
        let points = runtime
            .block_on(tokio::spawn({
                let (ctx, options) = (ctx.clone(), options.clone());
                async move { curve(backend, &ctx, &options).await }
            }))
            .expect("the measurement");
        runtime.block_on(ctx.shutdown());
        for point in &points {
            let (wall, p50, p99) = (
                point.median_wall(),
                point.percentile(50),
                point.percentile(99),
            );
            report.push_str(&format!(
                "| {backend} | {} | {:.2} ms | {:.2} ms | {:.2} ms |\n",
                point.invocations,
                ms(wall),
                ms(p50),
                ms(p99)
            ));
            if let Some(file) = out.as_mut() {
                let record = json!({
                    "backend": backend,
                    "invocations": point.invocations,
                    "rounds": point.walls.len(),
                    "wall_ms": point.walls.iter().map(|&w| ms(w)).collect::<Vec<_>>(),
                    "median_wall_ms": ms(wall),
                    "p50_ms": ms(p50),
                    "p99_ms": ms(p99),
                    "emulator_concurrency": (backend == "lambda-emulator").then_some(EMULATOR_CONCURRENCY),
                });
                writeln!(file, "{record}").expect("write a record");
            }
        }
    }
    println!("\n{report}");
}
