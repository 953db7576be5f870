#[ferry::function(memory = 512)]
fn work(n: u32) -> u32 {
    n
}

fn main() {}
