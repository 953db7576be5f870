//! Running a registered function in this process under its timeout: the inline backend and
//! every worker (through [`crate::runtime`]) execute through here.

use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::future::BoxFuture;

use crate::context::Invocation;
use crate::registry::Registration;
use crate::wire::Envelope;
use crate::{Context, Error, Result};

/// Whether a timed-out body may still be running on a thread that cannot be stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Overrun {
    No,
    /// A sync body outlived its timeout: its thread runs on until the process ends.
    StuckThread,
}

/// Runs a registered function in this process under its timeout (or the caller's earlier
/// deadline). Inline backends and every worker mode execute through here.
pub(crate) async fn execute(
    ctx: &Context,
    registration: &'static Registration,
    envelope: &Envelope,
    payload: Bytes,
    placement: Placement,
) -> (Result<Vec<u8>>, Overrun) {
    let descriptor = registration.descriptor();
    let mut limit = descriptor.config.timeout;
    if let Some(remaining) = envelope.remaining() {
        limit = limit.min(remaining);
    }
    let child = ctx.for_invocation(Invocation {
        function: descriptor.id.to_owned(),
        id: envelope.invocation,
        deadline: Instant::now() + limit,
        metadata: envelope.metadata.clone(),
    });
    let output_codec = envelope.reply_codec.unwrap_or(envelope.codec);
    let body = registration.run(child, envelope.codec, output_codec, payload);
    let (result, overrun) = with_timeout(body, limit, descriptor.is_async, placement).await;
    let result = result.map_err(|e| {
        e.in_function(descriptor.id)
            .in_invocation(envelope.invocation)
    });
    (result, overrun)
}

/// Where a body runs under [`with_timeout`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Placement {
    /// In the calling task: the caller is already a task of its own (a worker's request).
    Here,
    /// In a new task, so a caller driving many calls from one task gets parallelism.
    Spawned,
}

/// Runs `body` under `limit`. Panics are already errors (the macro's wrappers catch them).
pub(crate) async fn with_timeout<T: Send + 'static>(
    body: BoxFuture<'static, Result<T>>,
    limit: Duration,
    is_async: bool,
    placement: Placement,
) -> (Result<T>, Overrun) {
    let stuck = if is_async {
        Overrun::No
    } else {
        Overrun::StuckThread
    };
    if placement == Placement::Here {
        return match tokio::time::timeout(limit, body).await {
            Ok(result) => (result, Overrun::No),
            Err(_) => (Err(Error::timeout(limit)), stuck),
        };
    }
    let mut task = tokio::spawn(body);
    match tokio::time::timeout(limit, &mut task).await {
        Ok(Ok(result)) => (result, Overrun::No),
        Ok(Err(joined)) if joined.is_panic() => (
            Err(Error::panic(crate::error::panic_message(
                &*joined.into_panic(),
            ))),
            Overrun::No,
        ),
        Ok(Err(joined)) => (
            Err(Error::unavailable(format!(
                "invocation task ended: {joined}"
            ))),
            Overrun::No,
        ),
        Err(_) => {
            task.abort();
            (Err(Error::timeout(limit)), stuck)
        }
    }
}
