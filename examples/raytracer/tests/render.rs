//! Tiles rendered as tasks on the local platform (workers are this example's binary) equal the
//! single-process render pixel for pixel, whether the scene is shared or sent by value.

use ferry::{Context, LocalConfig};
use raytracer::{Image, Passing, Scene, Tile};

fn workers() -> Context {
    Context::local(
        LocalConfig::default()
            .max_workers(2)
            .worker_exe(env!("CARGO_BIN_EXE_raytracer")),
    )
    .expect("local platform")
}

/// A small scene, so the unoptimised test build renders quickly.
fn scene() -> Scene {
    let mut scene = Scene::generate(40, 7);
    scene.samples_per_axis = 1;
    scene
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tiles_on_workers_equal_the_single_process_render() {
    let scene = scene();
    let (width, height) = (48, 32);
    let single = Image::render(&scene, width, height);
    assert!(
        single.rgb.chunks(3).any(|p| p != single.rgb[..3].as_ref()),
        "the image is not one flat colour"
    );
    let ctx = workers();
    for (tasks, passing) in [
        (12, Passing::Shared),
        (7, Passing::Shared),
        (6, Passing::ByValue),
    ] {
        let tiled = Image::render_tiles(&ctx, &scene, width, height, tasks, passing)
            .await
            .unwrap();
        assert_eq!(tiled, single, "{tasks} tiles, {}", passing.name());
    }
    let stats = ferry::shared::stats();
    assert_eq!(stats.encodes, 2, "one encoding per shared scene: {stats:?}");
}

#[test]
fn tiles_cover_the_image_once() {
    for (width, height, tasks) in [(640, 480, 1024), (640, 480, 64), (48, 32, 7), (10, 3, 12)] {
        let tiles = Tile::split(width, height, tasks);
        assert_eq!(tiles.len(), tasks as usize, "{width}x{height}, {tasks}");
        let mut hits = vec![0u8; (width * height) as usize];
        for tile in &tiles {
            for y in tile.y..tile.y + tile.height {
                for x in tile.x..tile.x + tile.width {
                    hits[(y * width + x) as usize] += 1;
                }
            }
        }
        assert!(hits.iter().all(|&h| h == 1), "{width}x{height}, {tasks}");
    }
}

#[test]
fn the_example_scene_is_about_88_kib() {
    let bytes = ferry::Codec::Binary
        .encode(&Scene::example())
        .unwrap()
        .len();
    assert!((84 << 10..92 << 10).contains(&bytes), "{bytes} bytes");
    assert_eq!(
        Scene::example(),
        Scene::example(),
        "generated deterministically"
    );
}
