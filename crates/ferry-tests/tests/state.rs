//! `ferry::state` against a real `redis-server` each test starts on loopback: counters and
//! registers stay exact when many invocations on several worker processes (local workers, HTTP
//! service workers) update them at once.

mod common;

use std::collections::HashSet;
use std::future::IntoFuture;
use std::path::Path;
use std::process::{Command, Stdio};

use ferry::state::{REDIS_URL_VAR, Store};
use ferry::{Context, ErrorKind, HttpConfig, LocalConfig};
use ferry_tests::redis_server::{RedisServer, free_port};
use ferry_tests::{CountHits, OfferBound};
use serde::{Deserialize, Serialize};

/// A `redis-server` for one test, with a client store on it.
struct Redis(RedisServer);

impl Redis {
    fn start() -> Self {
        Self(RedisServer::start(Path::new(env!("CARGO_TARGET_TMPDIR"))))
    }

    fn url(&self) -> String {
        self.0.url()
    }

    async fn store(&self) -> Store {
        Store::connect(&self.url()).await.expect("connect to redis")
    }
}

/// A local platform of at most 2 fixture workers whose `FERRY_REDIS_URL` is `url`.
fn local_workers(url: &str) -> Context {
    common::local_with(
        LocalConfig::default()
            .max_workers(2)
            .env(REDIS_URL_VAR, url),
    )
}

/// The fixture in HTTP service mode with `FERRY_REDIS_URL` set, killed when dropped.
struct HttpWorker(common::Server);

impl HttpWorker {
    fn start(redis_url: &str) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ferry-fixture"))
            .env("FERRY_ROLE", "http")
            .env("FERRY_LISTEN", "127.0.0.1:0")
            .env(REDIS_URL_VAR, redis_url)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the HTTP worker");
        let base = common::listening_on(child.stderr.take().unwrap());
        Self(common::Server { child, base })
    }

    fn context(&self) -> Context {
        Context::http(HttpConfig::new(&self.0.base)).expect("http context")
    }
}

#[tokio::test]
async fn counter_adds_up_exactly_across_local_workers() {
    let redis = Redis::start();
    let ctx = local_workers(&redis.url());
    let tasks = (0..40).map(|_| CountHits {
        namespace: "local".into(),
        n: 25,
    });
    let last_counts = common::bounded(ctx.map(tasks)).await.unwrap();
    assert!(
        ctx.stats().cold_starts >= 2,
        "the invocations ran on {} worker(s), not 2",
        ctx.stats().cold_starts
    );

    let hits = redis.store().await.namespace("local").counter("hits");
    assert_eq!(hits.get().await.unwrap(), 40 * 25);
    // Every addition returned its own value, so each invocation's last count is unique.
    let distinct: HashSet<i64> = last_counts.iter().copied().collect();
    assert_eq!(distinct.len(), last_counts.len(), "{last_counts:?}");
    assert_eq!(last_counts.iter().max(), Some(&(40 * 25)));

    hits.reset().await.unwrap();
    assert_eq!(hits.get().await.unwrap(), 0);
    ctx.shutdown().await;
}

#[tokio::test]
async fn counter_adds_up_exactly_across_http_workers_and_the_host() {
    let redis = Redis::start();
    let workers = [
        HttpWorker::start(&redis.url()),
        HttpWorker::start(&redis.url()),
    ];
    let contexts: Vec<Context> = workers.iter().map(HttpWorker::context).collect();
    let hits = redis.store().await.namespace("http").counter("hits");

    let remote = contexts.iter().map(|ctx| {
        ctx.map((0..20).map(|_| CountHits {
            namespace: "http".into(),
            n: 25,
        }))
        .into_future()
    });
    let local = async {
        for _ in 0..100 {
            hits.add(3).await.unwrap();
        }
    };
    let (outputs, ()) =
        common::bounded(async { tokio::join!(futures::future::join_all(remote), local) }).await;
    for output in outputs {
        assert_eq!(output.unwrap().len(), 20);
    }
    assert_eq!(hits.get().await.unwrap(), 2 * 20 * 25 + 100 * 3);
}

#[tokio::test]
async fn min_register_ends_at_the_true_minimum_under_concurrent_offers() {
    let redis = Redis::start();
    let ctx = local_workers(&redis.url());
    // A scrambled sequence of distinct values, its smallest somewhere in the middle.
    let values: Vec<i64> = (0..120).map(|i| (i * 7919) % 1000 - 500).collect();
    let minimum = *values.iter().min().unwrap();
    let tasks = values.iter().map(|&value| OfferBound {
        namespace: "search".into(),
        value,
    });
    let improved = common::bounded(ctx.map(tasks)).await.unwrap();

    let best = redis
        .store()
        .await
        .namespace("search")
        .min_register::<i64>("best");
    assert_eq!(best.get().await.unwrap(), Some(minimum));
    let winner = values.iter().position(|&v| v == minimum).unwrap();
    assert!(improved[winner], "offering the minimum did not improve it");
    assert!(improved.iter().filter(|&&b| b).count() < values.len());
    ctx.shutdown().await;
}

#[tokio::test]
async fn registers_improve_only_on_strictly_better_values() {
    let redis = Redis::start();
    let store = redis.store().await.namespace("sequential");

    let min = store.min_register::<i64>("min");
    assert_eq!(min.get().await.unwrap(), None);
    let mut improved = Vec::new();
    for value in [5, 7, 5, 3, -2, 10, -2, -3] {
        improved.push(min.offer(value).await.unwrap());
    }
    assert_eq!(
        improved,
        [true, false, false, true, true, false, false, true]
    );
    assert_eq!(min.get().await.unwrap(), Some(-3));

    // Exact beyond 2^53, where doubles would call these equal.
    let max = store.max_register::<i64>("max");
    assert!(max.offer(i64::MAX - 1).await.unwrap());
    assert!(max.offer(i64::MAX).await.unwrap());
    assert!(!max.offer(i64::MAX - 1).await.unwrap());
    assert_eq!(max.get().await.unwrap(), Some(i64::MAX));
    let low = store.min_register::<i64>("low");
    assert!(low.offer(-(1 << 53) - 1).await.unwrap());
    assert!(!low.offer(-(1 << 53)).await.unwrap());
    assert!(low.offer(i64::MIN).await.unwrap());
    assert_eq!(low.get().await.unwrap(), Some(i64::MIN));

    let score = store.max_register::<f64>("score");
    assert!(score.offer(2.5).await.unwrap());
    assert!(!score.offer(2.25).await.unwrap());
    assert!(!score.offer(f64::NAN).await.unwrap());
    assert!(score.offer(1e300).await.unwrap());
    assert_eq!(score.get().await.unwrap(), Some(1e300));
    let error = store.min_register::<i64>("score").get().await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::Protocol { .. }),
        "{error}"
    );
    assert!(error.to_string().contains("not an `i64`"), "{error}");

    score.reset().await.unwrap();
    assert_eq!(score.get().await.unwrap(), None);
    assert!(score.offer(-1.0).await.unwrap());
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
struct Plan {
    name: String,
    steps: Vec<u32>,
}

#[tokio::test]
async fn keys_round_trip_typed_values_and_set_if_absent_keeps_the_first() {
    let redis = Redis::start();
    let store = redis.store().await.namespace("keys");
    let plan = store.key::<Plan>("plan");
    let first = Plan {
        name: "first".into(),
        steps: vec![1, 2, 3],
    };
    let second = Plan {
        name: "second".into(),
        steps: vec![],
    };

    assert_eq!(plan.get().await.unwrap(), None);
    assert!(plan.set_if_absent(&first).await.unwrap());
    assert!(!plan.set_if_absent(&second).await.unwrap());
    assert_eq!(plan.get().await.unwrap(), Some(first.clone()));
    plan.set(&second).await.unwrap();
    assert_eq!(plan.get().await.unwrap(), Some(second));
    assert!(plan.delete().await.unwrap());
    assert!(!plan.delete().await.unwrap());
    assert_eq!(plan.get().await.unwrap(), None);

    // Of many racing claims, exactly one wins.
    let owner = store.key::<u32>("owner");
    let claims = (0..32).map(|i| {
        let owner = owner.clone();
        async move { (i, owner.set_if_absent(&i).await.unwrap()) }
    });
    let claims = futures::future::join_all(claims).await;
    let winners: Vec<u32> = claims.iter().filter(|c| c.1).map(|c| c.0).collect();
    assert_eq!(winners.len(), 1, "{claims:?}");
    assert_eq!(owner.get().await.unwrap(), Some(winners[0]));

    // A value of another type is a protocol error that names the JSON path.
    plan.set(&first).await.unwrap();
    let error = store
        .key::<(String, Vec<String>)>("plan")
        .get()
        .await
        .unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::Protocol { .. }),
        "{error}"
    );
    assert!(
        error.to_string().contains("`keys:plan` does not hold"),
        "{error}"
    );
}

#[tokio::test]
async fn namespaces_isolate_state() {
    let redis = Redis::start();
    let store = redis.store().await;
    let (a, b) = (store.namespace("job-a"), store.namespace("job-b"));
    a.counter("hits").add(5).await.unwrap();
    b.counter("hits").add(7).await.unwrap();
    a.min_register::<i64>("best").offer(10).await.unwrap();
    b.key::<String>("best").set(&"b".into()).await.unwrap();

    assert_eq!(a.counter("hits").get().await.unwrap(), 5);
    assert_eq!(b.counter("hits").get().await.unwrap(), 7);
    assert_eq!(store.counter("hits").get().await.unwrap(), 0);
    assert_eq!(a.min_register::<i64>("best").get().await.unwrap(), Some(10));
    assert_eq!(
        b.key::<String>("best").get().await.unwrap(),
        Some("b".to_owned())
    );
    a.counter("hits").reset().await.unwrap();
    assert_eq!(b.counter("hits").get().await.unwrap(), 7);
    assert_eq!(
        store
            .namespace("job-b")
            .counter("hits")
            .get()
            .await
            .unwrap(),
        7
    );
}

#[tokio::test]
async fn unreachable_redis_is_unavailable_with_a_clear_message() {
    let url = format!("redis://127.0.0.1:{}", free_port());
    let expected = "redis at 127.0.0.1:";

    let error = Store::connect(&url).await.unwrap_err();
    match error.kind() {
        ErrorKind::Unavailable { message } => {
            assert!(message.starts_with(expected), "{message}");
            assert!(message.contains("is unreachable"), "{message}");
        }
        other => panic!("expected unavailable, got {other:?}"),
    }
    assert!(error.is_transient());

    // A store opened lazily fails at its first operation.
    let store = Store::open(&url).unwrap();
    let error = store.counter("hits").add(1).await.unwrap_err();
    assert!(
        matches!(error.kind(), ErrorKind::Unavailable { .. }),
        "{error}"
    );

    // A function's `ferry::Error` reaches the caller with its kind.
    let ctx = local_workers(&url);
    let error = common::bounded(ctx.call(CountHits {
        namespace: "down".into(),
        n: 1,
    }))
    .await
    .unwrap_err();
    match error.kind() {
        ErrorKind::Unavailable { message } => assert!(message.starts_with(expected), "{message}"),
        other => panic!("expected unavailable, got {other:?}"),
    }
    ctx.shutdown().await;
}

#[tokio::test]
async fn a_missing_or_invalid_redis_url_is_a_config_error() {
    // An empty variable counts as unset (the worker inherits the test's environment otherwise).
    let ctx = local_workers("");
    let error = common::bounded(ctx.call(OfferBound {
        namespace: "unset".into(),
        value: 1,
    }))
    .await
    .unwrap_err();
    assert_eq!(
        error.kind(),
        &ErrorKind::Config {
            message: "`FERRY_REDIS_URL` is not set: point it at the redis that holds shared \
                      state, e.g. `redis://127.0.0.1:6379`"
                .into()
        }
    );
    ctx.shutdown().await;

    let error = Store::open("http://127.0.0.1:6379").unwrap_err();
    match error.kind() {
        ErrorKind::Config { message } => assert!(
            message.starts_with("`http://127.0.0.1:6379` is not a redis url"),
            "{message}"
        ),
        other => panic!("expected a config error, got {other:?}"),
    }
}
