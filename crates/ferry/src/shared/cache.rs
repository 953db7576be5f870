//! The blob cache of a process that receives shared values (a local worker, an HTTP service):
//! blobs by id with the values decoded from them, bounded by encoded bytes, least recently used
//! out first. Blobs in use by an invocation are pinned and never evicted under it.

use std::any::{Any, TypeId};
use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};

use bytes::Bytes;
use serde::de::DeserializeOwned;

use super::{BINARY_TAG, BlobId, DECODING_BLOB, Inner, STATS};
use crate::{Codec, Error, Result};

/// Default bound of the cache, in MiB of encoded blobs (`FERRY_SHARED_CACHE_MB`).
const DEFAULT_LIMIT_MB: usize = 64;

pub(crate) struct Cache {
    limit_bytes: usize,
    state: Mutex<CacheState>,
}

#[derive(Default)]
struct CacheState {
    entries: HashMap<BlobId, Arc<Entry>>,
    bytes: usize,
    clock: u64,
    /// One fetch per id at a time: concurrent misses for a blob wait for the first one's fetch.
    gates: HashMap<BlobId, Arc<tokio::sync::Mutex<()>>>,
}

pub(crate) struct Entry {
    /// The encoded value, after the codec tag.
    body: Bytes,
    last_used: AtomicU64,
    /// Values decoded from `body`, by type: `Arc<Inner<T>>` behind `dyn Any`.
    decoded: Mutex<HashMap<TypeId, Arc<dyn Any + Send + Sync>>>,
}

/// Blobs an invocation's arguments refer to, held in the cache until it is dropped.
#[derive(Default)]
pub(crate) struct Pins {
    _held: Vec<Arc<Entry>>,
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Cache {
    pub(crate) fn new(limit_bytes: usize) -> Self {
        Self {
            limit_bytes,
            state: Mutex::new(CacheState::default()),
        }
    }

    fn get(&self, id: &BlobId) -> Option<Arc<Entry>> {
        let mut state = lock(&self.state);
        state.clock += 1;
        let now = state.clock;
        let entry = state.entries.get(id)?;
        entry.last_used.store(now, Ordering::Relaxed);
        Some(entry.clone())
    }

    /// Adds a blob after checking it hashes to `id`, then evicts unpinned blobs, least recently
    /// used first, while the cache is over its bound.
    fn insert(&self, id: BlobId, blob: Bytes) -> Result<Arc<Entry>> {
        let actual = BlobId::of(&blob);
        if actual != id {
            return Err(Error::bad_input(
                ".",
                format!("the blob sent as {id} has a different content hash, {actual}"),
            ));
        }
        match blob.first() {
            Some(&BINARY_TAG) => {}
            other => {
                return Err(Error::bad_input(
                    ".",
                    format!("blob {id} has an unknown codec tag {other:?}"),
                ));
            }
        }
        let mut state = lock(&self.state);
        if let Some(entry) = state.entries.get(&id) {
            return Ok(entry.clone());
        }
        state.clock += 1;
        let entry = Arc::new(Entry {
            // Its own copy, in memory of its own when large: a blob may be kept long after the
            // buffer it came in (a request body, a frame) is gone, and its eviction should give
            // its memory back rather than leave a hole in the allocator's heap.
            body: crate::mapped::copy(&blob[1..]),
            last_used: AtomicU64::new(state.clock),
            decoded: Mutex::new(HashMap::new()),
        });
        state.bytes += blob.len();
        state.entries.insert(id, entry.clone());
        STATS.fetches.fetch_add(1, Ordering::Relaxed);
        while state.bytes > self.limit_bytes {
            // Unpinned: held by the map alone (the new entry is held by `entry` too).
            let oldest = state
                .entries
                .iter()
                .filter(|(_, e)| Arc::strong_count(e) == 1)
                .min_by_key(|(_, e)| e.last_used.load(Ordering::Relaxed))
                .map(|(id, _)| *id);
            let Some(oldest) = oldest else { break };
            if let Some(evicted) = state.entries.remove(&oldest) {
                state.bytes -= evicted.body.len() + 1;
                STATS.evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(entry)
    }

    /// Pins every blob of `ids`, or names those missing.
    fn pin_present(&self, ids: &[BlobId]) -> Result<Pins, Vec<BlobId>> {
        let mut pins = Vec::with_capacity(ids.len());
        let mut missing = Vec::new();
        for id in ids {
            match self.get(id) {
                Some(entry) => pins.push(entry),
                None => missing.push(*id),
            }
        }
        if missing.is_empty() {
            Ok(Pins { _held: pins })
        } else {
            Err(missing)
        }
    }

    async fn ensure<F, Fut>(&self, ids: &[BlobId], fetch: F) -> Result<Pins>
    where
        F: Fn(BlobId) -> Fut,
        Fut: Future<Output = Result<Bytes>>,
    {
        let mut pins = Vec::with_capacity(ids.len());
        for &id in ids {
            if let Some(entry) = self.get(&id) {
                pins.push(entry);
                continue;
            }
            let gate = Gate::enter(self, id);
            let _turn = gate.gate.lock().await;
            let entry = match self.get(&id) {
                Some(entry) => entry,
                None => self.insert(id, fetch(id).await?)?,
            };
            pins.push(entry);
        }
        Ok(Pins { _held: pins })
    }

    #[cfg(test)]
    fn contains(&self, id: &BlobId) -> bool {
        lock(&self.state).entries.contains_key(id)
    }
}

/// A turn at fetching one id; the gate leaves the map with its last user, however the fetch
/// ends (a timed-out invocation drops it midway).
struct Gate<'a> {
    cache: &'a Cache,
    id: BlobId,
    gate: Arc<tokio::sync::Mutex<()>>,
}

impl<'a> Gate<'a> {
    fn enter(cache: &'a Cache, id: BlobId) -> Self {
        let gate = lock(&cache.state).gates.entry(id).or_default().clone();
        Self { cache, id, gate }
    }
}

impl Drop for Gate<'_> {
    fn drop(&mut self) {
        let mut state = lock(&self.cache.state);
        // Two holders: the map and this one; waiters hold more.
        if Arc::strong_count(&self.gate) == 2 {
            state.gates.remove(&self.id);
        }
    }
}

fn cache() -> &'static Cache {
    static CACHE: OnceLock<Cache> = OnceLock::new();
    CACHE.get_or_init(|| {
        // A bad value stopped the program at its entry (`config::check`).
        let mb = crate::config::SHARED_CACHE_MB
            .number()
            .ok()
            .flatten()
            .unwrap_or(DEFAULT_LIMIT_MB);
        Cache::new(mb.saturating_mul(1 << 20))
    })
}

/// Makes sure every blob of `ids` is in this process's cache, fetching the missing ones with
/// `fetch` (one fetch per id however many invocations miss it at once), and pins them.
pub(crate) async fn ensure<F, Fut>(ids: &[BlobId], fetch: F) -> Result<Pins>
where
    F: Fn(BlobId) -> Fut,
    Fut: Future<Output = Result<Bytes>>,
{
    if ids.is_empty() {
        return Ok(Pins::default());
    }
    cache().ensure(ids, fetch).await
}

/// Pins every blob of `ids` in this process's cache, or names those it lacks.
pub(crate) fn pin_present(ids: &[BlobId]) -> Result<Pins, Vec<BlobId>> {
    cache().pin_present(ids)
}

/// Adds a blob someone sent (an upload to the HTTP service) after checking its hash.
pub(crate) fn insert_verified(id: BlobId, blob: Bytes) -> Result<()> {
    cache().insert(id, blob).map(drop)
}

/// The value of blob `id` as a `T`: decoded once per type while the blob stays cached.
pub(super) fn resolve<T: DeserializeOwned + Send + Sync + 'static>(
    id: &BlobId,
) -> Result<Arc<Inner<T>>, String> {
    if DECODING_BLOB.get() {
        return Err(format!(
            "shared value {id} is referred to from inside another shared value's blob"
        ));
    }
    let entry = cache().get(id).ok_or_else(|| {
        format!(
            "shared value {id} is not in this process's cache: it arrived by id without its blob"
        )
    })?;
    // Held while decoding: invocations that want the same value wait for it, not decode it too.
    let mut decoded = lock(&entry.decoded);
    if let Some(value) = decoded.get(&TypeId::of::<T>()) {
        if let Ok(inner) = value.clone().downcast::<Inner<T>>() {
            STATS.cache_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(inner);
        }
    }
    let value = {
        DECODING_BLOB.set(true);
        let _reset = ResetOnDrop;
        Codec::Binary.decode::<T>(&entry.body)
    }
    .map_err(|e| format!("cannot decode shared value {id}: {e}"))?;
    STATS.decodes.fetch_add(1, Ordering::Relaxed);
    let inner = Arc::new(Inner {
        value,
        blob: OnceLock::new(),
    });
    decoded.insert(TypeId::of::<T>(), inner.clone());
    Ok(inner)
}

struct ResetOnDrop;

impl Drop for ResetOnDrop {
    fn drop(&mut self) {
        DECODING_BLOB.set(false);
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::AtomicU32;

    use super::*;

    fn blob(fill: u8, len: usize) -> (BlobId, Bytes) {
        let mut bytes = vec![BINARY_TAG];
        bytes.extend(Codec::Binary.encode(&vec![fill; len]).unwrap());
        (BlobId::of(&bytes), Bytes::from(bytes))
    }

    #[test]
    fn evicts_the_least_recently_used_unpinned_blob() {
        // Room for two blobs of ~1 KiB.
        let cache = Cache::new(2_200);
        let (a, a_bytes) = blob(1, 1000);
        let (b, b_bytes) = blob(2, 1000);
        let (c, c_bytes) = blob(3, 1000);
        drop(cache.insert(a, a_bytes).unwrap());
        drop(cache.insert(b, b_bytes).unwrap());
        // `a` is used again, so `b` is now the least recently used.
        assert!(cache.get(&a).is_some());
        drop(cache.insert(c, c_bytes).unwrap());
        assert!(cache.contains(&a) && cache.contains(&c));
        assert!(!cache.contains(&b), "the least recently used one went");

        // Pinned blobs stay, even over the bound.
        let pins = cache.pin_present(&[a, c]).unwrap();
        let (d, d_bytes) = blob(4, 1000);
        drop(cache.insert(d, d_bytes).unwrap());
        assert!(cache.contains(&a) && cache.contains(&c) && cache.contains(&d));
        drop(pins);
        let (e, e_bytes) = blob(5, 1000);
        drop(cache.insert(e, e_bytes).unwrap());
        let missing = cache.pin_present(&[a, c, d, e]).err().unwrap();
        assert_eq!(missing.len(), 2, "two of the unpinned went to make room");
    }

    #[test]
    fn a_blob_must_match_its_id() {
        let cache = Cache::new(1 << 20);
        let (a, _) = blob(1, 10);
        let (_, b_bytes) = blob(2, 10);
        let error = cache.insert(a, b_bytes).err().unwrap();
        assert!(matches!(error.kind(), crate::ErrorKind::BadInput { .. }));
        assert!(
            error.to_string().contains("different content hash"),
            "{error}"
        );
        assert!(!cache.contains(&a));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_misses_fetch_once() {
        let cache = Arc::new(Cache::new(1 << 20));
        let (id, bytes) = blob(7, 100);
        let fetches = Arc::new(AtomicU32::new(0));
        let (release, released) = tokio::sync::watch::channel(false);
        let mut waiting = Vec::new();
        for _ in 0..8 {
            let cache = cache.clone();
            let fetches = fetches.clone();
            let bytes = bytes.clone();
            let released = released.clone();
            waiting.push(tokio::spawn(async move {
                cache
                    .ensure(&[id], |_| {
                        fetches.fetch_add(1, Ordering::SeqCst);
                        let bytes = bytes.clone();
                        let mut released = released.clone();
                        async move {
                            // Every invocation misses before the first fetch answers.
                            released.wait_for(|r| *r).await.unwrap();
                            Ok(bytes)
                        }
                    })
                    .await
                    .map(drop)
            }));
        }
        // Wait until one fetch is under way and the other seven queue behind its gate.
        while fetches.load(Ordering::SeqCst) == 0
            || lock(&cache.state)
                .gates
                .get(&id)
                .is_none_or(|g| Arc::strong_count(g) < 9)
        {
            tokio::task::yield_now().await;
        }
        release.send(true).unwrap();
        for task in waiting {
            task.await.unwrap().unwrap();
        }
        assert_eq!(fetches.load(Ordering::SeqCst), 1);
        assert!(lock(&cache.state).gates.is_empty(), "gates are cleaned up");
    }

    #[tokio::test]
    async fn a_failed_fetch_is_the_invocations_error() {
        let cache = Cache::new(1 << 20);
        let (id, _) = blob(9, 10);
        let error = cache
            .ensure(&[id], |id| async move { Err(super::super::not_held(&id)) })
            .await
            .err()
            .unwrap();
        assert!(
            matches!(error.kind(), crate::ErrorKind::MissingShared { ids, .. } if ids == &[id.to_string()]),
            "{error}"
        );
        assert!(error.to_string().contains("no longer holds it"), "{error}");
    }
}
