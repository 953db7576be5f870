#[ferry::function]
struct Job {
    n: u32,
}

fn main() {
    let _ = Job { n: 1 }.n;
}
