//! `invocation = "..."` names the invocation type when the default name is taken.

use std::ops::Add;

#[ferry::function(invocation = "AddTask")]
fn add(a: i64, b: i64) -> i64 {
    a.add(b)
}

fn main() {
    let task = AddTask { a: 1, b: 2 };
    assert_eq!(<AddTask as ferry::Function>::DESCRIPTOR.name, "add");
    let _ = (task, add(1, 2));
}
