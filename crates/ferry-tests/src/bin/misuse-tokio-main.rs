//! The first natural mistake: a plain `#[tokio::main]` that builds its context from the
//! environment instead of `#[ferry::main]`. Its workers would run this `main` again; ferry must
//! refuse with the fix rather than multiply processes.

use ferry::Context;

#[tokio::main]
async fn main() -> Result<(), ferry::Error> {
    let ctx = Context::from_env()?;
    let sum = ctx.call(ferry_tests::Add { a: 2, b: 3 }).await?;
    println!("{sum}");
    Ok(())
}
