struct Point {
    x: f64,
    y: f64,
}

#[ferry::function]
fn origin(scale: f64) -> Point {
    Point {
        x: 0.0 * scale,
        y: 0.0,
    }
}

fn main() {
    let p = origin(1.0);
    let _ = (p.x, p.y);
}
