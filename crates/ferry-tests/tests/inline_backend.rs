//! The `inline` backend (the monolith): the same program semantics as the local platform, with
//! functions run as tasks of the calling process.

mod common;

use common::bounded;
use ferry::{BackendKind, Codec, Context};
use ferry_tests::*;

fn inline() -> Context {
    Context::new(BackendKind::Inline).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_run_in_process() {
    let ctx = inline();
    assert_eq!(ctx.backend_kind(), BackendKind::Inline);
    assert_eq!(bounded(ctx.call(Add { a: 40, b: 2 })).await.unwrap(), 42);
    assert_eq!(
        bounded(ctx.call(WorkerPid {})).await.unwrap(),
        std::process::id()
    );
    assert_eq!(ctx.stats().cold_starts, 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zero_parameter_function_runs_with_empty_object_and_no_body() {
    let ctx = inline();
    for body in ["{}", ""] {
        let output = bounded(ctx.invoke("hello", Codec::Json, body))
            .await
            .unwrap();
        assert_eq!(&output[..], br#""hello from a worker""#);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn map_and_completions() {
    let ctx = inline();
    let outputs = bounded(ctx.map((0..10_000).map(|i| Add { a: i, b: i })))
        .await
        .unwrap();
    assert!(outputs.iter().enumerate().all(|(i, &o)| o == 2 * i as i64));
    let mut completions = ctx.as_completed([SleepAsync { ms: 150 }, SleepAsync { ms: 5 }]);
    assert_eq!(bounded(completions.next()).await.unwrap().0, 1);
    assert_eq!(bounded(completions.next()).await.unwrap().0, 0);
    assert!(completions.next().await.is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn functions_invoke_functions_and_see_their_invocation() {
    let ctx = inline();
    assert_eq!(
        bounded(ctx.call(Fib { n: 20, cutoff: 10 })).await.unwrap(),
        6765
    );
    assert!(ctx.invocation().is_none());
    let handle = ctx.spawn(Add { a: 1, b: 2 });
    assert_eq!(bounded(handle).await.unwrap(), 3);
}
