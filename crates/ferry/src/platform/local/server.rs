//! A worker of the embedded local platform: reads invocations from the socket on fd 3, runs
//! many at once, and answers each as it finishes. Nested invocations made by functions go back
//! to the platform over the same socket, which places them; while the platform says every
//! worker is busy, a nested invocation whose function has a free slot here runs here instead
//! (see [`protocol`]).

use std::collections::HashMap;
use std::os::fd::FromRawFd;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};

use std::panic::AssertUnwindSafe;

use bytes::Bytes;
use futures::FutureExt;
use futures::future::BoxFuture;
use tokio::io::BufReader;
use tokio::sync::{mpsc, oneshot};

use crate::platform::local::protocol::{self, Frame};
use crate::platform::{Backend, Transport};
use crate::runtime::Runtime;
use crate::shared::BlobId;
use crate::wire::Envelope;
use crate::{BackendKind, Context, Error, Registry, Result};

tokio::task_local! {
    /// The platform's slot of the invocation this task runs.
    static SLOT: u64;
}

/// Names the current thread after the invocation whose sync body it is about to run, when that
/// invocation came from the local platform (see [`super::THREAD_LABEL`]).
pub(crate) fn label_thread_for(slot: Option<u64>) {
    let Some(slot) = slot else { return };
    let name = format!("{}{:x}\0", super::THREAD_LABEL, slot & super::LABEL_MASK);
    // SAFETY: PR_SET_NAME reads a NUL-terminated string of at most 16 bytes; this one is ≤ 16.
    unsafe {
        libc::prctl(libc::PR_SET_NAME, name.as_ptr());
    }
}

/// The slot of the invocation the calling task runs, if the local platform sent it.
pub(crate) fn current_slot() -> Option<u64> {
    SLOT.try_with(|slot| *slot).ok()
}

/// Serves until the platform closes the socket, then exits without waiting for stuck threads.
pub(crate) fn serve(registry: &'static Registry) -> ExitCode {
    // SAFETY: F_GETFD only inspects the descriptor table.
    if unsafe { libc::fcntl(crate::platform::local::WORKER_FD, libc::F_GETFD) } < 0 {
        eprintln!(
            "error: FERRY_ROLE=local-worker expects the local platform's socket on fd 3; \
             start the program without FERRY_ROLE to run it as the host"
        );
        return ExitCode::from(2);
    }
    // Programs the functions start must not inherit the socket: they would keep it open after
    // this worker dies, and the platform would not notice the death.
    // SAFETY: plain fcntl on a descriptor checked above.
    unsafe {
        libc::fcntl(
            crate::platform::local::WORKER_FD,
            libc::F_SETFD,
            libc::FD_CLOEXEC,
        )
    };
    // SAFETY: fd 3 is open (checked above) and handed to this process for this purpose alone.
    let socket =
        unsafe { std::os::unix::net::UnixStream::from_raw_fd(crate::platform::local::WORKER_FD) };
    // A bad value stopped the program at its entry.
    let threads = crate::config::WORKER_THREADS.number().ok().flatten();
    let runtime = match crate::runtime::serve::runtime_with_threads(threads) {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the worker runtime: {error}");
            return ExitCode::from(2);
        }
    };
    // On a runtime thread, not the main thread `block_on` runs on: the reader, the invocations it
    // spawns and the writer then share a thread instead of waking each other across threads.
    let outcome = runtime.block_on(async move {
        tokio::spawn(serve_socket(registry, socket))
            .await
            .unwrap_or_else(|e| Err(std::io::Error::other(e.to_string())))
    });
    if let Err(error) = outcome {
        eprintln!("error: local worker: {error}");
        std::process::exit(2);
    }
    // A sync function past its timeout may still hold a thread: do not wait for it.
    std::process::exit(0);
}

async fn serve_socket(
    registry: &'static Registry,
    socket: std::os::unix::net::UnixStream,
) -> std::io::Result<()> {
    socket.set_nonblocking(true)?;
    let (read, write) = tokio::net::UnixStream::from_std(socket)?.into_split();
    let (frames, queued) = mpsc::unbounded_channel::<Bytes>();
    tokio::spawn(protocol::write_loop(write, queued));
    let parent = Arc::new(ParentLink {
        frames: frames.clone(),
        calls: Mutex::new(HashMap::new()),
        next_call: AtomicU64::new(1),
        all_busy: AtomicBool::new(false),
        here: OnceLock::new(),
    });
    let ctx = Context::with_backend(Backend::new(parent.clone()));
    let runtime = Arc::new(Runtime::new(registry, ctx));
    let _ = parent.here.set(Arc::downgrade(&runtime));
    // The platform stops sending here once told; the work already sent still runs.
    let retire_sent = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let _ = frames.send(protocol::hello(
        std::process::id(),
        registry.max_memory_mb(),
    ));

    let mut reader = BufReader::with_capacity(64 * 1024, read);
    while let Some(frame) = protocol::read_frame(&mut reader).await? {
        match protocol::decode(frame) {
            Ok(Frame::Request {
                id,
                envelope,
                payload,
            }) => {
                let frames = frames.clone();
                let runtime = runtime.clone();
                let parent = parent.clone();
                let retire_sent = retire_sent.clone();
                tokio::spawn(async move {
                    // Arguments are decoded and outputs encoded outside the body's own guard, by
                    // the user's serde impls: a panic there still gets an answer.
                    let released = || {
                        let _ = frames.send(protocol::released(id));
                    };
                    let run = run_one(&runtime, &parent, &envelope, payload, released);
                    let result = AssertUnwindSafe(SLOT.scope(id, run))
                        .catch_unwind()
                        .await
                        .unwrap_or_else(|payload| {
                            let message = crate::error::panic_message(&*payload);
                            Err(Error::panic(message).in_function(&envelope.function))
                        });
                    // Retire first: the platform must stop sending here before the caller,
                    // woken by the response, sends its next call.
                    if let Some(reason) = runtime.retired_because() {
                        if !retire_sent.swap(true, Ordering::AcqRel) {
                            let _ = frames.send(protocol::retire(reason));
                        }
                    }
                    let _ = frames.send(protocol::response(id, &result));
                });
            }
            Ok(Frame::Response { id, result }) => parent.complete(id, result),
            Ok(Frame::Busy { all }) => parent.all_busy.store(all, Ordering::Relaxed),
            Ok(other) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    format!("unexpected frame from the platform: {other:?}"),
                ));
            }
            Err(error) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    error.to_string(),
                ));
            }
        }
    }
    Ok(())
}

async fn run_one(
    runtime: &Runtime,
    parent: &ParentLink,
    envelope: &Envelope,
    payload: Bytes,
    released: impl FnOnce(),
) -> Result<Vec<u8>> {
    let registration = runtime.registry().lookup(&envelope.function)?;
    // Shared values the arguments refer to by id are fetched from the platform, once per
    // worker, and held in the cache until the invocation ends.
    let _blobs = crate::shared::ensure(&envelope.blobs, |blob| parent.fetch_blob(blob))
        .await
        .map_err(|error| error.in_function(&envelope.function))?;
    // The platform may send work ahead (prefetch): it waits in the runtime for one of the
    // function's slots, and its timeout starts when it runs.
    runtime
        .invoke_releasing(registration, envelope, payload, released)
        .await
}

/// The backend of contexts inside a local worker: invocations go to the platform that started
/// this worker.
pub(crate) struct ParentLink {
    frames: mpsc::UnboundedSender<Bytes>,
    calls: Mutex<HashMap<u64, oneshot::Sender<Result<Bytes>>>>,
    next_call: AtomicU64,
    /// The platform's last word on whether every worker is busy.
    all_busy: AtomicBool,
    /// This worker's pipeline, where nested invocations run while every worker is busy.
    here: OnceLock<Weak<Runtime>>,
}

impl ParentLink {
    /// A nested invocation: run here while every worker is busy and its function has a free
    /// slot in this worker, else sent to the platform.
    fn place(
        self: &Arc<Self>,
        envelope: Envelope,
        payload: Bytes,
    ) -> BoxFuture<'static, Result<Bytes>> {
        let runtime = self
            .all_busy
            .load(Ordering::Relaxed)
            .then(|| self.here.get().and_then(Weak::upgrade))
            .flatten();
        let Some(runtime) = runtime else {
            return self.send(envelope, payload);
        };
        let link = self.clone();
        Box::pin(async move {
            match runtime.invoke_if_free(&envelope, payload.clone()).await {
                Some(result) => result.map(Bytes::from),
                None => link.send(envelope, payload).await,
            }
        })
    }

    /// Sends a nested invocation to the platform.
    fn send(&self, envelope: Envelope, payload: Bytes) -> BoxFuture<'static, Result<Bytes>> {
        let id = self.next_call.fetch_add(1, Ordering::Relaxed);
        let (reply, outcome) = oneshot::channel();
        let sent = protocol::request(id, &envelope, &payload).and_then(|frame| {
            self.calls
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .insert(id, reply);
            self.frames
                .send(frame)
                .map_err(|_| Error::unavailable("the local platform closed the connection"))
        });
        Box::pin(async move {
            sent?;
            outcome.await.unwrap_or_else(|_| {
                Err(Error::unavailable(
                    "the local platform closed the connection",
                ))
            })
        })
    }

    /// Asks the platform for a shared value's blob.
    fn fetch_blob(&self, blob: BlobId) -> BoxFuture<'static, Result<Bytes>> {
        let id = self.next_call.fetch_add(1, Ordering::Relaxed);
        let (reply, outcome) = oneshot::channel();
        self.calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(id, reply);
        let sent = self
            .frames
            .send(protocol::fetch(id, &blob))
            .map_err(|_| Error::unavailable("the local platform closed the connection"));
        Box::pin(async move {
            sent?;
            outcome.await.unwrap_or_else(|_| {
                Err(Error::unavailable(
                    "the local platform closed the connection",
                ))
            })
        })
    }

    fn complete(&self, id: u64, result: Result<Bytes>) {
        let reply = self
            .calls
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&id);
        if let Some(reply) = reply {
            let _ = reply.send(result);
        }
    }
}

/// A worker's functions invoke functions through the platform that started the worker.
impl Transport for Arc<ParentLink> {
    fn kind(&self) -> BackendKind {
        BackendKind::Local
    }

    fn invoke(
        &self,
        _ctx: &Context,
        envelope: Envelope,
        payload: Bytes,
        _descriptor: Option<&'static crate::FunctionDescriptor>,
    ) -> BoxFuture<'static, Result<Bytes>> {
        ParentLink::place(self, envelope, payload)
    }
}
