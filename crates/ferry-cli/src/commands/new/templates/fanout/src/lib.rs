//! Word counts, fanned out: `count_words` counts one chunk of a text; the program sends one
//! invocation per chunk and adds the counts up.
//!
//! `#[ferry::function]` leaves `count_words` an ordinary function (the unit test below calls it
//! directly) and adds `CountWords { text }`, its invocation type: the value a `Context` sends to
//! run the function in this process, in a worker process, or on a serverless platform.

use std::collections::BTreeMap;

/// A short text to count.
pub const SAMPLE: &str = "\
The ferry leaves the north bank at dawn, when the river is grey and still.
It carries the baker's cart, two goats, a doctor and the morning post.
On the south bank the market opens, and the ferry waits for the noon bell.
At noon it crosses back with bread, letters and the news of the town.
In the afternoon the wind comes up the river and the crossing is slow.
The ferryman counts the passengers twice, once on each bank of the river.
At dusk the ferry makes its last crossing, and the lamps are lit on both banks.
At night the river runs on alone, and the ferry sleeps at the north bank.
";

/// Counts the words of `text`, lowercased. Anything but a letter, a digit or `'` separates
/// words.
///
/// Parameters and outputs travel as serde types: std's maps, vectors, strings and numbers need
/// no derive.
#[ferry::function]
pub fn count_words(text: String) -> BTreeMap<String, u64> {
    let mut counts = BTreeMap::new();
    let words = text
        .split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .filter(|word| !word.is_empty());
    for word in words {
        *counts.entry(word.to_lowercase()).or_default() += 1;
    }
    counts
}

/// Splits `text` into at most `pieces` chunks of whole lines.
pub fn chunks(text: &str, pieces: usize) -> Vec<String> {
    let lines: Vec<&str> = text.lines().collect();
    let per_chunk = lines.len().div_ceil(pieces.max(1)).max(1);
    lines
        .chunks(per_chunk)
        .map(|chunk| chunk.join("\n"))
        .collect()
}

/// Adds up the counts of every chunk.
pub fn merge(parts: impl IntoIterator<Item = BTreeMap<String, u64>>) -> BTreeMap<String, u64> {
    let mut total = BTreeMap::new();
    for (word, count) in parts.into_iter().flatten() {
        *total.entry(word).or_default() += count;
    }
    total
}

/// The `n` most frequent words, most frequent first, ties in alphabetical order.
pub fn top(counts: &BTreeMap<String, u64>, n: usize) -> Vec<(&str, u64)> {
    let mut words: Vec<(&str, u64)> = counts.iter().map(|(w, &c)| (w.as_str(), c)).collect();
    words.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
    words.truncate(n);
    words
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_words_whatever_their_case() {
        let counts = count_words("The cat saw the other cat.".to_owned());
        assert_eq!(counts["the"], 2);
        assert_eq!(counts["cat"], 2);
        assert_eq!(counts.len(), 4);
    }

    #[test]
    fn chunks_keep_every_line() {
        let parts = chunks(SAMPLE, 3);
        assert_eq!(parts.len(), 3);
        assert_eq!(
            merge(parts.into_iter().map(count_words)),
            count_words(SAMPLE.to_owned())
        );
    }
}
