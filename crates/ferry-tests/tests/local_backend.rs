//! The embedded local platform over real worker processes of the `ferry-fixture` program: the
//! behaviours issue #2 lists under "done means", each pinned by a test.

mod common;

use std::time::{Duration, Instant};

use common::{bounded, local, local_with};
use ferry::{Codec, ErrorKind, ExitReason, LocalConfig};
use ferry_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_return_outputs() {
    let ctx = local(2);
    assert_eq!(bounded(ctx.call(Add { a: 40, b: 2 })).await.unwrap(), 42);
    let text = bounded(ctx.call(Greet {
        greeting: Greeting {
            name: "ferry".into(),
            times: 2,
        },
        punctuation: '!',
    }))
    .await
    .unwrap();
    assert_eq!(text, "hello ferry! hello ferry!");
    let stats = ctx.stats();
    assert_eq!(stats.cold_starts, 1);
    assert_eq!(stats.invocations, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_get_the_configured_environment() {
    let ctx = local_with(
        LocalConfig::default()
            .max_workers(1)
            .env("SHOP_ENDPOINT", "http://127.0.0.1:8081"),
    );
    let value = bounded(ctx.call(EnvVar {
        name: "SHOP_ENDPOINT".into(),
    }))
    .await
    .unwrap();
    assert_eq!(value.as_deref(), Some("http://127.0.0.1:8081"));
    let unset = bounded(ctx.call(EnvVar {
        name: "FERRY_TEST_SURELY_UNSET".into(),
    }))
    .await
    .unwrap();
    assert_eq!(unset, None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_json_names_the_field() {
    let ctx = local(1);
    let error = bounded(ctx.invoke("add", Codec::Json, r#"{"a": 1, "b": "two"}"#))
        .await
        .unwrap_err();
    match error.kind() {
        ErrorKind::BadInput { path, message } => {
            assert_eq!(path, "b");
            assert!(message.contains("expected i64"), "{message}");
        }
        other => panic!("expected bad input, got {other:?}"),
    }
    assert_eq!(error.function(), Some("ferry_tests::add"));

    let error = bounded(ctx.invoke(
        "greet",
        Codec::Json,
        r#"{"greeting": {"name": "x", "times": 300}, "punctuation": "!"}"#,
    ))
    .await
    .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::BadInput { path, .. } if path == "greeting.times"),
        "{error}"
    );

    let error = bounded(ctx.invoke("add", Codec::Json, r#"{"a": 1"#))
        .await
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::BadInput { .. }),
        "{error}"
    );

    // The worker is fine afterwards.
    let sum = bounded(ctx.invoke("add", Codec::Json, r#"{"a": 1, "b": 2}"#))
        .await
        .unwrap();
    assert_eq!(&sum[..], b"3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_parameter_function_runs_with_empty_object_and_no_body() {
    let ctx = local(1);
    for body in ["{}", "", "  "] {
        let output = bounded(ctx.invoke("ferry_tests::hello", Codec::Json, body))
            .await
            .unwrap();
        assert_eq!(&output[..], br#""hello from a worker""#, "body {body:?}");
    }
    assert_eq!(
        bounded(ctx.call(Hello {})).await.unwrap(),
        "hello from a worker"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn user_errors_travel_structured() {
    let ctx = local(1);
    assert_eq!(bounded(ctx.call(RequireEven { n: 8 })).await.unwrap(), 4);
    let error = bounded(ctx.call(RequireEven { n: 7 })).await.unwrap_err();
    match error.kind() {
        ErrorKind::User { message, type_name } => {
            assert_eq!(message, "7 is odd");
            assert!(type_name.contains("String"), "{type_name}");
        }
        other => panic!("expected a user error, got {other:?}"),
    }
    assert!(error.to_string().contains("ferry_tests::require_even"));
    assert!(error.invocation().is_some());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn panic_is_an_error_and_the_worker_keeps_serving() {
    let ctx = local(1);
    let before = bounded(ctx.call(WorkerPid {})).await.unwrap();
    let error = bounded(ctx.call(Explode {
        message: "kaboom".into(),
    }))
    .await
    .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::Panic { message } if message == "kaboom"),
        "{error}"
    );
    let after = bounded(ctx.call(WorkerPid {})).await.unwrap();
    assert_eq!(before, after, "the worker was replaced after a panic");
    assert_eq!(ctx.stats().cold_starts, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn abort_crashes_the_worker_and_later_invocations_succeed() {
    let ctx = local(1);
    let before = bounded(ctx.call(WorkerPid {})).await.unwrap();
    let error = bounded(ctx.call(AbortProcess {})).await.unwrap_err();
    assert!(
        matches!(
            error.kind(),
            ErrorKind::WorkerCrashed {
                reason: ExitReason::Signal(libc::SIGABRT)
            }
        ),
        "{error}"
    );
    assert!(error.to_string().contains("SIGABRT"), "{error}");
    let after = bounded(ctx.call(WorkerPid {})).await.unwrap();
    assert_ne!(before, after, "a crashed worker must be replaced");
    assert_eq!(bounded(ctx.call(Add { a: 1, b: 1 })).await.unwrap(), 2);
    assert_eq!(ctx.stats().cold_starts, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn segfault_fails_every_invocation_in_flight_on_that_worker() {
    let ctx = local(1);
    // Slow invocations share the worker with the one that crashes it.
    let sleepers: Vec<_> = (0..4).map(|_| ctx.spawn(SleepAsync { ms: 250 })).collect();
    tokio::time::sleep(Duration::from_millis(50)).await;
    let error = bounded(ctx.call(Segfault {})).await.unwrap_err();
    assert!(
        matches!(
            error.kind(),
            ErrorKind::WorkerCrashed {
                reason: ExitReason::Signal(libc::SIGSEGV)
            }
        ),
        "{error}"
    );
    for sleeper in sleepers {
        let error = bounded(sleeper).await.unwrap_err();
        assert!(
            matches!(error.kind(), ErrorKind::WorkerCrashed { .. }),
            "{error}"
        );
    }
    assert_eq!(bounded(ctx.call(Add { a: 2, b: 2 })).await.unwrap(), 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timeouts_end_invocations_without_hanging() {
    let ctx = local(1);
    let started = Instant::now();
    let error = bounded(ctx.call(SleepAsync { ms: 5_000 }))
        .await
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::Timeout { limit_ms: 300 }),
        "{error}"
    );
    let error = bounded(ctx.call(SleepSync { ms: 5_000 }))
        .await
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::Timeout { limit_ms: 300 }),
        "{error}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "timeouts took {:?}",
        started.elapsed()
    );
    assert_eq!(bounded(ctx.call(SleepSync { ms: 10 })).await.unwrap(), 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thread_that_never_stops_gets_its_worker_replaced() {
    let ctx = local(1);
    let before = bounded(ctx.call(WorkerPid {})).await.unwrap();
    let error = bounded(ctx.call(SpinForever {})).await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::Timeout { limit_ms: 200 }),
        "{error}"
    );
    // The spinning thread cannot be stopped: its worker retires and a fresh one serves.
    let after = bounded(ctx.call(WorkerPid {})).await.unwrap();
    assert_ne!(before, after);
    let deadline = Instant::now() + Duration::from_secs(5);
    while ctx.stats().workers > 1 {
        assert!(
            Instant::now() < deadline,
            "the stuck worker was never stopped"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_memory_replaces_the_worker() {
    let ctx = local_with(LocalConfig::default().max_workers(1).memory_limit_mb(128));
    let error = bounded(ctx.call(HogMemory { mb: 1024 })).await.unwrap_err();
    match error.kind() {
        ErrorKind::OutOfMemory { limit_mb, used_mb } => {
            assert_eq!(*limit_mb, 128);
            assert!(*used_mb > 128, "{used_mb}");
        }
        other => panic!("expected out of memory, got {other:?}"),
    }
    assert_eq!(bounded(ctx.call(HogMemory { mb: 16 })).await.unwrap(), 16);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn out_of_memory_names_its_cause_and_bystanders_see_a_crash() {
    let ctx = local_with(LocalConfig::default().max_workers(1).memory_limit_mb(128));
    let bystanders: Vec<_> = (0..2)
        .map(|_| tokio::spawn(ctx.call(Idle { ms: 10_000 })))
        .collect();
    // The bystanders run first on the one worker; then the hog joins them.
    tokio::time::sleep(Duration::from_millis(300)).await;
    let error = bounded(ctx.call(HogMemory { mb: 1024 })).await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::OutOfMemory { limit_mb: 128, .. }),
        "{error}"
    );
    for bystander in bystanders {
        let error = bounded(bystander).await.unwrap().unwrap_err();
        match error.kind() {
            ErrorKind::WorkerCrashed {
                reason: ExitReason::MemoryLimit { limit_mb, used_mb },
            } => assert!(*limit_mb == 128 && *used_mb > 128, "{error}"),
            other => panic!("a bystander should see its worker crash, got {other:?}"),
        }
        assert!(error.to_string().contains("another invocation"), "{error}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idempotent_functions_are_run_again_after_a_crash_and_others_are_not() {
    let ctx = local(1);
    let dir = tempfile::tempdir().unwrap();
    let runs_in = |name: &str| {
        let path = dir.path().join(name);
        std::fs::create_dir(&path).unwrap();
        path.to_str().unwrap().to_owned()
    };
    // Marked idempotent: the crash is retried by default and the caller sees the second run.
    let marked = runs_in("marked");
    assert_eq!(
        bounded(ctx.call(CrashOnce { dir: marked })).await.unwrap(),
        2
    );
    // Not marked: the crash is the caller's result, and the function ran once.
    let unmarked = runs_in("unmarked");
    let error = bounded(ctx.call(CrashOnceUnmarked {
        dir: unmarked.clone(),
    }))
    .await
    .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::WorkerCrashed { .. }),
        "{error}"
    );
    // Its own error is never retried, marked or not.
    let failing = runs_in("failing");
    let error = bounded(ctx.call(FailIdempotently {
        dir: failing.clone(),
    }))
    .await
    .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::User { message, .. } if message == "run 1"),
        "{error}"
    );
    for (dir, runs) in [(unmarked, 1), (failing, 1)] {
        let held = std::fs::metadata(std::path::Path::new(&dir).join("runs")).unwrap();
        assert_eq!(held.len(), runs, "{dir}");
    }
    // A setting of 0 turns retries off for every function.
    let ctx = local_with(LocalConfig::default().max_workers(1).retries(0));
    let error = bounded(ctx.call(CrashOnce {
        dir: runs_in("off"),
    }))
    .await
    .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::WorkerCrashed { .. }),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ten_thousand_invocations_through_map_return_in_order() {
    let ctx = local(2);
    let outputs = bounded(ctx.map((0..10_000).map(|i| Add { a: i, b: 1 })))
        .await
        .unwrap();
    assert_eq!(outputs.len(), 10_000);
    assert!(outputs.iter().enumerate().all(|(i, &o)| o == i as i64 + 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn map_reports_the_first_error_and_settle_reports_all() {
    let ctx = local(1);
    let error = bounded(ctx.map((0..10).map(|n| RequireEven { n })))
        .await
        .unwrap_err();
    assert!(matches!(error.kind(), ErrorKind::User { .. }));
    let results = bounded(ctx.map((0..10).map(|n| RequireEven { n })).settle()).await;
    assert_eq!(results.len(), 10);
    for (n, result) in results.iter().enumerate() {
        assert_eq!(result.is_ok(), n % 2 == 0, "task {n}: {result:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn completions_arrive_in_completion_order() {
    let ctx = local(1);
    let mut completions = ctx.as_completed([
        SleepAsync { ms: 250 },
        SleepAsync { ms: 10 },
        SleepAsync { ms: 120 },
    ]);
    let mut order = Vec::new();
    while let Some((index, result)) = bounded(completions.next()).await {
        order.push(index);
        if index == 0 {
            // Tasks may be added while results are being consumed.
            completions.push(SleepAsync { ms: 1 });
        }
        result.unwrap();
    }
    assert_eq!(order, vec![1, 2, 0, 3]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn workers_start_on_demand_up_to_the_maximum() {
    let ctx = local(2);
    // `sleep_sync` allows 16 per worker: 40 at once need both workers and a queue.
    let started = Instant::now();
    let outputs = bounded(ctx.map((0..40).map(|_| SleepSync { ms: 100 })))
        .await
        .unwrap();
    assert_eq!(outputs, vec![100; 40]);
    let stats = ctx.stats();
    assert_eq!(stats.cold_starts, 2, "{stats:?}");
    assert!(stats.workers <= 2);
    // 40 tasks of 100 ms with 32 slots take two rounds, not one or forty.
    assert!(started.elapsed() >= Duration::from_millis(200));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrency_holds_in_the_worker_even_with_work_sent_ahead() {
    let ctx = local_with(LocalConfig::default().max_workers(1).prefetch(4));
    let started = Instant::now();
    let peaks = bounded(ctx.map((0..8).map(|_| Overlap { ms: 60 })))
        .await
        .unwrap();
    // Two at a time: four rounds of 60 ms, never three at once.
    assert_eq!(peaks.iter().max(), Some(&2), "{peaks:?}");
    assert!(started.elapsed() >= Duration::from_millis(240));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn idle_workers_are_reaped_and_restarted_cold() {
    let ctx = local_with(
        LocalConfig::default()
            .max_workers(1)
            .idle_timeout(Duration::from_millis(200)),
    );
    bounded(ctx.call(Add { a: 1, b: 2 })).await.unwrap();
    assert_eq!(ctx.stats().workers, 1);
    let deadline = Instant::now() + Duration::from_secs(5);
    while ctx.stats().workers > 0 {
        assert!(Instant::now() < deadline, "idle worker never reaped");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    bounded(ctx.call(Add { a: 1, b: 2 })).await.unwrap();
    assert_eq!(ctx.stats().cold_starts, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn instance_state_is_initialised_once_per_warm_worker() {
    let ctx = local(1);
    let (pid, inits) = bounded(ctx.call(InstanceState {})).await.unwrap();
    let (pid_again, inits_again) = bounded(ctx.call(InstanceState {})).await.unwrap();
    assert_eq!((pid, inits), (pid_again, 1));
    assert_eq!(inits_again, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn functions_invoke_functions() {
    let ctx = local(2);
    let value = bounded(ctx.call(Fib { n: 20, cutoff: 12 })).await.unwrap();
    assert_eq!(value, 6765);
    let error = bounded(ctx.call(CallExploding {})).await.unwrap_err();
    assert!(matches!(error.kind(), ErrorKind::Panic { message } if message == "inner"));
    assert_eq!(error.function(), Some("ferry_tests::explode"));
}

/// A recursive fan-out runs in its worker while no other worker is idle: the worker has room
/// for it, and another process would only compete for the same cores. No worker starts for it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_recursive_fan_out_stays_in_its_busy_worker() {
    let ctx = local(2);
    let pids = bounded(ctx.call(LeafPids { depth: 4, ms: 100 }))
        .await
        .unwrap();
    assert_eq!(pids.len(), 1, "leaves ran on {pids:?}");
    assert_eq!(ctx.stats().cold_starts, 1);
    assert_eq!(
        ctx.stats().invocations,
        1,
        "the nested ones stayed in the worker"
    );
}

/// Nested invocations run in their busy worker as tasks of their own: a fan-out made from one
/// task of CPU-bound async bodies uses every runtime thread of the worker, as on the inline
/// backend.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fan_out_in_a_busy_worker_uses_its_threads() {
    let ctx = local_with(
        LocalConfig::default()
            .max_workers(1)
            .env("FERRY_WORKER_THREADS", "2"),
    );
    let ran = bounded(ctx.call(FanOutSpins { n: 8, ms: 50 }))
        .await
        .unwrap();
    assert_eq!(ctx.stats().invocations, 1, "the spins stayed in the worker");
    assert!(ran.len() >= 2, "every spin ran on one thread: {ran:?}");
}

/// A call the platform sends to a worker whose only slot of the function is held by a nested
/// invocation the worker runs itself waits for that slot, then runs: the worker is not deemed
/// unresponsive for the wait (300 ms held, 300 ms run, against a 400 ms timeout).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waiting_behind_a_nested_one_in_its_worker_is_not_a_stuck_worker() {
    let mut config = LocalConfig::default().max_workers(1);
    config.unresponsive_grace = Duration::from_millis(100);
    let ctx = local_with(config);
    bounded(ctx.call(HoldOnlySlot { ms: 0 })).await.unwrap();
    let nested = ctx.spawn(HoldNested { ms: 300 });
    tokio::time::sleep(Duration::from_millis(50)).await;
    let direct = bounded(ctx.call(HoldOnlySlot { ms: 300 })).await;
    assert_eq!(direct.unwrap(), 300);
    assert_eq!(bounded(nested).await.unwrap(), 300);
    assert_eq!(ctx.stats().cold_starts, 1, "the worker was not replaced");
}

/// Top-level calls spread over the workers before they pack onto a running one; then an idle
/// worker gets the first nested invocation a busy one makes, and the rest run where they were
/// made.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_worker_gets_nested_invocations() {
    let ctx = local(2);
    // One worker runs; what arrives while it is busy starts the second.
    bounded(ctx.call(LeafPids { depth: 0, ms: 0 }))
        .await
        .unwrap();
    let pids = bounded(ctx.map((0..8).map(|_| LeafPids { depth: 0, ms: 200 })))
        .await
        .unwrap();
    let started: std::collections::BTreeSet<u32> = pids.into_iter().flatten().collect();
    assert_eq!(started.len(), 2, "the calls spread: {started:?}");
    assert_eq!(ctx.stats().cold_starts, 2);
    let pids = bounded(ctx.call(LeafPids { depth: 4, ms: 100 }))
        .await
        .unwrap();
    assert_eq!(pids, started, "leaves ran on {pids:?}");
    assert_eq!(ctx.stats().cold_starts, 2);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_codec_reaches_the_worker() {
    let ctx = local(1);
    for codec in [Codec::Json, Codec::Binary, Codec::BinaryInJson] {
        let args = codec.encode(&Add { a: 20, b: 22 }).unwrap();
        let output = bounded(ctx.invoke("ferry_tests::add", codec, args))
            .await
            .unwrap();
        assert_eq!(codec.decode::<i64>(&output).unwrap(), 42, "{codec}");
    }
    let data = vec![7u8; 3 << 20];
    assert_eq!(bounded(ctx.call(ByteLen { data })).await.unwrap(), 3 << 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_worker_binary_is_a_clear_error() {
    let ctx =
        ferry::Context::local(LocalConfig::default().worker_exe("/nonexistent/worker")).unwrap();
    let error = bounded(ctx.call(Add { a: 1, b: 1 })).await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::Unavailable { message } if message.contains("/nonexistent/worker")),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_stops_workers_and_refuses_new_work() {
    let ctx = local(1);
    bounded(ctx.call(Add { a: 1, b: 1 })).await.unwrap();
    ctx.shutdown().await;
    let error = bounded(ctx.call(Add { a: 1, b: 1 })).await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::Unavailable { .. }),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn programs_started_by_a_function_do_not_hide_its_crash() {
    let ctx = local(1);
    let started = Instant::now();
    let error = bounded(ctx.call(SpawnThenAbort {})).await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::WorkerCrashed { .. }),
        "{error}"
    );
    // The `sleep 30` it started holds no copy of the worker's socket.
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{:?}",
        started.elapsed()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panic_while_encoding_the_output_is_answered() {
    let ctx = local(1);
    let sleeper = ctx.spawn(SleepAsync { ms: 200 });
    let started = Instant::now();
    let error = bounded(ctx.call(PanicInOutput {})).await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::Panic { message } if message.contains("refuses to be serialized")),
        "{error}"
    );
    assert!(started.elapsed() < Duration::from_secs(2));
    // Its neighbour on the same worker is unharmed.
    assert_eq!(bounded(sleeper).await.unwrap(), 200);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nested_calls_inherit_the_callers_deadline() {
    let ctx = local(2);
    let left = bounded(ctx.call(NestedRemaining {})).await.unwrap();
    assert!(
        left <= 2_000,
        "a nested call had {left} ms, more than its 2 s caller"
    );
    // A top-level call has the function's own 60 s.
    assert!(bounded(ctx.call(RemainingMs {})).await.unwrap() > 50_000);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slow_cold_start_does_not_count_against_timeouts() {
    // A worker that takes 3 s to start, serving a function with a 300 ms timeout.
    let dir = std::env::temp_dir().join(format!("ferry-slow-start-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let script = dir.join("slow-worker.sh");
    std::fs::write(
        &script,
        format!(
            "#!/bin/sh\nsleep 3\nexec {} \"$@\"\n",
            env!("CARGO_BIN_EXE_ferry-fixture")
        ),
    )
    .unwrap();
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let ctx =
        ferry::Context::local(LocalConfig::default().max_workers(1).worker_exe(&script)).unwrap();
    assert_eq!(bounded(ctx.call(SleepSync { ms: 10 })).await.unwrap(), 10);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_context_outlives_the_runtime_that_first_used_it() {
    let ctx = local(1);
    let first = tokio::runtime::Runtime::new().unwrap();
    assert_eq!(
        first
            .block_on(bounded(ctx.call(Add { a: 1, b: 1 })))
            .unwrap(),
        2
    );
    drop(first);
    // The workers died with the first runtime's tasks; a second runtime gets fresh ones.
    let second = tokio::runtime::Runtime::new().unwrap();
    assert_eq!(
        second
            .block_on(bounded(ctx.call(Add { a: 2, b: 2 })))
            .unwrap(),
        4
    );
    assert_eq!(ctx.stats().cold_starts, 2);
}

#[test]
fn duplicate_function_ids_fail_start_up() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_duplicate-ids"))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("duplicate function id `duplicate_ids::twice::same`"),
        "{stderr}"
    );
}

/// What a worker sends the platform is checked, not trusted: garbage on its socket, or a frame
/// header announcing 200 MiB that never come, stops that worker, and every call it held fails
/// with a protocol error naming it (not as a crash by SIGKILL, not after its timeout); the
/// platform then serves on with a fresh worker.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_worker_that_breaks_the_protocol_is_named_and_replaced() {
    let mut announced = (200u32 << 20).to_le_bytes().to_vec();
    announced.push(2); // a response
    for (bytes, violation) in [
        (b"\x05\x00\x00\x00\x63junk".to_vec(), "unknown frame tag 99"),
        (announced, "did not arrive within 5 s"),
    ] {
        let ctx = local(1);
        assert_eq!(bounded(ctx.call(Add { a: 1, b: 1 })).await.unwrap(), 2);
        let started = Instant::now();
        let bystander = ctx.spawn(SleepHundredfold { ms: 100 });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let culprit = bounded(ctx.call(WriteToPlatform { bytes })).await;
        let bystander = bounded(bystander).await;
        for result in [culprit.map(|_| ()), bystander.map(|_| ())] {
            let error = result.unwrap_err();
            assert!(
                matches!(error.kind(), ErrorKind::Protocol { message }
                    if message.contains("broke the platform's protocol") && message.contains(violation)),
                "{error}"
            );
        }
        assert!(
            started.elapsed() < Duration::from_secs(9),
            "{:?}",
            started.elapsed()
        );
        assert_eq!(bounded(ctx.call(Add { a: 2, b: 2 })).await.unwrap(), 4);
    }
}

/// A worker stopped by SIGSTOP answers nothing: its 5 ms task did not time out, the worker did,
/// and the error says so (it once said `timed out after 300 ms`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stopped_worker_is_unresponsive_not_its_tasks_timeout() {
    let mut config = LocalConfig::default().max_workers(1);
    config.unresponsive_grace = Duration::from_millis(100);
    let ctx = local_with(config);
    let pid = bounded(ctx.call(WorkerPid {})).await.unwrap();
    // SAFETY: a plain signal to the worker this test started.
    unsafe { libc::kill(pid as libc::pid_t, libc::SIGSTOP) };
    let error = bounded(ctx.call(SleepAsync { ms: 5 })).await.unwrap_err();
    assert!(
        matches!(
            error.kind(),
            ErrorKind::WorkerCrashed {
                reason: ExitReason::Unresponsive
            }
        ),
        "{error}"
    );
    assert_ne!(bounded(ctx.call(WorkerPid {})).await.unwrap(), pid);
}
