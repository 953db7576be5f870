//! A `mut` binding is still a plain name: the field is `values`.

#[ferry::function]
fn sorted(mut values: Vec<i32>) -> Vec<i32> {
    values.sort_unstable();
    values
}

fn main() {
    assert_eq!(sorted(vec![3, 1, 2]), [1, 2, 3]);
    let invocation = Sorted { values: vec![2, 1] };
    assert_eq!(invocation.values.len(), 2);
}
