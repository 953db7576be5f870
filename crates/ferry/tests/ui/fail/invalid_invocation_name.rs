#[ferry::function(invocation = "not a type")]
fn spaced() -> u32 {
    1
}

fn main() {}
