//! Fan-outs pull their tasks lazily and stop when they fail fast, over real worker processes of
//! the `ferry-fixture` program: each test counts what the iterator gave, or what the workers
//! started, while the fan-out runs.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{bounded, local};
use ferry::ErrorKind;
use ferry_tests::*;

/// Tasks in the failing fan-outs, and the one that fails.
const TASKS: u32 = 2_000;
const FAIL_AT: u32 = 100;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_map_stops_pulling_tasks() {
    const CONCURRENCY: usize = 16;
    let ctx = local(2);
    let pulled = AtomicUsize::new(0);
    // The iterator borrows the counter: tasks may be built from the caller's state.
    let tasks = (0..TASKS)
        .inspect(|_| {
            pulled.fetch_add(1, Ordering::SeqCst);
        })
        .map(|i| RequireEven {
            n: 2 * i + u32::from(i == FAIL_AT),
        });
    let error = bounded(ctx.map(tasks).concurrency(CONCURRENCY))
        .await
        .unwrap_err();
    assert_eq!(error.task(), Some(FAIL_AT as usize), "{error}");
    assert!(
        matches!(error.kind(), ErrorKind::User { message, .. } if *message == format!("{} is odd", 2 * FAIL_AT + 1)),
        "{error}"
    );
    // Task 100 failed while at most `CONCURRENCY` tasks, from 100 on, were in flight: nothing
    // beyond them was pulled, then or after.
    let pulled = pulled.load(Ordering::SeqCst);
    assert!(
        pulled > FAIL_AT as usize && pulled <= FAIL_AT as usize + CONCURRENCY,
        "{pulled} of {TASKS} tasks pulled for a failure at task {FAIL_AT} with {CONCURRENCY} in flight"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_map_over_an_endless_iterator_ends_at_its_failure() {
    let ctx = local(1);
    // Endless, but guarded: collecting it first would fail here rather than run out of memory.
    let tasks = (0u32..)
        .inspect(|&i| assert!(i < 1_000_000, "task {i} pulled, far past the failure"))
        .map(|i| RequireEven {
            n: 2 * i + u32::from(i == FAIL_AT),
        });
    let error = bounded(ctx.map(tasks).concurrency(8)).await.unwrap_err();
    assert_eq!(error.task(), Some(FAIL_AT as usize), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_map_starts_no_more_bodies() {
    // Two workers of 8 slots each (`mark`'s concurrency) under the default window of 1,024: most
    // of the window waits in the host's queue when task 100 fails.
    const SLOTS: usize = 2 * 8;
    let ctx = local(2);
    let dir = scratch_dir("starts-no-more");
    let dir_text = dir
        .to_str()
        .expect("a UTF-8 temporary directory")
        .to_owned();
    let tasks = (0..TASKS).map(|n| Mark {
        dir: dir_text.clone(),
        n,
        fail_at: FAIL_AT,
        ms: 20,
    });
    let error = bounded(ctx.map(tasks)).await.unwrap_err();
    assert_eq!(error.task(), Some(FAIL_AT as usize), "{error}");
    assert!(
        matches!(error.kind(), ErrorKind::User { message, .. } if *message == format!("task {FAIL_AT} fails")),
        "{error}"
    );
    // Wait until the workers are quiet, then count the bodies that ever started.
    let started = bounded(quiet_marks(&dir)).await;
    assert!(
        (0..=FAIL_AT).all(|n| started.contains(&n)),
        "every task up to the failing one ran"
    );
    // Those, the ones running on a worker when the failure came back, and a few that took a
    // freed slot before the map had seen it: not the rest of the 1,024 sent.
    let limit = FAIL_AT as usize + 1 + SLOTS + 64;
    assert!(
        started.len() <= limit,
        "{} bodies started for a map that failed at task {FAIL_AT} (at most {limit} expected)",
        started.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_map_pulls_each_task_when_there_is_room() {
    const CONCURRENCY: usize = 4;
    const SLEEP_MS: u64 = 20;
    let ctx = local(1);
    let pulls = Mutex::new(Vec::new());
    let tasks = (0..40).map(|_| {
        pulls.lock().unwrap().push(Instant::now());
        SleepAsync { ms: SLEEP_MS }
    });
    let outputs = bounded(ctx.map(tasks).concurrency(CONCURRENCY))
        .await
        .unwrap();
    assert_eq!(outputs, vec![SLEEP_MS; 40]);
    let pulls = pulls.into_inner().unwrap();
    assert_eq!(pulls.len(), 40);
    // Task 4k is pulled only once task 4(k-1), pulled before it, has slept and finished: the
    // pulls are spread over the run, not done up front.
    for k in 1..pulls.len() / CONCURRENCY {
        let after = pulls[k * CONCURRENCY] - pulls[0];
        assert!(
            after >= Duration::from_millis(SLEEP_MS * k as u64),
            "task {} pulled {after:?} after task 0",
            k * CONCURRENCY
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn as_completed_yields_before_the_iterator_is_exhausted() {
    const CONCURRENCY: usize = 4;
    const TOTAL: u64 = 1_000;
    let ctx = local(1);
    let pulled = AtomicUsize::new(0);
    // A filter: the iterator cannot tell its length, half its items are tasks.
    let tasks = (0..TOTAL)
        .inspect(|_| {
            pulled.fetch_add(1, Ordering::SeqCst);
        })
        .filter(|n| n % 2 == 0)
        .map(|n| SleepAsync {
            ms: if n < 40 { 40 } else { 1 },
        });
    let mut completions = ctx.as_completed(tasks).concurrency(CONCURRENCY);
    assert!(
        pulled.load(Ordering::SeqCst) <= 2,
        "{} items pulled before any result was awaited",
        pulled.load(Ordering::SeqCst)
    );
    let mut indices = BTreeSet::new();
    while let Some((index, result)) = bounded(completions.next()).await {
        assert_eq!(result.unwrap(), if index < 20 { 40 } else { 1 });
        assert!(indices.insert(index), "task {index} twice");
        let pulled = pulled.load(Ordering::SeqCst);
        // `k` results in: at most `k + CONCURRENCY` tasks sent and one ahead, two items each.
        let tasks_given = indices.len() + CONCURRENCY + 1;
        assert!(
            pulled <= 2 * tasks_given,
            "{pulled} items pulled after {} results",
            indices.len()
        );
        if indices.len() < (TOTAL / 2) as usize {
            assert!(
                !completions.is_empty(),
                "{} tasks remain",
                TOTAL as usize / 2 - indices.len()
            );
        }
    }
    assert!(completions.is_empty());
    assert_eq!(indices, (0..(TOTAL / 2) as usize).collect());
    assert_eq!(pulled.load(Ordering::SeqCst), TOTAL as usize);
}

/// A fresh directory for `mark`'s files.
fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ferry-fan-out-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a scratch directory");
    dir
}

/// The tasks that marked `dir`, once no new mark has appeared for half a second.
async fn quiet_marks(dir: &Path) -> BTreeSet<u32> {
    let read = || -> BTreeSet<u32> {
        std::fs::read_dir(dir)
            .expect("the scratch directory")
            .map(|entry| {
                let name = entry.expect("an entry").file_name();
                name.to_str()
                    .and_then(|n| n.parse().ok())
                    .expect("a task number")
            })
            .collect()
    };
    let mut marks = read();
    loop {
        tokio::time::sleep(Duration::from_millis(500)).await;
        let now = read();
        if now == marks {
            return now;
        }
        marks = now;
    }
}
