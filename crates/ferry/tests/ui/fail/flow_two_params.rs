// Only functions of one parameter are stages: a flow passes one value along.

#[ferry::function]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

fn main() {
    let _ = ferry::Flow::start::<Add>();
}
