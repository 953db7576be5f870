//! The split search against the optimum by dynamic programming, for both instance families:
//! alone and with the best bound shared in a real `redis-server`, on the local platform (workers
//! are this example's binary), and the program end to end.

use std::path::Path;
use std::process::Command;

use ferry::{Context, LocalConfig};
use ferry_tests::redis_server::RedisServer;
use knapsack::{Alone, Explore, Explored, Family, Instance, Node, prefix_in_search_order, search};

fn workers(redis_url: Option<&str>) -> Context {
    let mut config = LocalConfig::default()
        .max_workers(2)
        .worker_exe(env!("CARGO_BIN_EXE_knapsack"));
    if let Some(url) = redis_url {
        config = config.env("FERRY_REDIS_URL", url);
    }
    Context::local(config).expect("local platform")
}

/// The best value and the nodes of a fixed 16-task split, handed out as the program does.
async fn fixed_split(
    ctx: &Context,
    family: Family,
    items: u32,
    seed: u64,
    shared: Option<&str>,
) -> (u64, u64) {
    let instance = Instance::generate(family, items as usize, seed);
    let results: Vec<Explored> = ctx
        .map(
            (0..16)
                .filter_map(|rank| instance.subtree(prefix_in_search_order(rank, 4), 4))
                .map(|root| Explore {
                    family,
                    items,
                    seed,
                    roots: vec![root],
                    known: 0,
                    budget_ms: 0,
                    shared: shared.map(str::to_owned),
                }),
        )
        .concurrency(16)
        .await
        .expect("every task ends");
    assert!(
        results.iter().all(|r| r.left.is_empty()),
        "no budget, nothing left"
    );
    (
        results.iter().map(|r| r.best).max().unwrap(),
        results.iter().map(|r| r.nodes).sum(),
    )
}

/// Searching, stopping at the budget and searching what was left, then what that left, and so
/// on, finds what one search finds: handing subtrees back loses none. Kept in one piece, in
/// search order and with the best known passed on, the parts expand exactly the nodes of one
/// search: none is searched twice.
#[tokio::test]
async fn subtrees_handed_back_are_searched_exactly_once() {
    for (family, items, seed) in [
        (Family::StronglyCorrelated, 56, 7),
        (Family::EvenOdd, 22, 1),
    ] {
        let instance = Instance::generate(family, items, seed);
        let whole = search(&instance, &[instance.root()], 0, None, &mut Alone)
            .await
            .unwrap();
        for parts in [1, 3] {
            let (mut best, mut nodes, mut rounds) = (0, 0, 0);
            let mut pending = vec![vec![instance.root()]];
            while let Some(roots) = pending.pop() {
                rounds += 1;
                // No budget left: every task stops at its first look at the clock.
                let budget = Some(std::time::Duration::ZERO);
                let part = search(&instance, &roots, best, budget, &mut Alone)
                    .await
                    .unwrap();
                best = best.max(part.best);
                nodes += part.nodes;
                pending.extend(knapsack::split(part.left, parts).into_iter().rev());
            }
            assert_eq!(best, whole.best, "{family:?} in {parts}");
            assert!(rounds > 10, "{family:?}: split only {rounds} times");
            if parts == 1 {
                assert_eq!(nodes, whole.nodes, "{family:?}");
            }
        }
    }
}

#[test]
fn split_spreads_the_subtrees_in_turn() {
    let nodes: Vec<Node> = (0..5)
        .map(|next| Node {
            next,
            weight: 0,
            value: 0,
        })
        .collect();
    let parts = knapsack::split(nodes.clone(), 2);
    assert_eq!(parts.len(), 2);
    assert_eq!(
        parts[0].iter().map(|n| n.next).collect::<Vec<_>>(),
        [0, 2, 4]
    );
    assert_eq!(parts[1].iter().map(|n| n.next).collect::<Vec<_>>(), [1, 3]);
    assert_eq!(knapsack::split(nodes[..1].to_vec(), 4).len(), 1);
    assert!(knapsack::split(Vec::new(), 4).is_empty());
}

/// Runs the program with `args` on the local platform and returns its JSON summary.
fn program(redis_url: &str, args: &[&str]) -> serde_json::Value {
    let output = Command::new(env!("CARGO_BIN_EXE_knapsack"))
        .args(args)
        .args(["--shared", "--json"])
        .env("FERRY_REDIS_URL", redis_url)
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
    serde_json::from_str(stdout.lines().last().unwrap()).expect("JSON last")
}

#[test]
fn tasks_are_handed_out_in_the_order_the_sequential_search_reaches_their_subtrees() {
    let order = |depth| {
        (0..1u64 << depth)
            .map(|rank| prefix_in_search_order(rank, depth))
            .collect::<Vec<_>>()
    };
    assert_eq!(order(0), [0]);
    assert_eq!(order(1), [0b1, 0b0]);
    // Bit i: item i taken. Item 0 is decided first, so it changes slowest.
    assert_eq!(order(2), [0b11, 0b01, 0b10, 0b00]);
    let mut all = order(6);
    assert_eq!((all[0], all[63]), (0b11_1111, 0));
    all.sort_unstable();
    assert_eq!(all, (0..64).collect::<Vec<_>>());
}

#[tokio::test]
async fn the_sequential_search_finds_the_optimum() {
    for (family, items, seed) in [
        (Family::StronglyCorrelated, 12, 1),
        (Family::StronglyCorrelated, 24, 2),
        (Family::StronglyCorrelated, 32, 3),
        (Family::EvenOdd, 12, 1),
        (Family::EvenOdd, 16, 2),
        (Family::EvenOdd, 20, 3),
    ] {
        let instance = Instance::generate(family, items, seed);
        let found = search(&instance, &[instance.root()], 0, None, &mut Alone)
            .await
            .unwrap();
        assert_eq!(
            found.best,
            instance.optimum(),
            "{family:?}, {items} items, seed {seed}"
        );
        assert!(found.nodes > 0);
    }
}

/// What makes the even-odd family hard: no packing fills its odd capacity with even weights, so
/// the fractional bound (the capacity, for a subset sum) stays above the optimum and prunes
/// almost nothing.
#[tokio::test]
async fn an_even_odd_instance_is_never_filled_and_is_searched_nearly_exhaustively() {
    for (items, seed) in [(14, 1), (18, 5)] {
        let instance = Instance::generate(Family::EvenOdd, items, seed);
        assert_eq!(instance.capacity % 2, 1);
        assert!(
            instance
                .items
                .iter()
                .all(|i| i.weight % 2 == 0 && i.value == i.weight)
        );
        let found = search(&instance, &[instance.root()], 0, None, &mut Alone)
            .await
            .unwrap();
        assert_eq!(found.best, instance.optimum());
        assert!(found.best < instance.capacity);
        // A full binary tree over `items` decisions has 2^(items+1) - 1 nodes; the search
        // cuts only the branches that overflow or cannot reach the capacity.
        assert!(
            found.nodes >= 1 << (items - 4),
            "{items} items: {} nodes",
            found.nodes
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_bound_prunes_more_and_finds_the_same_optimum() {
    let redis = RedisServer::start(Path::new(env!("CARGO_TARGET_TMPDIR")));
    let ctx = workers(Some(&redis.url()));
    let family = Family::StronglyCorrelated;
    let optimum = Instance::generate(family, 40, 11).optimum();
    let (alone_best, alone_nodes) = fixed_split(&ctx, family, 40, 11, None).await;
    let (shared_best, shared_nodes) =
        fixed_split(&ctx, family, 40, 11, Some("knapsack-test")).await;
    assert_eq!((alone_best, shared_best), (optimum, optimum));
    assert!(
        shared_nodes < alone_nodes,
        "shared {shared_nodes} nodes, alone {alone_nodes}"
    );
    ctx.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_split_search_of_an_even_odd_instance_finds_the_optimum() {
    let redis = RedisServer::start(Path::new(env!("CARGO_TARGET_TMPDIR")));
    let ctx = workers(Some(&redis.url()));
    let family = Family::EvenOdd;
    let optimum = Instance::generate(family, 20, 4).optimum();
    let (alone_best, alone_nodes) = fixed_split(&ctx, family, 20, 4, None).await;
    let (shared_best, shared_nodes) =
        fixed_split(&ctx, family, 20, 4, Some("knapsack-even-odd")).await;
    assert_eq!((alone_best, shared_best), (optimum, optimum));
    // Knowing more never makes a depth-first branch and bound expand a node it would have cut.
    assert!(
        shared_nodes <= alone_nodes,
        "shared {shared_nodes} nodes, alone {alone_nodes}"
    );
    ctx.shutdown().await;
}

#[test]
fn the_program_reports_both_runs() {
    let redis = RedisServer::start(Path::new(env!("CARGO_TARGET_TMPDIR")));
    let summary = program(&redis.url(), &["--items", "36", "--tasks", "16"]);
    let optimum = summary["optimum"].as_u64().unwrap();
    assert_eq!(summary["family"], "strongly-correlated");
    assert_eq!(
        optimum,
        Instance::generate(Family::StronglyCorrelated, 36, 7).optimum()
    );
    let runs = summary["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r["best"] == optimum));
    assert!(
        runs[1]["nodes"].as_u64() < runs[0]["nodes"].as_u64(),
        "{summary}"
    );
}

#[test]
fn the_program_searches_the_family_it_is_given() {
    let redis = RedisServer::start(Path::new(env!("CARGO_TARGET_TMPDIR")));
    let summary = program(
        &redis.url(),
        &[
            "--family", "even-odd", "--items", "20", "--seed", "3", "--tasks", "16",
        ],
    );
    assert_eq!(summary["family"], "even-odd");
    let optimum = summary["optimum"].as_u64().unwrap();
    let instance = Instance::generate(Family::EvenOdd, 20, 3);
    assert_eq!(optimum, instance.optimum());
    let runs = summary["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert!(runs.iter().all(|r| r["best"] == optimum), "{summary}");
}
