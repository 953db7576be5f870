#[ferry::function]
fn total(items: impl IntoIterator<Item = u64>) -> u64 {
    items.into_iter().sum()
}

fn main() {}
