//! What a user sees of a fan-out (issue #10): a failed task names its index, function and
//! invocation; `FERRY_LOG=debug` logs one span per invocation with its timings; `ctx.stats()`
//! has per-function counts and percentiles; `FERRY_REPORT=1` prints the run report; and every
//! `#[ferry::main]` program takes `--backend`, listed in `--help`.

mod common;

use std::process::{Command, Output};

use common::{bounded, local};
use ferry::{Context, ErrorKind};
use ferry_tests::{Add, RequireEven};

const HOST: &str = env!("CARGO_BIN_EXE_fanout-host");

fn host(args: &[&str], env: &[(&str, &str)]) -> Output {
    Command::new(HOST)
        .args(args)
        .env_remove("FERRY_BACKEND")
        .env_remove("FERRY_LOG")
        .env_remove("FERRY_REPORT")
        .env("FERRY_LOCAL_WORKERS", "2")
        .envs(env.iter().copied())
        .output()
        .unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

#[test]
fn a_failed_task_names_its_index_on_every_backend() {
    for backend in ["local", "inline"] {
        let output = host(
            &["--backend", backend, "--tasks", "12", "--odd-at", "7"],
            &[],
        );
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{backend}: {stderr}");
        assert!(
            stderr.contains("task 7: function `ferry_tests::require_even` (invocation ")
                && stderr.contains("returned an error: 15 is odd"),
            "{backend}: {stderr}"
        );
    }
    let settled = host(&["--tasks", "12", "--odd-at", "4", "--settle"], &[]);
    let stdout = text(&settled.stdout);
    assert!(
        stdout.contains("failed: task 4: function `ferry_tests::require_even`"),
        "{stdout}"
    );
    assert!(stdout.contains("11 of 12 tasks succeeded"), "{stdout}");
}

#[test]
fn debug_logs_show_one_span_per_invocation_with_timings() {
    let output = host(
        &["--tasks", "9", "--odd-at", "2", "--settle"],
        &[("FERRY_LOG", "debug")],
    );
    let stderr = text(&output.stderr);
    let closes: Vec<&str> = stderr
        .lines()
        .filter(|line| line.contains("invocation{") && line.contains(" close "))
        .collect();
    assert_eq!(closes.len(), 9, "{stderr}");
    for index in 0..9 {
        let line = closes
            .iter()
            .find(|line| line.contains(&format!(" task={index} ")))
            .unwrap_or_else(|| panic!("no span for task {index}: {stderr}"));
        for field in [
            "function=\"ferry_tests::require_even\"",
            "backend=local",
            "worker=",
            "cold_start=",
            "queue_ms=",
            "run_ms=",
            "time.busy=",
            "time.idle=",
        ] {
            assert!(line.contains(field), "{field} missing from {line}");
        }
        let outcome = if index == 2 {
            "outcome=\"error\""
        } else {
            "outcome=\"ok\""
        };
        assert!(line.contains(outcome), "{line}");
    }
    // The first task waits for the first worker; with 8 slots a worker, the ninth for a second.
    let cold = closes
        .iter()
        .filter(|l| l.contains("cold_start=true"))
        .count();
    assert!((1..=2).contains(&cold), "{stderr}");
    assert!(
        !stderr.contains('\u{1b}'),
        "no colours when stderr is not a terminal"
    );
}

#[test]
fn the_run_report_has_calls_errors_percentiles_and_cost() {
    let output = host(
        &["--tasks", "20", "--odd-at", "5", "--settle"],
        &[("FERRY_REPORT", "1")],
    );
    let stderr = text(&output.stderr);
    assert!(stderr.contains("ferry report (local backend)"), "{stderr}");
    let row = stderr
        .lines()
        .find(|line| line.starts_with("ferry_tests::require_even"))
        .unwrap_or_else(|| panic!("no row for the function: {stderr}"));
    let cells: Vec<&str> = row.split_whitespace().collect();
    // function, calls, errors, cold, p50, p99, GB-s, lambda $
    assert_eq!(cells.len(), 8, "{row}");
    assert_eq!((cells[1], cells[2]), ("20", "1"), "{row}");
    let cold: u64 = cells[3].parse().unwrap();
    assert!((1..=2).contains(&cold), "{row}");
    let (p50, p99): (f64, f64) = (cells[4].parse().unwrap(), cells[5].parse().unwrap());
    assert!(p50 > 0.0 && p50 <= p99, "{row}");
    assert!(cells[6].parse::<f64>().unwrap() > 0.0, "{row}");
    assert!(stderr.contains("estimated on Lambda"), "{stderr}");
    // Without the variable, nothing.
    let quiet = host(&["--tasks", "3", "--settle"], &[]);
    assert!(!text(&quiet.stderr).contains("ferry report"));
}

#[test]
fn every_program_takes_backend_and_lists_it_in_help() {
    let help = host(&["--help"], &[]);
    let stdout = text(&help.stdout);
    assert!(help.status.success());
    for expected in [
        "--backend <BACKEND>",
        "inline",
        "local",
        "lambda",
        "--tasks <TASKS>",
        "--odd-at",
    ] {
        assert!(
            stdout.contains(expected),
            "{expected} missing from: {stdout}"
        );
    }
    let inline = host(&["--backend", "inline", "--tasks", "4"], &[]);
    assert!(inline.status.success(), "{}", text(&inline.stderr));
    assert!(text(&inline.stdout).contains("sum of halves: 6"));
    // The environment is the default; the flag wins over it.
    let by_env = host(&["--tasks", "4"], &[("FERRY_BACKEND", "inline")]);
    assert!(by_env.status.success(), "{}", text(&by_env.stderr));
    let wrong = host(&["--backend", "cloud"], &[]);
    assert_eq!(wrong.status.code(), Some(2));
    assert!(
        text(&wrong.stderr).contains("possible values: inline, local, http, openwhisk, lambda")
    );
    let flag_wins = host(
        &["--backend", "inline", "--tasks", "4"],
        &[("FERRY_BACKEND", "cloud")],
    );
    assert!(flag_wins.status.success(), "{}", text(&flag_wins.stderr));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_and_graphs_name_the_failed_task() {
    let ctx = Context::inline();
    let mut completions = ctx.as_completed((0..6).map(|i| RequireEven {
        n: i * 2 + u32::from(i == 3),
    }));
    let mut failed = Vec::new();
    while let Some((index, result)) = completions.next().await {
        if let Err(error) = result {
            assert_eq!(error.task(), Some(index));
            assert!(
                error.to_string().starts_with(&format!("task {index}: ")),
                "{error}"
            );
            failed.push(index);
        }
    }
    assert_eq!(failed, [3]);

    let mut graph = ctx.graph();
    let first = graph.add(Add { a: 1, b: 2 });
    let odd = graph.then(&first, |three| RequireEven { n: three as u32 });
    let after = graph.then(&odd, |half| Add {
        a: i64::from(half),
        b: 0,
    });
    let error = graph.run().await.unwrap_err();
    assert_eq!(error.task(), Some(1), "{error}");
    // A dependent fails with its input's error: the node that failed is named.
    assert_eq!(after.output().await.unwrap_err().task(), Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_count_calls_errors_and_latency_per_function() {
    let ctx = local(2);
    let results = bounded(
        ctx.map((0..30).map(|i| RequireEven { n: i }))
            .progress(false)
            .settle(),
    )
    .await;
    assert_eq!(results.iter().filter(|r| r.is_err()).count(), 15);
    bounded(ctx.call(Add { a: 1, b: 1 })).await.unwrap();
    let stats = ctx.stats();
    let by_id = |id: &str| stats.functions.iter().find(|f| f.function == id).unwrap();
    let even = by_id("ferry_tests::require_even");
    assert_eq!((even.calls, even.errors), (30, 15));
    assert!(even.p50_ms > 0.0 && even.p50_ms <= even.p99_ms && even.p99_ms <= even.max_ms);
    assert_eq!(even.memory_mb, Some(256));
    let add = by_id("ferry_tests::add");
    assert_eq!((add.calls, add.errors), (1, 0));
    let cold: u64 = stats.functions.iter().map(|f| f.cold_starts).sum();
    assert_eq!(cold, stats.cold_starts, "{stats:?}");
    assert!(matches!(
        bounded(ctx.call(RequireEven { n: 1 }))
            .await
            .unwrap_err()
            .kind(),
        ErrorKind::User { .. }
    ));
}
