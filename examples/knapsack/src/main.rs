//! Branch and bound over ferry invocations, with and without a shared best bound.
//!
//! ```text
//! cargo run --release -p knapsack -- --items 44 --tasks 64                 # alone only
//! FERRY_REDIS_URL=redis://127.0.0.1:6379 cargo run --release -p knapsack -- --items 44 --tasks 64 --shared
//! cargo run --release -p knapsack -- --family even-odd --items 30 --tasks 64
//! cargo run --release -p knapsack -- --items 80 --seed 3 --split-after-ms 0 --shared   # fixed split
//! ```

use std::collections::VecDeque;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, ensure};
use clap::Parser;
use ferry::Context;
use futures::StreamExt as _;
use futures::stream::FuturesUnordered;
use knapsack::{Alone, Explore, Family, Instance, Node, prefix_in_search_order, search, split};

#[derive(Debug, Parser)]
#[command(about = "0/1 knapsack by branch and bound over ferry invocations")]
struct Args {
    /// The kind of instance.
    #[arg(long, value_enum, default_value_t = Family::StronglyCorrelated)]
    family: Family,
    /// Items in the instance.
    #[arg(long, default_value_t = 44, value_parser = clap::value_parser!(u32).range(1..=1000))]
    items: u32,
    /// Seed of the instance.
    #[arg(long, default_value_t = 7)]
    seed: u64,
    /// Tasks at first: a power of two, each fixing the first log2(tasks) decisions; also the
    /// most tasks in flight.
    #[arg(long, default_value_t = 64)]
    tasks: u64,
    /// A task that runs this long hands back the subtrees it has not searched, which are split
    /// into new tasks (0: never, the split stays fixed).
    #[arg(long, default_value_t = 20)]
    split_after_ms: u64,
    /// How many tasks the subtrees a task hands back are split into.
    #[arg(long, default_value_t = 2)]
    split_into: usize,
    /// Also run with the best bound shared in Redis (`FERRY_REDIS_URL`).
    #[arg(long)]
    shared: bool,
    /// Print a JSON summary as the last line.
    #[arg(long)]
    json: bool,
}

/// One distributed run's totals.
#[derive(Debug, serde::Serialize)]
struct Run {
    mode: &'static str,
    best: u64,
    nodes: u64,
    /// The most nodes one task explored: with a shared bound, the run can take no less than
    /// that task does.
    largest_task_nodes: u64,
    /// Tasks run, those made of subtrees other tasks handed back included.
    tasks: u64,
    seconds: f64,
}

#[ferry::main]
async fn main(ctx: Context, args: Args) -> anyhow::Result<()> {
    ensure!(
        args.tasks.is_power_of_two() && args.tasks.trailing_zeros() < args.items,
        "--tasks must be a power of two below 2^items"
    );
    let depth = args.tasks.trailing_zeros();
    let instance = Instance::generate(args.family, args.items as usize, args.seed);
    let optimum = instance.optimum();
    println!(
        "{:?}, {} items, seed {}, capacity {}, optimum {optimum} (dynamic programming)",
        args.family, args.items, args.seed, instance.capacity
    );

    let started = Instant::now();
    let sequential = search(&instance, &[instance.root()], 0, None, &mut Alone).await?;
    let sequential_seconds = started.elapsed().as_secs_f64();
    ensure!(
        sequential.best == optimum,
        "the sequential search missed the optimum"
    );
    println!(
        "sequential: best {}, {} nodes, {sequential_seconds:.3} s",
        sequential.best, sequential.nodes
    );

    let mut runs = vec![distributed(&ctx, &args, depth, None).await?];
    if args.shared {
        let namespace = format!(
            "knapsack-{}-{}",
            std::process::id(),
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos()
        );
        runs.push(distributed(&ctx, &args, depth, Some(namespace)).await?);
    }
    for run in &runs {
        ensure!(
            run.best == optimum,
            "{} found {} instead of {optimum}",
            run.mode,
            run.best
        );
        println!(
            "{} ({} tasks on {}): best {}, {} nodes ({:.2}x the sequential search's, the largest task {}), {:.3} s, speedup {:.2}x",
            run.mode,
            run.tasks,
            ctx.backend_kind(),
            run.best,
            run.nodes,
            run.nodes as f64 / sequential.nodes as f64,
            run.largest_task_nodes,
            run.seconds,
            sequential_seconds / run.seconds
        );
    }
    if let [alone, shared] = &runs[..] {
        println!(
            "the shared bound explores {:.2}x fewer nodes",
            alone.nodes as f64 / shared.nodes as f64
        );
    }
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "family": args.family,
                "items": args.items,
                "seed": args.seed,
                "optimum": optimum,
                "sequential": { "nodes": sequential.nodes, "seconds": sequential_seconds },
                "runs": runs,
            })
        );
    }
    ctx.shutdown().await;
    Ok(())
}

/// Runs the split search: the first `2^depth` subtrees as tasks, then, as tasks hand back what
/// they left, those subtrees split into new tasks, at most `--tasks` in flight. Handed-back
/// subtrees go first: they come earliest in the sequential search's order.
async fn distributed(
    ctx: &Context,
    args: &Args,
    depth: u32,
    shared: Option<String>,
) -> anyhow::Result<Run> {
    let mode = if shared.is_some() {
        "shared bound"
    } else {
        "alone"
    };
    let instance = Instance::generate(args.family, args.items as usize, args.seed);
    let started = Instant::now();
    let mut queue: VecDeque<Vec<Node>> = (0..args.tasks)
        .filter_map(|rank| instance.subtree(prefix_in_search_order(rank, depth), depth))
        .map(|node| vec![node])
        .collect();
    let mut run = Run {
        mode,
        best: 0,
        nodes: 0,
        largest_task_nodes: 0,
        tasks: 0,
        seconds: 0.0,
    };
    let mut running = FuturesUnordered::new();
    loop {
        while running.len() < args.tasks as usize {
            let Some(roots) = queue.pop_front() else {
                break;
            };
            run.tasks += 1;
            running.push(ctx.call(Explore {
                family: args.family,
                items: args.items,
                seed: args.seed,
                roots,
                known: run.best,
                budget_ms: args.split_after_ms,
                shared: shared.clone(),
            }));
        }
        let Some(explored) = running.next().await else {
            break;
        };
        let explored = explored.with_context(|| format!("the {mode} run failed"))?;
        run.best = run.best.max(explored.best);
        run.nodes += explored.nodes;
        run.largest_task_nodes = run.largest_task_nodes.max(explored.nodes);
        for task in split(explored.left, args.split_into).into_iter().rev() {
            queue.push_front(task);
        }
    }
    run.seconds = started.elapsed().as_secs_f64();
    Ok(run)
}
