//! A bounding volume hierarchy over a scene's spheres and triangles, so a ray tests a few dozen
//! primitives instead of all of them. Built from the scene where it renders (a millisecond),
//! not sent: the scene on the wire stays the scene.

use crate::math::{Ray, Vec3};
use crate::scene::Scene;

/// Rays start this far off a surface, so they do not hit it again.
pub const EPSILON: f64 = 1e-6;

#[derive(Debug, Clone, Copy)]
enum Primitive {
    Sphere(u32),
    Triangle(u32),
}

#[derive(Debug, Clone, Copy)]
struct Node {
    min: Vec3,
    max: Vec3,
    /// Leaf: first primitive in `order`; inner node: index of the left child (right is next).
    first: u32,
    /// Primitives of a leaf; 0 for an inner node.
    count: u32,
}

/// The hierarchy of one scene.
#[derive(Debug)]
pub struct Bvh {
    nodes: Vec<Node>,
    order: Vec<Primitive>,
}

/// Where a ray meets a surface.
#[derive(Debug, Clone, Copy)]
pub struct Hit {
    pub t: f64,
    pub point: Vec3,
    /// Unit normal facing the ray's origin.
    pub normal: Vec3,
    pub material: u32,
}

const LEAF_SIZE: usize = 4;

impl Bvh {
    pub fn build(scene: &Scene) -> Self {
        let mut items: Vec<(Primitive, Vec3, Vec3)> = Vec::new();
        for (i, s) in scene.spheres.iter().enumerate() {
            let r = Vec3::splat(s.radius);
            items.push((Primitive::Sphere(i as u32), s.center - r, s.center + r));
        }
        for (i, t) in scene.triangles.iter().enumerate() {
            items.push((
                Primitive::Triangle(i as u32),
                t.a.min(t.b).min(t.c),
                t.a.max(t.b).max(t.c),
            ));
        }
        let mut bvh = Self {
            nodes: Vec::with_capacity(items.len() / 2 + 1),
            order: Vec::with_capacity(items.len()),
        };
        if !items.is_empty() {
            bvh.nodes.push(Node {
                min: Vec3::ZERO,
                max: Vec3::ZERO,
                first: 0,
                count: 0,
            });
            bvh.split(0, &mut items);
        }
        bvh
    }

    /// Fills node `index` with `items`: a leaf when few, else two children split at the median
    /// centroid along the widest axis.
    fn split(&mut self, index: usize, items: &mut [(Primitive, Vec3, Vec3)]) {
        let (min, max) = items.iter().fold(
            (Vec3::splat(f64::INFINITY), Vec3::splat(f64::NEG_INFINITY)),
            |(lo, hi), (_, a, b)| (lo.min(*a), hi.max(*b)),
        );
        self.nodes[index].min = min;
        self.nodes[index].max = max;
        if items.len() <= LEAF_SIZE {
            self.nodes[index].first = self.order.len() as u32;
            self.nodes[index].count = items.len() as u32;
            self.order.extend(items.iter().map(|(p, _, _)| *p));
            return;
        }
        let extent = max - min;
        let axis = if extent.x >= extent.y && extent.x >= extent.z {
            0
        } else if extent.y >= extent.z {
            1
        } else {
            2
        };
        let centroid = |item: &(Primitive, Vec3, Vec3)| item.1.axis(axis) + item.2.axis(axis);
        items.sort_by(|a, b| centroid(a).total_cmp(&centroid(b)));
        let (left, right) = items.split_at_mut(items.len() / 2);
        let left_index = self.nodes.len();
        let blank = Node {
            min: Vec3::ZERO,
            max: Vec3::ZERO,
            first: 0,
            count: 0,
        };
        self.nodes.push(blank);
        self.nodes.push(blank);
        self.nodes[index].first = left_index as u32;
        self.split(left_index, left);
        self.split(left_index + 1, right);
    }

    /// The nearest surface the ray meets before `t_max` (planes included).
    pub fn intersect(&self, scene: &Scene, ray: &Ray, t_max: f64) -> Option<Hit> {
        let mut best: Option<(f64, Primitive)> = None;
        let mut nearest = t_max;
        self.walk(ray, |primitive| {
            if let Some(t) = hit_primitive(scene, primitive, ray, nearest) {
                nearest = t;
                best = Some((t, primitive));
            }
            false
        });
        let mut hit = best.map(|(t, primitive)| {
            let point = ray.at(t);
            let (normal, material) = match primitive {
                Primitive::Sphere(i) => {
                    let s = &scene.spheres[i as usize];
                    ((point - s.center) * (1.0 / s.radius), s.material)
                }
                Primitive::Triangle(i) => {
                    let tri = &scene.triangles[i as usize];
                    (
                        (tri.b - tri.a).cross(tri.c - tri.a).normalized(),
                        tri.material,
                    )
                }
            };
            Hit {
                t,
                point,
                normal,
                material,
            }
        });
        for plane in &scene.planes {
            let denominator = plane.normal.dot(ray.direction);
            if denominator.abs() < 1e-12 {
                continue;
            }
            let t = (plane.point - ray.origin).dot(plane.normal) / denominator;
            if t > EPSILON && t < nearest {
                nearest = t;
                hit = Some(Hit {
                    t,
                    point: ray.at(t),
                    normal: plane.normal,
                    material: plane.material,
                });
            }
        }
        hit.map(|mut hit| {
            if hit.normal.dot(ray.direction) > 0.0 {
                hit.normal = -hit.normal;
            }
            hit
        })
    }

    /// Whether anything lies on the ray before `t_max` (a shadow test).
    pub fn occluded(&self, scene: &Scene, ray: &Ray, t_max: f64) -> bool {
        let blocked_by_plane = scene.planes.iter().any(|plane| {
            let denominator = plane.normal.dot(ray.direction);
            denominator.abs() > 1e-12 && {
                let t = (plane.point - ray.origin).dot(plane.normal) / denominator;
                t > EPSILON && t < t_max
            }
        });
        blocked_by_plane
            || self.walk(ray, |primitive| {
                hit_primitive(scene, primitive, ray, t_max).is_some()
            })
    }

    /// Visits the primitives of every leaf whose box the ray enters; stops when `visit` says so.
    fn walk(&self, ray: &Ray, mut visit: impl FnMut(Primitive) -> bool) -> bool {
        if self.nodes.is_empty() {
            return false;
        }
        let inverse = Vec3::new(
            1.0 / ray.direction.x,
            1.0 / ray.direction.y,
            1.0 / ray.direction.z,
        );
        let mut stack = [0u32; 64];
        let mut depth = 1;
        while depth > 0 {
            depth -= 1;
            let node = &self.nodes[stack[depth] as usize];
            if !enters(ray, inverse, node.min, node.max) {
                continue;
            }
            if node.count > 0 {
                let leaf = &self.order[node.first as usize..(node.first + node.count) as usize];
                for primitive in leaf {
                    if visit(*primitive) {
                        return true;
                    }
                }
            } else {
                stack[depth] = node.first;
                stack[depth + 1] = node.first + 1;
                depth += 2;
            }
        }
        false
    }
}

/// The slab test: whether the ray passes through the box in front of its origin.
fn enters(ray: &Ray, inverse: Vec3, min: Vec3, max: Vec3) -> bool {
    let mut near = f64::NEG_INFINITY;
    let mut far = f64::INFINITY;
    for axis in 0..3 {
        let origin = ray.origin.axis(axis);
        let inv = inverse.axis(axis);
        let a = (min.axis(axis) - origin) * inv;
        let b = (max.axis(axis) - origin) * inv;
        near = near.max(a.min(b));
        far = far.min(a.max(b));
    }
    near <= far && far > 0.0
}

fn hit_primitive(scene: &Scene, primitive: Primitive, ray: &Ray, t_max: f64) -> Option<f64> {
    match primitive {
        Primitive::Sphere(i) => {
            let s = &scene.spheres[i as usize];
            let oc = ray.origin - s.center;
            let b = oc.dot(ray.direction);
            let c = oc.dot(oc) - s.radius * s.radius;
            let discriminant = b * b - c;
            if discriminant < 0.0 {
                return None;
            }
            let root = discriminant.sqrt();
            [-b - root, -b + root]
                .into_iter()
                .find(|t| *t > EPSILON && *t < t_max)
        }
        Primitive::Triangle(i) => {
            // Möller–Trumbore.
            let tri = &scene.triangles[i as usize];
            let edge1 = tri.b - tri.a;
            let edge2 = tri.c - tri.a;
            let p = ray.direction.cross(edge2);
            let determinant = edge1.dot(p);
            if determinant.abs() < 1e-12 {
                return None;
            }
            let inverse = 1.0 / determinant;
            let s = ray.origin - tri.a;
            let u = s.dot(p) * inverse;
            if !(0.0..=1.0).contains(&u) {
                return None;
            }
            let q = s.cross(edge1);
            let v = ray.direction.dot(q) * inverse;
            if v < 0.0 || u + v > 1.0 {
                return None;
            }
            let t = edge2.dot(q) * inverse;
            (t > EPSILON && t < t_max).then_some(t)
        }
    }
}
