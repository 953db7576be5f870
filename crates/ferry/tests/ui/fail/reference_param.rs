#[ferry::function]
fn shout(text: &str) -> String {
    text.to_uppercase()
}

fn main() {}
