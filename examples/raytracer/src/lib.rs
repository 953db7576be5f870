//! A small ray tracer whose tiles are ferry tasks over one scene passed as [`ferry::Shared`].
//!
//! Spheres, planes and triangle meshes, point lights with shadows, mirror reflections and 2×2
//! supersampling; every pixel is a pure function of the scene, so a tiled render equals the
//! single-process one bit for bit. The scene is about 88 KiB in the binary codec (Cppless's
//! ray tracer sends an 88 KiB scene with every invocation).
//!
//! [`render_tile`] takes the scene as `Shared<Scene>`: the host encodes it once and each worker
//! fetches and decodes it once. [`render_tile_by_value`] takes a plain `Scene`, encoded and
//! decoded once per tile: the baseline of `raytracer-bench`.

pub mod bvh;
pub mod math;
pub mod render;
pub mod scene;

use std::path::Path;

use anyhow::{Context as _, ensure};
use ferry::{Context, Shared};

pub use crate::bvh::Bvh;
pub use crate::math::Vec3;
pub use crate::render::{Tile, TileImage};
pub use crate::scene::Scene;

/// Renders one tile of a scene that every tile shares.
#[ferry::function(timeout = "120s")]
pub fn render_tile(scene: Shared<Scene>, tile: Tile) -> TileImage {
    let bvh = Bvh::build(&scene);
    render::render_tile(&scene, &bvh, tile)
}

/// Renders one tile of a scene sent in full with every tile (the baseline).
#[ferry::function(timeout = "120s")]
pub fn render_tile_by_value(scene: Scene, tile: Tile) -> TileImage {
    let bvh = Bvh::build(&scene);
    render::render_tile(&scene, &bvh, tile)
}

/// [`render_tile`] with the wall-clock times its body started and ended (Unix nanoseconds: the
/// host's and the workers' clocks are one on one machine).
#[ferry::function(timeout = "120s")]
pub fn render_tile_timed(scene: Shared<Scene>, tile: Tile) -> TimedTile {
    let started_unix_ns = unix_ns();
    let bvh = Bvh::build(&scene);
    let image = render::render_tile(&scene, &bvh, tile);
    TimedTile {
        image,
        started_unix_ns,
        ended_unix_ns: unix_ns(),
    }
}

/// A tile and when its body ran.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct TimedTile {
    pub image: TileImage,
    pub started_unix_ns: u64,
    pub ended_unix_ns: u64,
}

/// Where one invocation's time went, in seconds: from the host's dispatch to the body's start,
/// the body, and from the body's end to the host holding the answer.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct TileLatency {
    pub dispatch_to_start: f64,
    pub run: f64,
    pub return_to_host: f64,
}

fn unix_ns() -> u64 {
    let since = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    u64::try_from(since.as_nanos()).unwrap_or(u64::MAX)
}

/// How the tasks of a distributed render get the scene.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Passing {
    /// One `Shared<Scene>`: encoded once, sent by id.
    Shared,
    /// The plain `Scene` in every task.
    ByValue,
}

impl Passing {
    pub fn name(self) -> &'static str {
        match self {
            Self::Shared => "Shared<Scene>",
            Self::ByValue => "Scene by value",
        }
    }
}

/// An RGB image, 8 bits a channel, row by row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    pub rgb: Vec<u8>,
}

impl Image {
    /// The whole image rendered in this process, as one tile.
    pub fn render(scene: &Scene, width: u32, height: u32) -> Self {
        let bvh = Bvh::build(scene);
        let whole = render::render_tile(scene, &bvh, Tile::whole(width, height));
        Self {
            width,
            height,
            rgb: whole.rgb,
        }
    }

    /// Puts rendered tiles together; every pixel must be covered exactly once.
    pub fn assemble(width: u32, height: u32, tiles: &[TileImage]) -> anyhow::Result<Self> {
        let mut rgb = vec![0u8; (width * height * 3) as usize];
        let mut covered = 0u64;
        for TileImage { tile, rgb: pixels } in tiles {
            ensure!(
                tile.image_width == width
                    && tile.image_height == height
                    && tile.x + tile.width <= width
                    && tile.y + tile.height <= height
                    && pixels.len() == (tile.width * tile.height * 3) as usize,
                "tile {tile:?} does not fit a {width}x{height} image"
            );
            let row_bytes = (tile.width * 3) as usize;
            for row in 0..tile.height {
                let from = row as usize * row_bytes;
                let to = (((tile.y + row) * width + tile.x) * 3) as usize;
                rgb[to..to + row_bytes].copy_from_slice(&pixels[from..from + row_bytes]);
            }
            covered += u64::from(tile.width * tile.height);
        }
        ensure!(
            covered == u64::from(width * height),
            "the tiles cover {covered} pixels of {}",
            width * height
        );
        Ok(Self { width, height, rgb })
    }

    /// Renders with `tasks` tiles on the context's backend.
    pub async fn render_tiles(
        ctx: &Context,
        scene: &Scene,
        width: u32,
        height: u32,
        tasks: u32,
        passing: Passing,
    ) -> anyhow::Result<Self> {
        let tiles = Tile::split(width, height, tasks);
        let rendered = match passing {
            Passing::Shared => {
                let shared = Shared::new(scene.clone());
                ctx.map(tiles.into_iter().map(|tile| RenderTile {
                    scene: shared.clone(),
                    tile,
                }))
                .await
            }
            Passing::ByValue => {
                ctx.map(tiles.into_iter().map(|tile| RenderTileByValue {
                    scene: scene.clone(),
                    tile,
                }))
                .await
            }
        }
        .with_context(|| format!("rendering {tasks} tiles failed"))?;
        Self::assemble(width, height, &rendered)
    }

    /// Renders with `tasks` tiles dispatched all at once (as Cppless dispatches), each
    /// invocation timed from dispatch to start, run and return.
    pub async fn render_tiles_timed(
        ctx: &Context,
        scene: &Scene,
        width: u32,
        height: u32,
        tasks: u32,
    ) -> anyhow::Result<(Self, Vec<TileLatency>)> {
        let shared = Shared::new(scene.clone());
        let calls = Tile::split(width, height, tasks).into_iter().map(|tile| {
            let call = ctx.call(RenderTileTimed {
                scene: shared.clone(),
                tile,
            });
            async move {
                let dispatched = unix_ns();
                let timed = call.await?;
                let received = unix_ns();
                let seconds = |from: u64, to: u64| to.saturating_sub(from) as f64 / 1e9;
                let latency = TileLatency {
                    dispatch_to_start: seconds(dispatched, timed.started_unix_ns),
                    run: seconds(timed.started_unix_ns, timed.ended_unix_ns),
                    return_to_host: seconds(timed.ended_unix_ns, received),
                };
                Ok::<_, ferry::Error>((timed.image, latency))
            }
        });
        let done = futures::future::try_join_all(calls)
            .await
            .with_context(|| format!("rendering {tasks} tiles failed"))?;
        let (tiles, latencies): (Vec<TileImage>, Vec<TileLatency>) = done.into_iter().unzip();
        Ok((Self::assemble(width, height, &tiles)?, latencies))
    }

    /// Writes the image as an 8-bit RGB PNG.
    pub fn write_png(&self, path: &Path) -> anyhow::Result<()> {
        let file = std::fs::File::create(path)
            .with_context(|| format!("cannot create `{}`", path.display()))?;
        let mut encoder = png::Encoder::new(std::io::BufWriter::new(file), self.width, self.height);
        encoder.set_color(png::ColorType::Rgb);
        encoder.set_depth(png::BitDepth::Eight);
        encoder.set_compression(png::Compression::High);
        let mut writer = encoder.write_header()?;
        writer.write_image_data(&self.rgb)?;
        writer.finish()?;
        Ok(())
    }
}
