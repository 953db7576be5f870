//! A parameter may share its function's name: the generated code binds arguments under its own
//! names.

#[ferry::function]
fn count(count: u32) -> u32 {
    count + 1
}

fn main() {
    assert_eq!(count(1), 2);
    let _ = Count { count: 3 };
}
