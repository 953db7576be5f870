//! Invocation ids.

use std::fmt;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Deserializer, Serialize, Serializer};

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
    use crate::Codec;

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
}
