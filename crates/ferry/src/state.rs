//! Shared state across instances, kept in Redis: atomic [`Counter`]s, [`MinRegister`]s and
//! [`MaxRegister`]s, and typed [`Key`]s.
//!
//! Every worker process of a program sees the same values, whichever backend runs it: the
//! shared best bound of a branch-and-bound search, the shared counter of Crucial, a flag that
//! one instance sets and the others read.
//!
//! ```no_run
//! use ferry::prelude::*;
//! use ferry::state::Store;
//!
//! /// Records a solution's cost; tells whether it is the best one so far, across instances.
//! #[ferry::function]
//! async fn record(ctx: Context, job: String, cost: i64) -> ferry::Result<bool> {
//!     // Opened once per process from `FERRY_REDIS_URL`, shared by every invocation.
//!     let store = Store::for_process(&ctx)?.namespace(&job);
//!     store.counter("solutions").add(1).await?;
//!     store.min_register::<i64>("best-cost").offer(cost).await
//! }
//!
//! #[ferry::main]
//! async fn main(ctx: Context) -> ferry::Result<()> {
//!     let costs = [30, 12, 25];
//!     ctx.map(costs.map(|cost| Record { job: "job-42".into(), cost })).await?;
//!     let store = Store::from_env()?.namespace("job-42");
//!     assert_eq!(store.min_register::<i64>("best-cost").get().await?, Some(12));
//!     assert_eq!(store.counter("solutions").get().await?, 3);
//!     Ok(())
//! }
//! ```
//!
//! Each operation is one Redis command or one Lua script, so it is atomic across processes:
//! registers compare and set inside Redis, never read-then-write from Rust. A handle names one
//! Redis key: the store's namespace followed by the handle's name (`job-42:best-cost`), its
//! value readable with `redis-cli`. Handles of different kinds share the key space: give each
//! piece of state its own name.

use std::fmt;
use std::marker::PhantomData;
use std::sync::{Arc, LazyLock};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use serde::Serialize;
use serde::de::DeserializeOwned;
use tokio::sync::OnceCell;

use crate::{Context, Error, Result};

/// The variable [`Store::from_env`] reads: a Redis URL such as `redis://127.0.0.1:6379`,
/// `redis://:password@host:6379/2` or `redis+unix:///run/redis.sock`.
pub const REDIS_URL_VAR: &str = crate::config::REDIS_URL.name;

/// A connection to Redis and a key namespace: where the handles live.
///
/// Cheap to clone: clones share one connection, opened on first use and reopened after it
/// drops. Open one per process: [`Store::for_process`] in functions, or keep one in the host.
#[derive(Clone)]
pub struct Store {
    redis: Arc<Connection>,
    /// Prepended to every handle's name: `""` or namespaces joined by `:`, ending in `:`.
    prefix: Arc<str>,
}

struct Connection {
    client: redis::Client,
    connection: OnceCell<ConnectionManager>,
}

impl fmt::Debug for Store {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Store")
            .field("address", &self.address())
            .field("prefix", &self.prefix)
            .finish()
    }
}

/// The store that [`Store::for_process`] opens once per process.
struct ProcessStore(Result<Store>);

impl Store {
    /// A store on the Redis at `url`; the connection is opened by the first operation.
    ///
    /// Fails with a [`Config`](crate::ErrorKind::Config) error when `url` is not a Redis URL.
    pub fn open(url: &str) -> Result<Self> {
        let client = redis::Client::open(url)
            .map_err(|e| Error::config(format!("`{}` is not a redis url: {e}", redact(url))))?;
        Ok(Self {
            redis: Arc::new(Connection {
                client,
                connection: OnceCell::new(),
            }),
            prefix: Arc::from(""),
        })
    }

    /// A store on the Redis at `url`, connected: fails now, with an
    /// [`Unavailable`](crate::ErrorKind::Unavailable) error, when Redis cannot be reached.
    pub async fn connect(url: &str) -> Result<Self> {
        let store = Self::open(url)?;
        store.ping().await?;
        Ok(store)
    }

    /// A store on the Redis named by [`FERRY_REDIS_URL`](REDIS_URL_VAR), opened lazily like
    /// [`Store::open`].
    ///
    /// Fails with a [`Config`](crate::ErrorKind::Config) error when the variable is unset,
    /// empty or not a Redis URL.
    pub fn from_env() -> Result<Self> {
        Self::from_env_value(crate::config::REDIS_URL.text())
    }

    fn from_env_value(value: Option<String>) -> Result<Self> {
        match value.as_deref().map(str::trim) {
            None | Some("") => Err(Error::config(format!(
                "`{REDIS_URL_VAR}` is not set: point it at the redis that holds shared state, \
                 e.g. `redis://127.0.0.1:6379`"
            ))),
            Some(url) => Self::open(url).map_err(|e| match e.kind() {
                crate::ErrorKind::Config { message } => {
                    Error::config(format!("`{REDIS_URL_VAR}`: {message}"))
                }
                _ => e,
            }),
        }
    }

    /// The process's store from [`FERRY_REDIS_URL`](REDIS_URL_VAR): opened by the first
    /// invocation that asks (with [`Context::instance`]) and shared by every later one, so a
    /// warm instance keeps its connection.
    ///
    /// A missing or invalid variable is remembered too: every call fails with the same
    /// [`Config`](crate::ErrorKind::Config) error.
    pub fn for_process(ctx: &Context) -> Result<Self> {
        ctx.instance(|| ProcessStore(Self::from_env())).0.clone()
    }

    /// The same connection, with keys under `name`: `store.namespace("job-42")` keeps this run's
    /// state apart from other runs', and namespaces nest (`job-42:phase-1:`).
    #[must_use]
    pub fn namespace(&self, name: &str) -> Self {
        Self {
            redis: self.redis.clone(),
            prefix: Arc::from(format!("{}{name}:", self.prefix)),
        }
    }

    /// The prefix of this store's keys: `""`, or its namespaces each followed by `:`.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// Checks that Redis answers.
    pub async fn ping(&self) -> Result<()> {
        let mut connection = self.connection().await?;
        redis::cmd("PING")
            .query_async::<String>(&mut connection)
            .await
            .map(drop)
            .map_err(|e| self.error("PING", "", e))
    }

    /// An atomic counter named `name`; it counts from 0.
    pub fn counter(&self, name: &str) -> Counter {
        Counter {
            handle: self.handle(name),
        }
    }

    /// A register named `name` that keeps the smallest value ever offered.
    pub fn min_register<T: RegisterValue>(&self, name: &str) -> MinRegister<T> {
        MinRegister {
            register: Register::new(self.handle(name), Direction::Min),
        }
    }

    /// A register named `name` that keeps the largest value ever offered.
    pub fn max_register<T: RegisterValue>(&self, name: &str) -> MaxRegister<T> {
        MaxRegister {
            register: Register::new(self.handle(name), Direction::Max),
        }
    }

    /// A key named `name` holding a `T`, stored as JSON.
    pub fn key<T: Serialize + DeserializeOwned>(&self, name: &str) -> Key<T> {
        Key {
            handle: self.handle(name),
            value: PhantomData,
        }
    }

    fn handle(&self, name: &str) -> KeyHandle {
        KeyHandle {
            store: self.clone(),
            key: format!("{}{name}", self.prefix),
        }
    }

    fn address(&self) -> String {
        self.redis.client.get_connection_info().addr().to_string()
    }

    async fn connection(&self) -> Result<ConnectionManager> {
        self.redis
            .connection
            .get_or_try_init(|| {
                let config = ConnectionManagerConfig::new()
                    .set_connection_timeout(Some(Duration::from_secs(2)))
                    .set_response_timeout(Some(Duration::from_secs(10)))
                    .set_number_of_retries(3)
                    .set_max_delay(Duration::from_secs(1));
                ConnectionManager::new_with_config(self.redis.client.clone(), config)
            })
            .await
            .cloned()
            .map_err(|e| self.error("connect", "", e))
    }

    /// A ferry error for a failed command: `Unavailable` when Redis could not be reached or
    /// dropped the connection, `Protocol` when it answered with an error.
    fn error(&self, command: &str, key: &str, error: redis::RedisError) -> Error {
        if error.is_io_error()
            || error.is_connection_refusal()
            || error.is_connection_dropped()
            || error.is_timeout()
        {
            Error::unavailable(format!(
                "redis at {} is unreachable: {error}",
                self.address()
            ))
        } else if key.is_empty() {
            Error::protocol(format!("redis failed `{command}`: {error}"))
        } else {
            Error::protocol(format!("redis failed `{command}` on `{key}`: {error}"))
        }
    }
}

/// `redis://user:secret@host` without the secret, for messages.
fn redact(url: &str) -> String {
    match (url.find("://"), url.rfind('@')) {
        (Some(scheme), Some(at)) if at > scheme => {
            format!("{}://***{}", &url[..scheme], &url[at..])
        }
        _ => url.to_owned(),
    }
}

/// One key of a store.
#[derive(Debug, Clone)]
struct KeyHandle {
    store: Store,
    key: String,
}

impl KeyHandle {
    /// Runs `command` on this key, followed by `arguments`.
    async fn query<T: redis::FromRedisValue>(
        &self,
        command: &'static str,
        arguments: &[String],
    ) -> Result<T> {
        let mut connection = self.store.connection().await?;
        redis::cmd(command)
            .arg(&self.key)
            .arg(arguments)
            .query_async(&mut connection)
            .await
            .map_err(|e| self.store.error(command, &self.key, e))
    }

    async fn delete(&self) -> Result<bool> {
        let removed: i64 = self.query("DEL", &[]).await?;
        Ok(removed > 0)
    }
}

/// An atomic `i64` counter shared by every instance: Crucial's shared counter.
///
/// An absent key counts as 0. Made by [`Store::counter`].
#[derive(Debug, Clone)]
pub struct Counter {
    handle: KeyHandle,
}

impl Counter {
    /// Adds `n` (which may be negative) and returns the new value, atomically.
    pub async fn add(&self, n: i64) -> Result<i64> {
        self.handle.query("INCRBY", &[n.to_string()]).await
    }

    /// The current value.
    pub async fn get(&self) -> Result<i64> {
        let value: Option<i64> = self.handle.query("GET", &[]).await?;
        Ok(value.unwrap_or(0))
    }

    /// Back to 0 (the key is deleted).
    pub async fn reset(&self) -> Result<()> {
        self.handle.delete().await.map(drop)
    }

    /// The Redis key that holds the count.
    pub fn key(&self) -> &str {
        &self.handle.key
    }
}

/// A value a [`MinRegister`] or [`MaxRegister`] can hold: `i64` (compared exactly) or `f64`.
pub trait RegisterValue: Copy + Send + Sync + 'static + private::Sealed {
    #[doc(hidden)]
    fn encode(self) -> Option<String>;
    #[doc(hidden)]
    fn decode(text: &str) -> Option<Self>;
    #[doc(hidden)]
    const LUA_KIND: &'static str;
}

mod private {
    pub trait Sealed {}
    impl Sealed for i64 {}
    impl Sealed for f64 {}
}

impl RegisterValue for i64 {
    fn encode(self) -> Option<String> {
        Some(self.to_string())
    }

    fn decode(text: &str) -> Option<Self> {
        text.parse().ok()
    }

    const LUA_KIND: &'static str = "int";
}

/// NaN is never offered: it compares with nothing.
impl RegisterValue for f64 {
    fn encode(self) -> Option<String> {
        (!self.is_nan()).then(|| self.to_string())
    }

    fn decode(text: &str) -> Option<Self> {
        text.parse().ok()
    }

    const LUA_KIND: &'static str = "float";
}

#[derive(Debug, Clone, Copy)]
enum Direction {
    Min,
    Max,
}

/// Compares and sets in one step inside Redis. `KEYS[1]` is the register, `ARGV[1]` the offered
/// value, `ARGV[2]` `min` or `max`, `ARGV[3]` `int` (decimal `i64`s, compared digit by digit:
/// Lua's numbers are doubles) or `float`. Returns 1 when the offer was stored.
const OFFER_SCRIPT: &str = r"
local function less(a, b, kind)
  if kind == 'float' then
    return tonumber(a) < tonumber(b)
  end
  local a_negative, b_negative = string.byte(a, 1) == 45, string.byte(b, 1) == 45
  if a_negative ~= b_negative then
    return a_negative
  end
  if #a ~= #b then
    return (#a < #b) ~= a_negative
  end
  for i = 1, #a do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then
      return (x < y) ~= a_negative
    end
  end
  return false
end

local current = redis.call('GET', KEYS[1])
local better
if not current then
  better = true
elseif ARGV[2] == 'min' then
  better = less(ARGV[1], current, ARGV[3])
else
  better = less(current, ARGV[1], ARGV[3])
end
if better then
  redis.call('SET', KEYS[1], ARGV[1])
  return 1
end
return 0
";

static OFFER: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(OFFER_SCRIPT));

#[derive(Debug, Clone)]
struct Register<T> {
    handle: KeyHandle,
    direction: Direction,
    value: PhantomData<fn() -> T>,
}

impl<T: RegisterValue> Register<T> {
    fn new(handle: KeyHandle, direction: Direction) -> Self {
        Self {
            handle,
            direction,
            value: PhantomData,
        }
    }

    async fn offer(&self, value: T) -> Result<bool> {
        let Some(encoded) = value.encode() else {
            return Ok(false);
        };
        let direction = match self.direction {
            Direction::Min => "min",
            Direction::Max => "max",
        };
        let mut connection = self.handle.store.connection().await?;
        let stored: i64 = OFFER
            .key(&self.handle.key)
            .arg(encoded)
            .arg(direction)
            .arg(T::LUA_KIND)
            .invoke_async(&mut connection)
            .await
            .map_err(|e| self.handle.store.error("EVALSHA", &self.handle.key, e))?;
        Ok(stored == 1)
    }

    async fn get(&self) -> Result<Option<T>> {
        let text: Option<String> = self.handle.query("GET", &[]).await?;
        text.map(|text| {
            T::decode(&text).ok_or_else(|| {
                Error::protocol(format!(
                    "`{}` holds `{text}`, not {} `{}`",
                    self.handle.key,
                    article(std::any::type_name::<T>()),
                    std::any::type_name::<T>()
                ))
            })
        })
        .transpose()
    }
}

fn article(type_name: &str) -> &'static str {
    if type_name.starts_with(['a', 'e', 'i', 'o', 'u']) {
        "an"
    } else {
        "a"
    }
}

/// A register type: a shared best bound that keeps the `$best` value offered by any instance.
macro_rules! register_type {
    ($(#[$doc:meta])* $name:ident, $best:literal, $beaten:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone)]
        pub struct $name<T> {
            register: Register<T>,
        }

        impl<T: RegisterValue> $name<T> {
            #[doc = concat!("Stores `value` if the register is empty or holds a ", $beaten, " value, atomically; `true` when it did. An `f64` NaN is never stored.")]
            pub async fn offer(&self, value: T) -> Result<bool> {
                self.register.offer(value).await
            }

            #[doc = concat!("The ", $best, " value offered so far (`None` before the first offer).")]
            pub async fn get(&self) -> Result<Option<T>> {
                self.register.get().await
            }

            /// Empties the register.
            pub async fn reset(&self) -> Result<()> {
                self.register.handle.delete().await.map(drop)
            }

            /// The Redis key that holds the value.
            pub fn key(&self) -> &str {
                &self.register.handle.key
            }
        }
    };
}

register_type!(
    /// Keeps the smallest value offered by any instance: the shared best bound of a minimising
    /// branch-and-bound search. Made by [`Store::min_register`].
    MinRegister,
    "smallest",
    "larger"
);

register_type!(
    /// Keeps the largest value offered by any instance: the shared best bound of a maximising
    /// search. Made by [`Store::max_register`].
    MaxRegister,
    "largest",
    "smaller"
);

/// A key holding a `T` as JSON, shared by every instance. Made by [`Store::key`].
pub struct Key<T> {
    handle: KeyHandle,
    value: PhantomData<fn() -> T>,
}

impl<T> Clone for Key<T> {
    fn clone(&self) -> Self {
        Self {
            handle: self.handle.clone(),
            value: PhantomData,
        }
    }
}

impl<T> fmt::Debug for Key<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Key")
            .field("key", &self.handle.key)
            .field("type", &std::any::type_name::<T>())
            .finish()
    }
}

impl<T: Serialize + DeserializeOwned> Key<T> {
    /// The value, or `None` when the key is absent.
    ///
    /// Fails with a [`Protocol`](crate::ErrorKind::Protocol) error naming the JSON path when the
    /// stored JSON is not a `T`.
    pub async fn get(&self) -> Result<Option<T>> {
        let text: Option<String> = self.handle.query("GET", &[]).await?;
        text.map(|text| {
            let mut json = serde_json::Deserializer::from_str(&text);
            serde_path_to_error::deserialize(&mut json).map_err(|e| {
                Error::protocol(format!(
                    "`{}` does not hold a `{}`: at `{}`: {}",
                    self.handle.key,
                    std::any::type_name::<T>(),
                    e.path(),
                    e.inner()
                ))
            })
        })
        .transpose()
    }

    /// Stores `value`, replacing any other.
    pub async fn set(&self, value: &T) -> Result<()> {
        let json = self.encode(value)?;
        self.handle.query::<()>("SET", &[json]).await
    }

    /// Stores `value` only if the key is absent, atomically; `true` when it did. The first of
    /// many instances to call it wins.
    pub async fn set_if_absent(&self, value: &T) -> Result<bool> {
        let json = self.encode(value)?;
        let reply: Option<String> = self.handle.query("SET", &[json, "NX".to_owned()]).await?;
        Ok(reply.is_some())
    }

    /// Removes the key; `true` when it was present.
    pub async fn delete(&self) -> Result<bool> {
        self.handle.delete().await
    }

    /// The Redis key that holds the value.
    pub fn key(&self) -> &str {
        &self.handle.key
    }

    fn encode(&self, value: &T) -> Result<String> {
        serde_json::to_string(value).map_err(|e| {
            Error::protocol(format!(
                "cannot encode a `{}` for `{}`: {e}",
                std::any::type_name::<T>(),
                self.handle.key
            ))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ErrorKind;

    fn config_message(result: Result<Store>) -> String {
        match result.unwrap_err().kind() {
            ErrorKind::Config { message } => message.clone(),
            other => panic!("expected a config error, got {other:?}"),
        }
    }

    #[test]
    fn a_missing_or_empty_url_is_a_config_error_naming_the_variable() {
        for value in [None, Some(String::new()), Some("  ".to_owned())] {
            let message = config_message(Store::from_env_value(value));
            assert!(
                message.starts_with("`FERRY_REDIS_URL` is not set"),
                "{message}"
            );
        }
    }

    #[test]
    fn an_invalid_url_is_a_config_error_without_the_password() {
        let message = config_message(Store::from_env_value(Some(
            "http://user:hunter2@example.com".to_owned(),
        )));
        assert!(
            message.starts_with("`FERRY_REDIS_URL`: `http://***@example.com` is not a redis url"),
            "{message}"
        );
        assert!(!message.contains("hunter2"), "{message}");
    }

    #[test]
    fn namespaces_nest_into_key_prefixes() {
        let store = Store::open("redis://127.0.0.1:6379").unwrap();
        assert_eq!(store.prefix(), "");
        assert_eq!(store.counter("hits").key(), "hits");
        let nested = store.namespace("job-42").namespace("phase-1");
        assert_eq!(nested.prefix(), "job-42:phase-1:");
        assert_eq!(
            nested.min_register::<i64>("best").key(),
            "job-42:phase-1:best"
        );
        assert_eq!(nested.key::<String>("plan").key(), "job-42:phase-1:plan");
    }

    #[test]
    fn register_values_round_trip_through_their_text() {
        for value in [i64::MIN, -1, 0, 7, i64::MAX] {
            assert_eq!(i64::decode(&value.encode().unwrap()), Some(value));
        }
        for value in [-1.5e300, -0.25, 0.0, 1e-300, 3.5, f64::INFINITY] {
            assert_eq!(f64::decode(&value.encode().unwrap()), Some(value));
        }
        assert_eq!(f64::NAN.encode(), None);
    }
}
