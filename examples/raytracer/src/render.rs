//! Shading (Blinn–Phong with shadows and mirror reflections) and rendering a tile.

use serde::{Deserialize, Serialize};

use crate::bvh::{Bvh, EPSILON};
use crate::math::{Ray, Vec3};
use crate::scene::Scene;

/// A rectangle of the image: pixels `x..x + width`, `y..y + height` of an
/// `image_width` × `image_height` image.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tile {
    pub x: u32,
    pub y: u32,
    pub width: u32,
    pub height: u32,
    pub image_width: u32,
    pub image_height: u32,
}

impl Tile {
    /// The whole image as one tile.
    pub fn whole(width: u32, height: u32) -> Self {
        Self {
            x: 0,
            y: 0,
            width,
            height,
            image_width: width,
            image_height: height,
        }
    }

    /// The image cut into a `columns` × `rows` grid (edge tiles take the remainder).
    pub fn grid(width: u32, height: u32, columns: u32, rows: u32) -> Vec<Self> {
        let columns = columns.clamp(1, width.max(1));
        let rows = rows.clamp(1, height.max(1));
        let mut tiles = Vec::with_capacity((columns * rows) as usize);
        for row in 0..rows {
            let y0 = row * height / rows;
            let y1 = (row + 1) * height / rows;
            for column in 0..columns {
                let x0 = column * width / columns;
                let x1 = (column + 1) * width / columns;
                tiles.push(Self {
                    x: x0,
                    y: y0,
                    width: x1 - x0,
                    height: y1 - y0,
                    image_width: width,
                    image_height: height,
                });
            }
        }
        tiles
    }

    /// `tasks` tiles in a grid as square as the count allows (`tasks` = columns × rows).
    pub fn split(width: u32, height: u32, tasks: u32) -> Vec<Self> {
        let tasks = tasks.max(1);
        let mut columns = (f64::from(tasks).sqrt() as u32).max(1);
        while tasks % columns != 0 {
            columns -= 1;
        }
        let rows = tasks / columns;
        // The wider side gets the larger count.
        let (columns, rows) = if width >= height {
            (columns.max(rows), columns.min(rows))
        } else {
            (columns.min(rows), columns.max(rows))
        };
        Self::grid(width, height, columns, rows)
    }
}

/// A rendered tile: RGB, 8 bits a channel, row by row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TileImage {
    pub tile: Tile,
    pub rgb: Vec<u8>,
}

/// Renders one tile of the scene.
pub fn render_tile(scene: &Scene, bvh: &Bvh, tile: Tile) -> TileImage {
    let camera = CameraBasis::new(scene, tile.image_width, tile.image_height);
    let n = scene.samples_per_axis.max(1);
    let mut rgb = Vec::with_capacity((tile.width * tile.height * 3) as usize);
    for py in tile.y..tile.y + tile.height {
        for px in tile.x..tile.x + tile.width {
            let mut sum = Vec3::ZERO;
            for sy in 0..n {
                for sx in 0..n {
                    let u = f64::from(px) + (f64::from(sx) + 0.5) / f64::from(n);
                    let v = f64::from(py) + (f64::from(sy) + 0.5) / f64::from(n);
                    sum = sum + trace(scene, bvh, &camera.ray(u, v), 0);
                }
            }
            let color = sum * (1.0 / f64::from(n * n));
            rgb.extend([to_byte(color.x), to_byte(color.y), to_byte(color.z)]);
        }
    }
    TileImage { tile, rgb }
}

/// Gamma 2.2, clamped.
fn to_byte(linear: f64) -> u8 {
    (linear.clamp(0.0, 1.0).powf(1.0 / 2.2) * 255.0 + 0.5) as u8
}

struct CameraBasis {
    eye: Vec3,
    forward: Vec3,
    right: Vec3,
    up: Vec3,
    half_height: f64,
    half_width: f64,
    width: f64,
    height: f64,
}

impl CameraBasis {
    fn new(scene: &Scene, width: u32, height: u32) -> Self {
        let camera = &scene.camera;
        let forward = (camera.target - camera.eye).normalized();
        let right = forward.cross(camera.up).normalized();
        let up = right.cross(forward);
        let half_height = (camera.fov_degrees.to_radians() / 2.0).tan();
        Self {
            eye: camera.eye,
            forward,
            right,
            up,
            half_height,
            half_width: half_height * f64::from(width) / f64::from(height),
            width: f64::from(width),
            height: f64::from(height),
        }
    }

    /// The ray through image point (`u`, `v`) in pixels, from the top left.
    fn ray(&self, u: f64, v: f64) -> Ray {
        let x = (2.0 * u / self.width - 1.0) * self.half_width;
        let y = (1.0 - 2.0 * v / self.height) * self.half_height;
        Ray {
            origin: self.eye,
            direction: (self.forward + self.right * x + self.up * y).normalized(),
        }
    }
}

fn trace(scene: &Scene, bvh: &Bvh, ray: &Ray, depth: u32) -> Vec3 {
    let Some(hit) = bvh.intersect(scene, ray, f64::INFINITY) else {
        return scene.background;
    };
    let material = &scene.materials[hit.material as usize];
    let base = match material.checker {
        Some(other) if (hit.point.x.floor() + hit.point.z.floor()) as i64 % 2 != 0 => other,
        _ => material.color,
    };
    let origin = hit.point + hit.normal * (EPSILON * 100.0);
    let mut color = scene.ambient.times(base);
    for light in &scene.lights {
        let to_light = light.position - hit.point;
        let distance = to_light.length();
        let direction = to_light * (1.0 / distance);
        let lambert = hit.normal.dot(direction);
        if lambert <= 0.0 {
            continue;
        }
        let shadow = Ray { origin, direction };
        if bvh.occluded(scene, &shadow, distance) {
            continue;
        }
        let halfway = (direction - ray.direction).normalized();
        let specular = hit.normal.dot(halfway).max(0.0).powf(material.shininess);
        color = color
            + base.times(light.color) * (material.diffuse * lambert)
            + light.color * (material.specular * specular);
    }
    if material.reflectivity > 0.0 && depth < scene.max_depth {
        let mirrored = Ray {
            origin,
            direction: ray.direction.reflect(hit.normal).normalized(),
        };
        let reflected = trace(scene, bvh, &mirrored, depth + 1);
        color = color * (1.0 - material.reflectivity) + reflected * material.reflectivity;
    }
    color
}
