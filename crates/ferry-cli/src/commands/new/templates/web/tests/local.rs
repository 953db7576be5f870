//! The functions on the local platform: worker processes of this crate's binary, each invocation
//! encoded and sent as a serverless platform would send it.

use ferry::prelude::*;

use {{crate}}::{Greet, Square};

#[ferry::test]
async fn functions_run_on_workers() -> ferry::Result<()> {
    // A test is not the program: name the binary whose workers serve the functions.
    let exe = env!("CARGO_BIN_EXE_{{name}}");
    let ctx = Context::local(LocalConfig::default().worker_exe(exe))?;
    let greeting = ctx
        .call(Greet {
            name: "ferry".into(),
        })
        .await?;
    assert_eq!(greeting, "hello, ferry!");
    let squares = ctx.map((1..=4).map(|n| Square { n })).await?;
    assert_eq!(squares, [1, 4, 9, 16]);
    ctx.shutdown().await;
    Ok(())
}
