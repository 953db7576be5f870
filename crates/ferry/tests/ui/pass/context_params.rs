//! A `Context` parameter, owned or borrowed, receives the invocation context and is not a field.

use ferry::{Context, Function};

#[ferry::function]
async fn fan_out(ctx: Context, n: u32) -> ferry::Result<u32> {
    ctx.call(Leaf { n }).await
}

#[ferry::function]
async fn by_ref(n: u32, ctx: &Context) -> ferry::Result<u32> {
    ctx.call(Leaf { n }).await
}

#[ferry::function]
fn sync_with_context(ctx: ferry::Context) -> bool {
    ctx.invocation().is_some()
}

#[ferry::function]
fn leaf(n: u32) -> u32 {
    n + 1
}

fn main() {
    // Only `n` is a field: the context comes from the caller.
    let _ = FanOut { n: 1 };
    let _ = ByRef { n: 2 };
    let _ = SyncWithContext {};
    assert_eq!(FanOut::DESCRIPTOR.params.len(), 1);
    assert_eq!(ByRef::DESCRIPTOR.params[0].name, "n");
    assert!(SyncWithContext::DESCRIPTOR.params.is_empty());
}
