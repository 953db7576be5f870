//! `ferry::Shared` over real workers: one value many tasks share is encoded once by the host,
//! sent by content hash, fetched once by each local worker (or uploaded once to an HTTP service
//! instance) and decoded once per warm worker; inside a worker it travels in full; a blob that
//! cannot be had is a clear error.

mod common;

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use common::{Server, bounded, local};
use ferry::shared::{SharedStats, stats};
use ferry::{Codec, Context, ErrorKind, HttpConfig, Shared};
use ferry_tests::{SumReport, SumShared, SumSharedNested};

/// The host's counters are per process: tests that read them take turns.
static SERIAL: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// 131,072 numbers: 1 MiB encoded.
const LEN: usize = 1 << 17;
const TASKS: usize = 200;

fn numbers() -> Shared<Vec<u64>> {
    Shared::new((0..LEN as u64).map(|i| i * 3 + 1).collect())
}

fn tasks(numbers: &Shared<Vec<u64>>) -> impl Iterator<Item = SumShared> + '_ {
    (0..TASKS).map(|i| SumShared {
        numbers: numbers.clone(),
        from: i * LEN / TASKS,
        to: (i + 1) * LEN / TASKS,
    })
}

/// Runs the fan-out; returns the reports and what the host's counters gained meanwhile.
async fn fan_out(ctx: &Context) -> (Vec<SumReport>, SharedStats) {
    let numbers = numbers();
    let expected: u64 = numbers.iter().sum();
    let before = stats();
    let reports = bounded(ctx.map(tasks(&numbers))).await.unwrap();
    let after = stats();
    assert_eq!(reports.len(), TASKS);
    assert_eq!(reports.iter().map(|r| r.sum).sum::<u64>(), expected);
    let mut gained = SharedStats::default();
    gained.encodes = after.encodes - before.encodes;
    gained.references = after.references - before.references;
    gained.served = after.served - before.served;
    (reports, gained)
}

/// Each worker's counters as its last report showed them.
fn per_worker(reports: &[SumReport]) -> HashMap<u32, SharedStats> {
    let mut latest: HashMap<u32, SharedStats> = HashMap::new();
    for report in reports {
        let seen = latest.entry(report.pid).or_default();
        if report.stats.cache_hits + report.stats.decodes >= seen.cache_hits + seen.decodes {
            *seen = report.stats;
        }
    }
    latest
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn local_workers_fetch_and_decode_a_shared_value_once() {
    let _turn = SERIAL.lock().await;
    let ctx = local(2);
    let (reports, host) = fan_out(&ctx).await;
    assert_eq!(host.encodes, 1, "the host encoded the value once");
    assert_eq!(host.references, TASKS as u64, "every task carried its id");
    let workers = per_worker(&reports);
    for (pid, worker) in &workers {
        assert_eq!(
            worker.fetches, 1,
            "worker {pid} fetched it once: {worker:?}"
        );
        assert_eq!(
            worker.decodes, 1,
            "worker {pid} decoded it once: {worker:?}"
        );
    }
    let tasks_seen: u64 = workers.values().map(|w| w.decodes + w.cache_hits).sum();
    assert_eq!(tasks_seen, TASKS as u64, "every other task hit the cache");
    assert_eq!(
        host.served,
        workers.len() as u64,
        "one fetch per worker reached the host"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_service_takes_one_upload_of_a_shared_value() {
    let _turn = SERIAL.lock().await;
    let server = Server::start(env!("CARGO_BIN_EXE_ferry-fixture"), Some("http"));
    let ctx = Context::http(HttpConfig::new(&server.base)).unwrap();
    let (reports, host) = fan_out(&ctx).await;
    assert_eq!(host.encodes, 1, "the host encoded the value once");
    assert_eq!(host.references, TASKS as u64);
    assert_eq!(host.served, 1, "the first wave of misses shared one upload");
    let workers = per_worker(&reports);
    assert_eq!(workers.len(), 1, "one service process");
    let service = workers.values().next().unwrap();
    assert_eq!(service.fetches, 1, "{service:?}");
    assert_eq!(service.decodes, 1, "{service:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shared_value_passed_on_inside_a_worker_travels_in_full() {
    let _turn = SERIAL.lock().await;
    let numbers = numbers();
    let expected: u64 = numbers[10..LEN].iter().sum();
    let nested = || SumSharedNested {
        numbers: numbers.clone(),
        from: 10,
        to: LEN,
    };
    let ctx = local(2);
    assert_eq!(bounded(ctx.call(nested())).await.unwrap().sum, expected);

    let server = Server::start(env!("CARGO_BIN_EXE_ferry-fixture"), Some("http"));
    let ctx = Context::http(HttpConfig::new(&server.base)).unwrap();
    assert_eq!(bounded(ctx.call(nested())).await.unwrap().sum, expected);

    assert_eq!(
        bounded(Context::inline().call(nested())).await.unwrap().sum,
        expected
    );
}

/// Arguments of `sum_shared` in the binary codec, the shared value given by id.
fn by_id_arguments(id: &[u8; 32], from: u64, to: u64) -> Vec<u8> {
    let mut payload = 1u32.to_le_bytes().to_vec(); // the `Blob` variant
    payload.extend_from_slice(id);
    payload.extend(from.to_le_bytes());
    payload.extend(to.to_le_bytes());
    payload
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_id_without_its_blob_is_a_clear_error() {
    let payload = by_id_arguments(&[0xab; 32], 0, 1);
    let error = bounded(local(1).invoke("sum_shared", Codec::Binary, payload))
        .await
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::BadInput { message, .. }
            if message.contains(&"ab".repeat(32)) && message.contains("not in this process's cache")),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_http_service_asks_for_missing_blobs_and_checks_uploads() {
    let server = Server::start(env!("CARGO_BIN_EXE_ferry-fixture"), Some("http"));
    let http = reqwest::Client::new();
    let numbers: Vec<u64> = (0..1000).collect();
    // A blob: the binary codec's tag, then the value in the binary codec.
    let mut blob = vec![2u8];
    blob.extend(Codec::Binary.encode(&numbers).unwrap());
    let id = ferry::shared::BlobId::of(&blob);
    let call = || {
        http.post(format!("{}/functions/sum_shared", server.base))
            .header("content-type", "application/x-ferry-binary")
            .header("x-ferry-blobs", id.to_string())
            .body(by_id_arguments(id.as_bytes(), 0, 1000))
            .send()
    };

    let missing = bounded(call()).await.unwrap();
    assert_eq!(missing.status().as_u16(), 428);
    assert_eq!(
        missing.headers()["x-ferry-missing-blobs"].to_str().unwrap(),
        id.to_string()
    );
    let error: ferry::Error = missing.json().await.unwrap();
    assert!(
        matches!(error.kind(), ErrorKind::MissingShared { ids, .. } if ids == &[id.to_string()]),
        "{error}"
    );

    let put = |body: Vec<u8>| {
        http.put(format!("{}/blobs/{id}", server.base))
            .body(body)
            .send()
    };
    let mut forged = blob.clone();
    *forged.last_mut().unwrap() ^= 1;
    let refused = bounded(put(forged)).await.unwrap();
    assert_eq!(refused.status().as_u16(), 400, "a blob must hash to its id");
    assert_eq!(bounded(call()).await.unwrap().status().as_u16(), 428);

    assert_eq!(bounded(put(blob)).await.unwrap().status().as_u16(), 204);
    let answered = bounded(call()).await.unwrap();
    assert_eq!(answered.status().as_u16(), 200);
    let report: SumReport = Codec::Binary
        .decode(&answered.bytes().await.unwrap())
        .unwrap();
    assert_eq!(report.sum, numbers.iter().sum::<u64>());
}

/// A service that never keeps a blob (replicas behind a load balancer, each lacking it): the
/// client uploads a bounded number of times, then fails with a clear error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_service_that_never_keeps_blobs_is_a_clear_error() {
    use axum::http::{HeaderMap, StatusCode};
    use axum::routing::{post, put};

    let _turn = SERIAL.lock().await;
    let uploads = Arc::new(AtomicU32::new(0));
    let counted = uploads.clone();
    let router = axum::Router::new()
        .route(
            "/functions/{function}",
            post(|headers: HeaderMap| async move {
                let ids = headers["x-ferry-blobs"].to_str().unwrap().to_owned();
                let body = serde_json::json!({
                    "kind": "missing_shared",
                    "ids": ids.split(',').collect::<Vec<_>>(),
                    "message": "this replica lacks it",
                });
                (
                    StatusCode::PRECONDITION_REQUIRED,
                    [("x-ferry-missing-blobs", ids)],
                    body.to_string(),
                )
            }),
        )
        .route(
            "/blobs/{id}",
            // It reads the upload, as a real service would: answering before the body is read
            // would reset a connection still sending it, and the client would send it again.
            put(move |_body: axum::body::Bytes| async move {
                counted.fetch_add(1, Ordering::SeqCst);
                StatusCode::NO_CONTENT
            }),
        );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, router).await });

    let ctx = Context::http(HttpConfig::new(&base)).unwrap();
    let error = bounded(ctx.call(SumShared {
        numbers: numbers(),
        from: 0,
        to: 1,
    }))
    .await
    .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::MissingShared { message, .. }
            if message.contains("still lacked it after 3 uploads")),
        "{error}"
    );
    assert_eq!(uploads.load(Ordering::SeqCst), 3);
}
