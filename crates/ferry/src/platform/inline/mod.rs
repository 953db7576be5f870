//! The `inline` backend: each invocation is a task of the calling process, with the function's
//! timeout and panics caught. Arguments are moved, not encoded: this is the monolith.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use bytes::Bytes;
use futures::future::BoxFuture;

use crate::context::Invocation;
use crate::execute::{Placement, with_timeout};
use crate::platform::{BackendKind, BackendStats, Transport};
use crate::wire::{Envelope, InvocationId};
use crate::{Context, Function, FunctionDescriptor, Registry, Result};

static INVOCATIONS: AtomicU64 = AtomicU64::new(0);

/// The `inline` backend.
pub(crate) struct Inline;

impl Transport for Inline {
    fn kind(&self) -> BackendKind {
        BackendKind::Inline
    }

    fn invoke(
        &self,
        ctx: &Context,
        envelope: Envelope,
        payload: Bytes,
        _descriptor: Option<&'static FunctionDescriptor>,
    ) -> BoxFuture<'static, Result<Bytes>> {
        invoke(ctx, envelope, payload)
    }

    fn stats(&self) -> Option<BackendStats> {
        Some(BackendStats {
            backend: BackendKind::Inline,
            max_workers: std::thread::available_parallelism().map_or(1, usize::from),
            workers: 1,
            cold_starts: 0,
            invocations: INVOCATIONS.load(Ordering::Relaxed),
            functions: Vec::new(),
        })
    }

    fn in_process(&self) -> bool {
        true
    }
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

fn invoke(ctx: &Context, envelope: Envelope, payload: Bytes) -> BoxFuture<'static, Result<Bytes>> {
    INVOCATIONS.fetch_add(1, Ordering::Relaxed);
    let ctx = ctx.clone();
    Box::pin(async move {
        let registration = Registry::global()?.lookup(&envelope.function)?;
        let (result, _) =
            crate::execute::execute(&ctx, registration, &envelope, payload, Placement::Spawned)
                .await;
        crate::flow::forward(&ctx, &envelope, result)
            .await
            .map(Bytes::from)
    })
}
