//! Recursive Fibonacci where functions invoke functions: the Fibonacci benchmark of Cppless.
//!
//! Above a cutoff, every call invokes its two subproblems remotely and adds their results; at or
//! below it, the call computes in-process. It shows nested invocations (a function's `Context`
//! reaches the same platform as the host's), not speedup: the work per invocation is tiny.
//!
//! ```text
//! cargo run --release -p fib -- --n 20 --tasks 100
//! cargo run --release -p fib -- --backend inline --n 25 --json
//! cargo run --release -p fib -- --n 35 --tasks 109 --warmup 1 --runs 5   # warm workers, median of 5
//! ```

use std::convert::Infallible;

use anyhow::ensure;
use clap::Parser;
use fanout_summary::{FanOutSummary, TimingArgs};
use ferry::Context;

#[derive(Debug, Parser)]
#[command(about = "Computes Fibonacci numbers with recursive ferry invocations")]
struct Args {
    /// Which Fibonacci number (at most 92, so that the check fits a u64).
    #[arg(long, default_value_t = 20, value_parser = clap::value_parser!(u32).range(0..=92))]
    n: u32,
    /// Target number of invocations: the cutoff is chosen to come closest to it.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    tasks: u64,
    #[command(flatten)]
    timing: TimingArgs,
    /// Skip the sequential in-process baseline.
    #[arg(long)]
    skip_sequential: bool,
    /// Print a JSON summary as the last line.
    #[arg(long)]
    json: bool,
}

/// The `n`th Fibonacci number, invoking itself for `n - 1` and `n - 2` while `n > cutoff`.
///
/// A parent keeps its slot on a worker while it awaits its children, so one instance must run
/// many invocations at once: with `concurrency = 1`, every worker would soon hold a waiting
/// parent, the children would queue behind them, and the recursion would stall until timeouts
/// fired.
#[ferry::function(concurrency = 1000, timeout = "120s")]
async fn fib(ctx: Context, n: u32, cutoff: u32) -> ferry::Result<u64> {
    // A cutoff of at least 1 keeps `n - 2` from underflowing.
    if n <= cutoff.max(1) {
        return Ok(fib_sequential(n));
    }
    let left = ctx.spawn(Fib { n: n - 1, cutoff });
    let right = ctx.call(Fib { n: n - 2, cutoff }).await?;
    Ok(left.await? + right)
}

/// Plain recursive Fibonacci.
fn fib_sequential(n: u32) -> u64 {
    if n < 2 {
        u64::from(n)
    } else {
        fib_sequential(n - 1) + fib_sequential(n - 2)
    }
}

/// Fibonacci by iteration, to check the result.
fn fib_iterative(n: u32) -> u64 {
    (0..n).fold((0u64, 1u64), |(a, b), _| (b, a + b)).0
}

/// Invocations `fib(n, cutoff)` makes, counting itself: one per call above the cutoff and one per
/// leaf.
fn invocations(n: u32, cutoff: u32) -> u64 {
    let cutoff = cutoff.max(1);
    // R(k - 2) and R(k - 1) as k runs up to n; R(k) = 1 for every k <= cutoff.
    let (mut before, mut last) = (1u64, 1u64);
    for k in 0..=n {
        let count = if k <= cutoff {
            1
        } else {
            1u64.saturating_add(last).saturating_add(before)
        };
        (before, last) = (last, count);
    }
    last
}

/// The cutoff whose invocation count is closest to `tasks` (the smaller count on a tie).
fn cutoff_for(n: u32, tasks: u64) -> u32 {
    let closeness = |count: u64| (count.abs_diff(tasks), count);
    let mut best = (n.max(1), 1);
    // Counts grow as the cutoff falls: stop at the first one that reaches the target.
    for cutoff in (1..=n.max(1)).rev() {
        let count = invocations(n, cutoff);
        if closeness(count) < closeness(best.1) {
            best = (cutoff, count);
        }
        if count >= tasks {
            break;
        }
    }
    best.0
}

#[ferry::main]
async fn main(ctx: Context, args: Args) -> anyhow::Result<()> {
    let cutoff = cutoff_for(args.n, args.tasks);
    let task_count = invocations(args.n, cutoff);

    let sequential = if args.skip_sequential {
        None
    } else {
        let sequential = || async { Ok::<_, Infallible>(fib_sequential(args.n)) };
        let (_, timing) = args.timing.measure(sequential).await?;
        Some(timing.median())
    };

    let fan_out = || ctx.call(Fib { n: args.n, cutoff });
    let (value, timing) = args.timing.measure(fan_out).await?;

    println!("fib({}) = {value}", args.n);
    println!("cutoff: {cutoff}");
    FanOutSummary::new(value, task_count, timing.median(), sequential, &ctx.stats())
        .measured(&timing)
        .print(args.json);

    let expected = fib_iterative(args.n);
    ensure!(
        value == expected,
        "fib({}) is {expected}, but the run returned {value}",
        args.n
    );
    Ok(())
}
