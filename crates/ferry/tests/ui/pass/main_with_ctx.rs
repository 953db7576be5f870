//! `#[ferry::main]` with a `Context`: calls a function through the configured backend.

use ferry::prelude::*;

#[ferry::function]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[ferry::function]
fn fails(n: u32) -> Result<u32, String> {
    Err(format!("no {n}"))
}

#[ferry::main]
async fn main(ctx: Context) -> ferry::Result<()> {
    assert_eq!(ctx.call(Add { a: 2, b: 3 }).await?, 5);
    let error = ctx.call(Fails { n: 7 }).await.unwrap_err();
    assert!(matches!(error.kind(), ErrorKind::User { .. }), "{error}");
    Ok(())
}
