#[ferry::function]
fn first_word<'a>(text: std::borrow::Cow<'a, str>) -> String {
    text.split(' ').next().unwrap_or_default().to_owned()
}

fn main() {}
