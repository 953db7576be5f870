//! Counts the words of a text with one `count_words` invocation per chunk.
//!
//! ```text
//! cargo run                          # on the local platform: worker processes of this binary
//! cargo run -- --backend inline      # in this process, as a monolith
//! cargo run -- --help
//! ```

use ferry::prelude::*;

use {{crate}}::{CountWords, SAMPLE, chunks, merge, top};

#[ferry::main]
async fn main(ctx: Context) -> ferry::Result<()> {
    let tasks: Vec<CountWords> = chunks(SAMPLE, 4)
        .into_iter()
        .map(|text| CountWords { text })
        .collect();
    let invocations = tasks.len();
    // The outputs come back in the order of the tasks; the first failure ends the fan-out.
    let counts = merge(ctx.map(tasks).await?);

    println!(
        "{} words, {} distinct, counted by {invocations} invocations on the {} backend",
        counts.values().sum::<u64>(),
        counts.len(),
        ctx.backend_kind()
    );
    for (word, count) in top(&counts, 5) {
        println!("{count:>4} {word}");
    }
    Ok(())
}
