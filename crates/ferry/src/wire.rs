//! What travels with every invocation, whatever the transport: the [`Envelope`].

use std::collections::BTreeMap;
use std::fmt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::Codec;
use crate::shared::BlobId;

/// Metadata of one invocation; the encoded arguments travel next to it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Envelope {
    /// Id (or unique name) of the function to run.
    pub function: String,
    /// Unique id of this invocation.
    pub invocation: InvocationId,
    /// The caller's deadline in milliseconds since the Unix epoch, if it has one. The function's
    /// own timeout applies in any case.
    #[serde(default)]
    pub deadline_ms: Option<u64>,
    /// Encoding of the arguments (and of the result, unless `reply_codec` says otherwise).
    pub codec: Codec,
    /// Encoding of the result when it differs from the arguments' (an HTTP `Accept`).
    #[serde(default)]
    pub reply_codec: Option<Codec>,
    /// Trace id propagated from the caller (e.g. an `X-Amzn-Trace-Id` or W3C `traceparent`).
    #[serde(default)]
    pub trace: Option<String>,
    /// The invocation that made this one, when a function invoked a function.
    #[serde(default)]
    pub parent: Option<InvocationId>,
    /// Set when this invocation is a stage of a chained [`Flow`](crate::Flow): which stage it is
    /// and the stages still to run after it, which its worker invokes itself.
    #[serde(default)]
    pub flow: Option<FlowRoute>,
    /// What the platform said about this invocation (OpenWhisk's `__OW_*` values, say).
    #[serde(default)]
    pub metadata: BTreeMap<String, String>,
    /// Shared values the arguments refer to by id ([`Shared`](crate::Shared)): the worker holds
    /// or fetches each one before it decodes the arguments.
    #[serde(default)]
    pub blobs: Vec<BlobId>,
}

impl Envelope {
    /// A fresh envelope for a call to `function`.
    pub(crate) fn new(function: impl Into<String>, codec: Codec) -> Self {
        Self {
            function: function.into(),
            invocation: InvocationId::next(),
            deadline_ms: None,
            codec,
            reply_codec: None,
            trace: None,
            parent: None,
            flow: None,
            metadata: BTreeMap::new(),
            blobs: Vec::new(),
        }
    }

    /// Time left before the caller's deadline, if it set one.
    pub(crate) fn remaining(&self) -> Option<Duration> {
        let deadline = self.deadline_ms?;
        Some(Duration::from_millis(deadline.saturating_sub(unix_ms())))
    }
}

/// Where a chained flow stands: carried by each stage's invocation, point to point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FlowRoute {
    /// Position of this invocation's function in the flow (0 for the first stage).
    pub stage: u32,
    /// The stages after this one, in order.
    pub next: Vec<RouteStep>,
}

/// One stage still to run in a chained flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RouteStep {
    /// Id of the stage's function.
    pub function: String,
    /// Whether the previous stage returns an `Option` whose `None` ends the flow.
    #[serde(default)]
    pub unwrap: bool,
}

/// Milliseconds since the Unix epoch.
pub(crate) fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// A 64-bit invocation id: a random per-process prefix and a counter, so ids from different hosts
/// rarely collide and ids from one host never do. Shown as 16 hex digits; JSON carries it as that
/// string because JavaScript numbers cannot hold 64 bits.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct InvocationId(u64);

impl InvocationId {
    /// The next id of this process.
    pub fn next() -> Self {
        static BASE: OnceLock<u64> = OnceLock::new();
        static COUNTER: AtomicU64 = AtomicU64::new(0);
        let base = *BASE.get_or_init(|| {
            let nanos = SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as u64);
            // The high 24 bits differ between processes; the low 40 count (10^12 ids).
            (splitmix(nanos ^ u64::from(std::process::id()).rotate_left(32))
                & 0xFFFF_FF00_0000_0000)
                | 1
        });
        Self(base.wrapping_add(COUNTER.fetch_add(1, Ordering::Relaxed)))
    }

    /// The id as a number.
    pub fn as_u64(self) -> u64 {
        self.0
    }

    /// An id from a number (e.g. read off another transport).
    pub fn from_u64(value: u64) -> Self {
        Self(value)
    }
}

fn splitmix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl fmt::Display for InvocationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:016x}", self.0)
    }
}

impl fmt::Debug for InvocationId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "InvocationId({self})")
    }
}

impl std::str::FromStr for InvocationId {
    type Err = std::num::ParseIntError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        u64::from_str_radix(s, 16).map(Self)
    }
}

impl Serialize for InvocationId {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        if serializer.is_human_readable() {
            serializer.collect_str(self)
        } else {
            serializer.serialize_u64(self.0)
        }
    }
}

impl<'de> Deserialize<'de> for InvocationId {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        if deserializer.is_human_readable() {
            let text = String::deserialize(deserializer)?;
            text.parse().map_err(serde::de::Error::custom)
        } else {
            u64::deserialize(deserializer).map(Self)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_unique_and_round_trip() {
        let a = InvocationId::next();
        let b = InvocationId::next();
        assert_ne!(a, b);
        let json = serde_json::to_string(&a).unwrap();
        assert_eq!(json, format!("\"{a}\""));
        assert_eq!(serde_json::from_str::<InvocationId>(&json).unwrap(), a);
        let binary = Codec::Binary.encode(&a).unwrap();
        assert_eq!(binary.len(), 8);
        assert_eq!(Codec::Binary.decode::<InvocationId>(&binary).unwrap(), a);
    }

    #[test]
    fn envelope_round_trips() {
        let mut envelope = Envelope::new("app::f", Codec::Json);
        envelope.flow = Some(FlowRoute {
            stage: 0,
            next: vec![RouteStep {
                function: "app::g".into(),
                unwrap: true,
            }],
        });
        envelope.deadline_ms = Some(unix_ms() + 5_000);
        for codec in [Codec::Json, Codec::Binary] {
            let bytes = codec.encode(&envelope).unwrap();
            assert_eq!(codec.decode::<Envelope>(&bytes).unwrap(), envelope);
        }
        assert!(envelope.remaining().unwrap() <= Duration::from_secs(5));
    }
}
