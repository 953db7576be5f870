#[ferry::function(timeout = "10s", concurrency = 4, timeout = "20s")]
fn work(n: u32) -> u32 {
    n
}

fn main() {}
