struct Point {
    x: f64,
    y: f64,
}

#[ferry::function]
fn norm(p: Point) -> f64 {
    (p.x * p.x + p.y * p.y).sqrt()
}

fn main() {}
