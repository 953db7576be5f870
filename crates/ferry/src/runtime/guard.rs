//! How every ferry server (the HTTP service, the OpenWhisk runtime, a web app) guards itself
//! against slow, silent and greedy clients, written once:
//!
//! - a connection must start its request within the header timeout and send the whole head
//!   within the header timeout of its first byte; a kept-alive connection may then stay idle
//!   between requests for the idle timeout (or for ever), which is longer so that the pooled
//!   connections of the proxies and clients in front, which idle out sooner, are never closed
//!   just as a request is sent on them ([`HeadTimer`]);
//! - at most `max_connections` connections are held: more wait in the kernel's listen queue, so
//!   silent clients cannot take every file descriptor. While one waits with every slot held, a
//!   held connection that is answering a request closes after it (the answer says
//!   `Connection: close`, so its client sends nothing more on it), and frees its slot; an idle
//!   kept-alive one is left to its idle timeout, since closing it could lose a request its
//!   client is sending at that moment;
//! - a request head may take at most 64 KiB (431 beyond);
//! - a request body must arrive within the body timeout (else 408), may not announce more than
//!   the body limit (413 at once, nothing read), and bodies held at once are bounded in bytes:
//!   a request waits for room before its body is read (503 if none frees within the body timeout);
//!   a body is held once, in one buffer, whose memory returns to the system when the request
//!   ends;
//! - on shutdown the server stops accepting and lets in-flight requests finish for at most the
//!   drain budget.

use std::ops::Deref;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::body::{Body, HttpBody as _};
use axum::extract::Request;
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::Response;
use bytes::Bytes;
use futures::StreamExt as _;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use hyper_util::server::conn::auto::Builder;
use hyper_util::service::TowerToHyperService;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::task::{Context, Poll};

use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, TryAcquireError, watch};

use crate::{Error, ErrorKind, Result};

/// A server's limits, from `FERRY_HTTP_*` (see [`crate::config`]).
#[derive(Debug, Clone)]
pub(crate) struct Limits {
    pub(crate) header_timeout: Duration,
    /// How long a kept-alive HTTP/1 connection may stay idle between requests; `None`: for ever.
    pub(crate) idle_timeout: Option<Duration>,
    pub(crate) body_timeout: Duration,
    pub(crate) max_connections: usize,
    pub(crate) max_bytes_in_flight: usize,
    pub(crate) drain: Duration,
}

/// The most an HTTP/1 connection buffers as it reads, and so the most its request head may take
/// (431 beyond). hyper's default, about 400 KiB, is what a connection reading a large body grows
/// its buffer to: 1,024 connections could hold 400 MiB, and in glibc's heap such buffers fragment
/// it so that a flood of 1 MiB uploads left the resident set growing past what was held.
const READ_BUFFER: usize = 64 << 10;

/// Connections kept for everything else the process opens (files, outgoing calls, workers).
const SPARE_FILES: usize = 64;

/// How long a kept-alive connection may stay idle unless `FERRY_HTTP_IDLE_TIMEOUT_MS` says: longer
/// than the proxies in front of a service keep theirs (60 s for AWS's load balancers, 90 s for
/// Go's HTTP client).
const IDLE_TIMEOUT: Duration = Duration::from_secs(300);

impl Limits {
    /// The limits of the HTTP service and of web apps.
    pub(crate) fn from_env() -> Result<Self> {
        Self::from_env_idling(Some(IDLE_TIMEOUT))
    }

    /// The limits, idle connections kept for `idle` unless `FERRY_HTTP_IDLE_TIMEOUT_MS` says.
    pub(crate) fn from_env_idling(idle: Option<Duration>) -> Result<Self> {
        use crate::config::{
            HTTP_BODY_TIMEOUT_MS, HTTP_DRAIN_MS, HTTP_HEADER_TIMEOUT_MS, HTTP_IDLE_TIMEOUT_MS,
            HTTP_MAX_BYTES_IN_FLIGHT_MB, HTTP_MAX_CONNECTIONS,
        };
        let millis = |ms: Option<u64>, default: u64| Duration::from_millis(ms.unwrap_or(default));
        Ok(Self {
            header_timeout: millis(HTTP_HEADER_TIMEOUT_MS.number()?, 10_000),
            idle_timeout: match HTTP_IDLE_TIMEOUT_MS.number::<u64>()? {
                Some(0) => None,
                Some(ms) => Some(Duration::from_millis(ms)),
                None => idle,
            },
            body_timeout: millis(HTTP_BODY_TIMEOUT_MS.number()?, 30_000),
            max_connections: match HTTP_MAX_CONNECTIONS.number()? {
                Some(n) => n,
                None => default_max_connections(),
            },
            max_bytes_in_flight: HTTP_MAX_BYTES_IN_FLIGHT_MB
                .number::<usize>()?
                .unwrap_or(64)
                .saturating_mul(1 << 20),
            drain: millis(HTTP_DRAIN_MS.number()?, 25_000),
        })
    }
}

/// 1024 connections, or fewer where the open-file limit is lower.
fn default_max_connections() -> usize {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit only writes the struct it is given.
    let files = if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit) } == 0 {
        usize::try_from(limit.rlim_cur).unwrap_or(usize::MAX)
    } else {
        1024
    };
    1024.min(files.saturating_sub(SPARE_FILES)).max(16)
}

/// Serves `router` on `listener` under `limits` until `shutdown` resolves, then drains.
pub(crate) async fn serve(
    listener: tokio::net::TcpListener,
    router: Router,
    limits: &Limits,
    shutdown: impl Future<Output = ()>,
) -> std::io::Result<()> {
    let slots =
        u32::try_from(limits.max_connections.clamp(1, Semaphore::MAX_PERMITS)).unwrap_or(u32::MAX);
    let connections = Arc::new(Semaphore::new(slots as usize));
    // Tells held connections to close after their current request: all of them on shutdown
    // (`stopping`), the busy ones while a connection waits for a slot (`room`).
    let (stop, stopping) = watch::channel(false);
    let room = Arc::new(Room::default());
    let mut builder = Builder::new(TokioExecutor::new());
    // Each connection's HTTP/1 timer is its own `HeadTimer`, set as it is served.
    builder
        .http1()
        .header_read_timeout(limits.header_timeout)
        .max_buf_size(READ_BUFFER);
    builder
        .http2()
        .timer(TokioTimer::new())
        .keep_alive_interval(limits.header_timeout)
        .keep_alive_timeout(limits.header_timeout);
    let builder = Arc::new(builder);
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let accept = async {
            loop {
                match listener.accept().await {
                    Ok((stream, _)) => return stream,
                    Err(error) => {
                        // Out of file descriptors, say: wait a little rather than spin.
                        tracing::warn!(%error, "cannot accept a connection");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                }
            }
        };
        let (stream, permit) = tokio::select! {
            () = &mut shutdown => break,
            accepted = with_slot(&connections, &room, accept) => match accepted {
                Some(accepted) => accepted,
                None => break,
            },
        };
        let _ = stream.set_nodelay(true);
        // The requests this connection is answering, and a nudge when one starts while another
        // connection waits for a slot.
        let busy = Arc::new(AtomicUsize::new(0));
        let nudge = Arc::new(Notify::new());
        let service = TowerToHyperService::new(counting(
            router.clone(),
            busy.clone(),
            nudge.clone(),
            room.clone(),
        ));
        let builder = builder.clone();
        let (header_timeout, idle_timeout) = (limits.header_timeout, limits.idle_timeout);
        let (mut stopping, room) = (stopping.clone(), room.clone());
        tokio::spawn(async move {
            let _permit = permit;
            // A client that connects and says nothing never reaches hyper's own header timer
            // (the protocol is told by the first bytes): it gets the same time to start.
            // (`readable()` may wake at once on a fresh socket: `peek` waits for a byte.)
            let mut first = [0u8; 1];
            let spoke = tokio::select! {
                peeked = tokio::time::timeout(header_timeout, stream.peek(&mut first)) => {
                    matches!(peeked, Ok(Ok(1)))
                }
                _ = stopping.wait_for(|stop| *stop) => false,
            };
            if !spoke {
                return;
            }
            let read = Arc::new(AtomicU64::new(0));
            let mut builder = Builder::clone(&builder);
            builder.http1().timer(HeadTimer {
                read: read.clone(),
                header: header_timeout,
                idle: idle_timeout,
            });
            let stream = TokioIo::new(CountingReads { stream, read });
            let connection = builder.serve_connection_with_upgrades(stream, service);
            let mut connection = std::pin::pin!(connection);
            let ended = loop {
                tokio::select! {
                    ended = connection.as_mut() => break Some(ended),
                    _ = stopping.wait_for(|stop| *stop) => break None,
                    () = room.wanted.notified() => {}
                    () = nudge.notified() => {}
                }
                // Asked to make room: only while answering, so that its answer can say
                // `Connection: close`.
                if busy.load(Ordering::Acquire) > 0 && room.waiting.load(Ordering::Acquire) > 0 {
                    break None;
                }
            };
            let ended = match ended {
                Some(ended) => ended,
                None => {
                    connection.as_mut().graceful_shutdown();
                    connection.await
                }
            };
            if let Err(error) = ended {
                tracing::trace!(%error, "connection ended");
            }
        });
    }
    drop(listener);
    let _ = stop.send(true);
    // Every connection has ended when every slot is free again.
    if tokio::time::timeout(limits.drain, connections.acquire_many(slots))
        .await
        .is_err()
    {
        tracing::warn!(
            budget = ?limits.drain,
            "draining took longer than its budget: exiting with requests in flight"
        );
    }
    Ok(())
}

/// `router`, counting in `busy` the requests whose handlers run, and nudging its connection when
/// one starts while another connection waits for a slot.
fn counting<B>(
    router: Router,
    busy: Arc<AtomicUsize>,
    nudge: Arc<Notify>,
    room: Arc<Room>,
) -> impl tower::Service<
    axum::http::Request<B>,
    Response = Response,
    Error = std::convert::Infallible,
    Future = impl Future<Output = std::result::Result<Response, std::convert::Infallible>> + Send,
> + Clone
+ Send
where
    B: axum::body::HttpBody<Data = Bytes> + Send + 'static,
    B::Error: Into<axum::BoxError>,
{
    tower::ServiceExt::<axum::http::Request<B>>::map_future(router, move |answer| {
        let answering = Counted::raise(busy.clone());
        if room.waiting.load(Ordering::Acquire) > 0 {
            nudge.notify_one();
        }
        async move {
            let response = answer.await;
            drop(answering);
            response
        }
    })
}

/// A connection's stream, counting the bytes read from it for its [`HeadTimer`].
struct CountingReads {
    stream: tokio::net::TcpStream,
    read: Arc<AtomicU64>,
}

impl tokio::io::AsyncRead for CountingReads {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut tokio::io::ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.stream).poll_read(cx, buf);
        let got = buf.filled().len() - before;
        if got > 0 {
            self.read.fetch_add(got as u64, Ordering::Relaxed);
        }
        polled
    }
}

impl tokio::io::AsyncWrite for CountingReads {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write(cx, buf)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        Pin::new(&mut self.stream).poll_write_vectored(cx, bufs)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.stream).poll_shutdown(cx)
    }
}

/// hyper's HTTP/1 header read timer for one connection. hyper arms it whenever it waits for a
/// request head, so its own timeout also closes a kept-alive connection idle that long; a
/// proxy or client in front that keeps its pooled connections longer then sends a request on
/// a connection being closed, which fails (its client cannot tell whether it ran). This timer
/// tells the two apart by the bytes read: a head that has started arriving is given `header`
/// from its first byte, an idle connection `idle` (for ever when `None`). hyper uses its HTTP/1
/// timer for nothing else.
struct HeadTimer {
    read: Arc<AtomicU64>,
    header: Duration,
    idle: Option<Duration>,
}

impl hyper::rt::Timer for HeadTimer {
    fn sleep(&self, duration: Duration) -> Pin<Box<dyn hyper::rt::Sleep>> {
        self.sleep_until(std::time::Instant::now() + duration)
    }

    fn sleep_until(&self, _deadline: std::time::Instant) -> Pin<Box<dyn hyper::rt::Sleep>> {
        let armed = tokio::time::Instant::now();
        Box::pin(HeadSleep {
            read: self.read.clone(),
            read_when_armed: self.read.load(Ordering::Relaxed),
            armed,
            head_started: None,
            header: self.header,
            idle: self.idle,
            sleep: Box::pin(tokio::time::sleep_until(armed + self.header)),
        })
    }

    /// Re-arms the wait hyper keeps for the connection's next head, as `sleep_until` would,
    /// without allocating one for every request.
    fn reset(&self, sleep: &mut Pin<Box<dyn hyper::rt::Sleep>>, deadline: std::time::Instant) {
        match sleep.as_mut().downcast_mut_pin::<HeadSleep>() {
            Some(mut head) => {
                head.read_when_armed = self.read.load(Ordering::Relaxed);
                head.armed = tokio::time::Instant::now();
                head.head_started = None;
            }
            None => *sleep = self.sleep_until(deadline),
        }
    }
}

/// One wait for a request head ([`HeadTimer`]).
struct HeadSleep {
    read: Arc<AtomicU64>,
    read_when_armed: u64,
    armed: tokio::time::Instant,
    head_started: Option<tokio::time::Instant>,
    header: Duration,
    idle: Option<Duration>,
    sleep: Pin<Box<tokio::time::Sleep>>,
}

impl Future for HeadSleep {
    type Output = ();

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<()> {
        // hyper polls this each time it has read what there was without finding a whole head,
        // so the first poll after a byte arrived dates the head's start.
        if self.head_started.is_none() && self.read.load(Ordering::Relaxed) != self.read_when_armed
        {
            self.head_started = Some(tokio::time::Instant::now());
        }
        let deadline = match (self.head_started, self.idle) {
            (Some(started), _) => started + self.header,
            (None, Some(idle)) => self.armed + idle,
            // Idle for ever: a byte arriving wakes the connection, which polls this again.
            (None, None) => return Poll::Pending,
        };
        if self.sleep.deadline() != deadline {
            self.sleep.as_mut().reset(deadline);
        }
        self.sleep.as_mut().poll(cx)
    }
}

impl hyper::rt::Sleep for HeadSleep {}

/// Connections waiting for a slot, and the call to the held ones to make room.
#[derive(Default)]
struct Room {
    waiting: AtomicUsize,
    wanted: Notify,
}

/// One more in a count while it lives: a request a connection is answering, a connection waiting
/// for a slot. Dropping it lowers the count however its holder ends, cancelled at shutdown too.
struct Counted<C: Deref<Target = AtomicUsize>>(C);

impl<C: Deref<Target = AtomicUsize>> Counted<C> {
    fn raise(count: C) -> Self {
        count.fetch_add(1, Ordering::AcqRel);
        Self(count)
    }
}

impl<C: Deref<Target = AtomicUsize>> Drop for Counted<C> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The next connection `accept` takes, with a slot for it; `None` once the slots are closed.
/// With a slot free, the connection is taken when it comes. With none, one connection is taken
/// from the listen queue (the kernel keeps the rest) and, while it waits, every held connection
/// that answers a request closes after it, so it waits for the first of those answers rather
/// than for an idle connection's idle timeout.
async fn with_slot(
    connections: &Arc<Semaphore>,
    room: &Room,
    accept: impl Future<Output = tokio::net::TcpStream>,
) -> Option<(tokio::net::TcpStream, OwnedSemaphorePermit)> {
    let permit = match connections.clone().try_acquire_owned() {
        Ok(permit) => permit,
        Err(TryAcquireError::Closed) => return None,
        Err(TryAcquireError::NoPermits) => {
            let stream = accept.await;
            let waiting = Counted::raise(&room.waiting);
            room.wanted.notify_waiters();
            let permit = connections.clone().acquire_owned().await;
            drop(waiting);
            return Some((stream, permit.ok()?));
        }
    };
    Some((accept.await, permit))
}

/// Why a body was not read.
enum Unread {
    TooLarge,
    Broken(axum::Error),
}

/// Reads a body of at most `limit` bytes. One of a known length goes straight into one buffer of
/// that size, a mapping of its own when large ([`crate::mapped`]), and each chunk is dropped as
/// it is copied: a body is held once, as the bytes in flight count it, and its memory returns to
/// the system when the request ends. (Gathering the chunks, then copying them into one buffer,
/// held it twice, and left the allocator's heap to keep it.)
async fn read(body: Body, known: Option<u64>, limit: usize) -> Result<Bytes, Unread> {
    let mut buffer = match known {
        Some(length) if length > limit as u64 => return Err(Unread::TooLarge),
        Some(length) => crate::mapped::Buffer::with_capacity(length as usize),
        None => crate::mapped::Buffer::growing(limit),
    };
    let mut chunks = body.into_data_stream();
    while let Some(chunk) = chunks.next().await {
        let chunk = chunk.map_err(Unread::Broken)?;
        if !buffer.extend(&chunk) {
            // More than announced is a broken request; more than the limit, too large.
            return Err(match known {
                Some(_) if buffer.len() + chunk.len() <= limit => {
                    Unread::Broken(axum::Error::new("more body than its announced length"))
                }
                _ => Unread::TooLarge,
            });
        }
    }
    Ok(buffer.freeze())
}

/// How a platform answers a refused request, in its own error shape.
pub(crate) type Refusal = fn(StatusCode, &Error) -> Response;

/// Request bodies held at once, in bytes, and how long one may take to arrive.
#[derive(Debug, Clone)]
pub(crate) struct Bodies {
    max_body: usize,
    timeout: Duration,
    in_flight: Arc<Semaphore>,
    capacity: usize,
    refusal: Refusal,
}

impl Bodies {
    pub(crate) fn new(limits: &Limits, max_body: usize, refusal: Refusal) -> Self {
        let capacity = limits.max_bytes_in_flight.clamp(1, Semaphore::MAX_PERMITS);
        Self {
            max_body,
            timeout: limits.body_timeout,
            in_flight: Arc::new(Semaphore::new(capacity)),
            capacity,
            refusal,
        }
    }

    /// `router` with every request body read under these rules before its handler runs.
    pub(crate) fn guard(self, router: Router) -> Router {
        router.layer(axum::middleware::from_fn(move |request, next| {
            let bodies = self.clone();
            async move { bodies.admit(request, next).await }
        }))
    }

    async fn admit(&self, request: Request, next: Next) -> Response {
        let announced = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.parse::<u64>().ok());
        if let Some(size) = announced.filter(|size| *size > self.max_body as u64) {
            return self.refuse(
                StatusCode::PAYLOAD_TOO_LARGE,
                Error::new(ErrorKind::PayloadTooLarge {
                    size,
                    limit: self.max_body as u64,
                }),
            );
        }
        // Room for what the body may hold: its exact size where known (announced, or none at all
        // for a GET or an ended HTTP/2 stream), else the most it may be.
        let hint = request.body().size_hint();
        let wanted = match hint.exact() {
            Some(size) => usize::try_from(size).unwrap_or(usize::MAX),
            None => announced.map_or(self.max_body, |size| size as usize),
        };
        if wanted == 0 {
            return next.run(request).await;
        }
        let permits = u32::try_from(wanted.clamp(1, self.capacity)).unwrap_or(u32::MAX);
        let Ok(Ok(room)) = tokio::time::timeout(
            self.timeout,
            self.in_flight.clone().acquire_many_owned(permits),
        )
        .await
        else {
            return self.refuse(
                StatusCode::SERVICE_UNAVAILABLE,
                Error::unavailable(
                    "too many request bytes in flight here; try again (FERRY_HTTP_MAX_BYTES_IN_FLIGHT_MB)",
                ),
            );
        };
        let (parts, body) = request.into_parts();
        let known = hint.exact().or(announced);
        let body = match tokio::time::timeout(self.timeout, read(body, known, self.max_body)).await
        {
            Ok(Ok(body)) => body,
            Ok(Err(Unread::TooLarge)) => {
                return self.refuse(
                    StatusCode::PAYLOAD_TOO_LARGE,
                    Error::new(ErrorKind::PayloadTooLarge {
                        size: self.max_body as u64 + 1,
                        limit: self.max_body as u64,
                    }),
                );
            }
            Ok(Err(Unread::Broken(error))) => {
                return self.refuse(
                    StatusCode::BAD_REQUEST,
                    Error::bad_input(".", format!("the request body broke off: {error}")),
                );
            }
            Err(_) => {
                return self.refuse(
                    StatusCode::REQUEST_TIMEOUT,
                    Error::bad_input(
                        ".",
                        format!(
                            "the request body did not arrive within {} ms (FERRY_HTTP_BODY_TIMEOUT_MS)",
                            self.timeout.as_millis()
                        ),
                    ),
                );
            }
        };
        let response = next.run(Request::from_parts(parts, Body::from(body))).await;
        // The body is held until the handler is done with it.
        drop(room);
        response
    }

    /// The platform's error answer, closing the connection: what is left of the request is not
    /// read.
    fn refuse(&self, status: StatusCode, error: Error) -> Response {
        let mut response = (self.refusal)(status, &error);
        response.headers_mut().insert(
            header::CONNECTION,
            header::HeaderValue::from_static("close"),
        );
        response
    }
}
