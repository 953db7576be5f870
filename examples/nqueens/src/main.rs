//! Counts the solutions of the N-Queens problem by fanning board prefixes out to invocations:
//! the N-Queens benchmark of Cppless.
//!
//! The host places queens on the first rows in every valid way (the prefixes); each prefix is
//! one invocation that counts the completions of its board with Richards' bitmask backtracking;
//! the host sums the counts. Subtrees differ in size, so the slowest task bounds the run.
//!
//! ```text
//! cargo run --release -p nqueens -- --n 12 --tasks 64
//! cargo run --release -p nqueens -- --backend inline --n 14 --json
//! ```

use std::time::Instant;

use anyhow::ensure;
use clap::Parser;
use fanout_summary::{FanOutSummary, TimingArgs};
use ferry::Context;

#[derive(Debug, Parser)]
#[command(about = "Counts N-Queens solutions with one ferry invocation per board prefix")]
struct Args {
    /// Board size.
    #[arg(long, default_value_t = 12, value_parser = clap::value_parser!(u32).range(1..=32))]
    n: u32,
    /// Least number of invocations wanted: prefixes get one row longer until there are this many.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    tasks: u64,
    /// Rows each prefix fixes, instead of deriving it from --tasks.
    #[arg(long, conflicts_with = "tasks")]
    depth: Option<u32>,
    #[command(flatten)]
    timing: TimingArgs,
    /// Skip the sequential in-process baseline.
    #[arg(long)]
    skip_sequential: bool,
    /// Print a JSON summary as the last line.
    #[arg(long)]
    json: bool,
}

/// Solutions for n = 1..=18 (OEIS A000170), to check the result.
const KNOWN_SOLUTIONS: [u64; 18] = [
    1, 0, 0, 2, 10, 4, 40, 92, 352, 724, 2680, 14200, 73712, 365596, 2279184, 14772512, 95815104,
    666090624,
];

/// Counts the ways to finish a board of size `n` whose occupied columns and attacked diagonals
/// (as seen from the next row) are the given bitmasks.
#[ferry::function(name = "count-queens", timeout = "600s")]
fn count_queens(n: u32, cols: u64, left: u64, right: u64) -> u64 {
    complete(board_mask(n), cols, left, right)
}

/// Richards' backtracking: each row, try every column no queen attacks.
fn complete(full: u64, cols: u64, left: u64, right: u64) -> u64 {
    if cols == full {
        return 1;
    }
    let mut free = full & !(cols | left | right);
    let mut count = 0;
    while free != 0 {
        let queen = free & free.wrapping_neg();
        free ^= queen;
        count += complete(
            full,
            cols | queen,
            ((left | queen) << 1) & full,
            (right | queen) >> 1,
        );
    }
    count
}

fn board_mask(n: u32) -> u64 {
    (1u64 << n) - 1
}

/// Every valid placement of queens on the first `depth` rows, as the board state it leaves.
fn prefixes(n: u32, depth: u32) -> Vec<CountQueens> {
    fn extend(n: u32, depth: u32, cols: u64, left: u64, right: u64, out: &mut Vec<CountQueens>) {
        let full = board_mask(n);
        if depth == 0 || cols == full {
            out.push(CountQueens {
                n,
                cols,
                left,
                right,
            });
            return;
        }
        let mut free = full & !(cols | left | right);
        while free != 0 {
            let queen = free & free.wrapping_neg();
            free ^= queen;
            let (cols, left, right) = (
                cols | queen,
                ((left | queen) << 1) & full,
                (right | queen) >> 1,
            );
            extend(n, depth - 1, cols, left, right, out);
        }
    }
    let mut out = Vec::new();
    extend(n, depth, 0, 0, 0, &mut out);
    out
}

/// The shortest prefixes that give at least `tasks` invocations (or all of them, for tiny boards).
fn prefixes_for(n: u32, tasks: u64) -> (u32, Vec<CountQueens>) {
    let mut depth = 1;
    loop {
        let found = prefixes(n, depth);
        if found.len() as u64 >= tasks || depth >= n || found.is_empty() {
            return (depth, found);
        }
        depth += 1;
    }
}

#[ferry::main]
async fn main(ctx: Context, args: Args) -> anyhow::Result<()> {
    let (depth, tasks) = match args.depth {
        Some(depth) => (depth.min(args.n), prefixes(args.n, depth.min(args.n))),
        None => prefixes_for(args.n, args.tasks),
    };
    let task_count = tasks.len();

    let sequential = (!args.skip_sequential).then(|| {
        let start = Instant::now();
        let count = count_queens(args.n, 0, 0, 0);
        (count, start.elapsed().as_secs_f64())
    });

    let fan_out = || async {
        let counts: Vec<u64> = ctx
            .map(tasks.iter().map(|task| CountQueens {
                n: task.n,
                cols: task.cols,
                left: task.left,
                right: task.right,
            }))
            .await?;
        Ok::<_, ferry::Error>(counts.into_iter().sum::<u64>())
    };
    let (solutions, timing) = args.timing.measure(fan_out).await?;

    println!("{}-queens: {solutions} solutions", args.n);
    println!("prefixes of {depth} rows");
    FanOutSummary::new(
        solutions,
        task_count as u64,
        timing.median(),
        sequential.map(|(_, s)| s),
        &ctx.stats(),
    )
    .measured(&timing)
    .print(args.json);

    if let Some((sequential_solutions, _)) = sequential {
        ensure!(
            solutions == sequential_solutions,
            "the distributed run found {solutions} solutions, the sequential one {sequential_solutions}"
        );
    }
    if let Some(&known) = KNOWN_SOLUTIONS.get(args.n as usize - 1) {
        ensure!(
            solutions == known,
            "{}-queens has {known} solutions, but the run found {solutions}",
            args.n
        );
    }
    Ok(())
}
