//! [`Shared<T>`]: one value that many invocations take as an argument, encoded once, sent by
//! its content hash and cached by the workers that receive it.
//!
//! Passing a 1 MB scene to 1,000 tiles by value encodes and sends it 1,000 times. Wrapped in a
//! `Shared`, the host encodes it once (the first time a call carries it), every task carries its
//! 32-byte id, and each worker gets the bytes once and decodes them once:
//!
//! ```
//! use ferry::Shared;
//!
//! #[ferry::function]
//! fn sum_range(numbers: Shared<Vec<u64>>, from: usize, to: usize) -> u64 {
//!     numbers[from..to].iter().sum()
//! }
//!
//! #[ferry::main]
//! async fn main(ctx: ferry::Context) -> ferry::Result<()> {
//!     let numbers = Shared::new((0..100_000).collect::<Vec<u64>>());
//!     let tasks = (0..10).map(|i| SumRange {
//!         numbers: numbers.clone(), // a reference count, not a copy
//!         from: i * 10_000,
//!         to: (i + 1) * 10_000,
//!     });
//!     let sums = ctx.map(tasks).await?;
//!     assert_eq!(sums.iter().sum::<u64>(), 4_999_950_000);
//!     Ok(())
//! }
//! ```
//!
//! How it travels:
//!
//! - **By id** on the `local` and `http` backends, in arguments of [`Context::call`](crate::Context::call) (and
//!   `spawn`, `map`, graphs…): the value is encoded with the binary codec once per `Shared`
//!   (clones share it), hashed with SHA-256 over a codec tag and the bytes, and the call's
//!   envelope (docs/wire.md) lists the ids its arguments refer to. A worker that lacks
//!   a blob gets it before it decodes the arguments: a local worker asks its platform over its
//!   socket; an HTTP service answers `428` with the ids it lacks and the client uploads them
//!   (`PUT /blobs/{id}`, hash checked) and sends the request again.
//! - **In full** everywhere else: the `inline` backend moves values; JSON (people, other
//!   languages, OpenWhisk and Lambda events) carries the value exactly as `T` would be carried;
//!   a function calling on from inside a worker, or a program writing a `Shared` to a file, gets
//!   the full value too. A `Shared<T>` parameter therefore looks like a `T` parameter to every
//!   JSON client.
//!
//! The host keeps a blob servable for exactly as long as some clone of its `Shared` lives, and a
//! call holds its blobs until it ends. Workers cache blobs and their decoded values, bounded by
//! `FERRY_SHARED_CACHE_MB` MiB of encoded bytes (default 64), evicting the least recently used;
//! a warm worker decodes a scene once, not once per task. [`stats`] counts what happened.

mod cache;

pub(crate) use cache::{Pins, ensure, insert_verified, pin_present};

use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::fmt;
use std::ops::Deref;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, Weak};
use std::time::{Duration, Instant};

use bytes::Bytes;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use sha2::{Digest as _, Sha256};

use crate::{Codec, Error, ErrorKind, Result};

/// A value shared by many invocations: cheap to clone, encoded at most once, sent by content
/// hash to the backends that can deliver it that way (see the [module docs](self)).
///
/// It derefs to `T`. As a `#[ferry::function]` parameter it needs `T: Serialize +
/// DeserializeOwned + Send + Sync + 'static`.
///
/// ```
/// use ferry::Shared;
///
/// let scene = Shared::new(vec![1.5f64; 4]);
/// let copy = scene.clone();
/// assert!(Shared::ptr_eq(&scene, &copy)); // one value, two handles
/// assert_eq!(copy.len(), 4);
/// // Outside a call, and in JSON always, it is written as the plain value.
/// assert_eq!(serde_json::to_string(&scene).unwrap(), "[1.5,1.5,1.5,1.5]");
/// let back: Shared<Vec<f64>> = ferry::Codec::Binary
///     .decode(&ferry::Codec::Binary.encode(&scene).unwrap())
///     .unwrap();
/// assert_eq!(back, scene);
/// ```
pub struct Shared<T> {
    inner: Arc<Inner<T>>,
}

struct Inner<T> {
    value: T,
    /// The value encoded as a blob, made the first time a call sends it by id. An encoding
    /// error is kept too: the same value fails the same way every time.
    blob: OnceLock<Result<Encoded>>,
}

#[derive(Clone)]
struct Encoded {
    id: BlobId,
    bytes: Arc<Bytes>,
}

impl<T> Shared<T> {
    /// Wraps a value.
    pub fn new(value: T) -> Self {
        Self {
            inner: Arc::new(Inner {
                value,
                blob: OnceLock::new(),
            }),
        }
    }

    /// Whether two `Shared` are clones of one another (equal values made apart are not).
    pub fn ptr_eq(this: &Self, other: &Self) -> bool {
        Arc::ptr_eq(&this.inner, &other.inner)
    }
}

impl<T> Clone for Shared<T> {
    fn clone(&self) -> Self {
        Self {
            inner: self.inner.clone(),
        }
    }
}

impl<T> Deref for Shared<T> {
    type Target = T;

    fn deref(&self) -> &T {
        &self.inner.value
    }
}

impl<T> AsRef<T> for Shared<T> {
    fn as_ref(&self) -> &T {
        &self.inner.value
    }
}

impl<T> From<T> for Shared<T> {
    fn from(value: T) -> Self {
        Self::new(value)
    }
}

impl<T: fmt::Debug> fmt::Debug for Shared<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Shared").field(&self.inner.value).finish()
    }
}

impl<T: PartialEq> PartialEq for Shared<T> {
    fn eq(&self, other: &Self) -> bool {
        self.inner.value == other.inner.value
    }
}

impl<T: Eq> Eq for Shared<T> {}

/// The binary form: which of the two a `Shared` was written as. Human-readable formats (JSON)
/// always carry the plain value and never this enum.
#[derive(Serialize)]
enum WireRef<'a, T> {
    Value(&'a T),
    Blob(BlobId),
}

#[derive(Deserialize)]
enum Wire<T> {
    Value(T),
    Blob(BlobId),
}

impl<T: Serialize> Serialize for Shared<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            return self.inner.value.serialize(serializer);
        }
        match collect(&self.inner) {
            None => WireRef::Value(&self.inner.value).serialize(serializer),
            Some(Ok(id)) => WireRef::<T>::Blob(id).serialize(serializer),
            Some(Err(error)) => Err(serde::ser::Error::custom(format!(
                "cannot encode a shared value: {error}"
            ))),
        }
    }
}

impl<'de, T: DeserializeOwned + Send + Sync + 'static> Deserialize<'de> for Shared<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if deserializer.is_human_readable() {
            return T::deserialize(deserializer).map(Self::new);
        }
        match Wire::<T>::deserialize(deserializer)? {
            Wire::Value(value) => Ok(Self::new(value)),
            Wire::Blob(id) => cache::resolve::<T>(&id)
                .map(|inner| Self { inner })
                .map_err(serde::de::Error::custom),
        }
    }
}

/// The content hash that names a shared value on the wire: SHA-256 of a codec tag and the
/// value's encoding. Shown as 64 hex digits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct BlobId([u8; 32]);

impl BlobId {
    /// The id of a blob (its codec tag and encoded bytes).
    pub fn of(blob: &[u8]) -> Self {
        Self(Sha256::digest(blob).into())
    }

    /// The 32 bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }

    /// An id from its 32 bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }
}

impl fmt::Display for BlobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for byte in self.0 {
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl fmt::Debug for BlobId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BlobId({self})")
    }
}

impl std::str::FromStr for BlobId {
    type Err = Error;

    fn from_str(text: &str) -> Result<Self> {
        let invalid = || Error::bad_input(".", format!("`{text}` is not a 64-digit hex blob id"));
        let text = text.trim();
        if text.len() != 64 || !text.is_ascii() {
            return Err(invalid());
        }
        let mut id = [0u8; 32];
        for (byte, pair) in id.iter_mut().zip(text.as_bytes().chunks_exact(2)) {
            let pair = std::str::from_utf8(pair).map_err(|_| invalid())?;
            *byte = u8::from_str_radix(pair, 16).map_err(|_| invalid())?;
        }
        Ok(Self(id))
    }
}

impl Serialize for BlobId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.collect_str(self)
        } else {
            self.0.serialize(serializer)
        }
    }
}

impl<'de> Deserialize<'de> for BlobId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if deserializer.is_human_readable() {
            let text = String::deserialize(deserializer)?;
            text.parse().map_err(serde::de::Error::custom)
        } else {
            <[u8; 32]>::deserialize(deserializer).map(Self)
        }
    }
}

/// The first byte of every blob: the codec of the bytes after it, hashed with them so one value
/// encoded two ways gets two ids.
const BINARY_TAG: u8 = 2;

/// Ids in an HTTP header (`x-ferry-blobs`, `x-ferry-missing-blobs`): comma-separated hex.
pub(crate) fn ids_to_header(ids: &[BlobId]) -> String {
    ids.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(",")
}

/// Reads [`ids_to_header`]'s form.
pub(crate) fn ids_from_header(text: &str) -> Result<Vec<BlobId>> {
    text.split(',')
        .map(str::trim)
        .filter(|id| !id.is_empty())
        .map(str::parse)
        .collect()
}

/// The error of arguments that name shared values which cannot be had where the function runs.
pub(crate) fn missing(ids: &[BlobId], message: impl Into<String>) -> Error {
    Error::new(ErrorKind::MissingShared {
        ids: ids.iter().map(ToString::to_string).collect(),
        message: message.into(),
    })
}

// --- Host side: encoding arguments with shared values by id ------------------------------------

thread_local! {
    /// Set while a call's arguments are encoded for a backend that can deliver blobs: shared
    /// values met meanwhile are written by id and recorded here.
    static COLLECTOR: RefCell<Option<Collector>> = const { RefCell::new(None) };
}

#[derive(Default)]
struct Collector {
    held: Vec<Encoded>,
}

/// The blobs a call's arguments refer to, kept servable until the call ends.
#[derive(Default)]
pub(crate) struct Held {
    ids: Vec<BlobId>,
    _blobs: Vec<Arc<Bytes>>,
}

impl Held {
    /// The ids, for the call's envelope.
    pub(crate) fn ids(&self) -> &[BlobId] {
        &self.ids
    }
}

/// Encodes a call's arguments. With `by_id` (the backend can deliver blobs) and a binary codec,
/// shared values are written as ids; the returned [`Held`] lists them and keeps them servable.
/// The time taken counts in [`SharedStats::argument_encode_time`].
pub(crate) fn encode_arguments<A: Serialize + ?Sized>(
    codec: Codec,
    arguments: &A,
    by_id: bool,
) -> Result<(Vec<u8>, Held)> {
    let started = Instant::now();
    let outcome = if by_id {
        let _collecting = CollectorScope::start();
        let encoded = codec.encode(arguments);
        let collector = COLLECTOR
            .with(|c| c.borrow_mut().take())
            .unwrap_or_default();
        encoded.map(|payload| {
            let mut held = Held::default();
            // bincode walks the value twice (to size it, then to write it): count each id once.
            for encoded in collector.held {
                if !held.ids.contains(&encoded.id) {
                    held.ids.push(encoded.id);
                    held._blobs.push(encoded.bytes);
                }
            }
            STATS
                .references
                .fetch_add(held.ids.len() as u64, Ordering::Relaxed);
            (payload, held)
        })
    } else {
        codec
            .encode(arguments)
            .map(|payload| (payload, Held::default()))
    };
    STATS.argument_encodes.fetch_add(1, Ordering::Relaxed);
    STATS.argument_encode_nanos.fetch_add(
        u64::try_from(started.elapsed().as_nanos()).unwrap_or(u64::MAX),
        Ordering::Relaxed,
    );
    outcome
}

/// Activates the collector for its lifetime and clears it however the encoding ends (a user's
/// `Serialize` may panic): a stale collector would write ids where nobody can deliver them.
struct CollectorScope {
    previous: Option<Collector>,
}

impl CollectorScope {
    fn start() -> Self {
        let previous = COLLECTOR.with(|c| c.borrow_mut().replace(Collector::default()));
        Self { previous }
    }
}

impl Drop for CollectorScope {
    fn drop(&mut self) {
        let previous = self.previous.take();
        COLLECTOR.with(|c| *c.borrow_mut() = previous);
    }
}

/// While a collector is active: the value's id, its blob encoded (once) and recorded. `None`
/// when no collector is active: write the value in full.
fn collect<T: Serialize>(inner: &Inner<T>) -> Option<Result<BlobId>> {
    // Taken out while the value itself is encoded, so shared values nested inside it are written
    // in full into its blob: a blob never refers to other blobs.
    let mut collector = COLLECTOR.with(|c| c.borrow_mut().take())?;
    let encoded = inner
        .blob
        .get_or_init(|| {
            let mut blob = vec![BINARY_TAG];
            blob.extend_from_slice(&Codec::Binary.encode(&inner.value)?);
            let id = BlobId::of(&blob);
            STATS.encodes.fetch_add(1, Ordering::Relaxed);
            Ok(Encoded {
                id,
                bytes: register(id, Bytes::from(blob)),
            })
        })
        .clone();
    let outcome = encoded.map(|encoded| {
        let id = encoded.id;
        collector.held.push(encoded);
        id
    });
    COLLECTOR.with(|c| *c.borrow_mut() = Some(collector));
    Some(outcome)
}

/// Blobs this process can serve, by id: weak, so a blob lives exactly as long as some `Shared`
/// (or a call in flight) holds it.
#[derive(Default)]
struct HostBlobs {
    by_id: HashMap<BlobId, Weak<Bytes>>,
    /// Dead entries are swept when the map reaches this size.
    sweep_at: usize,
}

fn host_blobs() -> std::sync::MutexGuard<'static, HostBlobs> {
    static BLOBS: OnceLock<Mutex<HostBlobs>> = OnceLock::new();
    BLOBS
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Registers a freshly encoded blob; when a live blob with the same id exists (an equal value
/// wrapped twice), returns that one, so the entry stays alive while either `Shared` does.
fn register(id: BlobId, bytes: Bytes) -> Arc<Bytes> {
    let mut blobs = host_blobs();
    if let Some(live) = blobs.by_id.get(&id).and_then(Weak::upgrade) {
        return live;
    }
    if blobs.by_id.len() >= blobs.sweep_at {
        blobs.by_id.retain(|_, blob| blob.strong_count() > 0);
        blobs.sweep_at = (blobs.by_id.len() * 2).max(64);
    }
    let bytes = Arc::new(bytes);
    blobs.by_id.insert(id, Arc::downgrade(&bytes));
    bytes
}

/// A blob this process holds, to answer a worker or upload to a service.
pub(crate) fn host_blob(id: &BlobId) -> Option<Bytes> {
    let bytes = host_blobs().by_id.get(id).and_then(Weak::upgrade)?;
    STATS.served.fetch_add(1, Ordering::Relaxed);
    Some(Bytes::clone(&bytes))
}

/// A blob this process was asked for but does not hold: its `Shared` was dropped.
pub(crate) fn not_held(id: &BlobId) -> Error {
    missing(
        &[*id],
        "the caller no longer holds it: every clone of its `Shared` was dropped",
    )
}

// --- Counters --------------------------------------------------------------------------------

/// What this process did with shared values so far, from [`stats`]. Hosts count `encodes`,
/// `references` and `served`; workers count `fetches`, `decodes` and `cache_hits`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[non_exhaustive]
pub struct SharedStats {
    /// Shared values encoded into blobs: once per value, however many calls carry it.
    pub encodes: u64,
    /// Shared values written as their id instead of in full (each distinct value once per
    /// call).
    pub references: u64,
    /// Blobs handed out: to a local worker that asked, or uploaded to an HTTP service.
    pub served: u64,
    /// Blobs received into this process's cache: fetched from the local platform, or uploaded
    /// to this HTTP service.
    pub fetches: u64,
    /// Blobs decoded into values: once per blob and type while it stays cached.
    pub decodes: u64,
    /// References resolved to a value the cache had already decoded.
    pub cache_hits: u64,
    /// Blobs dropped from the cache to stay within `FERRY_SHARED_CACHE_MB`.
    pub evictions: u64,
    /// Typed calls whose arguments this process encoded for a remote backend, shared values or
    /// not.
    pub argument_encodes: u64,
    /// Time spent encoding those arguments: what `Shared` saves a host.
    #[serde(with = "nanos")]
    pub argument_encode_time: Duration,
}

#[derive(Default)]
struct Counters {
    encodes: AtomicU64,
    references: AtomicU64,
    served: AtomicU64,
    fetches: AtomicU64,
    decodes: AtomicU64,
    cache_hits: AtomicU64,
    evictions: AtomicU64,
    argument_encodes: AtomicU64,
    argument_encode_nanos: AtomicU64,
}

static STATS: Counters = Counters {
    encodes: AtomicU64::new(0),
    references: AtomicU64::new(0),
    served: AtomicU64::new(0),
    fetches: AtomicU64::new(0),
    decodes: AtomicU64::new(0),
    cache_hits: AtomicU64::new(0),
    evictions: AtomicU64::new(0),
    argument_encodes: AtomicU64::new(0),
    argument_encode_nanos: AtomicU64::new(0),
};

/// This process's counters since it started.
pub fn stats() -> SharedStats {
    let get = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
    SharedStats {
        encodes: get(&STATS.encodes),
        references: get(&STATS.references),
        served: get(&STATS.served),
        fetches: get(&STATS.fetches),
        decodes: get(&STATS.decodes),
        cache_hits: get(&STATS.cache_hits),
        evictions: get(&STATS.evictions),
        argument_encodes: get(&STATS.argument_encodes),
        argument_encode_time: Duration::from_nanos(get(&STATS.argument_encode_nanos)),
    }
}

mod nanos {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(
        value: &Duration,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        serializer.serialize_u64(u64::try_from(value.as_nanos()).unwrap_or(u64::MAX))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Duration, D::Error> {
        u64::deserialize(deserializer).map(Duration::from_nanos)
    }
}

thread_local! {
    /// Set while a blob's bytes are decoded: a blob never refers to other blobs, so an id met
    /// there is an error rather than a nested cache lookup.
    static DECODING_BLOB: Cell<bool> = const { Cell::new(false) };
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
    struct Scene {
        name: String,
        spheres: Vec<(f64, f64, f64)>,
    }

    #[derive(Debug, PartialEq, Serialize, Deserialize)]
    struct Task {
        scene: Shared<Scene>,
        tile: u32,
    }

    fn scene(name: &str) -> Scene {
        Scene {
            name: name.to_owned(),
            spheres: (0..100).map(|i| (f64::from(i), 1.0, -2.5)).collect(),
        }
    }

    #[test]
    fn by_value_round_trips_in_every_codec() {
        let task = Task {
            scene: Shared::new(scene("by value")),
            tile: 7,
        };
        for codec in [Codec::Json, Codec::Binary, Codec::BinaryInJson] {
            let bytes = codec.encode(&task).unwrap();
            assert_eq!(codec.decode::<Task>(&bytes).unwrap(), task, "{codec}");
        }
    }

    #[test]
    fn json_carries_the_plain_value() {
        let task = Task {
            scene: Shared::new(scene("plain")),
            tile: 1,
        };
        let (shared, _) = encode_arguments(Codec::Json, &task, true).unwrap();
        #[derive(Serialize)]
        struct PlainTask<'a> {
            scene: &'a Scene,
            tile: u32,
        }
        let plain = Codec::Json
            .encode(&PlainTask {
                scene: &task.scene,
                tile: 1,
            })
            .unwrap();
        assert_eq!(shared, plain, "a `Shared<T>` is a `T` to JSON clients");
    }

    #[test]
    fn by_id_round_trips_through_the_cache() {
        let shared = Shared::new(scene("by id"));
        let task = Task {
            scene: shared.clone(),
            tile: 3,
        };
        for codec in [Codec::Binary, Codec::BinaryInJson] {
            let (payload, held) = encode_arguments(codec, &task, true).unwrap();
            assert_eq!(held.ids().len(), 1, "{codec}");
            let id = held.ids()[0];
            // 4 bytes of variant, 32 of id, 4 of tile: the scene itself is not in the payload.
            let plain_len = codec.encode(&task).unwrap().len();
            assert!(payload.len() < plain_len / 4, "{codec}: {}", payload.len());

            let blob = host_blob(&id).expect("the host serves what it referenced");
            insert_verified(id, blob).unwrap();
            let pins = pin_present(&[id]).unwrap();
            let decoded: Task = codec.decode(&payload).unwrap();
            drop(pins);
            assert_eq!(decoded, task, "{codec}");
        }
    }

    /// Counts how often it is serialized.
    #[derive(Debug, Deserialize)]
    struct Counted(Vec<u64>);

    static COUNTED_ENCODES: AtomicU64 = AtomicU64::new(0);

    impl Serialize for Counted {
        fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
            COUNTED_ENCODES.fetch_add(1, Ordering::SeqCst);
            self.0.serialize(serializer)
        }
    }

    #[test]
    fn a_value_is_encoded_once_per_shared() {
        let shared = Shared::new(Counted((0..1000).collect()));
        // bincode walks a value once to size it and once to write it.
        Codec::Binary.encode(&*shared).unwrap();
        let one_encoding = COUNTED_ENCODES.swap(0, Ordering::SeqCst);
        let mut ids = Vec::new();
        for tile in 0..50u32 {
            let (_, held) = encode_arguments(Codec::Binary, &(shared.clone(), tile), true).unwrap();
            ids.extend_from_slice(held.ids());
        }
        assert_eq!(
            COUNTED_ENCODES.load(Ordering::SeqCst),
            one_encoding,
            "50 calls, one encoding"
        );
        ids.dedup();
        assert_eq!(ids.len(), 1, "every call refers to the same id");
        for tile in 0..3u32 {
            encode_arguments(Codec::Binary, &(shared.clone(), tile), false).unwrap();
        }
        assert_eq!(
            COUNTED_ENCODES.load(Ordering::SeqCst),
            4 * one_encoding,
            "in full, every call encodes it"
        );
    }

    #[test]
    fn ids_are_stable_and_depend_on_the_content() {
        let a = Shared::new(scene("stable"));
        let b = Shared::new(scene("stable"));
        let c = Shared::new(scene("different"));
        let id = |s: &Shared<Scene>| {
            let (_, held) = encode_arguments(Codec::Binary, s, true).unwrap();
            held.ids()[0]
        };
        assert_eq!(id(&a), id(&b), "equal values, equal ids");
        assert_ne!(id(&a), id(&c));
        // The id is SHA-256 over the codec tag and the binary encoding.
        let mut blob = vec![BINARY_TAG];
        blob.extend(Codec::Binary.encode(&scene("stable")).unwrap());
        assert_eq!(id(&a), BlobId::of(&blob));
        assert_eq!(id(&a).to_string().len(), 64);
        assert_eq!(id(&a).to_string().parse::<BlobId>().unwrap(), id(&a));
        assert!("zz".parse::<BlobId>().is_err());
    }

    #[test]
    fn without_a_collector_the_value_goes_in_full() {
        let task = Task {
            scene: Shared::new(scene("full")),
            tile: 2,
        };
        let (payload, held) = encode_arguments(Codec::Binary, &task, false).unwrap();
        assert!(held.ids().is_empty());
        assert_eq!(payload, Codec::Binary.encode(&task).unwrap());
        assert_eq!(Codec::Binary.decode::<Task>(&payload).unwrap(), task);
    }

    #[test]
    fn a_blob_lives_as_long_as_its_shared() {
        let shared = Shared::new(scene("short-lived"));
        let (_, held) = encode_arguments(Codec::Binary, &shared, true).unwrap();
        let id = held.ids()[0];
        drop(shared);
        assert!(host_blob(&id).is_some(), "the call still holds it");
        drop(held);
        assert!(host_blob(&id).is_none(), "nothing holds it any more");
    }

    #[test]
    fn an_unknown_id_is_a_clear_decoding_error() {
        let mut payload = 1u32.to_le_bytes().to_vec();
        payload.extend([0xab; 32]);
        let error = Codec::Binary.decode::<Shared<Scene>>(&payload).unwrap_err();
        let message = error.to_string();
        assert!(
            matches!(error.kind(), ErrorKind::BadInput { .. }),
            "{message}"
        );
        assert!(
            message.contains(&"ab".repeat(32)) && message.contains("not in this process"),
            "{message}"
        );
    }

    #[test]
    fn a_panicking_serializer_leaves_no_collector_behind() {
        struct Boom;
        impl Serialize for Boom {
            fn serialize<S: Serializer>(&self, _: S) -> Result<S::Ok, S::Error> {
                panic!("boom")
            }
        }
        let outcome = std::panic::catch_unwind(|| encode_arguments(Codec::Binary, &Boom, true));
        assert!(outcome.is_err());
        let shared = Shared::new(scene("after the panic"));
        let plain = Codec::Binary.encode(&shared).unwrap();
        assert_eq!(
            plain,
            Codec::Binary.encode(&WireRef::Value(&*shared)).unwrap()
        );
    }

    #[test]
    fn headers_round_trip() {
        let ids = [BlobId([1; 32]), BlobId([0xfe; 32])];
        assert_eq!(ids_from_header(&ids_to_header(&ids)).unwrap(), ids);
        assert!(ids_from_header("").unwrap().is_empty());
        assert!(ids_from_header("abc").is_err());
    }
}
