//! Task graphs over real workers: the local platform's worker processes and a fixture program
//! serving in HTTP mode. Nodes run once their inputs are ready, independent ones at once, and a
//! failure reaches the nodes that depend on it.

mod common;

use common::{Server, bounded, local};
use ferry::{Context, ErrorKind, HttpConfig};
use ferry_tests::*;

/// a = 1 + 2, b = 3 + 4, c = a + b, d = c / 2 (through `require_even`), e = (a + b) + c.
async fn diamond(ctx: &Context) {
    let mut graph = ctx.graph();
    let a = graph.add(Add { a: 1, b: 2 });
    let b = graph.add(Add { a: 3, b: 4 });
    let c = graph.join(&a, &b, |a, b| Add { a, b });
    let d = graph.then(&c, |c| RequireEven { n: c as u32 });
    let e = graph.join_all(&[a.clone(), b.clone(), c.clone()], |v| Add {
        a: v[0] + v[1],
        b: v[2],
    });
    assert_eq!(graph.len(), 5);
    bounded(graph.run()).await.unwrap();
    assert_eq!(a.output().await.unwrap(), 3);
    assert_eq!(b.output().await.unwrap(), 7);
    assert_eq!(c.output().await.unwrap(), 10);
    assert_eq!(d.output().await.unwrap(), 5);
    assert_eq!(e.output().await.unwrap(), 20);
    assert_eq!((a.index(), e.index()), (0, 4));
}

/// A failing node fails its dependents with its own error; independent nodes still finish.
async fn failure_reaches_dependents(ctx: &Context) {
    let mut graph = ctx.graph();
    let odd = graph.add(RequireEven { n: 3 });
    let after = graph.then(&odd, |half| Add {
        a: i64::from(half),
        b: 1,
    });
    let fine = graph.add(Add { a: 20, b: 22 });
    let error = bounded(graph.run()).await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::User { message, .. } if message == "3 is odd"),
        "{error}"
    );
    assert_eq!(
        after.output().await.unwrap_err(),
        error,
        "the dependent sees the cause"
    );
    assert_eq!(fine.output().await.unwrap(), 42);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_diamond_runs_on_the_local_platform() {
    let ctx = local(2);
    diamond(&ctx).await;
    failure_reaches_dependents(&ctx).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn independent_nodes_overlap_and_a_chain_does_not() {
    // `overlap` reports the most of its invocations that ran at once in its worker; one
    // worker per context, so every node lands in the same process.
    let ctx = local(1);
    let mut graph = ctx.graph();
    let first = graph.add(Overlap { ms: 150 });
    let second = graph.then(&first, |_| Overlap { ms: 150 });
    let third = graph.then(&second, |_| Overlap { ms: 150 });
    bounded(graph.run()).await.unwrap();
    for node in [first, second, third] {
        assert_eq!(
            node.output().await.unwrap(),
            1,
            "a chain runs one at a time"
        );
    }

    let ctx = local(1);
    let mut graph = ctx.graph();
    let left = graph.add(Overlap { ms: 300 });
    let right = graph.add(Overlap { ms: 300 });
    let both = graph.join(&left, &right, |l, r| Add {
        a: i64::from(l),
        b: i64::from(r),
    });
    bounded(graph.run()).await.unwrap();
    assert_eq!(
        both.output().await.unwrap(),
        4,
        "the two inputs ran at once"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_diamond_runs_on_http_service_workers() {
    let server = Server::start(env!("CARGO_BIN_EXE_ferry-fixture"), Some("http"));
    let ctx = Context::http(HttpConfig::new(&server.base)).unwrap();
    diamond(&ctx).await;
    failure_reaches_dependents(&ctx).await;
}
