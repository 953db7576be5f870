//! What a scene holds, and the generated scene of the example: small spheres of many colours on
//! a checkered floor, three faceted icosahedral meshes (a mirror, a glossy one, a matte one), a
//! few large spheres and two lights. About 88 KiB in the binary codec, like Cppless's scene.

use serde::{Deserialize, Serialize};

use crate::math::Vec3;

/// Everything a tile needs to render.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scene {
    pub camera: Camera,
    pub background: Vec3,
    pub ambient: Vec3,
    pub materials: Vec<Material>,
    pub spheres: Vec<Sphere>,
    pub planes: Vec<Plane>,
    pub triangles: Vec<Triangle>,
    pub lights: Vec<Light>,
    /// Bounces a reflected ray may take.
    pub max_depth: u32,
    /// Samples per pixel along each axis (2 = four samples, a box filter).
    pub samples_per_axis: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Camera {
    pub eye: Vec3,
    pub target: Vec3,
    pub up: Vec3,
    /// Vertical field of view.
    pub fov_degrees: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Material {
    pub color: Vec3,
    /// A second colour in a unit checkerboard (floors).
    pub checker: Option<Vec3>,
    pub diffuse: f64,
    pub specular: f64,
    pub shininess: f64,
    /// Share of the colour that comes from the mirrored ray.
    pub reflectivity: f64,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Sphere {
    pub center: Vec3,
    pub radius: f64,
    pub material: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Plane {
    pub point: Vec3,
    pub normal: Vec3,
    pub material: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Triangle {
    pub a: Vec3,
    pub b: Vec3,
    pub c: Vec3,
    pub material: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Light {
    pub position: Vec3,
    pub color: Vec3,
}

/// A small deterministic generator (SplitMix64), so every process builds the same scene.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in [0, 1).
    fn unit(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn range(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.unit()
    }
}

impl Scene {
    /// The example's scene: `small_spheres` random spheres on the floor (the knob for its size;
    /// [`Scene::DEFAULT_SPHERES`] makes it about 88 KiB) and three meshes of 320 triangles.
    pub fn generate(small_spheres: usize, seed: u64) -> Self {
        let mut rng = Rng(seed);
        let mut materials = vec![
            // 0: the floor.
            Material {
                color: Vec3::new(0.85, 0.85, 0.8),
                checker: Some(Vec3::new(0.25, 0.3, 0.35)),
                diffuse: 0.9,
                specular: 0.1,
                shininess: 10.0,
                reflectivity: 0.15,
            },
            // 1: mirror.
            Material {
                color: Vec3::new(0.9, 0.9, 0.95),
                checker: None,
                diffuse: 0.1,
                specular: 0.9,
                shininess: 200.0,
                reflectivity: 0.85,
            },
            // 2: glossy red.
            Material {
                color: Vec3::new(0.8, 0.15, 0.1),
                checker: None,
                diffuse: 0.8,
                specular: 0.6,
                shininess: 60.0,
                reflectivity: 0.2,
            },
            // 3: matte blue.
            Material {
                color: Vec3::new(0.15, 0.3, 0.8),
                checker: None,
                diffuse: 0.9,
                specular: 0.05,
                shininess: 5.0,
                reflectivity: 0.0,
            },
            // 4: gold.
            Material {
                color: Vec3::new(0.95, 0.75, 0.3),
                checker: None,
                diffuse: 0.6,
                specular: 0.8,
                shininess: 120.0,
                reflectivity: 0.45,
            },
        ];
        let palette_start = materials.len() as u32;
        for _ in 0..16 {
            let reflective = rng.unit() < 0.25;
            materials.push(Material {
                color: Vec3::new(
                    rng.range(0.1, 1.0),
                    rng.range(0.1, 1.0),
                    rng.range(0.1, 1.0),
                ),
                checker: None,
                diffuse: 0.85,
                specular: rng.range(0.1, 0.7),
                shininess: rng.range(8.0, 80.0),
                reflectivity: if reflective { 0.4 } else { 0.0 },
            });
        }
        let palette = materials.len() as u32 - palette_start;

        let mut triangles = Vec::new();
        icosphere(&mut triangles, Vec3::new(0.0, 1.6, 0.0), 1.6, 2, 1);
        icosphere(&mut triangles, Vec3::new(-3.6, 1.1, 1.2), 1.1, 2, 2);
        icosphere(&mut triangles, Vec3::new(3.4, 1.2, 1.0), 1.2, 2, 3);

        let mut spheres = vec![
            Sphere {
                center: Vec3::new(-1.4, 0.7, 3.4),
                radius: 0.7,
                material: 4,
            },
            Sphere {
                center: Vec3::new(1.8, 0.55, 3.6),
                radius: 0.55,
                material: 1,
            },
        ];
        // Small spheres scattered over the floor, clear of the big objects.
        let blockers: Vec<(Vec3, f64)> = [
            (Vec3::new(0.0, 0.0, 0.0), 1.6),
            (Vec3::new(-3.6, 0.0, 1.2), 1.1),
            (Vec3::new(3.4, 0.0, 1.0), 1.2),
            (Vec3::new(-1.4, 0.0, 3.4), 0.7),
            (Vec3::new(1.8, 0.0, 3.6), 0.55),
        ]
        .to_vec();
        let mut placed = 0;
        while placed < small_spheres {
            let radius = rng.range(0.08, 0.22);
            let center = Vec3::new(rng.range(-9.0, 9.0), radius, rng.range(-8.0, 6.0));
            let flat = |v: Vec3| Vec3::new(v.x, 0.0, v.z);
            if blockers
                .iter()
                .any(|(c, r)| (flat(center) - *c).length() < r + radius + 0.1)
            {
                continue;
            }
            spheres.push(Sphere {
                center,
                radius,
                material: palette_start + (rng.next() % u64::from(palette)) as u32,
            });
            placed += 1;
        }

        Self {
            camera: Camera {
                eye: Vec3::new(0.0, 3.2, 9.5),
                target: Vec3::new(0.0, 0.9, 0.0),
                up: Vec3::new(0.0, 1.0, 0.0),
                fov_degrees: 45.0,
            },
            background: Vec3::new(0.55, 0.7, 0.9),
            ambient: Vec3::splat(0.12),
            materials,
            spheres,
            planes: vec![Plane {
                point: Vec3::ZERO,
                normal: Vec3::new(0.0, 1.0, 0.0),
                material: 0,
            }],
            triangles,
            lights: vec![
                Light {
                    position: Vec3::new(-6.0, 9.0, 7.0),
                    color: Vec3::splat(0.75),
                },
                Light {
                    position: Vec3::new(7.0, 6.0, 3.0),
                    color: Vec3::new(0.45, 0.42, 0.38),
                },
            ],
            max_depth: 4,
            samples_per_axis: 2,
        }
    }

    /// Small spheres that bring the scene to about 88 KiB in the binary codec.
    pub const DEFAULT_SPHERES: usize = 440;

    /// The example's scene, about 88 KiB encoded.
    pub fn example() -> Self {
        Self::generate(Self::DEFAULT_SPHERES, 2024)
    }
}

/// An icosahedron subdivided `depth` times and pushed out onto a sphere: 20·4^depth facets.
fn icosphere(out: &mut Vec<Triangle>, center: Vec3, radius: f64, depth: u32, material: u32) {
    let t = (1.0 + 5f64.sqrt()) / 2.0;
    let v = [
        Vec3::new(-1.0, t, 0.0),
        Vec3::new(1.0, t, 0.0),
        Vec3::new(-1.0, -t, 0.0),
        Vec3::new(1.0, -t, 0.0),
        Vec3::new(0.0, -1.0, t),
        Vec3::new(0.0, 1.0, t),
        Vec3::new(0.0, -1.0, -t),
        Vec3::new(0.0, 1.0, -t),
        Vec3::new(t, 0.0, -1.0),
        Vec3::new(t, 0.0, 1.0),
        Vec3::new(-t, 0.0, -1.0),
        Vec3::new(-t, 0.0, 1.0),
    ];
    const FACES: [[usize; 3]; 20] = [
        [0, 11, 5],
        [0, 5, 1],
        [0, 1, 7],
        [0, 7, 10],
        [0, 10, 11],
        [1, 5, 9],
        [5, 11, 4],
        [11, 10, 2],
        [10, 7, 6],
        [7, 1, 8],
        [3, 9, 4],
        [3, 4, 2],
        [3, 2, 6],
        [3, 6, 8],
        [3, 8, 9],
        [4, 9, 5],
        [2, 4, 11],
        [6, 2, 10],
        [8, 6, 7],
        [9, 8, 1],
    ];
    let mut faces: Vec<[Vec3; 3]> = FACES
        .iter()
        .map(|f| {
            [
                v[f[0]].normalized(),
                v[f[1]].normalized(),
                v[f[2]].normalized(),
            ]
        })
        .collect();
    for _ in 0..depth {
        let mut finer = Vec::with_capacity(faces.len() * 4);
        for [a, b, c] in faces {
            let ab = ((a + b) * 0.5).normalized();
            let bc = ((b + c) * 0.5).normalized();
            let ca = ((c + a) * 0.5).normalized();
            finer.extend([[a, ab, ca], [b, bc, ab], [c, ca, bc], [ab, bc, ca]]);
        }
        faces = finer;
    }
    out.extend(faces.into_iter().map(|[a, b, c]| Triangle {
        a: center + a * radius,
        b: center + b * radius,
        c: center + c * radius,
        material,
    }));
}
