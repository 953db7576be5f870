//! [`Context`]: how a program (or a function) invokes functions on its backend.

use std::any::{Any, TypeId};
use std::collections::{HashMap, VecDeque};
use std::future::{Future, IntoFuture};
use std::marker::PhantomData;
use std::pin::Pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context as TaskContext, Poll};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::stream::{FuturesOrdered, FuturesUnordered};
use futures::{Stream, StreamExt};

use crate::platform::{Backend, BackendKind, BackendStats};
use crate::progress::Progress;
use crate::wire::{Envelope, InvocationId};
use crate::{Codec, Error, Function, Registry, Result};

/// Default bound on invocations in flight for [`Context::map`] and [`Context::as_completed`].
pub const DEFAULT_FAN_OUT: usize = 1024;

/// A handle to a backend: call, spawn, map and stream invocations.
///
/// Cheap to clone. The host program gets one from [`ferry::run`](crate::run); a function gets one
/// as a `Context` parameter, bound to the backend that invoked it, so functions can invoke
/// functions.
#[derive(Clone)]
pub struct Context {
    inner: Arc<Inner>,
}

struct Inner {
    backend: Backend,
    invocation: Option<Invocation>,
    /// Shared by the contexts handed to the functions this context runs in this process.
    metrics: Arc<crate::metrics::Metrics>,
}

/// The invocation a function is serving.
#[derive(Debug, Clone)]
pub struct Invocation {
    /// Id of the function being run.
    pub function: String,
    /// Id of this invocation.
    pub id: InvocationId,
    /// When the function's time is up.
    pub deadline: Instant,
    /// What the platform said about this invocation: OpenWhisk's activation context
    /// (`__OW_ACTIVATION_ID`, `__OW_NAMESPACE`…), empty on the local platform.
    pub metadata: std::collections::BTreeMap<String, String>,
}

impl std::fmt::Debug for Context {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Context")
            .field("backend", &self.backend_kind())
            .field("invocation", &self.inner.invocation)
            .finish()
    }
}

impl Context {
    pub(crate) fn with_backend(backend: Backend) -> Self {
        Self {
            inner: Arc::new(Inner {
                backend,
                invocation: None,
                metrics: Arc::default(),
            }),
        }
    }

    /// The context handed to a function body.
    pub(crate) fn for_invocation(&self, invocation: Invocation) -> Self {
        Self {
            inner: Arc::new(Inner {
                backend: self.inner.backend.clone(),
                invocation: Some(invocation),
                metrics: self.inner.metrics.clone(),
            }),
        }
    }

    pub(crate) fn backend(&self) -> &Backend {
        &self.inner.backend
    }

    /// Which backend invocations go to.
    pub fn backend_kind(&self) -> BackendKind {
        self.inner.backend.kind()
    }

    /// Workers, cold starts and invocations so far, and per function the calls this context
    /// made: counts, errors, cold starts and latency percentiles.
    pub fn stats(&self) -> BackendStats {
        let mut stats = self.inner.backend.stats();
        let cold_starts = self.inner.backend.cold_starts_by_function();
        stats.functions = self.inner.metrics.snapshot();
        for function in &mut stats.functions {
            function.cold_starts = cold_starts.get(&function.function).copied().unwrap_or(0);
        }
        stats
    }

    /// The invocation being served, when this context was handed to a function.
    pub fn invocation(&self) -> Option<&Invocation> {
        self.inner.invocation.as_ref()
    }

    /// Time left before this invocation's deadline (`None` in the host program).
    pub fn remaining(&self) -> Option<Duration> {
        self.invocation()
            .map(|i| i.deadline.saturating_duration_since(Instant::now()))
    }

    /// Invokes `function` and waits for its output.
    pub fn call<F: Function>(
        &self,
        function: F,
    ) -> impl Future<Output = Result<F::Output>> + Send + 'static {
        self.call_task(function, None)
    }

    /// [`call`](Self::call) as task `task` of a fan-out: its span and its error name the index.
    pub(crate) fn call_task<F: Function>(
        &self,
        function: F,
        task: Option<usize>,
    ) -> impl Future<Output = Result<F::Output>> + Send + 'static {
        let ctx = self.clone();
        let id = InvocationId::next();
        let descriptor = F::DESCRIPTOR;
        // One span per invocation (`FERRY_LOG=debug`): the backend fills in where and how long
        // it waited and ran; closing it logs the whole.
        let span = tracing::debug_span!(
            "invocation",
            function = descriptor.id,
            invocation = %id,
            backend = %ctx.backend_kind(),
            task,
            worker = tracing::field::Empty,
            cold_start = tracing::field::Empty,
            queue_ms = tracing::field::Empty,
            run_ms = tracing::field::Empty,
            outcome = tracing::field::Empty,
            error = tracing::field::Empty,
        );
        let call = async move {
            let started = Instant::now();
            let backend = &ctx.inner.backend;
            let result = if backend.in_process() {
                crate::platform::inline::call(&ctx, function, id).await
            } else {
                send(&ctx, backend, function, id).await
            };
            ctx.inner.metrics.record(
                descriptor.id,
                Some(descriptor.config.memory_mb),
                started.elapsed(),
                result.is_ok(),
            );
            let result = result.map_err(|e| {
                let e = e.in_function(descriptor.id).in_invocation(id);
                match task {
                    Some(index) => e.in_task(index),
                    None => e,
                }
            });
            let span = tracing::Span::current();
            match &result {
                Ok(_) => span.record("outcome", "ok"),
                Err(error) => span
                    .record("outcome", "error")
                    .record("error", tracing::field::display(error)),
            };
            result
        };
        tracing::Instrument::instrument(call, span)
    }

    /// Starts an invocation and returns a handle to await later; dropping the handle does not
    /// cancel the invocation.
    pub fn spawn<F: Function>(&self, function: F) -> Handle<F::Output> {
        Handle {
            join: tokio::spawn(self.call(function)),
        }
    }

    /// Invokes every task with at most [`DEFAULT_FAN_OUT`] in flight and returns the outputs in
    /// task order, or the first error in task order (it names the task: [`Error::task`]).
    /// Configure with [`Map::concurrency`] and [`Map::progress`]; get every result, errors
    /// included, with [`Map::settle`].
    ///
    /// Nothing happens until the map is awaited. Then the tasks are pulled from the iterator one
    /// at a time as room frees up, never more than the concurrency ahead of the oldest task not
    /// yet finished: a fan-out of a million tasks holds a window of them, not a million
    /// arguments (it does hold the outputs, to return them in order). The iterator may borrow
    /// from the caller and build each task as it is pulled; it runs on the task that awaits the
    /// map, so the map's future is `Send` when the iterator is.
    ///
    /// The first error stops the fan-out: no further task is pulled, and the invocations still
    /// in flight are dropped. Their results are not awaited, and a backend that has not yet
    /// started one does not start it (on the `local` platform, an invocation still waiting for
    /// a worker is discarded); one already running may finish, for nobody.
    pub fn map<F: Function, I: IntoIterator<Item = F>>(&self, tasks: I) -> Map<F, I::IntoIter> {
        Map {
            ctx: self.clone(),
            tasks: tasks.into_iter(),
            concurrency: DEFAULT_FAN_OUT,
            progress: None,
            _task: PhantomData,
        }
    }

    /// Invokes every task with bounded concurrency ([`DEFAULT_FAN_OUT`] unless
    /// [`Completions::concurrency`] says otherwise) and yields `(index, result)` in completion
    /// order (Cppless's `wait_one`). More tasks can be pushed while it runs.
    ///
    /// Tasks are pulled from the iterator as room frees up, one ahead of those in flight, so
    /// the first results arrive before a long iterator is exhausted and memory holds a window
    /// of tasks, not all of them. One task is pulled here, the rest as results are awaited.
    pub fn as_completed<F: Function, I: IntoIterator<Item = F>>(
        &self,
        tasks: I,
    ) -> Completions<F, I::IntoIter> {
        let tasks = tasks.into_iter();
        let total = known_total(&tasks);
        let enabled = self.progress_enabled(total, None);
        let mut completions = Completions {
            ctx: self.clone(),
            tasks: Some(tasks),
            next_task: None,
            pushed: VecDeque::new(),
            running: FuturesUnordered::new(),
            next_index: 0,
            concurrency: DEFAULT_FAN_OUT,
            progress: Progress::new(total, enabled),
        };
        completions.pull_next();
        completions
    }

    /// Invokes a function by id (or unique name) with encoded arguments and returns its encoded
    /// output: what `ferry invoke` and the HTTP transports do. An empty JSON body is `{}`.
    pub async fn invoke(
        &self,
        function: &str,
        codec: Codec,
        arguments: impl Into<Bytes>,
    ) -> Result<Bytes> {
        let descriptor = Registry::global()
            .ok()
            .and_then(|r| r.lookup(function).ok())
            .map(|r| r.descriptor());
        let id_text = descriptor.map_or(function, |d| d.id);
        let id = InvocationId::next();
        let envelope = self.envelope(id_text, id, codec);
        self.inner
            .backend
            .invoke(self, envelope, arguments.into(), descriptor)
            .await
            .map_err(|e| e.in_function(id_text).in_invocation(id))
    }

    /// Per-process state of type `T`, created by `init` the first time any invocation in this
    /// process asks for it and shared by every later one (a warm instance reuses it).
    ///
    /// State is keyed by its type, like request extensions: two functions asking for a `u32`
    /// share one. Give each piece of state its own type (`struct ModelCache(..)`).
    pub fn instance<T: Send + Sync + 'static>(&self, init: impl FnOnce() -> T) -> Arc<T> {
        let value = instance_slot::<T>()
            .get_or_init(|| Arc::new(init()))
            .clone();
        downcast_instance(value)
    }

    /// Per-process state as [`instance`](Self::instance), for state whose creation can fail (a
    /// connection, a file): an error is returned and not kept, so a later invocation tries
    /// again. Under contention `init` may run more than once; the first value stored is kept.
    pub fn try_instance<T: Send + Sync + 'static, E>(
        &self,
        init: impl FnOnce() -> std::result::Result<T, E>,
    ) -> std::result::Result<Arc<T>, E> {
        let slot = instance_slot::<T>();
        if let Some(value) = slot.get() {
            return Ok(downcast_instance(value.clone()));
        }
        let created: Arc<dyn Any + Send + Sync> = Arc::new(init()?);
        let value = slot.get_or_init(|| created).clone();
        Ok(downcast_instance(value))
    }

    /// Stops the backend's workers. Pending invocations end with an `Unavailable` error.
    pub async fn shutdown(&self) {
        self.inner.backend.shutdown().await;
    }

    pub(crate) fn envelope(&self, function: &str, id: InvocationId, codec: Codec) -> Envelope {
        let mut envelope = Envelope::new(function, codec);
        envelope.invocation = id;
        if let Some(invocation) = self.invocation() {
            // A nested call cannot outlive the invocation that waits for it.
            envelope.parent = Some(invocation.id);
            let remaining = invocation
                .deadline
                .saturating_duration_since(Instant::now());
            envelope.deadline_ms = Some(
                crate::wire::unix_ms()
                    .saturating_add(u64::try_from(remaining.as_millis()).unwrap_or(u64::MAX)),
            );
        }
        envelope
    }

    /// Whether a fan-out of `total` tasks (`None`: not known yet) shows a progress bar.
    fn progress_enabled(&self, total: Option<u64>, choice: Option<bool>) -> bool {
        choice.unwrap_or_else(|| {
            self.invocation().is_none() && total.is_none_or(|n| n > 1) && crate::progress::wanted()
        })
    }
}

/// A typed call on a backend outside this process: encode, send, decode.
async fn send<F: Function>(
    ctx: &Context,
    backend: &Backend,
    function: F,
    id: InvocationId,
) -> Result<F::Output> {
    let descriptor = F::DESCRIPTOR;
    let codec = backend.wire_codec();
    let (payload, blobs) =
        crate::shared::encode_arguments(codec, &function, backend.delivers_shared())?;
    let mut envelope = ctx.envelope(descriptor.id, id, codec);
    envelope.blobs = blobs.ids().to_vec();
    let output = backend
        .invoke(ctx, envelope, Bytes::from(payload), Some(descriptor))
        .await?;
    // The blobs stay servable until the invocation has ended.
    drop(blobs);
    backend.decode_output(&output)
}

type InstanceSlot = Arc<OnceLock<Arc<dyn Any + Send + Sync>>>;

/// The process's slot for instance state of type `T`.
fn instance_slot<T: 'static>() -> InstanceSlot {
    static STATE: OnceLock<Mutex<HashMap<TypeId, InstanceSlot>>> = OnceLock::new();
    STATE
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .entry(TypeId::of::<T>())
        .or_default()
        .clone()
}

fn downcast_instance<T: Send + Sync + 'static>(value: Arc<dyn Any + Send + Sync>) -> Arc<T> {
    value
        .downcast::<T>()
        .unwrap_or_else(|_| unreachable!("instance state is keyed by its type"))
}

/// An invocation started with [`Context::spawn`]; await it for the output.
#[derive(Debug)]
pub struct Handle<T> {
    join: tokio::task::JoinHandle<Result<T>>,
}

impl<T> Future for Handle<T> {
    type Output = Result<T>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Result<T>> {
        Pin::new(&mut self.join).poll(cx).map(|joined| {
            joined
                .unwrap_or_else(|e| Err(Error::unavailable(format!("invocation task ended: {e}"))))
        })
    }
}

/// How many tasks an iterator says it has: its exact length when it knows it, its upper bound
/// when it only knows that (the total is corrected when it ends), else `None`.
fn known_total(tasks: &impl Iterator) -> Option<u64> {
    tasks.size_hint().1.map(|n| n as u64)
}

/// Results reserved up front: as many as the tasks when the iterator knows how many it has (up
/// to a bound), none when it does not (a `filter`, or an endless iterator a failure will stop).
fn room_for_results(tasks: &impl Iterator) -> usize {
    const MOST_RESERVED: usize = 1 << 20;
    match tasks.size_hint() {
        (lower, Some(upper)) if lower == upper => lower.min(MOST_RESERVED),
        _ => 0,
    }
}

/// One invocation of a fan-out, boxed so that a fan-out's future has a name.
type Call<T> = Pin<Box<dyn Future<Output = Result<T>> + Send>>;

/// A fan-out built by [`Context::map`]: the tasks' iterator `I`, not yet pulled. Await it for
/// the outputs in task order, or call [`settle`](Self::settle) for every result.
#[must_use = "a map does nothing until awaited"]
pub struct Map<F, I = std::vec::IntoIter<F>> {
    ctx: Context,
    tasks: I,
    concurrency: usize,
    progress: Option<bool>,
    _task: PhantomData<fn() -> F>,
}

impl<F, I> std::fmt::Debug for Map<F, I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Map")
            .field("ctx", &self.ctx)
            .field("concurrency", &self.concurrency)
            .field("progress", &self.progress)
            .finish_non_exhaustive()
    }
}

impl<F: Function, I: Iterator<Item = F>> Map<F, I> {
    /// At most `n` invocations in flight (at least 1).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// Shows or hides the progress bar (default: shown on a terminal for host fan-outs).
    pub fn progress(mut self, show: bool) -> Self {
        self.progress = Some(show);
        self
    }

    /// Runs every task and returns every result in task order, errors included.
    pub async fn settle(self) -> Vec<Result<F::Output>> {
        let mut window = self.window();
        let mut results = Vec::with_capacity(window.tasks.as_ref().map_or(0, room_for_results));
        while let Some(result) = window.next().await {
            results.push(result);
        }
        results
    }

    fn window(self) -> Window<F, I> {
        let total = known_total(&self.tasks);
        let enabled = self.ctx.progress_enabled(total, self.progress);
        Window {
            ctx: self.ctx,
            tasks: Some(self.tasks),
            next_index: 0,
            concurrency: self.concurrency,
            running: FuturesOrdered::new(),
            progress: Progress::new(total, enabled),
        }
    }
}

impl<F: Function, I: Iterator<Item = F>> IntoFuture for Map<F, I> {
    type Output = Result<Vec<F::Output>>;
    type IntoFuture = MapFuture<F, I>;

    fn into_future(self) -> Self::IntoFuture {
        let window = self.window();
        let outputs = Vec::with_capacity(window.tasks.as_ref().map_or(0, room_for_results));
        MapFuture { window, outputs }
    }
}

/// The calls of an ordered fan-out: at most `concurrency` in flight, counted from the oldest
/// not yet yielded, each task pulled from the iterator only when there is room for it. Yields
/// the results in task order.
struct Window<F: Function, I> {
    ctx: Context,
    /// `None` once the iterator has ended (or the fan-out stopped).
    tasks: Option<I>,
    next_index: usize,
    concurrency: usize,
    running: FuturesOrdered<Call<F::Output>>,
    progress: Progress,
}

impl<F: Function, I: Iterator<Item = F>> Window<F, I> {
    /// Starts tasks until the window is full or the iterator has ended.
    fn fill(&mut self) {
        while self.running.len() < self.concurrency {
            let Some(tasks) = &mut self.tasks else {
                return;
            };
            let Some(task) = tasks.next() else {
                self.tasks = None;
                self.progress.set_total(self.next_index as u64);
                return;
            };
            let index = self.next_index;
            self.next_index += 1;
            self.running
                .push_back(Box::pin(self.ctx.call_task(task, Some(index))));
        }
    }

    /// Pulls no more tasks and drops the invocations in flight.
    fn stop(&mut self) {
        self.tasks = None;
        self.running = FuturesOrdered::new();
    }
}

impl<F: Function, I: Iterator<Item = F>> Stream for Window<F, I> {
    type Item = Result<F::Output>;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        self.fill();
        let polled = self.running.poll_next_unpin(cx);
        if let Poll::Ready(Some(_)) = &polled {
            self.progress.inc();
        }
        polled
    }
}

// The iterator is never pinned: it is only ever called through `&mut`.
impl<F: Function, I> Unpin for Window<F, I> {}

/// The future of an awaited [`Map`]: the outputs in task order, or the first error.
#[must_use = "futures do nothing unless polled"]
pub struct MapFuture<F: Function, I> {
    window: Window<F, I>,
    outputs: Vec<F::Output>,
}

impl<F: Function, I> std::fmt::Debug for MapFuture<F, I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MapFuture")
            .field("finished", &self.outputs.len())
            .field("running", &self.window.running.len())
            .field("pulled", &self.window.next_index)
            .finish()
    }
}

impl<F: Function, I: Iterator<Item = F>> Future for MapFuture<F, I> {
    type Output = Result<Vec<F::Output>>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        loop {
            match std::task::ready!(this.window.poll_next_unpin(cx)) {
                Some(Ok(output)) => this.outputs.push(output),
                Some(Err(error)) => {
                    // Fail fast means stop: nothing more is pulled or awaited.
                    this.window.stop();
                    return Poll::Ready(Err(error));
                }
                None => return Poll::Ready(Ok(std::mem::take(&mut this.outputs))),
            }
        }
    }
}

// Nothing in it is ever pinned: the outputs are moved out, the iterator called through `&mut`.
impl<F: Function, I> Unpin for MapFuture<F, I> {}

type Running<T> = Pin<Box<dyn Future<Output = (usize, Result<T>)> + Send>>;

/// Results in completion order, from [`Context::as_completed`]. A [`Stream`] of
/// `(task index, result)`; [`next`](Self::next) needs no trait import.
#[must_use = "a completion stream does nothing until polled"]
pub struct Completions<F: Function, I = std::vec::IntoIter<F>> {
    ctx: Context,
    /// `None` once the iterator has ended.
    tasks: Option<I>,
    /// The iterator's next task, pulled ahead so that [`is_empty`](Self::is_empty) knows:
    /// `None` only once the iterator has ended.
    next_task: Option<F>,
    /// Tasks pushed, to run after the iterator's.
    pushed: VecDeque<F>,
    running: FuturesUnordered<Running<F::Output>>,
    next_index: usize,
    concurrency: usize,
    progress: Progress,
}

impl<F: Function, I: Iterator<Item = F>> std::fmt::Debug for Completions<F, I> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Completions")
            .field("pending", &(self.len() - self.running.len()))
            .field("running", &self.running.len())
            .finish()
    }
}

impl<F: Function, I: Iterator<Item = F>> Completions<F, I> {
    /// At most `n` invocations in flight (at least 1).
    pub fn concurrency(mut self, n: usize) -> Self {
        self.concurrency = n.max(1);
        self
    }

    /// Adds a task; it runs after the iterator's remaining tasks and gets the next index.
    pub fn push(&mut self, task: F) {
        self.pushed.push_back(task);
        self.progress.grow(1);
    }

    /// Tasks not yet finished: running and waiting. The tasks the iterator has not given yet
    /// count as many as it says it has at least (`size_hint`), which is exact for vectors,
    /// ranges and the like.
    pub fn len(&self) -> usize {
        let unpulled = self.tasks.as_ref().map_or(0, |t| t.size_hint().0);
        (self.running.len() + self.pushed.len() + usize::from(self.next_task.is_some()))
            .saturating_add(unpulled)
    }

    /// Whether every task has finished.
    pub fn is_empty(&self) -> bool {
        self.running.is_empty() && self.next_task.is_none() && self.pushed.is_empty()
    }

    /// The next result to finish, or `None` when every task has finished.
    pub async fn next(&mut self) -> Option<(usize, Result<F::Output>)> {
        StreamExt::next(self).await
    }

    /// Pulls the iterator's next task ahead, unless one is already.
    fn pull_next(&mut self) {
        if self.next_task.is_some() {
            return;
        }
        let Some(tasks) = &mut self.tasks else {
            return;
        };
        self.next_task = tasks.next();
        if self.next_task.is_none() {
            self.tasks = None;
            self.progress
                .set_total((self.next_index + self.pushed.len()) as u64);
        }
    }

    fn top_up(&mut self) {
        while self.running.len() < self.concurrency {
            let task = match self.next_task.take() {
                Some(task) => task,
                None => match self.pushed.pop_front() {
                    Some(task) => task,
                    None => break,
                },
            };
            let index = self.next_index;
            self.next_index += 1;
            let call = self.ctx.call_task(task, Some(index));
            self.running
                .push(Box::pin(async move { (index, call.await) }));
            self.pull_next();
        }
    }
}

impl<F: Function, I: Iterator<Item = F>> Stream for Completions<F, I> {
    type Item = (usize, Result<F::Output>);

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut TaskContext<'_>) -> Poll<Option<Self::Item>> {
        self.top_up();
        let polled = self.running.poll_next_unpin(cx);
        if let Poll::Ready(Some(_)) = &polled {
            self.progress.inc();
        }
        polled
    }
}

// The iterator is never pinned: it is only ever called through `&mut`.
impl<F: Function, I> Unpin for Completions<F, I> {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_instance_state_is_not_kept() {
        struct Connection(u32);
        let ctx = Context::inline();
        let mut attempts = 0;
        let mut connect = |fail: bool| {
            attempts += 1;
            if fail {
                Err("refused")
            } else {
                Ok(Connection(attempts))
            }
        };
        assert_eq!(ctx.try_instance(|| connect(true)).err(), Some("refused"));
        let first = ctx.try_instance(|| connect(false)).unwrap();
        assert_eq!(first.0, 2, "the failed attempt was not kept");
        let again = ctx.try_instance(|| connect(false)).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "the value is kept");
        assert_eq!(ctx.instance(|| Connection(99)).0, 2, "one slot per type");
    }
}
