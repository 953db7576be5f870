//! Flows over real workers: the local platform, HTTP services, and inline. Chained and
//! orchestrated runs give the same outputs, a `None` ends a flow early, and a failing middle
//! stage is named in both modes.

mod common;

use std::time::{Duration, Instant};

use common::{Server, both_modes_agree, bounded, local, local_with, numbers};
use ferry::{Context, ErrorKind, Flow, FlowMode, HttpConfig, LocalConfig};
use ferry_tests::*;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flows_run_on_the_local_platform() {
    let ctx = local(2);
    both_modes_agree(&ctx).await;
}

/// A chained stage answers only when the stages after it are done: the platform waits for the
/// whole rest of the flow, not just the first stage's timeout (300 ms here), before it deems the
/// worker stuck.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chained_stage_may_answer_after_its_own_timeout() {
    let mut config = LocalConfig::default().max_workers(1);
    config.unresponsive_grace = Duration::from_millis(100);
    let ctx = local_with(config);
    let flow = Flow::start::<SleepAsync>().then::<SleepHundredfold>();
    let started = Instant::now();
    assert_eq!(bounded(flow.run(&ctx, 8)).await.unwrap(), Some(8));
    assert!(started.elapsed() >= Duration::from_millis(800));
    assert_eq!(ctx.stats().cold_starts, 1, "the worker was not replaced");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flows_run_inline() {
    both_modes_agree(&Context::inline()).await;
}

/// Two services: the caller reaches `front`, whose stages invoke the next stage at `back` over
/// HTTP; `back` runs what follows in itself. The caller sends one request per chained run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chained_stages_call_each_other_over_http() {
    let program = env!("CARGO_BIN_EXE_ferry-fixture");
    let back = Server::start(program, Some("http"));
    let front = Server::start_with(
        program,
        Some("http"),
        &[("FERRY_BACKEND", "http"), ("FERRY_HTTP_URL", &back.base)],
    );
    let ctx = Context::http(HttpConfig::new(&front.base)).unwrap();
    both_modes_agree(&ctx).await;

    let stages = numbers().stages().count() as u64;
    let before = ctx.stats().invocations;
    bounded(numbers().run(&ctx, "7".into())).await.unwrap();
    assert_eq!(ctx.stats().invocations - before, 1, "chained: one request");
    let before = ctx.stats().invocations;
    let orchestrated = numbers().mode(FlowMode::Orchestrated);
    bounded(orchestrated.run(&ctx, "7".into())).await.unwrap();
    assert_eq!(
        ctx.stats().invocations - before,
        stages,
        "orchestrated: one request per stage"
    );
    // With `back` gone, `front` cannot forward: the error names the stage it could not reach.
    drop(back);
    let error = bounded(numbers().run(&ctx, "7".into())).await.unwrap_err();
    assert_eq!(error.flow_stage(), Some(1), "{error}");
    assert_eq!(
        error.function(),
        Some(<Double as ferry::Function>::DESCRIPTOR.id),
        "{error}"
    );
    assert!(
        matches!(error.kind(), ErrorKind::Unavailable { .. }),
        "{error}"
    );
}

/// A chained stage waits for the rest of its flow holding none of its function's capacity: with
/// two workers, a function of concurrency 1 used twice in a flow, and eight flows at once, every
/// stage's worker is waiting on a later stage of the same function. That once deadlocked until
/// the stages' timeouts ran out (0 of 8 flows succeeded).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_function_used_twice_in_chained_flows_does_not_deadlock() {
    let ctx = local(2);
    let flow = Flow::start::<Increment>()
        .then::<Increment>()
        .then::<Increment>();
    let started = Instant::now();
    let outputs = bounded(futures::future::join_all((0..8).map(|n| flow.run(&ctx, n)))).await;
    for (n, output) in outputs.into_iter().enumerate() {
        assert_eq!(output.unwrap(), Some(n as i64 + 3));
    }
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "{:?}",
        started.elapsed()
    );
}

/// A chained flow longer than `ferry::flow::MAX_STAGES` is refused before anything runs (its
/// route would be refused by every worker); orchestrated, the same flow runs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chained_flow_longer_than_the_limit_is_refused_before_it_runs() {
    let ctx = Context::inline();
    let mut flow = Flow::start::<Shout>();
    for _ in 0..ferry::flow::MAX_STAGES {
        flow = flow.then::<Shout>();
    }
    assert_eq!(flow.stages().count(), 65);
    let error = bounded(flow.run(&ctx, "hi".into())).await.unwrap_err();
    assert!(matches!(error.kind(), ErrorKind::Config { .. }), "{error}");
    assert!(error.to_string().contains("at most 64 stages"), "{error}");
    assert_eq!(ctx.stats().invocations, 0, "nothing ran");
    let orchestrated = flow.mode(FlowMode::Orchestrated);
    assert_eq!(
        bounded(orchestrated.run(&ctx, "hi".into())).await.unwrap(),
        Some("hi".to_owned())
    );
}
