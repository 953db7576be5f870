//! The functions on the local platform: worker processes of this crate's binary, each invocation
//! encoded and sent as a serverless platform would send it.

use ferry::prelude::*;

use {{crate}}::{CountWords, SAMPLE, chunks, count_words, merge};

#[ferry::test]
async fn workers_count_what_one_call_counts() -> ferry::Result<()> {
    // A test is not the program: name the binary whose workers serve the functions.
    let exe = env!("CARGO_BIN_EXE_{{name}}");
    let ctx = Context::local(LocalConfig::default().worker_exe(exe))?;
    let tasks = chunks(SAMPLE, 4)
        .into_iter()
        .map(|text| CountWords { text });
    let counts = merge(ctx.map(tasks).await?);
    assert_eq!(counts, count_words(SAMPLE.to_owned()));

    // A single invocation, and the JSON any other caller (`ferry invoke`, a Lambda event) sends.
    let one = ctx
        .call(CountWords {
            text: "to be or not to be".into(),
        })
        .await?;
    assert_eq!(one["be"], 2);
    let json = ctx
        .invoke(
            "count_words",
            Codec::Json,
            r#"{"text": "to be or not to be"}"#,
        )
        .await?;
    assert_eq!(&json[..], br#"{"be":2,"not":1,"or":1,"to":2}"#);
    ctx.shutdown().await;
    Ok(())
}
