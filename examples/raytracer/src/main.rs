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
    let before = ferry::shared::stats();
    let started = Instant::now();
    let image =
        Image::render_tiles(&ctx, &scene, args.width, args.height, args.tasks, passing).await?;
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
    ctx.shutdown().await;
    Ok(())
}
