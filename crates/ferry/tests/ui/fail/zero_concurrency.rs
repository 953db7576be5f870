#[ferry::function(concurrency = 0)]
fn work(n: u32) -> u32 {
    n
}

fn main() {}
