//! `#[ferry::main]` without parameters, returning nothing.

#[ferry::function]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[ferry::main]
async fn main() {
    assert_eq!(add(1, 1), 2);
    std::future::ready(()).await;
}
