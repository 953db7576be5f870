#[ferry::function(inline)]
async fn already_on_the_runtime(n: u32) -> u32 {
    n
}

fn main() {}
