//! The flow as tasks of the test process: `Context::inline()` is the monolith, with no worker
//! processes and nothing encoded.

use ferry::prelude::*;

use {{crate}}::pipeline;

#[ferry::test]
async fn the_flow_runs_inline() -> ferry::Result<()> {
    let ctx = Context::inline();
    let shouted = pipeline().run(&ctx, "ferries cross rivers".into()).await?;
    assert_eq!(shouted.as_deref(), Some("FERRIES!"));
    assert_eq!(pipeline().run(&ctx, String::new()).await?, None);
    Ok(())
}
