//! The split search against the optimum by dynamic programming: alone and with the best bound
//! shared in a real `redis-server`, on the local platform (workers are this example's binary),
//! and the program end to end.

use std::path::Path;
use std::process::Command;

use ferry::{Context, LocalConfig};
use ferry_tests::redis_server::RedisServer;
use knapsack::{Alone, Explore, Explored, Instance, search};

fn workers(redis_url: Option<&str>) -> Context {
    let mut config = LocalConfig::default()
        .max_workers(2)
        .worker_exe(env!("CARGO_BIN_EXE_knapsack"));
    if let Some(url) = redis_url {
        config = config.env("FERRY_REDIS_URL", url);
    }
    Context::local(config).expect("local platform")
}

async fn split(ctx: &Context, items: u32, seed: u64, shared: Option<&str>) -> (u64, u64) {
    let results: Vec<Explored> = ctx
        .map((0..16).map(|prefix| Explore {
            items,
            seed,
            prefix,
            depth: 4,
            shared: shared.map(str::to_owned),
        }))
        .concurrency(16)
        .await
        .expect("every task ends");
    (
        results.iter().map(|r| r.best).max().unwrap(),
        results.iter().map(|r| r.nodes).sum(),
    )
}

#[tokio::test]
async fn the_sequential_search_finds_the_optimum() {
    for (items, seed) in [(12, 1), (24, 2), (32, 3)] {
        let instance = Instance::generate(items, seed);
        let found = search(&instance, 0, 0, &mut Alone).await.unwrap();
        assert_eq!(found.best, instance.optimum(), "{items} items, seed {seed}");
        assert!(found.nodes > 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_bound_prunes_more_and_finds_the_same_optimum() {
    let redis = RedisServer::start(Path::new(env!("CARGO_TARGET_TMPDIR")));
    let ctx = workers(Some(&redis.url()));
    let instance = Instance::generate(40, 11);
    let optimum = instance.optimum();
    let (alone_best, alone_nodes) = split(&ctx, 40, 11, None).await;
    let (shared_best, shared_nodes) = split(&ctx, 40, 11, Some("knapsack-test")).await;
    assert_eq!((alone_best, shared_best), (optimum, optimum));
    assert!(
        shared_nodes < alone_nodes,
        "shared {shared_nodes} nodes, alone {alone_nodes}"
    );
    ctx.shutdown().await;
}

#[test]
fn the_program_reports_both_runs() {
    let redis = RedisServer::start(Path::new(env!("CARGO_TARGET_TMPDIR")));
    let output = Command::new(env!("CARGO_BIN_EXE_knapsack"))
        .args(["--items", "36", "--tasks", "16", "--shared", "--json"])
        .env("FERRY_REDIS_URL", redis.url())
        .env("FERRY_PROGRESS", "never")
        .env_remove("FERRY_BACKEND")
        .output()
        .expect("run knapsack");
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let summary: serde_json::Value =
        serde_json::from_str(stdout.lines().last().unwrap()).expect("JSON last");
    let optimum = summary["optimum"].as_u64().unwrap();
    assert_eq!(optimum, Instance::generate(36, 7).optimum());
    let runs = summary["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r["best"] == optimum));
    assert!(
        runs[1]["nodes"].as_u64() < runs[0]["nodes"].as_u64(),
        "{summary}"
    );
}
