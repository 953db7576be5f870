//! A flow of three functions: `words` → `longest` → `shout`.
//!
//! Each stage is a `#[ferry::function]` with one parameter. `Flow::start::<A>().then::<B>()`
//! compiles only when `A`'s output feeds `B`'s parameter; an `Option` output feeds its inner
//! type, and a `None` ends the flow early. Run chained (the default), the worker that ran a stage
//! invokes the next one itself, and only the last output travels back to the caller.

use ferry::Flow;

/// Stage 1: the words of `text`.
#[ferry::function]
pub fn words(text: String) -> Vec<String> {
    text.split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_owned)
        .collect()
}

/// Stage 2: the longest word (the first of equals), or `None` when there is none, which ends
/// the flow.
#[ferry::function]
pub fn longest(words: Vec<String>) -> Option<String> {
    words
        .into_iter()
        .reduce(|best, word| if word.len() > best.len() { word } else { best })
}

/// Stage 3: the word, shouted.
#[ferry::function]
pub fn shout(word: String) -> String {
    format!("{}!", word.to_uppercase())
}

/// The flow from a text to its longest word, shouted.
pub fn pipeline() -> Flow<String, String> {
    Flow::start::<Words>().then::<Longest>().then::<Shout>()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_are_plain_functions() {
        let words = words("a flow of functions".to_owned());
        assert_eq!(words, ["a", "flow", "of", "functions"]);
        assert_eq!(longest(words).as_deref(), Some("functions"));
        assert_eq!(longest(Vec::new()), None);
        assert_eq!(shout("ferry".to_owned()), "FERRY!");
    }
}
