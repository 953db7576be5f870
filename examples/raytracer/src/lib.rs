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
