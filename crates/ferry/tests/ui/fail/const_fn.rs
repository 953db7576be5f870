#[ferry::function]
const fn double(n: u32) -> u32 {
    n * 2
}

fn main() {}
