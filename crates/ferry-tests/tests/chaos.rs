//! Chaos on the local platform: workers are killed (SIGKILL) while a 10,000-task map runs. With
//! retries on, every task yields exactly one result, the right one; with them off, each lost task
//! fails as a crash and nothing hangs. A test binary of its own, so the killer sees only the
//! workers this test started.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::{bounded, local_with};
use ferry::{ErrorKind, LocalConfig};
use ferry_tests::Add;

const TASKS: i64 = 10_000;
const KILLS: usize = 20;

/// The worker processes of this test process: its children running the fixture.
fn workers() -> Vec<i32> {
    let me = std::process::id().to_string();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<i32>().ok())
        .filter(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
            // `pid (comm) state ppid …`: the command may hold spaces, so read after its `)`.
            let parent = stat
                .rsplit_once(") ")
                .and_then(|(_, rest)| rest.split_whitespace().nth(1));
            let exe = std::fs::read_link(format!("/proc/{pid}/exe")).unwrap_or_default();
            parent == Some(me.as_str()) && exe.to_string_lossy().contains("ferry-fixture")
        })
        .collect()
}

/// Kills one worker every 40 ms, up to `KILLS`, while `running`; returns how many it killed.
fn killer(running: Arc<AtomicBool>) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut killed = 0;
        while running.load(Ordering::Relaxed) && killed < KILLS {
            std::thread::sleep(Duration::from_millis(40));
            if let Some(pid) = workers().first() {
                // SAFETY: a plain signal to a child process of this test.
                if unsafe { libc::kill(*pid, libc::SIGKILL) } == 0 {
                    killed += 1;
                }
            }
        }
        killed
    })
}

/// The 10,000-task map on two workers with `retries`, while workers are killed: its results,
/// one per task, after at least five kills.
async fn map_under_kills(retries: u32) -> Vec<ferry::Result<i64>> {
    let ctx = local_with(LocalConfig::default().max_workers(2).retries(retries));
    let running = Arc::new(AtomicBool::new(true));
    let kills = killer(running.clone());
    let tasks = (0..TASKS).map(|i| Add { a: i, b: 1 });
    let results = bounded(ctx.map(tasks).concurrency(64).settle()).await;
    running.store(false, Ordering::Relaxed);
    let killed = kills.join().unwrap();
    assert!(
        killed >= 5,
        "only {killed} workers were killed during the map"
    );
    assert!(ctx.stats().cold_starts >= 5, "{:?}", ctx.stats());
    assert_eq!(results.len(), TASKS as usize);
    results
}

/// One test, so one killer at a time: it kills whichever worker of this process it finds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn killed_workers_lose_nothing_with_retries_and_fail_as_crashes_without() {
    let results = map_under_kills(KILLS as u32).await;
    for (i, result) in results.iter().enumerate() {
        assert_eq!(result.as_ref().ok(), Some(&(i as i64 + 1)), "task {i}");
    }

    // The same without retries: each task a killed worker held fails as a crash, named by its
    // index; the others succeed, and nothing hangs.
    let results = map_under_kills(0).await;
    let mut crashed = 0;
    for (i, result) in results.iter().enumerate() {
        match result {
            Ok(sum) => assert_eq!(*sum, i as i64 + 1, "task {i}"),
            Err(error) => {
                assert!(
                    matches!(error.kind(), ErrorKind::WorkerCrashed { .. }),
                    "task {i}: {error}"
                );
                assert_eq!(error.task(), Some(i), "{error}");
                crashed += 1;
            }
        }
    }
    assert!(crashed > 0, "no task ran on a killed worker");
}
