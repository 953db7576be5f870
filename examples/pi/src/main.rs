//! Monte-Carlo estimate of π, split over many invocations: the pi benchmark of Cppless.
//!
//! Every task draws its share of random points in the unit square and counts those inside the
//! quarter circle; the host sums the counts. The tasks are independent and move a few bytes each,
//! so the distributed run should scale with the cores (or instances) it gets.
//!
//! Each task has its own seed, so a run is reproducible and the distributed count must equal the
//! sequential one exactly.
//!
//! ```text
//! cargo run --release -p pi -- --tasks 64
//! cargo run --release -p pi -- --backend inline --samples 100000000 --json
//! ```

use std::f64::consts::PI;
use std::time::Instant;

use anyhow::ensure;
use clap::Parser;
use fanout_summary::{FanOutSummary, TimingArgs};
use ferry::Context;

#[derive(Debug, Parser)]
#[command(about = "Estimates π by Monte-Carlo sampling spread over ferry invocations")]
struct Args {
    /// Number of invocations the samples are split over.
    #[arg(long, default_value_t = 64, value_parser = clap::value_parser!(u64).range(1..))]
    tasks: u64,
    /// Total number of random points.
    #[arg(long, default_value_t = 500_000_000, value_parser = clap::value_parser!(u64).range(1..))]
    samples: u64,
    #[command(flatten)]
    timing: TimingArgs,
    /// Skip the sequential in-process baseline.
    #[arg(long)]
    skip_sequential: bool,
    /// Print a JSON summary as the last line.
    #[arg(long)]
    json: bool,
}

/// Counts how many of `samples` random points in the unit square fall inside the quarter circle.
#[ferry::function(timeout = "300s")]
fn estimate_pi_hits(samples: u64, seed: u64) -> u64 {
    let mut rng = WyRand::new(seed);
    let mut hits = 0;
    for _ in 0..samples {
        let (x, y) = (rng.next_unit(), rng.next_unit());
        hits += u64::from(x * x + y * y < 1.0);
    }
    hits
}

/// wyrand: one multiply per number, and good enough statistics for Monte-Carlo.
struct WyRand(u64);

impl WyRand {
    fn new(seed: u64) -> Self {
        Self(seed)
    }

    #[inline]
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0xa076_1d64_78bd_642f);
        let product = u128::from(self.0) * u128::from(self.0 ^ 0xe703_7ed1_a0b4_28db);
        (product >> 64) as u64 ^ product as u64
    }

    /// Uniform in [0, 1): the top 53 bits as the mantissa.
    #[inline]
    fn next_unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }
}

/// Splits `samples` as evenly as possible over `tasks` invocations, seeding each by its index.
fn split(samples: u64, tasks: u64) -> Vec<EstimatePiHits> {
    let (share, rest) = (samples / tasks, samples % tasks);
    (0..tasks)
        .map(|seed| EstimatePiHits {
            samples: share + u64::from(seed < rest),
            seed,
        })
        .collect()
}

/// Six standard errors of the estimate: a correct run lands outside about once in 10⁹.
fn tolerance(samples: u64) -> f64 {
    let inside = PI / 4.0;
    6.0 * 4.0 * (inside * (1.0 - inside) / samples as f64).sqrt()
}

#[ferry::main]
async fn main(ctx: Context, args: Args) -> anyhow::Result<()> {
    let tasks = split(args.samples, args.tasks);

    let sequential = (!args.skip_sequential).then(|| {
        let start = Instant::now();
        let hits: u64 = tasks
            .iter()
            .map(|task| estimate_pi_hits(task.samples, task.seed))
            .sum();
        (hits, start.elapsed().as_secs_f64())
    });

    let fan_out = || async {
        let hits: Vec<u64> = ctx.map(split(args.samples, args.tasks)).await?;
        Ok::<_, ferry::Error>(hits.into_iter().sum::<u64>())
    };
    let (hits, timing) = args.timing.measure(fan_out).await?;

    let estimate = 4.0 * hits as f64 / args.samples as f64;
    let error = (estimate - PI).abs();

    println!(
        "pi ≈ {estimate:.9} (error {error:.2e}, tolerance {:.2e})",
        tolerance(args.samples)
    );
    println!("samples: {}", args.samples);
    FanOutSummary::new(
        estimate,
        args.tasks,
        timing.median(),
        sequential.map(|(_, s)| s),
        &ctx.stats(),
    )
    .measured(&timing)
    .print(args.json);

    if let Some((sequential_hits, _)) = sequential {
        ensure!(
            hits == sequential_hits,
            "the distributed run counted {hits} hits, the sequential one {sequential_hits}"
        );
    }
    ensure!(
        error < tolerance(args.samples),
        "the estimate {estimate} is {error:.2e} away from π, more than the tolerance {:.2e}",
        tolerance(args.samples)
    );
    Ok(())
}
