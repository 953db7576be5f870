#[ferry::function(idempotent = true)]
fn repeatable(n: u32) -> u32 {
    n
}

fn main() {}
