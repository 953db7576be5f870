//! A function without parameters: its invocation type is an empty struct.

use ferry::Function;

#[ferry::function]
fn answer() -> u32 {
    42
}

fn main() {
    assert_eq!(answer(), 42);
    let invocation = Answer {};
    assert!(Answer::DESCRIPTOR.params.is_empty());
    assert_eq!(format!("{invocation:?}"), "Answer { .. }");
}
