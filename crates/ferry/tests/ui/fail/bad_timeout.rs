#[ferry::function(timeout = "3 weeks")]
fn work(n: u32) -> u32 {
    n
}

fn main() {}
