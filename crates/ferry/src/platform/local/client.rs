//! The `local` backend: the embedded platform. Warm worker processes of this executable, started
//! on demand up to a maximum, each serving many invocations at once over a Unix socket.
//!
//! Scheduling follows the platforms ferry deploys to: a worker is an instance, a function's
//! `concurrency` is how many of its invocations one instance runs at once, work beyond every
//! instance's capacity waits in a per-function queue, and a new instance starts (a cold start)
//! while fewer than `max_workers` run. Work spreads before it packs: an invocation goes to an
//! idle (or still starting) worker, else to a new one while fewer than `max_workers` run, and
//! only then to the least-loaded busy worker with a free slot. While every worker is busy, a
//! worker runs the nested invocations it has room for (a free slot of the function) itself:
//! another process would only compete with it for the same cores, and the round trip through
//! the platform costs more than a short invocation. Once a worker is idle, nested invocations
//! come to the platform again and go to it. Idle workers are reaped. A worker that crashes,
//! exceeds its memory limit or stops answering is replaced, and every invocation it held ends
//! with the matching error: none is lost and none hangs.

mod worker;

use std::collections::{HashMap, HashSet, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::future::BoxFuture;
use tokio::sync::{mpsc, oneshot};

use super::protocol::{self, Frame};
use crate::platform::{BackendStats, RetryPolicy, Transport};
use crate::wire::Envelope;
use crate::{
    BackendKind, Error, ErrorKind, ExitReason, FunctionConfig, FunctionDescriptor, Registry, Result,
};

/// Settings of the local platform.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct LocalConfig {
    /// Most worker processes at once (`FERRY_LOCAL_WORKERS`; default: the number of cores).
    pub max_workers: usize,
    /// A worker idle this long is stopped (`FERRY_LOCAL_IDLE_MS`; default 30 s).
    pub idle_timeout: Duration,
    /// The worker executable (`FERRY_WORKER_EXE`; default: this executable). Tests of a host
    /// program point it at the program's binary.
    pub worker_exe: Option<PathBuf>,
    /// Memory limit of one worker in MiB (`FERRY_LOCAL_MEMORY_MB`; default: the largest
    /// `memory_mb` of the functions the worker serves, as a container sized for all of them, which
    /// the worker reports when it starts; 0 = none).
    pub memory_limit_mb: Option<u64>,
    /// How long past its timeout an invocation may stay unanswered before its worker is deemed
    /// stuck and killed.
    pub unresponsive_grace: Duration,
    /// Invocations a worker may hold beyond a function's `concurrency`, waiting in the worker to
    /// start the moment a running one ends (`FERRY_LOCAL_PREFETCH`; default 0). It hides the
    /// round trip through the host between two tasks, which only matters for tasks of well under
    /// a millisecond; with uneven tasks it can leave one worker idle while another holds work.
    pub prefetch: u32,
    /// How often an invocation runs again when its worker crashed, broke or was stopped while it
    /// ran (`FERRY_LOCAL_RETRIES`). Unset, functions marked `idempotent` get
    /// [`IDEMPOTENT_RETRIES`](Self::IDEMPOTENT_RETRIES) and others none; set, it applies to every
    /// function. Its own errors, timeouts and running out of memory are never retried. A retried
    /// invocation may have run partly, or wholly, before; the caller still gets exactly one result.
    pub retries: Option<u32>,
    /// Environment variables set in every worker, on top of the host's environment (which
    /// workers inherit): settings a host learns at run time, without `std::env::set_var`.
    pub env: Vec<(String, String)>,
}

impl Default for LocalConfig {
    fn default() -> Self {
        Self {
            max_workers: std::thread::available_parallelism().map_or(2, usize::from),
            idle_timeout: Duration::from_secs(30),
            worker_exe: None,
            memory_limit_mb: None,
            unresponsive_grace: Duration::from_secs(2),
            prefetch: 0,
            retries: None,
            env: Vec::new(),
        }
    }
}

impl LocalConfig {
    /// Retries of a function marked `idempotent` when [`retries`](Self::retries) is unset: Ray's
    /// default for tasks.
    pub const IDEMPOTENT_RETRIES: u32 = 3;

    /// Retries of one invocation of `function` (its descriptor, when the caller had one).
    fn retries_of(&self, function: Option<&FunctionDescriptor>) -> u32 {
        match (self.retries, function) {
            (Some(retries), _) => retries,
            (None, Some(function)) if function.config.idempotent => Self::IDEMPOTENT_RETRIES,
            (None, _) => 0,
        }
    }

    /// Defaults overridden by the `FERRY_LOCAL_*` and `FERRY_WORKER_EXE` variables.
    pub fn from_env() -> Result<Self> {
        use crate::config::{
            LOCAL_IDLE_MS, LOCAL_MEMORY_MB, LOCAL_PREFETCH, LOCAL_RETRIES, LOCAL_WORKERS,
            WORKER_EXE,
        };
        let mut config = Self::default();
        if let Some(n) = LOCAL_WORKERS.number()? {
            config.max_workers = n;
        }
        if let Some(ms) = LOCAL_IDLE_MS.number()? {
            config.idle_timeout = Duration::from_millis(ms);
        }
        config.memory_limit_mb = LOCAL_MEMORY_MB.number()?;
        if let Some(prefetch) = LOCAL_PREFETCH.number()? {
            config.prefetch = prefetch;
        }
        if let Some(retries) = LOCAL_RETRIES.number()? {
            config.retries = Some(retries);
        }
        config.worker_exe = WORKER_EXE.text().map(PathBuf::from);
        Ok(config)
    }

    /// Sets [`max_workers`](Self::max_workers).
    #[must_use]
    pub fn max_workers(mut self, n: usize) -> Self {
        self.max_workers = n;
        self
    }

    /// Sets [`worker_exe`](Self::worker_exe).
    #[must_use]
    pub fn worker_exe(mut self, exe: impl Into<PathBuf>) -> Self {
        self.worker_exe = Some(exe.into());
        self
    }

    /// Sets [`idle_timeout`](Self::idle_timeout).
    #[must_use]
    pub fn idle_timeout(mut self, idle: Duration) -> Self {
        self.idle_timeout = idle;
        self
    }

    /// Sets [`prefetch`](Self::prefetch).
    #[must_use]
    pub fn prefetch(mut self, n: u32) -> Self {
        self.prefetch = n;
        self
    }

    /// Sets [`retries`](Self::retries).
    #[must_use]
    pub fn retries(mut self, n: u32) -> Self {
        self.retries = Some(n);
        self
    }

    /// Sets an environment variable in every worker (see [`env`](Self::env)).
    #[must_use]
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.push((key.into(), value.into()));
        self
    }

    /// Sets [`memory_limit_mb`](Self::memory_limit_mb) (0 = none).
    #[must_use]
    pub fn memory_limit_mb(mut self, mb: u64) -> Self {
        self.memory_limit_mb = Some(mb);
        self
    }
}

/// The handle contexts hold; dropping the last one stops the workers.
pub(crate) struct LocalBackend {
    shared: Arc<Scheduler>,
}

impl Drop for LocalBackend {
    fn drop(&mut self) {
        self.shared.close();
    }
}

impl LocalBackend {
    pub(crate) fn new(config: LocalConfig) -> Result<Self> {
        crate::role::check_may_host(true, config.worker_exe.is_some())?;
        if config.max_workers == 0 {
            return Err(Error::config(
                "the local platform needs at least one worker",
            ));
        }
        let exe = match &config.worker_exe {
            Some(exe) => exe.clone(),
            None => std::env::current_exe()
                .map_err(|e| Error::unavailable(format!("cannot locate this executable: {e}")))?,
        };
        Ok(Self {
            shared: Arc::new(Scheduler {
                config,
                exe,
                state: Mutex::new(SchedulerState::default()),
                next_slot: AtomicU64::new(1),
                cold_starts: AtomicU64::new(0),
                invocations: AtomicU64::new(0),
            }),
        })
    }
}

impl Transport for LocalBackend {
    fn kind(&self) -> BackendKind {
        BackendKind::Local
    }

    fn invoke(
        &self,
        _ctx: &crate::Context,
        envelope: Envelope,
        payload: Bytes,
        descriptor: Option<&'static FunctionDescriptor>,
    ) -> BoxFuture<'static, Result<Bytes>> {
        let shared = self.shared.clone();
        let retry = RetryPolicy::NEVER
            .attempts(self.shared.config.retries_of(descriptor).saturating_add(1))
            .base_delay(Duration::from_millis(10));
        Box::pin(async move {
            retry
                .run_while(
                    || shared.invoke(envelope.clone(), payload.clone(), descriptor),
                    failed_under_it,
                )
                .await
        })
    }

    fn stats(&self) -> Option<BackendStats> {
        Some(self.shared.stats())
    }

    fn delivers_shared(&self) -> bool {
        true
    }

    fn shutdown(&self) {
        self.shared.close();
    }

    fn cold_starts_by_function(&self) -> HashMap<String, u64> {
        self.shared
            .lock()
            .cold_starts_by_function
            .iter()
            .map(|(function, n)| (function.to_string(), *n))
            .collect()
    }
}

/// No invocation's slot: slots count from 1.
const NO_SLOT: u64 = 0;

/// What an invocation whose worker was stopped under it fails with.
const STOPPED_UNDER_IT: &str = "the worker was stopped while the invocation ran";

/// Whether the invocation failed because of its worker, not itself: it may run again elsewhere.
fn failed_under_it(error: &Error) -> bool {
    match error.kind() {
        ErrorKind::WorkerCrashed { .. } | ErrorKind::Protocol { .. } => true,
        ErrorKind::Unavailable { message } => message == STOPPED_UNDER_IT,
        _ => false,
    }
}

struct Scheduler {
    config: LocalConfig,
    exe: PathBuf,
    state: Mutex<SchedulerState>,
    next_slot: AtomicU64,
    cold_starts: AtomicU64,
    invocations: AtomicU64,
}

#[derive(Default)]
struct SchedulerState {
    workers: Vec<Worker>,
    queues: HashMap<Arc<str>, VecDeque<Job>>,
    next_worker: u64,
    monitor_running: bool,
    closed: bool,
    /// Invocations that waited for a worker started for them, per function.
    cold_starts_by_function: HashMap<Arc<str>, u64>,
    /// Why workers of this executable cannot serve (a worker refused, or exited before it
    /// started): every invocation fails with it instead of starting another worker.
    refused: Option<Error>,
    /// What the workers were last told: every one of them busy, and no more may start.
    all_busy: bool,
}

type Reply = oneshot::Sender<Result<Bytes>>;

struct Job {
    slot: u64,
    function: Arc<str>,
    limits: Limits,
    frame: Bytes,
    reply: Reply,
    submitted: Instant,
    /// The caller's invocation span: where the job ran and how long it waited go there.
    span: tracing::Span,
}

#[derive(Clone, Copy)]
struct Limits {
    concurrency: u32,
    timeout: Duration,
    /// How long the worker may still take after the body, forwarding a chained flow to the
    /// stages after this one.
    forwarding: Duration,
}

struct Worker {
    id: u64,
    /// 0 once the process may have been reaped: no signal may be sent to a reused pid.
    pid: u32,
    started: Instant,
    /// Said hello: until then, time spent starting does not count against invocations.
    ready: bool,
    /// Its memory limit, known from its hello: the configured one, else its own functions'
    /// largest `memory_mb` (the worker's, not the caller's: the two may be different programs).
    memory_limit_mb: Option<u64>,
    stopped_at: Option<Instant>,
    /// `None` once the worker is asked to leave: closing the socket makes it exit.
    frames: Option<mpsc::UnboundedSender<Bytes>>,
    inflight: HashMap<u64, Inflight>,
    per_function: HashMap<Arc<str>, u32>,
    /// Takes no new work (idle, stuck thread, shutting down).
    retiring: bool,
    last_active: Instant,
    kill_reason: Option<KillReason>,
    /// What it sent that the protocol does not allow, naming it.
    violation: Option<String>,
    /// Which invocations' threads took its memory, while it has a limit and work.
    faults: FaultLedger,
}

/// Page faults a worker's threads took while it held invocations, by invocation: when the
/// worker passes its memory limit, the one whose thread took clearly the most is the cause and
/// the others are bystanders.
#[derive(Default)]
struct FaultLedger {
    /// Each thread's count at the last sample; `None` before the first.
    last: Option<HashMap<u32, u64>>,
    /// Taken by the threads of each in-flight sync body, by the low bits of its slot.
    by_label: HashMap<u64, u64>,
    /// Taken by every other thread meanwhile (async bodies, the runtime, decoding).
    elsewhere: u64,
}

impl FaultLedger {
    fn record(&mut self, threads: Vec<worker::ThreadFaults>, inflight: &HashMap<u64, Inflight>) {
        let labels: HashSet<u64> = inflight
            .keys()
            .map(|slot| slot & crate::platform::local::LABEL_MASK)
            .collect();
        let first = self.last.is_none();
        let last = self.last.take().unwrap_or_default();
        let mut now = HashMap::with_capacity(threads.len());
        for thread in threads {
            let before = match last.get(&thread.tid) {
                Some(&before) => before,
                // Before the first sample nothing is known; after it, a thread is new.
                None if first => thread.minor_faults,
                None => 0,
            };
            let taken = thread.minor_faults.saturating_sub(before);
            match thread.label.filter(|label| labels.contains(label)) {
                Some(label) => *self.by_label.entry(label).or_default() += taken,
                None => self.elsewhere += taken,
            }
            now.insert(thread.tid, thread.minor_faults);
        }
        self.last = Some(now);
        self.by_label.retain(|label, _| labels.contains(label));
    }

    /// The slot whose thread took at least twice the pages of any other thread or invocation,
    /// if one did.
    fn culprit(&self, inflight: &HashMap<u64, Inflight>) -> Option<u64> {
        let mut taken: Vec<(Option<u64>, u64)> = self
            .by_label
            .iter()
            .map(|(label, faults)| (Some(*label), *faults))
            .collect();
        taken.push((None, self.elsewhere));
        taken.sort_unstable_by_key(|(_, faults)| std::cmp::Reverse(*faults));
        let label = match taken.as_slice() {
            [(Some(label), most), rest @ ..]
                if *most > 0 && rest.first().is_none_or(|(_, next)| *most >= 2 * next) =>
            {
                *label
            }
            _ => return None,
        };
        inflight
            .keys()
            .copied()
            .find(|slot| slot & crate::platform::local::LABEL_MASK == label)
    }
}

struct Inflight {
    function: Arc<str>,
    /// A chained stage whose body ended: it no longer counts against the function's capacity.
    released: bool,
    reply: Reply,
    span: tracing::Span,
    dispatched: Instant,
    timeout: Duration,
    /// Longest the worker may take to answer: queued behind prefetched work, or behind a nested
    /// invocation the worker runs itself in the slot this one needs, then run.
    answer_within: Duration,
}

#[derive(Clone, Copy)]
enum KillReason {
    OutOfMemory {
        limit_mb: u64,
        used_mb: u64,
        /// The invocation that took the memory, if one clearly did: the others were bystanders.
        cause: Option<u64>,
    },
    Unresponsive {
        overdue_slot: u64,
        limit: Duration,
    },
    NeverStarted,
    Stopped,
    /// Its socket broke: the process is gone or going.
    Broken,
    /// It sent what the protocol does not allow ([`Worker::violation`] says what).
    Protocol,
}

/// How a worker ended, as its reader task saw it.
#[derive(Debug, Clone, Copy)]
pub(super) enum Ending {
    Exited(ExitReason),
    /// The async runtime that drove the worker's tasks shut down.
    RuntimeGone,
}

/// How long a new worker may take to say hello before it is killed.
const START_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a stopped worker may take to exit before it is killed.
const STOP_TIMEOUT: Duration = Duration::from_secs(5);

impl Worker {
    fn load(&self, function: &str) -> u32 {
        self.per_function.get(function).copied().unwrap_or(0)
    }

    /// It ended, or is ending, on its own before it ever served: whether this executable can
    /// serve at all is in doubt.
    fn ended_before_serving(&self) -> bool {
        !self.ready && matches!(self.kill_reason, None | Some(KillReason::Broken))
    }

    fn kill(&mut self, reason: KillReason) {
        if self.kill_reason.is_none() {
            self.kill_reason = Some(reason);
        }
        self.retiring = true;
        if self.pid != 0 {
            // SAFETY: plain syscall. The pid is our child and not yet reaped: the reader task
            // sets it to 0 (under the state lock) before it reaps.
            unsafe {
                libc::kill(self.pid as libc::pid_t, libc::SIGKILL);
            }
        }
    }

    fn stop(&mut self) {
        self.retiring = true;
        if self.kill_reason.is_none() {
            self.kill_reason = Some(KillReason::Stopped);
        }
        self.stopped_at.get_or_insert_with(Instant::now);
        self.frames = None;
    }
}

impl SchedulerState {
    /// Tells the workers when whether all of them are busy (each holds work) has changed: while
    /// they are, a worker runs the nested invocations it has room for itself rather than send
    /// them here, where they would only go to a busy worker, or start another process that
    /// competes with it for the same cores. Once one is idle, nested invocations come here
    /// again and go to it.
    fn report_busy(&mut self) {
        let mut live = self.workers.iter().filter(|w| !w.retiring).peekable();
        let all_busy = live.peek().is_some() && live.all(|w| !w.inflight.is_empty());
        if all_busy != self.all_busy {
            self.announce_busy(all_busy);
        }
    }

    fn announce_busy(&mut self, all_busy: bool) {
        self.all_busy = all_busy;
        let frame = protocol::busy(all_busy);
        for worker in self.workers.iter().filter(|w| !w.retiring) {
            if let Some(frames) = &worker.frames {
                let _ = frames.send(frame.clone());
            }
        }
    }

    /// Every queued invocation's reply, the queues left empty: what fails when nothing will run.
    fn take_queued(&mut self) -> Vec<Reply> {
        self.queues
            .drain()
            .flat_map(|(_, queue)| queue)
            .map(|job| job.reply)
            .collect()
    }

    /// Workers that count against the limit: those taking work, and one that is ending before
    /// it ever served, until its exit says whether this executable can serve at all (else a
    /// replacement would start, and end the same way, while that is decided).
    fn live_workers(&self) -> usize {
        self.workers
            .iter()
            .filter(|w| !w.retiring || w.ended_before_serving())
            .count()
    }

    /// The least-loaded live worker holding fewer than `capacity` invocations of `function`.
    fn pick(&self, function: &str, capacity: u32) -> Option<usize> {
        self.workers
            .iter()
            .enumerate()
            .filter(|(_, w)| !w.retiring && w.load(function) < capacity)
            .min_by_key(|(_, w)| w.inflight.len())
            .map(|(index, _)| index)
    }

    /// Sends `job` to the worker (`cold`: started for it); gives it back if the worker can no
    /// longer take it.
    // The job goes back as it came, moved, not built: boxing it would allocate on every call.
    #[allow(clippy::result_large_err)]
    fn assign(&mut self, index: usize, job: Job, prefetch: u32, cold: bool) -> Result<(), Job> {
        // The work that makes every worker busy is preceded by saying so: its first nested
        // invocations then already run where it runs.
        let last_idle = self
            .workers
            .iter()
            .enumerate()
            .all(|(i, w)| w.retiring || (i == index) == w.inflight.is_empty());
        if !self.all_busy && last_idle {
            self.announce_busy(true);
        }
        let worker = &mut self.workers[index];
        let sent = worker
            .frames
            .as_ref()
            .is_some_and(|frames| frames.send(job.frame.clone()).is_ok());
        if !sent {
            // Its writer is gone (its runtime shut down, or it is exiting): retire it.
            worker.kill(KillReason::Broken);
            return Err(job);
        }
        *worker.per_function.entry(job.function.clone()).or_insert(0) += 1;
        worker.last_active = Instant::now();
        job.span.record("worker", worker.id);
        job.span.record("cold_start", cold);
        job.span.record("queue_ms", millis(job.submitted.elapsed()));
        if cold {
            *self
                .cold_starts_by_function
                .entry(job.function.clone())
                .or_insert(0) += 1;
        }
        let worker = &mut self.workers[index];
        worker.inflight.insert(
            job.slot,
            Inflight {
                function: job.function,
                released: false,
                reply: job.reply,
                span: job.span,
                dispatched: Instant::now(),
                timeout: job.limits.timeout,
                answer_within: job
                    .limits
                    .timeout
                    .saturating_mul(prefetch.saturating_add(2))
                    .saturating_add(job.limits.forwarding),
            },
        );
        Ok(())
    }
}

impl Scheduler {
    /// Where to send frames to worker `worker_id`, while it takes them.
    fn frames_of(&self, worker_id: u64) -> Option<mpsc::UnboundedSender<Bytes>> {
        self.lock()
            .workers
            .iter()
            .find(|w| w.id == worker_id)
            .and_then(|w| w.frames.clone())
    }

    fn lock(&self) -> MutexGuard<'_, SchedulerState> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn stats(&self) -> BackendStats {
        BackendStats {
            backend: BackendKind::Local,
            max_workers: self.config.max_workers,
            workers: self.lock().workers.len(),
            cold_starts: self.cold_starts.load(Ordering::Relaxed),
            invocations: self.invocations.load(Ordering::Relaxed),
            functions: Vec::new(),
        }
    }

    async fn invoke(
        self: &Arc<Self>,
        envelope: Envelope,
        payload: Bytes,
        descriptor: Option<&'static FunctionDescriptor>,
    ) -> Result<Bytes> {
        self.invocations.fetch_add(1, Ordering::Relaxed);
        let config = descriptor.map_or(FunctionConfig::DEFAULT, |d| d.config);
        let mut timeout = config.timeout;
        if let Some(remaining) = envelope.remaining() {
            timeout = timeout.min(remaining);
        }
        let mut forwarding = crate::flow::time_after(&envelope);
        if let Some(remaining) = envelope.remaining() {
            forwarding = forwarding.min(remaining);
        }
        let slot = self.next_slot.fetch_add(1, Ordering::Relaxed);
        let frame = protocol::request(slot, &envelope, &payload)?;
        let (reply, outcome) = oneshot::channel();
        self.submit(Job {
            slot,
            function: Arc::from(envelope.function.as_str()),
            limits: Limits {
                concurrency: config.concurrency.max(1),
                timeout,
                forwarding,
            },
            frame,
            reply,
            submitted: Instant::now(),
            span: tracing::Span::current(),
        });
        outcome
            .await
            .unwrap_or_else(|_| Err(Error::unavailable("the local platform stopped")))
    }

    fn submit(self: &Arc<Self>, job: Job) {
        let mut state = self.lock();
        if state.closed || state.refused.is_some() {
            let error = state
                .refused
                .clone()
                .unwrap_or_else(|| Error::unavailable("the local platform is shut down"));
            drop(state);
            let _ = job.reply.send(Err(error));
            return;
        }
        self.ensure_monitor(&mut state);
        let queue = state.queues.entry(job.function.clone()).or_default();
        queue.push_back(job);
        let function = queue.front().map(|j| j.function.clone());
        if let Some(function) = function {
            self.pump(&mut state, &function);
        }
    }

    /// Dispatches queued invocations of `function` ([`dispatch`](Self::dispatch)), then tells
    /// the workers whether all of them are busy now.
    ///
    /// Dispatching: to an idle worker, else to a new worker while fewer than `max_workers` run,
    /// else to the least-loaded worker with a free slot, else as prefetch to a busy worker. An
    /// invocation whose caller has stopped waiting (a fan-out that failed fast dropped it) is
    /// discarded instead: nothing starts for nobody.
    fn pump(self: &Arc<Self>, state: &mut SchedulerState, function: &Arc<str>) {
        self.dispatch(state, function);
        state.report_busy();
    }

    fn dispatch(self: &Arc<Self>, state: &mut SchedulerState, function: &Arc<str>) {
        let prefetch = self.config.prefetch;
        loop {
            let Some(queue) = state.queues.get_mut(function) else {
                return;
            };
            while queue.front().is_some_and(|job| job.reply.is_closed()) {
                if let Some(job) = queue.pop_front() {
                    job.span.record("outcome", "abandoned");
                }
            }
            let Some(limits) = queue.front().map(|job| job.limits) else {
                return;
            };
            let free_slot = state.pick(function, limits.concurrency);
            let may_start = state.live_workers() < self.config.max_workers;
            let mut cold = false;
            let index = match (free_slot, may_start) {
                (Some(index), false) => index,
                // Spreading starts a worker only beside a busy one that runs: one that is
                // still starting takes the work it has room for, as it would without spreading
                // (and an executable that cannot serve is found out by one start, not two).
                (Some(index), true)
                    if state.workers[index].inflight.is_empty() || !state.workers[index].ready =>
                {
                    index
                }
                (busy, true) => match self.start_worker(state) {
                    Ok(index) => {
                        cold = true;
                        index
                    }
                    Err(error) => match busy {
                        // A busy worker with a free slot still takes it.
                        Some(index) => index,
                        None => {
                            // Nothing can run these now; fail them rather than wait forever.
                            if state.live_workers() == 0 {
                                for job in state.queues.remove(function).unwrap_or_default() {
                                    let _ = job.reply.send(Err(error.clone()));
                                }
                            }
                            return;
                        }
                    },
                },
                (None, false) => {
                    match state.pick(function, limits.concurrency.saturating_add(prefetch)) {
                        Some(index) => index,
                        None => return,
                    }
                }
            };
            let Some(job) = state.queues.get_mut(function).and_then(VecDeque::pop_front) else {
                return;
            };
            if let Err(job) = state.assign(index, job, prefetch, cold) {
                // That worker is retired now; the next round picks another.
                if let Some(queue) = state.queues.get_mut(function) {
                    queue.push_front(job);
                }
            }
        }
    }

    fn pump_all(self: &Arc<Self>, state: &mut SchedulerState) {
        let functions: Vec<Arc<str>> = state
            .queues
            .iter()
            .filter(|(_, q)| !q.is_empty())
            .map(|(f, _)| f.clone())
            .collect();
        for function in functions {
            self.pump(state, &function);
        }
        state.queues.retain(|_, q| !q.is_empty());
        state.report_busy();
    }

    fn start_worker(self: &Arc<Self>, state: &mut SchedulerState) -> Result<usize> {
        let id = state.next_worker;
        state.next_worker += 1;
        let started = worker::start(self.clone(), id, &self.exe).map_err(|e| {
            Error::unavailable(format!(
                "cannot start a worker from `{}`: {e}",
                self.exe.display()
            ))
        })?;
        self.cold_starts.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(worker = id, pid = started.pid, "local worker started");
        state.workers.push(Worker {
            id,
            pid: started.pid,
            started: Instant::now(),
            ready: false,
            memory_limit_mb: None,
            stopped_at: None,
            frames: Some(started.frames),
            inflight: HashMap::new(),
            per_function: HashMap::new(),
            retiring: false,
            last_active: Instant::now(),
            kill_reason: None,
            violation: None,
            faults: FaultLedger::default(),
        });
        Ok(state.workers.len() - 1)
    }

    fn on_frame(self: &Arc<Self>, worker_id: u64, frame: Frame) {
        match frame {
            Frame::Response { id, result } => {
                let mut state = self.lock();
                let Some(index) = state.workers.iter().position(|w| w.id == worker_id) else {
                    return;
                };
                let worker = &mut state.workers[index];
                let Some(done) = worker.inflight.remove(&id) else {
                    return;
                };
                done.span
                    .record("run_ms", millis(done.dispatched.elapsed()));
                if !done.released {
                    if let Some(count) = worker.per_function.get_mut(&done.function) {
                        *count = count.saturating_sub(1);
                    }
                }
                worker.last_active = Instant::now();
                if worker.retiring && worker.inflight.is_empty() {
                    worker.stop();
                }
                self.pump(&mut state, &done.function);
                drop(state);
                let _ = done.reply.send(result);
            }
            Frame::Released { id } => {
                // A chained stage's body ended: it waits for the rest of the flow holding none of
                // the function's capacity, which may now run the later stages.
                let mut state = self.lock();
                let Some(worker) = state.workers.iter_mut().find(|w| w.id == worker_id) else {
                    return;
                };
                let Some(inflight) = worker.inflight.get_mut(&id).filter(|i| !i.released) else {
                    return;
                };
                inflight.released = true;
                let function = inflight.function.clone();
                if let Some(count) = worker.per_function.get_mut(&function) {
                    *count = count.saturating_sub(1);
                }
                self.pump(&mut state, &function);
            }
            Frame::Request {
                id,
                envelope,
                payload,
            } => {
                // A function in the worker invokes a function: run it on this platform.
                let frames = self.frames_of(worker_id);
                let shared = self.clone();
                tokio::spawn(async move {
                    let descriptor = Registry::global()
                        .ok()
                        .and_then(|r| r.lookup(&envelope.function).ok())
                        .map(|r| r.descriptor());
                    let result = shared.invoke(envelope, payload, descriptor).await;
                    if let Some(frames) = frames {
                        let _ = frames.send(protocol::response(id, &result));
                    }
                });
            }
            Frame::Fetch { id, blob } => {
                // A worker lacks a shared value's blob: this process holds it while the call
                // that refers to it runs.
                let result =
                    crate::shared::host_blob(&blob).ok_or_else(|| crate::shared::not_held(&blob));
                let frames = self.frames_of(worker_id);
                if let Some(frames) = frames {
                    let _ = frames.send(protocol::response(id, &result));
                }
            }
            Frame::Hello { pid, memory_mb } => {
                let memory_limit_mb = match self.config.memory_limit_mb {
                    Some(0) => None,
                    Some(mb) => Some(mb),
                    None => memory_mb.map(u64::from),
                };
                let mut state = self.lock();
                if let Some(worker) = state.workers.iter_mut().find(|w| w.id == worker_id) {
                    tracing::trace!(worker = worker_id, pid, ?memory_limit_mb, started_in = ?worker.started.elapsed(), "local worker ready");
                    worker.ready = true;
                    worker.memory_limit_mb = memory_limit_mb;
                    // Invocations sent while it started count from now.
                    let now = Instant::now();
                    for inflight in worker.inflight.values_mut() {
                        inflight.dispatched = now;
                    }
                }
            }
            Frame::Refuse { error } => {
                tracing::error!(worker = worker_id, %error, "local worker refused to serve");
                let mut state = self.lock();
                let mut failed = state.take_queued();
                if let Some(worker) = state.workers.iter_mut().find(|w| w.id == worker_id) {
                    failed.extend(worker.inflight.drain().map(|(_, inflight)| inflight.reply));
                    worker.per_function.clear();
                    worker.kill(KillReason::Stopped);
                }
                state.refused = Some(error.clone());
                drop(state);
                for reply in failed {
                    let _ = reply.send(Err(error.clone()));
                }
            }
            Frame::Busy { .. } => {
                self.on_violation(
                    worker_id,
                    "a worker sent `busy`, which only the platform sends".to_owned(),
                );
            }
            Frame::Retire { reason } => {
                tracing::debug!(worker = worker_id, %reason, "local worker retires");
                let mut state = self.lock();
                if let Some(worker) = state.workers.iter_mut().find(|w| w.id == worker_id) {
                    worker.retiring = true;
                    if worker.inflight.is_empty() {
                        worker.stop();
                    }
                }
                self.pump_all(&mut state);
            }
        }
    }

    /// The worker sent what the protocol does not allow: it is stopped, and what it held fails
    /// with a protocol error that names it, not as a crash.
    fn on_violation(&self, worker_id: u64, violation: String) {
        let mut state = self.lock();
        if let Some(worker) = state.workers.iter_mut().find(|w| w.id == worker_id) {
            let named = format!(
                "local worker {worker_id} (pid {}) broke the platform's protocol and was stopped: \
                 {violation}",
                worker.pid
            );
            tracing::error!(worker = worker_id, %violation, "local worker broke the protocol; stopping it");
            worker.violation = Some(named);
            worker.kill(KillReason::Protocol);
        }
    }

    /// The reader saw the socket close and is about to reap the process: its pid must no
    /// longer be signalled or inspected.
    fn on_exiting(&self, worker_id: u64) {
        let mut state = self.lock();
        if let Some(worker) = state.workers.iter_mut().find(|w| w.id == worker_id) {
            worker.pid = 0;
            worker.retiring = true;
        }
    }

    fn on_exit(self: &Arc<Self>, worker_id: u64, ending: Ending) {
        let mut state = self.lock();
        let Some(index) = state.workers.iter().position(|w| w.id == worker_id) else {
            return;
        };
        let worker = state.workers.swap_remove(index);
        let reason = match ending {
            Ending::Exited(reason) => reason,
            Ending::RuntimeGone => ExitReason::Unknown,
        };
        if !worker.inflight.is_empty() || worker.kill_reason.is_none() {
            tracing::warn!(worker = worker_id, %reason, in_flight = worker.inflight.len(), "local worker ended");
        }
        if worker.ended_before_serving() && matches!(ending, Ending::Exited(_)) {
            // It never served: starting another would end the same way, over and over.
            let error = Error::unavailable(format!(
                "the worker `{}` {reason} before it started serving: a worker must be this ferry \
                 program, whose `main` is `#[ferry::main]` (or calls `ferry::run`)",
                self.exe.display()
            ));
            tracing::error!(worker = worker_id, %error, "local worker ended before serving");
            state.refused = Some(error.clone());
            let mut failed = state.take_queued();
            failed.extend(worker.inflight.into_values().map(|inflight| inflight.reply));
            drop(state);
            for reply in failed {
                let _ = reply.send(Err(error.clone()));
            }
            return;
        }
        let failures: Vec<(Reply, Error)> = worker
            .inflight
            .into_iter()
            .map(|(slot, inflight)| {
                let kind = match (ending, worker.kill_reason) {
                    (Ending::RuntimeGone, _) => ErrorKind::Unavailable {
                        message: "the async runtime that drove this worker shut down".to_owned(),
                    },
                    (_, Some(KillReason::NeverStarted)) => ErrorKind::Unavailable {
                        message: format!(
                            "the worker `{}` did not start serving within {} s: a worker must be \
                             this ferry program, whose `main` is `#[ferry::main]` (or calls \
                             `ferry::run`)",
                            self.exe.display(),
                            START_TIMEOUT.as_secs()
                        ),
                    },
                    (
                        _,
                        Some(KillReason::OutOfMemory {
                            limit_mb,
                            used_mb,
                            cause: Some(cause),
                        }),
                    ) if cause != slot => ErrorKind::WorkerCrashed {
                        reason: ExitReason::MemoryLimit { limit_mb, used_mb },
                    },
                    (
                        _,
                        Some(KillReason::OutOfMemory {
                            limit_mb, used_mb, ..
                        }),
                    ) => ErrorKind::OutOfMemory { limit_mb, used_mb },
                    (
                        _,
                        Some(KillReason::Unresponsive {
                            overdue_slot,
                            limit,
                        }),
                    ) if overdue_slot == slot => Error::timeout(limit).kind().clone(),
                    (_, Some(KillReason::Unresponsive { .. })) => ErrorKind::WorkerCrashed {
                        reason: ExitReason::Unresponsive,
                    },
                    (_, Some(KillReason::Stopped)) => ErrorKind::Unavailable {
                        message: STOPPED_UNDER_IT.to_owned(),
                    },
                    (_, Some(KillReason::Protocol)) => ErrorKind::Protocol {
                        message: worker.violation.clone().unwrap_or_default(),
                    },
                    (_, None | Some(KillReason::Broken)) => ErrorKind::WorkerCrashed { reason },
                };
                let error = Error::new(kind).in_function(&inflight.function);
                (inflight.reply, error)
            })
            .collect();
        // A runtime that is shutting down cannot start workers; the next call will.
        if matches!(ending, Ending::Exited(_)) {
            self.pump_all(&mut state);
        }
        drop(state);
        for (reply, error) in failures {
            let _ = reply.send(Err(error));
        }
    }

    fn ensure_monitor(self: &Arc<Self>, state: &mut SchedulerState) {
        if state.monitor_running {
            return;
        }
        let weak: Weak<Self> = Arc::downgrade(self);
        tokio::spawn(async move {
            // However the task ends (even dropped with its runtime), the next call restarts it.
            let _running = MonitorGuard(weak.clone());
            let mut tick = tokio::time::interval(Duration::from_millis(50));
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                let Some(shared) = weak.upgrade() else { return };
                if !shared.watch() {
                    return;
                }
            }
        });
        state.monitor_running = true;
    }

    /// One round of the monitor: memory limits, stuck invocations, idle workers.
    /// Returns false once the platform is closed and empty.
    fn watch(self: &Arc<Self>) -> bool {
        let now = Instant::now();
        let grace = self.config.unresponsive_grace;
        let idle = self.config.idle_timeout;
        // Read outside the lock: a worker may run many threads.
        let to_sample: Vec<(u64, u32)> = self
            .lock()
            .workers
            .iter()
            .filter(|w| w.pid != 0 && w.memory_limit_mb.is_some() && !w.inflight.is_empty())
            .map(|w| (w.id, w.pid))
            .collect();
        let mut samples: HashMap<u64, Vec<worker::ThreadFaults>> = to_sample
            .into_iter()
            .map(|(id, pid)| (id, worker::thread_faults(pid)))
            .collect();
        let mut state = self.lock();
        for worker in &mut state.workers {
            if worker.pid == 0 {
                continue; // exiting: its reader reports the end
            }
            match samples.remove(&worker.id) {
                Some(threads) => worker.faults.record(threads, &worker.inflight),
                None if worker.inflight.is_empty() => worker.faults = FaultLedger::default(),
                None => {}
            }
            if worker
                .stopped_at
                .is_some_and(|stopped| now.duration_since(stopped) > STOP_TIMEOUT)
            {
                worker.kill(KillReason::Stopped);
                continue;
            }
            if worker.kill_reason.is_some() && worker.frames.is_none() && worker.inflight.is_empty()
            {
                continue;
            }
            if !worker.ready {
                if now.duration_since(worker.started) > START_TIMEOUT {
                    worker.kill(KillReason::NeverStarted);
                }
                continue;
            }
            if let (Some(limit_mb), Some(used)) =
                (worker.memory_limit_mb, worker::rss_bytes(worker.pid))
            {
                let used_mb = used >> 20;
                if used_mb > limit_mb {
                    let cause = worker.faults.culprit(&worker.inflight);
                    worker.kill(KillReason::OutOfMemory {
                        limit_mb,
                        used_mb,
                        cause,
                    });
                    continue;
                }
            }
            let overdue = worker
                .inflight
                .iter()
                .filter(|(_, i)| now.duration_since(i.dispatched) > i.answer_within + grace)
                .min_by_key(|(_, i)| i.dispatched)
                .map(|(slot, i)| (*slot, i.timeout));
            if let Some((overdue_slot, limit)) = overdue {
                // A stopped process answers nothing: its invocations did not overrun, it did.
                let overdue_slot = if worker::is_stopped(worker.pid) {
                    NO_SLOT
                } else {
                    overdue_slot
                };
                worker.kill(KillReason::Unresponsive {
                    overdue_slot,
                    limit,
                });
                continue;
            }
            if worker.inflight.is_empty()
                && (worker.retiring || now.duration_since(worker.last_active) > idle)
                && worker.frames.is_some()
            {
                tracing::debug!(worker = worker.id, "stopping idle local worker");
                worker.stop();
            }
        }
        !(state.closed && state.workers.is_empty())
    }

    fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        for worker in &mut state.workers {
            worker.stop();
        }
        let queued = state.take_queued();
        drop(state);
        for reply in queued {
            let _ = reply.send(Err(Error::unavailable("the local platform shut down")));
        }
    }
}

/// Milliseconds to the microsecond, as spans show them.
fn millis(duration: Duration) -> f64 {
    (duration.as_secs_f64() * 1e6).round() / 1e3
}

/// Clears `monitor_running` when the monitor task ends, however it ends.
struct MonitorGuard(Weak<Scheduler>);

impl Drop for MonitorGuard {
    fn drop(&mut self) {
        if let Some(shared) = self.0.upgrade() {
            shared.lock().monitor_running = false;
        }
    }
}
