#[ferry::function(inline = true)]
fn short(n: u32) -> u32 {
    n
}

fn main() {}
