//! Running a registered function in this process under its timeout: the inline backend and
//! every worker (through [`crate::runtime`]) execute through here.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
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

/// One inline body's claim on a runtime thread, given back when the body ends (it is held from
/// the spawn, while the body's task waits its turn too).
///
/// A runtime thread that parks while another runs a task need not take over the timers and
/// I/O: tokio wakes it only for new work. So while an inline body runs, a watchdog thread
/// checks every [`INLINE_WATCH_PERIOD`]; a body running longer gets its runtime a task from
/// outside, which wakes a parked thread, which then drives the timers: the body's invocation
/// times out and the instance retires. A task the body itself wakes waits in the body's
/// thread's own slot until the body ends, which is why an inline body must not wait on tasks.
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
        let watchdog = watchdog()?;
        let spare = handle.metrics().num_workers().saturating_sub(1);
        INLINE_BODIES
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |running| {
                (running < spare).then_some(running + 1)
            })
            .ok()?;
        let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
        lock(&RUNNING_INLINE).push((id, Instant::now(), handle));
        if WATCHDOG_PARKED.swap(false, Ordering::SeqCst) {
            watchdog.unpark();
        }
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

/// The watchdog's thread, once started; `None` if it could not start, and then no body runs
/// inline.
fn watchdog() -> Option<&'static std::thread::Thread> {
    static WATCHDOG: std::sync::OnceLock<Option<std::thread::Thread>> = std::sync::OnceLock::new();
    WATCHDOG
        .get_or_init(|| {
            match std::thread::Builder::new()
                .name("ferry-inline-watch".into())
                .spawn(watch_inline_bodies)
            {
                Ok(handle) => Some(handle.thread().clone()),
                Err(error) => {
                    tracing::warn!(%error, "cannot start the watchdog of inline bodies: they run on the blocking pool");
                    None
                }
            }
        })
        .as_ref()
}

/// Whether the watchdog sleeps until the next inline body (it does after a second without any).
static WATCHDOG_PARKED: AtomicBool = AtomicBool::new(false);

fn watch_inline_bodies() {
    let mut idle_periods = 0u32;
    loop {
        std::thread::sleep(INLINE_WATCH_PERIOD);
        let overdue: Vec<_> = {
            let running = lock(&RUNNING_INLINE);
            idle_periods = if running.is_empty() {
                idle_periods + 1
            } else {
                0
            };
            running
                .iter()
                .filter(|(_, started, _)| started.elapsed() >= INLINE_WATCH_PERIOD)
                .map(|(.., handle)| handle.clone())
                .collect()
        };
        for handle in overdue {
            drop(handle.spawn(async {}));
        }
        if idle_periods >= 40 {
            // A body that starts after the flag is set unparks this thread (or finds it awake
            // when it looks again); one that started before is in the list.
            WATCHDOG_PARKED.store(true, Ordering::SeqCst);
            if lock(&RUNNING_INLINE).is_empty() {
                std::thread::park();
            }
            WATCHDOG_PARKED.store(false, Ordering::SeqCst);
            idle_periods = 0;
        }
    }
}
