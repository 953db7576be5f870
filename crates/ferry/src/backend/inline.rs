//! The `inline` backend: each invocation is a task of the calling process, with the function's
//! timeout and panics caught. Arguments are moved, not encoded: this is the monolith.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use bytes::Bytes;
use futures::future::BoxFuture;

use super::{Placement, with_timeout};
use crate::context::Invocation;
use crate::wire::{Envelope, InvocationId};
use crate::{Context, Function, Registry, Result};

static INVOCATIONS: AtomicU64 = AtomicU64::new(0);

pub(crate) fn invocations() -> u64 {
    INVOCATIONS.load(Ordering::Relaxed)
}

pub(crate) async fn call<F: Function>(
    ctx: &Context,
    function: F,
    id: InvocationId,
) -> Result<F::Output> {
    INVOCATIONS.fetch_add(1, Ordering::Relaxed);
    let descriptor = F::DESCRIPTOR;
    // A nested call cannot outlive the invocation that waits for it.
    let limit = ctx.remaining().map_or(descriptor.config.timeout, |left| {
        left.min(descriptor.config.timeout)
    });
    let child = ctx.for_invocation(Invocation {
        function: descriptor.id.to_owned(),
        id,
        deadline: Instant::now() + limit,
        metadata: Default::default(),
    });
    with_timeout(
        function.run(child),
        limit,
        descriptor.is_async,
        Placement::Spawned,
    )
    .await
    .0
}

pub(crate) fn invoke(
    ctx: &Context,
    envelope: Envelope,
    payload: Bytes,
) -> BoxFuture<'static, Result<Bytes>> {
    INVOCATIONS.fetch_add(1, Ordering::Relaxed);
    let ctx = ctx.clone();
    Box::pin(async move {
        let registration = Registry::global()?.lookup(&envelope.function)?;
        let (result, _) =
            super::execute(&ctx, registration, &envelope, payload, Placement::Spawned).await;
        crate::flow::forward(&ctx, &envelope, result)
            .await
            .map(Bytes::from)
    })
}
