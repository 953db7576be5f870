#[ferry::function(name = "has space")]
fn work(n: u32) -> u32 {
    n
}

fn main() {}
