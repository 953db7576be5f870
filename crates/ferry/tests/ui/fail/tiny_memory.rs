#[ferry::function(memory_mb = 1)]
fn work(n: u32) -> u32 {
    n
}

fn main() {}
