// Known limitation: an attribute macro cannot see that its `fn` sits in an `impl` when the fn
// has no `self`, so the generated struct lands in the `impl` and rustc reports that instead.
// Pinned so that a better message shows up here as a diff.

struct Counter;

impl Counter {
    #[ferry::function]
    fn add(a: u64, b: u64) -> u64 {
        a + b
    }
}

fn main() {
    let _ = Counter::add(1, 2);
}
