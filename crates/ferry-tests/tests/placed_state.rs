//! Placed state: what a function keeps in its warm instance (`ctx.instance`) carries over to the
//! next invocation that instance serves, on the local platform and in HTTP service mode.

mod common;

use common::{Server, bounded, local};
use ferry::{Context, HttpConfig};
use ferry_tests::CountInInstance;

async fn counts_carry_over(ctx: &Context) {
    let mut seen = Vec::new();
    for _ in 0..5 {
        seen.push(bounded(ctx.call(CountInInstance {})).await.unwrap());
    }
    let pid = seen[0].0;
    assert!(
        seen.iter().all(|(p, _)| *p == pid),
        "one warm instance: {seen:?}"
    );
    let counts: Vec<u64> = seen.iter().map(|(_, count)| *count).collect();
    assert_eq!(counts, [1, 2, 3, 4, 5]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_warm_worker_keeps_its_state() {
    counts_carry_over(&local(1)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_service_instance_keeps_its_state() {
    let server = Server::start(env!("CARGO_BIN_EXE_ferry-fixture"), Some("http"));
    counts_carry_over(&Context::http(HttpConfig::new(&server.base)).unwrap()).await;
}
