//! The flow on the local platform: worker processes of this crate's binary, each stage's worker
//! invoking the next stage, as on a serverless platform.

use ferry::FlowMode;
use ferry::prelude::*;

use {{crate}}::pipeline;

#[ferry::test]
async fn chained_and_orchestrated_runs_agree() -> ferry::Result<()> {
    // A test is not the program: name the binary whose workers serve the functions.
    let exe = env!("CARGO_BIN_EXE_{{name}}");
    let ctx = Context::local(LocalConfig::default().worker_exe(exe))?;
    let text = "a pipeline of three functions";
    let chained = pipeline().run(&ctx, text.into()).await?;
    assert_eq!(chained.as_deref(), Some("FUNCTIONS!"));
    // Orchestrated, the caller invokes each stage in turn and sees every output.
    let orchestrated = pipeline().mode(FlowMode::Orchestrated);
    assert_eq!(orchestrated.run(&ctx, text.into()).await?, chained);
    assert_eq!(pipeline().run(&ctx, String::new()).await?, None);
    ctx.shutdown().await;
    Ok(())
}
