//! Renders the example scene with tiles as ferry tasks and writes a PNG.
//!
//! ```text
//! cargo run --release -p raytracer -- --tasks 64 --out docs/raytracer.png
//! ```

use std::path::PathBuf;
use std::time::Instant;

use clap::Parser;
use ferry::Context;
use raytracer::{Image, Passing, Scene};

#[derive(Debug, Parser)]
#[command(about = "a small ray tracer: tiles as ferry tasks over one shared scene")]
struct Args {
    #[arg(long, default_value_t = 640)]
    width: u32,
    #[arg(long, default_value_t = 480)]
    height: u32,
    /// Tiles, one task each.
    #[arg(long, default_value_t = 64)]
    tasks: u32,
    /// Send the scene by value in every task instead of as one `Shared<Scene>`.
    #[arg(long)]
    by_value: bool,
    /// Dispatch every tile at once and time each invocation (dispatch to start, run, return),
    /// with the shared scene.
    #[arg(long, conflicts_with = "by_value")]
    latencies: bool,
    /// Unmeasured renders first (they start the platform's workers).
    #[arg(long, default_value_t = 0)]
    warmup: u32,
    /// Print a JSON summary as the last line.
    #[arg(long)]
    json: bool,
    /// The PNG to write.
    #[arg(long, default_value = "raytracer.png")]
    out: PathBuf,
}

#[ferry::main]
async fn main(ctx: Context, args: Args) -> anyhow::Result<()> {
    let scene = Scene::example();
    let scene_bytes = ferry::Codec::Binary.encode(&scene)?.len();
    let passing = if args.by_value {
        Passing::ByValue
    } else {
        Passing::Shared
    };
    for _ in 0..args.warmup {
        Image::render_tiles(&ctx, &scene, args.width, args.height, args.tasks, passing).await?;
    }
    let before = ferry::shared::stats();
    let started = Instant::now();
    let (image, latencies) = if args.latencies {
        let (image, latencies) =
            Image::render_tiles_timed(&ctx, &scene, args.width, args.height, args.tasks).await?;
        (image, Some(latencies))
    } else {
        let image =
            Image::render_tiles(&ctx, &scene, args.width, args.height, args.tasks, passing).await?;
        (image, None)
    };
    let seconds = started.elapsed().as_secs_f64();
    let encoding = ferry::shared::stats().argument_encode_time - before.argument_encode_time;
    image.write_png(&args.out)?;
    println!(
        "{}x{} in {} tiles on {} ({}, scene {:.1} KiB): {seconds:.3} s, host serialization {:.3} ms; wrote {}",
        args.width,
        args.height,
        args.tasks,
        ctx.backend_kind(),
        passing.name(),
        scene_bytes as f64 / 1024.0,
        encoding.as_secs_f64() * 1e3,
        args.out.display()
    );
    let summary = serde_json::json!({
        "width": args.width,
        "height": args.height,
        "tasks": args.tasks,
        "backend": ctx.backend_kind().to_string(),
        "passing": passing.name(),
        "seconds": seconds,
        "host_serialization_ms": encoding.as_secs_f64() * 1e3,
        "latency": latencies.as_deref().map(distribution),
    });
    if let Some(latency) = &summary["latency"].as_object() {
        for (part, quantiles) in latency.iter() {
            println!("{part}: {quantiles}");
        }
    }
    if args.json {
        println!("{summary}");
    }
    ctx.shutdown().await;
    Ok(())
}

/// Nearest-rank quantiles (ms) of each part of the invocations' time.
fn distribution(latencies: &[raytracer::TileLatency]) -> serde_json::Value {
    let part = |of: fn(&raytracer::TileLatency) -> f64| {
        let mut ms: Vec<f64> = latencies.iter().map(|l| of(l) * 1e3).collect();
        ms.sort_by(f64::total_cmp);
        let rank = |q: f64| {
            let index = ((q * ms.len() as f64).ceil() as usize).clamp(1, ms.len().max(1)) - 1;
            ms.get(index).copied().unwrap_or(0.0)
        };
        serde_json::json!({
            "p50_ms": rank(0.5), "p90_ms": rank(0.9), "p99_ms": rank(0.99), "max_ms": rank(1.0),
        })
    };
    serde_json::json!({
        "dispatch_to_start": part(|l| l.dispatch_to_start),
        "run": part(|l| l.run),
        "return_to_host": part(|l| l.return_to_host),
    })
}
