struct Counter {
    start: u64,
}

impl Counter {
    #[ferry::function]
    fn add(&self, n: u64) -> u64 {
        self.start + n
    }
}

fn main() {
    let _ = Counter { start: 1 }.add(2);
}
