//! Functions that exercise every path of a backend: success, bad input, user errors, panics,
//! crashes, timeouts, memory exhaustion, nested invocations and per-instance state.
//! `ferry-fixture` is the program that serves them; the tests in `tests/` are its hosts.

pub mod controller;
pub mod moto;
pub mod redis_server;
pub mod registry;

use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use ferry::Context;
use serde::{Deserialize, Serialize};

/// Adds two numbers.
#[ferry::function(concurrency = 64)]
pub fn add(a: i64, b: i64) -> i64 {
    a + b
}

/// A structured argument, to check field paths in bad-input errors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Greeting {
    pub name: String,
    pub times: u8,
}

/// Repeats a greeting.
#[ferry::function(concurrency = 8)]
pub fn greet(greeting: Greeting, punctuation: char) -> String {
    let mut text = String::new();
    for _ in 0..greeting.times {
        text.push_str(&format!("hello {}{punctuation} ", greeting.name));
    }
    text.trim_end().to_owned()
}

/// No parameters at all.
#[ferry::function]
pub fn hello() -> String {
    "hello from a worker".to_owned()
}

/// Fails with a user error unless `n` is even.
#[ferry::function(concurrency = 8)]
pub fn require_even(n: u32) -> Result<u32, String> {
    if n % 2 == 0 {
        Ok(n / 2)
    } else {
        Err(format!("{n} is odd"))
    }
}

/// Panics with the given message.
#[ferry::function(concurrency = 8)]
pub fn explode(message: String) -> u32 {
    panic!("{message}")
}

/// Aborts the whole worker process.
#[ferry::function]
pub fn abort_process() -> u32 {
    std::process::abort()
}

/// Kills the worker with a segmentation fault.
#[ferry::function]
pub fn segfault() -> u32 {
    // A real invalid access: a raised SIGSEGV is swallowed by std's stack-overflow handler.
    let address = std::hint::black_box(8usize) as *mut u32;
    // SAFETY: none; crashing the process is the point of this function.
    unsafe { address.write_volatile(1) };
    0
}

/// Sleeps on a blocking thread (a sync body) for `ms`; its timeout is 300 ms.
#[ferry::function(timeout = "300ms", concurrency = 16)]
pub fn sleep_sync(ms: u64) -> u64 {
    std::thread::sleep(Duration::from_millis(ms));
    ms
}

/// Sleeps asynchronously for `ms`; its timeout is 300 ms.
#[ferry::function(timeout = "300ms", concurrency = 1000)]
pub async fn sleep_async(ms: u64) -> u64 {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    ms
}

/// Spins on a CPU forever: nothing can stop the thread, so its worker must be replaced.
#[ferry::function(timeout = "200ms")]
pub fn spin_forever() -> u64 {
    let mut x = 0u64;
    loop {
        x = std::hint::black_box(x.wrapping_add(1));
    }
}

/// [`spin_forever`] run `inline`, on one of the runtime's own threads.
#[ferry::function(timeout = "200ms", inline)]
pub fn spin_forever_inline() -> u64 {
    let mut x = 0u64;
    loop {
        x = std::hint::black_box(x.wrapping_add(1));
    }
}

/// Whether the body runs on a thread that drives the async runtime: one where `block_on`
/// refuses to start (it panics there; on a blocking-pool thread it runs).
fn on_a_runtime_thread() -> bool {
    let handle = tokio::runtime::Handle::current();
    std::panic::catch_unwind(|| handle.block_on(async {})).is_err()
}

/// Where an `inline` body runs: `true` on the runtime's own threads.
#[ferry::function(inline)]
pub fn runs_on_runtime_inline() -> bool {
    on_a_runtime_thread()
}

/// Where a plain sync body runs: `true` on the runtime's own threads.
#[ferry::function]
pub fn runs_on_runtime_blocking() -> bool {
    on_a_runtime_thread()
}

/// Sleeps `ms` on its thread, holding next to no memory: a bystander.
#[ferry::function(concurrency = 8, timeout = "20s")]
pub fn idle(ms: u64) -> u64 {
    std::thread::sleep(Duration::from_millis(ms));
    ms
}

/// Counts a run in `dir` (one byte appended to `dir/runs`) and returns how many there were.
fn count_run(dir: &str) -> u32 {
    use std::io::Write;
    let path = std::path::Path::new(dir).join("runs");
    let mut runs = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(&path)
        .expect("the runs file opens");
    runs.write_all(b".").expect("the run is counted");
    std::fs::metadata(&path).map_or(0, |m| m.len() as u32)
}

/// Kills its worker the first time it runs for `dir`; answers how often it ran there. Marked
/// `idempotent`, so the local platform runs it again.
#[ferry::function(idempotent)]
pub fn crash_once(dir: String) -> u32 {
    let runs = count_run(&dir);
    if runs == 1 {
        std::process::abort();
    }
    runs
}

/// [`crash_once`], not marked `idempotent`.
#[ferry::function]
pub fn crash_once_unmarked(dir: String) -> u32 {
    let runs = count_run(&dir);
    if runs == 1 {
        std::process::abort();
    }
    runs
}

/// Fails with its own error every time, counting its runs in `dir`, though marked `idempotent`.
#[ferry::function(idempotent)]
pub fn fail_idempotently(dir: String) -> Result<u32, String> {
    Err(format!("run {}", count_run(&dir)))
}

/// Allocates and touches `mb` MiB, 8 MiB at a time, then returns how much it held.
#[ferry::function(memory_mb = 128, timeout = "20s")]
pub fn hog_memory(mb: u64) -> u64 {
    let mut blocks = Vec::new();
    for _ in 0..mb / 8 {
        blocks.push(vec![1u8; 8 << 20]);
        std::thread::sleep(Duration::from_millis(5));
    }
    blocks.iter().map(|b| b.len() as u64).sum::<u64>() >> 20
}

/// Writes `bytes` to the local platform's socket (fd 3) behind the worker's back, as a broken or
/// hostile worker would, then returns how many were written.
#[ferry::function(concurrency = 8)]
pub fn write_to_platform(bytes: Vec<u8>) -> usize {
    // SAFETY: writes a buffer we own to a descriptor; a worker's fd 3 is its platform socket.
    let written = unsafe { libc::write(3, bytes.as_ptr().cast(), bytes.len()) };
    usize::try_from(written).unwrap_or(0)
}

/// The process id of the worker that ran it.
#[ferry::function(concurrency = 64)]
pub fn worker_pid() -> u32 {
    std::process::id()
}

/// An environment variable of the process that runs it.
#[ferry::function(concurrency = 8)]
pub fn env_var(name: String) -> Option<String> {
    std::env::var(name).ok()
}

/// Placed state (Dyninka's `@Placed`): a count kept by the warm instance across invocations,
/// with the process that keeps it.
#[ferry::function(concurrency = 8)]
pub fn count_in_instance(ctx: &Context) -> (u32, u64) {
    struct Visits(std::sync::atomic::AtomicU64);
    let visits = ctx.instance(|| Visits(std::sync::atomic::AtomicU64::new(0)));
    (
        std::process::id(),
        visits.0.fetch_add(1, Ordering::SeqCst) + 1,
    )
}

/// How often this process initialised its instance state, and which process it is.
#[ferry::function(concurrency = 64)]
pub fn instance_state(ctx: &Context) -> (u32, u32) {
    static INITS: AtomicU32 = AtomicU32::new(0);
    let state = ctx.instance(|| {
        INITS.fetch_add(1, Ordering::SeqCst);
        std::process::id()
    });
    (*state, INITS.load(Ordering::SeqCst))
}

/// Recursive Fibonacci where every call above `cutoff` invokes two more.
#[ferry::function(concurrency = 1000, timeout = "60s")]
pub async fn fib(ctx: Context, n: u32, cutoff: u32) -> ferry::Result<u64> {
    if n <= cutoff.max(1) {
        return Ok(fib_sequential(n));
    }
    let left = ctx.spawn(Fib { n: n - 1, cutoff });
    let right = ctx.call(Fib { n: n - 2, cutoff }).await?;
    Ok(left.await? + right)
}

/// The processes that ran the leaves of a binary tree of nested invocations `depth` deep, each
/// leaf holding its slot for `ms`: where a recursive fan-out's invocations were placed.
#[ferry::function(concurrency = 1000, timeout = "60s")]
pub async fn leaf_pids(
    ctx: Context,
    depth: u32,
    ms: u64,
) -> ferry::Result<std::collections::BTreeSet<u32>> {
    if depth == 0 {
        tokio::time::sleep(Duration::from_millis(ms)).await;
        return Ok(std::collections::BTreeSet::from([std::process::id()]));
    }
    let left = ctx.spawn(LeafPids {
        depth: depth - 1,
        ms,
    });
    let mut pids = ctx
        .call(LeafPids {
            depth: depth - 1,
            ms,
        })
        .await?;
    pids.extend(left.await?);
    Ok(pids)
}

/// Busy on the async runtime's thread for `ms` (a CPU-bound async body, as fib's leaves are),
/// then names the process and thread it ran on.
#[ferry::function(concurrency = 64)]
pub async fn spin_on_runtime(ms: u64) -> String {
    let end = std::time::Instant::now() + Duration::from_millis(ms);
    while std::time::Instant::now() < end {
        std::hint::spin_loop();
    }
    format!("{}:{:?}", std::process::id(), std::thread::current().id())
}

/// Fans `n` [`spin_on_runtime`] out from inside a worker: where they ran.
#[ferry::function(concurrency = 8)]
pub async fn fan_out_spins(
    ctx: Context,
    n: u32,
    ms: u64,
) -> ferry::Result<std::collections::BTreeSet<String>> {
    let ran = ctx.map((0..n).map(|_| SpinOnRuntime { ms })).await?;
    Ok(ran.into_iter().collect())
}

/// Sleeps `ms` holding the one slot of its instance; its timeout is 400 ms.
#[ferry::function(concurrency = 1, timeout = "400ms")]
pub async fn hold_only_slot(ms: u64) -> u64 {
    tokio::time::sleep(Duration::from_millis(ms)).await;
    ms
}

/// Runs [`hold_only_slot`] from inside its worker.
#[ferry::function(concurrency = 8)]
pub async fn hold_nested(ctx: Context, ms: u64) -> ferry::Result<u64> {
    ctx.call(HoldOnlySlot { ms }).await
}

/// Plain recursive Fibonacci.
pub fn fib_sequential(n: u32) -> u64 {
    if n < 2 {
        u64::from(n)
    } else {
        fib_sequential(n - 1) + fib_sequential(n - 2)
    }
}

/// Invokes `explode` and passes its failure on.
#[ferry::function(concurrency = 8)]
pub async fn call_exploding(ctx: Context) -> ferry::Result<u32> {
    ctx.call(Explode {
        message: "inner".to_owned(),
    })
    .await
}

/// Does nothing: the round-trip floor.
#[ferry::function(concurrency = 100000)]
pub async fn noop() {}

/// Returns the length of its argument.
#[ferry::function(concurrency = 64)]
pub fn byte_len(data: Vec<u8>) -> usize {
    data.len()
}

/// Drops its argument and returns its length: a no-op that carries a payload, run as a task
/// (no blocking thread) so a fan-out of it measures the fan-out.
#[ferry::function(concurrency = 100000)]
pub async fn discard(data: Vec<u8>) -> usize {
    data.len()
}

/// Leaves a file named `n` in `dir`, so a test counts the bodies that started in any process,
/// sleeps `ms`, then fails with a user error if `n` is `fail_at`.
#[ferry::function(concurrency = 8)]
pub fn mark(dir: String, n: u32, fail_at: u32, ms: u64) -> Result<u32, String> {
    std::fs::write(std::path::Path::new(&dir).join(n.to_string()), b"")
        .map_err(|e| format!("cannot mark {n} in {dir}: {e}"))?;
    std::thread::sleep(Duration::from_millis(ms));
    if n == fail_at {
        Err(format!("task {n} fails"))
    } else {
        Ok(n)
    }
}

/// Sleeps `ms` and returns the most invocations of itself that overlapped in this process.
#[ferry::function(concurrency = 2)]
pub fn overlap(ms: u64) -> u32 {
    static RUNNING: AtomicU32 = AtomicU32::new(0);
    static PEAK: AtomicU32 = AtomicU32::new(0);
    let now = RUNNING.fetch_add(1, Ordering::SeqCst) + 1;
    PEAK.fetch_max(now, Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(ms));
    RUNNING.fetch_sub(1, Ordering::SeqCst);
    PEAK.load(Ordering::SeqCst)
}

/// Starts a long-lived program, then aborts: the program must not keep the worker's socket.
#[ferry::function]
pub fn spawn_then_abort() -> u32 {
    let _sleeper = std::process::Command::new("sleep").arg("30").spawn();
    std::process::abort()
}

/// An output whose serialization panics: outside the body, inside the worker.
#[derive(Debug, Deserialize)]
pub struct UnserializableOutput;

impl Serialize for UnserializableOutput {
    fn serialize<S: serde::Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
        panic!("this output refuses to be serialized")
    }
}

/// Returns an output that panics while it is encoded.
#[ferry::function(concurrency = 8)]
pub fn panic_in_output() -> UnserializableOutput {
    UnserializableOutput
}

/// Milliseconds left before this invocation's deadline.
#[ferry::function(concurrency = 64)]
pub fn remaining_ms(ctx: &Context) -> u64 {
    ctx.remaining()
        .map_or(u64::MAX, |left| left.as_millis() as u64)
}

/// Asks a function with a 60 s timeout how long it has: no longer than this 2 s caller.
#[ferry::function(timeout = "2s", concurrency = 8)]
pub async fn nested_remaining(ctx: Context) -> ferry::Result<u64> {
    ctx.call(RemainingMs {}).await
}

/// Writes `text` to stdout and stderr, then returns it: activation logs precede the sentinel.
#[ferry::function(concurrency = 8)]
pub fn shout(text: String) -> String {
    println!("{text}");
    eprintln!("{text}");
    text
}

/// The platform's view of this activation: its metadata, and whichever of the per-activation
/// variables (`__OW_ACTIVATION_ID`, `_X_AMZN_TRACE_ID`) the process environment holds.
#[ferry::function(concurrency = 8)]
pub fn activation(ctx: &Context) -> std::collections::BTreeMap<String, String> {
    let mut seen = ctx
        .invocation()
        .map(|i| i.metadata.clone())
        .unwrap_or_default();
    for variable in ["__OW_ACTIVATION_ID", "_X_AMZN_TRACE_ID"] {
        if let Ok(value) = std::env::var(variable) {
            seen.insert(format!("env:{variable}"), value);
        }
    }
    seen
}

/// Waits 50 ms without holding a thread: the I/O-bound activation of the OpenWhisk benchmark.
#[ferry::function(concurrency = 8, timeout = "5s")]
pub async fn wait_50ms() {
    tokio::time::sleep(Duration::from_millis(50)).await;
}

/// A text of `len` bytes: outputs too large for some transports.
#[ferry::function(concurrency = 4)]
pub fn repeat_text(len: usize) -> String {
    "x".repeat(len)
}

/// Adds 1 to the counter `hits` of `namespace` in the Redis of `FERRY_REDIS_URL`, `n` times;
/// returns the count after its last addition.
#[ferry::function(concurrency = 4)]
pub async fn count_hits(ctx: Context, namespace: String, n: u32) -> ferry::Result<i64> {
    let hits = ferry::state::Store::for_process(&ctx)?
        .namespace(&namespace)
        .counter("hits");
    let mut count = 0;
    for _ in 0..n {
        count = hits.add(1).await?;
    }
    Ok(count)
}

/// Offers `value` to the min register `best` of `namespace`; `true` when it became the best.
#[ferry::function(concurrency = 4)]
pub async fn offer_bound(ctx: Context, namespace: String, value: i64) -> ferry::Result<bool> {
    ferry::state::Store::for_process(&ctx)?
        .namespace(&namespace)
        .min_register::<i64>("best")
        .offer(value)
        .await
}

/// Flow stage: a decimal number, or `None` (which ends the flow) for anything else.
#[ferry::function(concurrency = 64)]
pub fn parse_number(text: String) -> Option<i64> {
    text.trim().parse().ok()
}

/// Flow stage: twice the number.
#[ferry::function(concurrency = 64)]
pub fn double(n: i64) -> i64 {
    2 * n
}

/// Flow stage: one more than the number, one invocation per instance at a time (the default
/// concurrency), so a flow that uses it twice needs its capacity twice.
#[ferry::function]
pub fn increment(n: i64) -> i64 {
    n + 1
}

/// Flow stage: fails above 1,000.
#[ferry::function(concurrency = 64)]
pub fn at_most_thousand(n: i64) -> Result<i64, String> {
    if n > 1000 {
        Err(format!("{n} is above 1000"))
    } else {
        Ok(n)
    }
}

/// Flow stage with a context parameter, which is not part of its input.
#[ferry::function(concurrency = 64)]
pub fn describe(ctx: &Context, n: i64) -> String {
    match ctx.invocation() {
        Some(_) => format!("n={n}"),
        None => format!("n={n}, outside an invocation"),
    }
}

/// Flow stage: sleeps a hundred times `ms` milliseconds (its timeout is the default 60 s).
#[ferry::function(concurrency = 64)]
pub async fn sleep_hundredfold(ms: u64) -> u64 {
    tokio::time::sleep(Duration::from_millis(ms * 100)).await;
    ms
}

/// What [`sum_shared`] saw: its part of the sum, and the shared-value counters of the process
/// that ran it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SumReport {
    pub pid: u32,
    pub sum: u64,
    pub stats: ferry::shared::SharedStats,
}

/// Sums `numbers[from..to]` of a value shared by many tasks.
#[ferry::function(concurrency = 8)]
pub fn sum_shared(numbers: ferry::Shared<Vec<u64>>, from: usize, to: usize) -> SumReport {
    SumReport {
        pid: std::process::id(),
        sum: numbers[from..to].iter().sum(),
        stats: ferry::shared::stats(),
    }
}

/// Passes a shared value on to [`sum_shared`]: from inside a worker it travels in full.
#[ferry::function(concurrency = 8)]
pub async fn sum_shared_nested(
    ctx: Context,
    numbers: ferry::Shared<Vec<u64>>,
    from: usize,
    to: usize,
) -> ferry::Result<SumReport> {
    ctx.call(SumShared { numbers, from, to }).await
}
