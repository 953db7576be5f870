//! A host with options of its own beside ferry's `--backend`: a fan-out in which one task fails,
//! to see how a failure, the invocation spans (`FERRY_LOG=debug`) and the run report
//! (`FERRY_REPORT=1`) look to a user.

use ferry::Context;
use ferry_tests::RequireEven;

#[derive(Debug, clap::Parser)]
#[command(about = "maps `require_even` over 0, 2, 4, … with one odd number")]
struct Args {
    /// How many tasks.
    #[arg(long, default_value_t = 10)]
    tasks: u32,
    /// The task given an odd number, which fails.
    #[arg(long)]
    odd_at: Option<u32>,
    /// Wait for every task and print each failure, instead of stopping at the first.
    #[arg(long)]
    settle: bool,
}

#[ferry::main]
async fn main(ctx: Context, args: Args) -> ferry::Result<()> {
    let tasks = (0..args.tasks).map(|i| RequireEven {
        n: 2 * i + u32::from(Some(i) == args.odd_at),
    });
    if args.settle {
        let results = ctx.map(tasks).progress(false).settle().await;
        let failures: Vec<_> = results.iter().filter_map(|r| r.as_ref().err()).collect();
        for failure in &failures {
            println!("failed: {failure}");
        }
        println!(
            "{} of {} tasks succeeded",
            results.len() - failures.len(),
            results.len()
        );
        return Ok(());
    }
    let halves = ctx.map(tasks).progress(false).await?;
    println!("sum of halves: {}", halves.iter().sum::<u32>());
    Ok(())
}
