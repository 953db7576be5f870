//! What a platform's payload limit cannot carry goes through the program's store
//! ([`crate::store`], `FERRY_STORE`), on both sides of an invocation, for every backend whose
//! events are JSON objects under a limit (Lambda's 6 MB, OpenWhisk's 1 MiB):
//!
//! - an event over the limit is put under `payloads/` and the function is sent
//!   `{"__ferry_payload": "<key>"}` instead; the runtime fetches it. An output over the limit
//!   travels back the same way. The caller deletes both once the call has ended; the bucket's
//!   lifecycle rule (`ferry deploy`) expires what a crashed caller leaves;
//! - a shared value's blob is put under `shared/<id>` once per host process (content-addressed:
//!   a blob already there is not sent again), the event lists the ids in `"__ferry_shared"`, and
//!   the runtime fetches each blob once into its cache.
//!
//! [`exchange`] is the caller's side; [`resolve_event`], [`pin_shared`] and [`store_output`]
//! the runtime's. The runtime only reads keys under its own store's prefix: a caller cannot make
//! it read anything else its role may read.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use bytes::Bytes;

use crate::platform::BackendKind;
use crate::shared::BlobId;
use crate::store::{Store, StoreLocation};
use crate::wire::Envelope;
use crate::{Error, ErrorKind, Result};

/// The event (or answer) that stands for a payload in the store.
pub(crate) const PAYLOAD_PARAM: &str = "__ferry_payload";

/// A store and the shared values this process has put there.
pub(crate) struct Offload {
    store: Store,
    uploaded: Mutex<HashMap<BlobId, Arc<tokio::sync::OnceCell<()>>>>,
}

impl std::fmt::Debug for Offload {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Offload")
            .field("store", self.store.location())
            .finish_non_exhaustive()
    }
}

impl Offload {
    pub(crate) fn new(store: Store) -> Self {
        Self {
            store,
            uploaded: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn location(&self) -> &StoreLocation {
        self.store.location()
    }

    /// Puts each blob of `ids` in the store unless this process already did (or it is there):
    /// calls that share a blob wait for one upload.
    pub(crate) async fn upload_shared(&self, ids: &[BlobId]) -> Result<()> {
        for id in ids {
            let gate = self
                .uploaded
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .entry(*id)
                .or_default()
                .clone();
            gate.get_or_try_init(|| async {
                let key = self.shared_key(id);
                if self.store.exists(&key).await? {
                    return Ok::<(), Error>(());
                }
                let blob =
                    crate::shared::host_blob(id).ok_or_else(|| crate::shared::not_held(id))?;
                self.store.put(&key, blob).await?;
                Ok(())
            })
            .await?;
        }
        Ok(())
    }

    /// A shared value's blob, fetched by a runtime.
    pub(crate) async fn fetch_shared(&self, id: BlobId) -> Result<Bytes> {
        self.store
            .get(&self.shared_key(&id))
            .await
            .map_err(|e| crate::shared::missing(&[id], e.to_string()))
    }

    fn shared_key(&self, id: &BlobId) -> String {
        self.store.location().key(&format!("shared/{id}"))
    }

    /// Puts `payload` in the store: the event (or answer) that stands for it, and its key.
    pub(crate) async fn put_payload(&self, payload: Bytes) -> Result<(Bytes, String)> {
        let key = self
            .store
            .location()
            .key(&format!("payloads/{}", unique_name()));
        self.store.put(&key, payload).await?;
        let reference = serde_json::to_vec(&serde_json::json!({ PAYLOAD_PARAM: key }))
            .map_err(|e| Error::protocol(format!("cannot encode a payload reference: {e}")))?;
        Ok((Bytes::from(reference), key))
    }

    /// The payload an event (or answer) stands for, if it is a reference; the key must be one of
    /// this store's payloads.
    pub(crate) async fn resolve(&self, key: &str) -> Result<Bytes> {
        let payloads = self.store.location().key("payloads/");
        let name = key.strip_prefix(&payloads).unwrap_or_default();
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(Error::bad_input(
                PAYLOAD_PARAM,
                format!("`{key}` is not a payload of the store {}", self.location()),
            ));
        }
        self.store.get(key).await.map_err(Error::from)
    }

    /// Deletes a payload in the background: the call's answer need not wait for it, and a
    /// failure leaves it to the bucket's lifecycle rule.
    pub(crate) fn forget(&self, key: String) {
        let store = self.store.clone();
        if let Ok(handle) = tokio::runtime::Handle::try_current() {
            handle.spawn(async move {
                if let Err(error) = store.delete(&key).await {
                    tracing::warn!(%error, "cannot delete a payload; the bucket's lifecycle rule will");
                }
            });
        }
    }
}

/// One call of `target` through `send`, which delivers a JSON event and returns the function's
/// output. The platform carries `limit` bytes; with a store (`offload`) the shared values the
/// arguments refer to are uploaded first, an event over the limit goes as a reference to it, and
/// an output that is a reference is fetched, both payloads deleted once the call has ended.
/// Without one, an event over the limit is refused before anything is sent.
pub(crate) async fn exchange<F, Fut>(
    offload: Option<&Offload>,
    envelope: &Envelope,
    payload: Bytes,
    limit: usize,
    backend: BackendKind,
    target: &str,
    send: F,
) -> Result<Bytes>
where
    F: FnOnce(Bytes) -> Fut,
    Fut: std::future::Future<Output = Result<Bytes>>,
{
    if let Some(offload) = offload {
        offload.upload_shared(&envelope.blobs).await?;
    }
    let sendable = if offload.is_some() { usize::MAX } else { limit };
    let mut event = crate::platform::json_event(envelope, payload, sendable, backend)?;
    let mut stored = None;
    if let Some(offload) = offload.filter(|_| event.len() > limit) {
        let (reference, key) = offload.put_payload(event).await?;
        event = reference;
        stored = Some(key);
    }
    let output = send(event).await;
    if let (Some(offload), Some(key)) = (offload, stored) {
        offload.forget(key);
    }
    let output = output?;
    let Some(key) = referenced_key(&output) else {
        return Ok(output);
    };
    let offload = offload.ok_or_else(|| {
        Error::config(format!(
            "`{target}` answered through its store (`{key}`), but this caller has no `FERRY_STORE`: give it the functions' store"
        ))
    })?;
    let output = offload.resolve(&key).await;
    offload.forget(key);
    output
}

/// The event a reference in the store (`{"__ferry_payload": …}`) stands for, or the event.
pub(crate) async fn resolve_event(event: Bytes) -> Result<Bytes> {
    match referenced_key(&event) {
        Some(key) => runtime_store().await?.resolve(&key).await,
        None => Ok(event),
    }
}

/// Fetches the shared values `blobs` from the store into this process's cache, where they stay
/// until the pins drop (at the end of the invocation).
pub(crate) async fn pin_shared(blobs: &[BlobId]) -> Result<crate::shared::Pins> {
    if blobs.is_empty() {
        return Ok(crate::shared::Pins::default());
    }
    let store = runtime_store().await?;
    crate::shared::ensure(blobs, |id| store.fetch_shared(id)).await
}

/// An output over the platform's `limit`: put in the store when the function has one (the
/// answer is then a reference its caller fetches), else a `PayloadTooLarge` error.
pub(crate) async fn store_output(output: Vec<u8>, limit: usize) -> Result<Vec<u8>> {
    if crate::config::STORE.text().is_none() {
        return Err(Error::new(ErrorKind::PayloadTooLarge {
            size: output.len() as u64,
            limit: limit as u64,
        }));
    }
    let store = runtime_store().await?;
    let (reference, _key) = store.put_payload(Bytes::from(output)).await?;
    Ok(reference.to_vec())
}

/// The key an event or answer refers to when it is exactly `{"__ferry_payload": "<key>"}`.
pub(crate) fn referenced_key(body: &[u8]) -> Option<String> {
    // Cheap refusal first: outputs are checked on every call.
    if body.len() > 1024 || memchr::memmem::find(body, PAYLOAD_PARAM.as_bytes()).is_none() {
        return None;
    }
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    reference_in(&value).map(str::to_owned)
}

/// The key `value` refers to when it is exactly `{"__ferry_payload": "<key>"}`.
fn reference_in(value: &serde_json::Value) -> Option<&str> {
    let object = value.as_object()?;
    if object.len() != 1 {
        return None;
    }
    object.get(PAYLOAD_PARAM)?.as_str()
}

/// The JSON parameters `value` stands for when it is a reference in the store, else `None`.
pub(crate) async fn resolve_value(value: &serde_json::Value) -> Result<Option<serde_json::Value>> {
    let Some(key) = reference_in(value) else {
        return Ok(None);
    };
    let event = runtime_store().await?.resolve(key).await?;
    serde_json::from_slice(&event).map(Some).map_err(|e| {
        Error::bad_input(
            PAYLOAD_PARAM,
            format!("the parameters in the store are not json: {e}"),
        )
    })
}

/// A name no other payload has: 128 bits from the standard library's randomly seeded hasher,
/// with the time.
fn unique_name() -> String {
    use std::hash::{BuildHasher, Hasher};
    let random = || {
        let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
        hasher.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap_or_default()
                .as_nanos(),
        );
        hasher.finish()
    };
    format!("{:016x}-{:016x}", random(), random())
}

/// The runtime's store: `FERRY_STORE` with the function's own AWS credentials, loaded at the
/// first invocation that needs it.
pub(crate) async fn runtime_store() -> Result<&'static Offload> {
    static STORE: tokio::sync::OnceCell<Offload> = tokio::sync::OnceCell::const_new();
    STORE
        .get_or_try_init(|| async {
            let aws = crate::aws::AwsConfig::load()
                .await
                .map_err(|e| Error::config(e.to_string()))?;
            let store = Store::from_env(&aws)?.ok_or_else(|| {
                Error::config(
                    "this function was sent a payload or shared value through a store, but has no `FERRY_STORE`: deploy it with the caller's `FERRY_STORE` (`ferry deploy --store`)",
                )
            })?;
            Ok(Offload::new(store))
        })
        .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_an_exact_reference_is_one() {
        assert_eq!(
            referenced_key(br#"{"__ferry_payload": "p/payloads/ab-cd"}"#).as_deref(),
            Some("p/payloads/ab-cd")
        );
        assert_eq!(referenced_key(br#"{"__ferry_payload": "k", "n": 1}"#), None);
        assert_eq!(referenced_key(br#"{"__ferry_payload": 3}"#), None);
        assert_eq!(referenced_key(br#"[1, 2]"#), None);
        assert_ne!(unique_name(), unique_name());
    }
}
