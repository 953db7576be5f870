// A stage must take what the stage before returns.

#[ferry::function]
fn length(text: String) -> usize {
    text.len()
}

#[ferry::function]
fn shout(text: String) -> String {
    text.to_uppercase()
}

fn main() {
    let _ = ferry::Flow::start::<Length>().then::<Shout>();
}
