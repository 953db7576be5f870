//! The natural ways to wire ferry wrongly end at once with a message naming the fix, and never
//! multiply processes (issue #10): a `#[tokio::main]` host, a test binary as its own worker, a
//! worker executable whose `main` is not ferry's, and a web handler building its own context.

mod common;

use std::collections::HashMap;
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Server, bounded};
use ferry::{Context, ErrorKind, LocalConfig};
use ferry_tests::Add;

const TOKIO_MAIN: &str = env!("CARGO_BIN_EXE_misuse-tokio-main");
const WEB: &str = env!("CARGO_BIN_EXE_web-fixture");

/// Processes descending from `root`, read from `/proc`.
fn descendants(root: u32) -> usize {
    let mut children: HashMap<u32, Vec<u32>> = HashMap::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
            continue;
        };
        // `pid (comm) state ppid …`: comm may hold spaces and parentheses.
        let Some(after) = stat.rfind(')').map(|i| &stat[i + 1..]) else {
            continue;
        };
        if let Some(ppid) = after.split_whitespace().nth(1).and_then(|p| p.parse().ok()) {
            children.entry(ppid).or_default().push(pid);
        }
    }
    let mut stack = vec![root];
    let mut count = 0;
    while let Some(pid) = stack.pop() {
        for &child in children.get(&pid).map(Vec::as_slice).unwrap_or_default() {
            count += 1;
            stack.push(child);
        }
    }
    count
}

/// Held by every test here: each starts processes, and some count this process's children.
static OWN_CHILDREN: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// Samples the descendants of `root` every 10 ms until dropped; `max` is the most seen at once.
struct ProcessCounter {
    root: u32,
    max: Arc<AtomicUsize>,
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl ProcessCounter {
    fn watch(root: u32) -> Self {
        let max = Arc::new(AtomicUsize::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let thread = std::thread::spawn({
            let (max, stop) = (max.clone(), stop.clone());
            move || {
                while !stop.load(Ordering::Relaxed) {
                    max.fetch_max(descendants(root), Ordering::Relaxed);
                    std::thread::sleep(Duration::from_millis(10));
                }
            }
        });
        Self {
            root,
            max,
            stop,
            thread: Some(thread),
        }
    }

    fn max(mut self) -> usize {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.join().unwrap();
        }
        // One last look, in case the sampler never got a core.
        self.max
            .fetch_max(descendants(self.root), Ordering::Relaxed)
            .max(descendants(self.root))
    }
}

#[test]
fn a_tokio_main_host_is_refused_with_the_fix() {
    let _own = OWN_CHILDREN.blocking_lock();
    let started = Instant::now();
    let mut child = Command::new(TOKIO_MAIN)
        .env_remove("FERRY_ROLE")
        .env_remove("FERRY_BACKEND")
        .env_remove("FERRY_WORKER_EXE")
        .env("FERRY_LOCAL_WORKERS", "1")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let counter = ProcessCounter::watch(child.id());
    let deadline = Instant::now() + Duration::from_secs(5);
    while child.try_wait().unwrap().is_none() {
        assert!(Instant::now() < deadline, "still running after 5 s");
        std::thread::sleep(Duration::from_millis(10));
    }
    let most = counter.max();
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!output.status.success(), "{stderr}");
    assert!(stderr.contains("#[ferry::main]"), "{stderr}");
    assert!(stderr.contains("worker_exe"), "{stderr}");
    // FERRY_LOCAL_WORKERS + 1 ferry processes at most: the host and its one worker. The host
    // refuses before it starts any.
    assert_eq!(most, 0, "the host started {most} processes");
    assert!(started.elapsed() < Duration::from_secs(5));
}

/// This test binary is not a ferry program: a local platform that would start it as its worker
/// refuses at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_test_binary_without_worker_exe_is_refused_with_the_fix() {
    let _own = OWN_CHILDREN.lock().await;
    let counter = ProcessCounter::watch(std::process::id());
    let error = Context::local(LocalConfig::default().max_workers(1)).unwrap_err();
    let message = error.to_string();
    assert!(matches!(error.kind(), ErrorKind::Config { .. }), "{error}");
    for fix in [
        "worker_exe",
        "CARGO_BIN_EXE_",
        "Context::inline()",
        "#[ferry::main]",
    ] {
        assert!(message.contains(fix), "{fix} missing from: {message}");
    }
    // What the message suggests works.
    assert_eq!(Context::inline().call(Add { a: 1, b: 2 }).await.unwrap(), 3);
    assert_eq!(counter.max(), 0);
}

/// A worker executable whose `main` is `#[tokio::main]`: started as a worker, it refuses, and
/// the platform fails the work with its message and starts no more workers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_whose_main_is_not_ferrys_refuses_and_stops_the_platform() {
    let _own = OWN_CHILDREN.lock().await;
    let counter = ProcessCounter::watch(std::process::id());
    let ctx = Context::local(LocalConfig::default().max_workers(2).worker_exe(TOKIO_MAIN)).unwrap();
    let results = settle_within_5s(&ctx, 50).await;
    for result in &results {
        let error = result.as_ref().unwrap_err();
        assert!(error.to_string().contains("#[ferry::main]"), "{error}");
    }
    // Later calls fail at once, without starting anything.
    let again = bounded(ctx.call(Add { a: 1, b: 1 })).await.unwrap_err();
    assert!(again.to_string().contains("#[ferry::main]"), "{again}");
    assert_eq!(ctx.stats().cold_starts, 1, "{:?}", ctx.stats());
    ctx.shutdown().await;
    let most = counter.max();
    assert!(
        most <= 2,
        "{most} worker processes at once, with FERRY_LOCAL_WORKERS=2"
    );
}

/// A worker executable that is no ferry program at all exits at once: the work fails with the
/// exit and the fix, and the platform does not start it again and again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_exits_before_serving_is_reported_not_restarted() {
    let _own = OWN_CHILDREN.lock().await;
    let ctx = Context::local(
        LocalConfig::default()
            .max_workers(1)
            .worker_exe("/bin/true"),
    )
    .unwrap();
    let results = settle_within_5s(&ctx, 20).await;
    for result in &results {
        let error = result.as_ref().unwrap_err();
        let message = error.to_string();
        assert!(
            message.contains("exited with code 0 before it started serving"),
            "{message}"
        );
        assert!(message.contains("#[ferry::main]"), "{message}");
    }
    assert_eq!(ctx.stats().cold_starts, 1, "{:?}", ctx.stats());
}

/// A web app's handlers reach functions through their `ctx: ferry::Context`, and a handler that
/// builds its own context from the environment works too: the local platform's workers are the
/// web app, which serves functions as a worker instead of binding the port again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_app_handler_calls_functions_on_the_local_platform() {
    let _own = OWN_CHILDREN.lock().await;
    let server = Server::start_with(WEB, None, &[("FERRY_LOCAL_WORKERS", "1")]);
    let counter = ProcessCounter::watch(server.child.id());
    let http = reqwest::Client::new();
    for (route, expected) in [("add", "5"), ("add-from-env", "7"), ("add", "9")] {
        let b = expected.parse::<i64>().unwrap() - 2;
        let text = bounded(async {
            http.get(format!("{}/{route}/2/{b}", server.base))
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap()
        })
        .await;
        assert_eq!(text, expected, "{route}");
    }
    let most = counter.max();
    // Each `from_env` context is a platform of its own, with at most one worker.
    assert!(
        (1..=2).contains(&most),
        "{most} processes under the web app"
    );
}

/// Settles a fan-out of `tasks` additions, which must end within 5 s, whatever the outcomes.
async fn settle_within_5s(ctx: &Context, tasks: i64) -> Vec<ferry::Result<i64>> {
    let started = Instant::now();
    let results = bounded(
        ctx.map((0..tasks).map(|i| Add { a: i, b: i }))
            .progress(false)
            .settle(),
    )
    .await;
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
    results
}

/// A bad setting stops a program at start-up with the variable and what it takes; nothing runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_setting_stops_the_program_naming_the_variable() {
    let _own = OWN_CHILDREN.lock().await;
    for (variable, value, accepted) in [
        ("FERRY_ROLE", "bogus", "must be one of `host`"),
        ("FERRY_LOCAL_WORKERS", "0", "must be a whole number above 0"),
        ("FERRY_REPORT", "maybe", "must be one of 1, true, yes, on"),
        ("FERRY_LOG", "[[[", "`FERRY_LOG` is not a log filter"),
    ] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_fanout-host"))
            .env(variable, value)
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(2),
            "{variable}={value}: {stderr}"
        );
        assert!(
            stderr.contains(variable) && stderr.contains(accepted),
            "{variable}={value}: {stderr}"
        );
        assert!(
            output.stdout.is_empty(),
            "{variable}={value} ran the program"
        );
    }
}
