//! The functions as tasks of the test process: `Context::inline()` is the monolith, with no
//! worker processes and nothing encoded.

use ferry::prelude::*;

use {{crate}}::{Greet, Square};

#[ferry::test]
async fn functions_run_inline() -> ferry::Result<()> {
    let ctx = Context::inline();
    let greeting = ctx
        .call(Greet {
            name: "ferry".into(),
        })
        .await?;
    assert_eq!(greeting, "hello, ferry!");
    let squares = ctx.map((1..=4).map(|n| Square { n })).await?;
    assert_eq!(squares, [1, 4, 9, 16]);
    Ok(())
}
