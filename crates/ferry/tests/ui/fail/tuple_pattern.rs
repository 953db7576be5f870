#[ferry::function]
fn add((a, b): (u32, u32)) -> u32 {
    a + b
}

fn main() {}
