//! Flows over real workers: the local platform, HTTP services, and inline. Chained and
//! orchestrated runs give the same outputs, a `None` ends a flow early, and a failing middle
//! stage is named in both modes.

mod common;

use common::{Server, bounded, local};
use ferry::{Context, ErrorKind, Flow, FlowMode, HttpConfig};
use ferry_tests::*;

const INPUTS: &[&str] = &["1", " 21", "x", "500", "501", "-3", "", "1000000"];

fn numbers() -> Flow<String, String> {
    Flow::start::<ParseNumber>()
        .then::<Double>()
        .then::<AtMostThousand>()
        .then::<Describe>()
}

/// Runs every input in both modes and returns the chained outcomes, after checking that the
/// orchestrated ones equal them and that both match what the stages compute.
async fn both_modes_agree(ctx: &Context) {
    let chained = numbers();
    let orchestrated = numbers().mode(FlowMode::Orchestrated);
    assert_eq!(chained.current_mode(), FlowMode::Chained);
    for input in INPUTS {
        let a = bounded(chained.run(ctx, (*input).to_owned())).await;
        let b = bounded(orchestrated.run(ctx, (*input).to_owned())).await;
        match (&a, &b) {
            (Ok(a), Ok(b)) => assert_eq!(a, b, "input {input:?}"),
            (Err(a), Err(b)) => {
                assert_eq!(a.kind(), b.kind(), "input {input:?}");
                assert_eq!(a.function(), b.function(), "input {input:?}");
                assert_eq!(a.flow_stage(), b.flow_stage(), "input {input:?}");
            }
            _ => panic!("input {input:?}: chained gave {a:?}, orchestrated {b:?}"),
        }
        let expected = match input.trim().parse::<i64>() {
            Err(_) => Some(None),
            Ok(n) if 2 * n > 1000 => None,
            Ok(n) => Some(Some(format!("n={}", 2 * n))),
        };
        match expected {
            Some(output) => assert_eq!(a.unwrap(), output, "input {input:?}"),
            None => {
                let error = a.unwrap_err();
                let n = 2 * input.trim().parse::<i64>().unwrap();
                assert!(
                    matches!(error.kind(), ErrorKind::User { message, .. }
                        if *message == format!("{n} is above 1000")),
                    "{error}"
                );
                assert_eq!(
                    error.function(),
                    Some(<AtMostThousand as ferry::Function>::DESCRIPTOR.id)
                );
                assert_eq!(error.flow_stage(), Some(2));
                let message = error.to_string();
                assert!(
                    message.contains("flow stage 2") && message.contains("at_most_thousand"),
                    "{message}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn flows_run_on_the_local_platform() {
    let ctx = local(2);
    both_modes_agree(&ctx).await;
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
