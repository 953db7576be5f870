//! The floorplan benchmark of BOTS over ferry invocations: the Floorplan benchmark of Cppless.
//!
//! The host lays the first `--cutoff` cells down in every way that fits; each way is one
//! invocation that searches the rest of the tree by branch and bound, pruning with the best
//! area known when it was sent. The host keeps the smallest area, checks it against the
//! sequential search and, when the input file states it, the known minimum.
//!
//! ```text
//! cargo run --release -p floorplan -- --input examples/floorplan/inputs/input.15
//! cargo run --release -p floorplan -- --input examples/floorplan/inputs/input.5 --backend inline --json
//! cargo run --release -p floorplan -- --input examples/floorplan/inputs/input.15 --cutoff 4 --warmup 1 --runs 5
//! ```

use std::convert::Infallible;
use std::path::PathBuf;

use anyhow::{Context as _, bail, ensure};
use clap::Parser;
use fanout_summary::{FanOutSummary, TimingArgs};
use ferry::Context;
use floorplan::{Floorplan, distributed, prefixes, solve};

#[derive(Debug, Parser)]
#[command(about = "Finds the floorplan of least area with one ferry invocation per subtree")]
struct Args {
    /// A cell description file in BOTS's format (examples/floorplan/inputs/input.{5,15,20}).
    #[arg(long)]
    input: PathBuf,
    /// Cells the host lays down before the rest of the search is split into tasks: BOTS's
    /// cutoff (0: one task searches everything). BOTS's default, 5, makes 4,356 tasks of the
    /// BOTS inputs, each well under a millisecond; 4 makes 562, about as many as Cppless ran.
    #[arg(long, default_value_t = 4)]
    cutoff: usize,
    /// Most tasks in flight: a task is sent the best area found by the tasks that have ended
    /// [default: twice the backend's workers].
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    concurrency: Option<u64>,
    #[command(flatten)]
    timing: TimingArgs,
    /// Skip the sequential in-process baseline.
    #[arg(long)]
    skip_sequential: bool,
    /// Draw the floorplan found, a letter per cell, as BOTS does.
    #[arg(long)]
    board: bool,
    /// Print a JSON summary as the last line.
    #[arg(long)]
    json: bool,
}

#[ferry::main]
async fn main(ctx: Context, args: Args) -> anyhow::Result<()> {
    let text = std::fs::read_to_string(&args.input)
        .with_context(|| format!("cannot read {}", args.input.display()))?;
    let plan = Floorplan::parse(&text).with_context(|| format!("in {}", args.input.display()))?;
    let cutoff = args.cutoff.min(plan.chain().len());
    let in_flight = args
        .concurrency
        .map_or(2 * ctx.stats().max_workers.max(1), |n| n as usize);

    let sequential = if args.skip_sequential {
        None
    } else {
        let run = || async { Ok::<_, Infallible>(solve(&plan)) };
        let (explored, timing) = args.timing.measure(run).await?;
        Some((explored, timing.median()))
    };

    let fan_out = || async {
        let split = prefixes(&plan, cutoff);
        let host_tried = split.tried;
        let run = distributed(&ctx, &plan, split.prefixes, in_flight).await?;
        Ok::<_, ferry::Error>((run, host_tried))
    };
    let ((run, host_tried), timing) = args.timing.measure(fan_out).await?;
    let area = run.best.as_ref().map(|best| best.area);

    println!(
        "{}: {} cells, {}",
        args.input.display(),
        plan.len(),
        match &run.best {
            Some(best) => format!("minimum area {} ({}×{})", best.area, best.rows, best.cols),
            None => "no floorplan fits".to_owned(),
        }
    );
    if args.board {
        if let Some(best) = &run.best {
            print!("{}", best.render(&plan));
        }
    }
    println!(
        "prefixes of {cutoff} cells, at most {in_flight} tasks in flight; positions tried: {}{} \
         by the tasks, {host_tried} by the host",
        sequential
            .as_ref()
            .map(|(s, _)| format!("{} sequentially, ", s.tried))
            .unwrap_or_default(),
        run.tried
    );
    FanOutSummary::new(
        area,
        run.tasks,
        timing.median(),
        sequential.as_ref().map(|(_, seconds)| *seconds),
        &ctx.stats(),
    )
    .measured(&timing)
    .print(args.json);

    if let Some(best) = &run.best {
        best.check(&plan)
            .map_err(anyhow::Error::msg)
            .context("the distributed run returned a floorplan that is not one")?;
    }
    if let Some((explored, _)) = &sequential {
        let sequential_area = explored.best.as_ref().map(|best| best.area);
        ensure!(
            area == sequential_area,
            "the distributed run found area {area:?}, the sequential one {sequential_area:?}"
        );
    }
    if let Some(known) = plan.known_area() {
        match area {
            Some(area) if area == known => {}
            Some(area) => bail!("the input's known minimum area is {known}, the run found {area}"),
            None => bail!("the input's known minimum area is {known}, the run found no floorplan"),
        }
    }
    Ok(())
}
