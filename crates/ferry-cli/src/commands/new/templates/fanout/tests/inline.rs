//! The functions as tasks of the test process: `Context::inline()` is the monolith, with no
//! worker processes and nothing encoded.

use ferry::prelude::*;

use {{crate}}::{CountWords, SAMPLE, chunks, count_words, merge};

#[ferry::test]
async fn a_fan_out_counts_what_one_call_counts() -> ferry::Result<()> {
    let ctx = Context::inline();
    let tasks = chunks(SAMPLE, 4)
        .into_iter()
        .map(|text| CountWords { text });
    let counts = merge(ctx.map(tasks).await?);
    assert_eq!(counts, count_words(SAMPLE.to_owned()));
    assert_eq!(counts["ferry"], 4);
    Ok(())
}
