//! What travels with every invocation, whatever the transport: the [`Envelope`].

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::Codec;
pub(crate) use crate::InvocationId;
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

#[cfg(test)]
mod tests {
    use super::*;

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
