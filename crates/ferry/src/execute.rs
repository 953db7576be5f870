//! Running a registered function in this process under its timeout: the inline backend and
//! every worker (through [`crate::runtime`]) execute through here.

use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
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

/// Inline bodies running (or spawned to run) now, in every runtime of the process.
static INLINE_BODIES: AtomicUsize = AtomicUsize::new(0);

/// Inline bodies running now, each with its runtime and when it started, for the watchdog.
static RUNNING_INLINE: Mutex<Vec<(u64, Instant, tokio::runtime::Handle)>> = Mutex::new(Vec::new());

/// How long an inline body may run before the watchdog makes sure another thread drives the
/// runtime's timers and I/O.
const INLINE_WATCH_PERIOD: Duration = Duration::from_millis(25);

/// One inline body's claim on a runtime thread, given back when the body ends.
///
/// A runtime thread that parks while another runs a task need not take over the timers and
/// I/O: tokio wakes it only for new work. So while an inline body runs, a watchdog thread
/// checks every [`INLINE_WATCH_PERIOD`]; a body running longer gets its runtime a task from
/// outside, which wakes a parked thread, which then drives the timers: the body's invocation
/// times out and the instance retires.
pub(crate) struct InlineTurn {
    id: u64,
}

impl InlineTurn {
    /// A turn, if the current runtime has a thread to spare for one more inline body.
    pub(crate) fn take() -> Option<Self> {
        static NEXT_ID: AtomicU64 = AtomicU64::new(0);
        let handle = tokio::runtime::Handle::try_current().ok()?;
        if handle.runtime_flavor() != tokio::runtime::RuntimeFlavor::MultiThread {
            return None;
        }
        if !watchdog_started() {
            return None;
        }
        let spare = handle.metrics().num_workers().saturating_sub(1);
        INLINE_BODIES
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |running| {
                (running < spare).then_some(running + 1)
            })
            .ok()?;
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        lock(&RUNNING_INLINE).push((id, Instant::now(), handle));
        Some(Self { id })
    }
}

impl Drop for InlineTurn {
    fn drop(&mut self) {
        lock(&RUNNING_INLINE).retain(|(id, ..)| *id != self.id);
        INLINE_BODIES.fetch_sub(1, Ordering::AcqRel);
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Starts the watchdog of inline bodies, once; `false` if it could not start, and then no body
/// runs inline.
fn watchdog_started() -> bool {
    static STARTED: std::sync::OnceLock<bool> = std::sync::OnceLock::new();
    *STARTED.get_or_init(|| {
        let watch = move || {
            loop {
                std::thread::sleep(INLINE_WATCH_PERIOD);
                let overdue: Vec<_> = lock(&RUNNING_INLINE)
                    .iter()
                    .filter(|(_, started, _)| started.elapsed() >= INLINE_WATCH_PERIOD)
                    .map(|(.., handle)| handle.clone())
                    .collect();
                for handle in overdue {
                    drop(handle.spawn(async {}));
                }
            }
        };
        match std::thread::Builder::new()
            .name("ferry-inline-watch".into())
            .spawn(watch)
        {
            Ok(_) => true,
            Err(error) => {
                tracing::warn!(%error, "cannot start the watchdog of inline bodies: they run on the blocking pool");
                false
            }
        }
    })
}
