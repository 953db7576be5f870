use ferry::Context;

#[ferry::function]
async fn relay(a: Context, n: u32, b: &Context) -> u32 {
    let _ = (a, b);
    n
}

fn main() {}
