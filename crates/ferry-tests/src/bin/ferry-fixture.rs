//! Serves the fixture functions; as a host it lists them.

use ferry::Context;

#[ferry::main]
async fn main(ctx: Context) -> ferry::Result<()> {
    // Link the fixture library so its functions are registered.
    let _ = ferry_tests::hello();
    println!("backend: {}", ctx.backend_kind());
    Ok(())
}
