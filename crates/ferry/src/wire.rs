//! What travels with every invocation, whatever the transport: the [`Envelope`].

use std::collections::BTreeMap;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::Codec;
pub(crate) use crate::InvocationId;
use crate::flow::MAX_STAGES as MAX_FLOW_STAGES;
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

/// Longest function id a flow route may name: ids are module paths, far shorter than this.
const MAX_ROUTE_ID: usize = 512;

/// Where a chained flow stands: carried by each stage's invocation, point to point.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct FlowRoute {
    /// Position of this invocation's function in the flow (0 for the first stage); decoding
    /// refuses one past [`MAX_FLOW_STAGES`], which no flow reaches.
    #[serde(deserialize_with = "bounded_stage")]
    pub stage: u32,
    /// The stages after this one, in order; decoding refuses more than [`MAX_FLOW_STAGES`].
    #[serde(deserialize_with = "bounded_steps")]
    pub next: Vec<RouteStep>,
}

/// Decodes a route's stage number, refusing one past the longest flow: the next stage's number
/// is one more, and `u32::MAX` once overflowed there.
fn bounded_stage<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<u32, D::Error> {
    let stage = u32::deserialize(deserializer)?;
    if stage as usize > MAX_FLOW_STAGES {
        return Err(serde::de::Error::custom(format!(
            "a flow has at most {MAX_FLOW_STAGES} stages: there is no stage {stage}"
        )));
    }
    Ok(stage)
}

/// Decodes a route's steps, refusing more than [`MAX_FLOW_STAGES`] before reading them all.
fn bounded_steps<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<Vec<RouteStep>, D::Error> {
    struct Steps;
    impl<'de> serde::de::Visitor<'de> for Steps {
        type Value = Vec<RouteStep>;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            write!(f, "at most {MAX_FLOW_STAGES} flow stages")
        }

        fn visit_seq<A: serde::de::SeqAccess<'de>>(
            self,
            mut seq: A,
        ) -> std::result::Result<Self::Value, A::Error> {
            let mut steps = Vec::new();
            while let Some(step) = seq.next_element::<RouteStep>()? {
                if steps.len() == MAX_FLOW_STAGES {
                    return Err(serde::de::Error::custom(format!(
                        "a flow has at most {MAX_FLOW_STAGES} stages"
                    )));
                }
                steps.push(step);
            }
            Ok(steps)
        }
    }
    deserializer.deserialize_seq(Steps)
}

/// One stage still to run in a chained flow.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct RouteStep {
    /// Id of the stage's function.
    #[serde(deserialize_with = "bounded_id")]
    pub function: String,
    /// Whether the previous stage returns an `Option` whose `None` ends the flow.
    #[serde(default)]
    pub unwrap: bool,
}

fn bounded_id<'de, D: serde::Deserializer<'de>>(
    deserializer: D,
) -> std::result::Result<String, D::Error> {
    let id = String::deserialize(deserializer)?;
    if id.len() > MAX_ROUTE_ID {
        return Err(serde::de::Error::custom(format!(
            "a flow stage's function id is at most {MAX_ROUTE_ID} bytes, not {}",
            id.len()
        )));
    }
    Ok(id)
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

    #[test]
    fn routes_decode_up_to_the_stage_limit_in_every_codec() {
        let route = |stages: usize| FlowRoute {
            stage: 0,
            next: vec![
                RouteStep {
                    function: "app::g".into(),
                    unwrap: false,
                };
                stages
            ],
        };
        for codec in [Codec::Json, Codec::Binary] {
            let fits = codec.encode(&route(MAX_FLOW_STAGES)).unwrap();
            assert_eq!(codec.decode::<FlowRoute>(&fits).unwrap().next.len(), 64);
            let long = codec.encode(&route(MAX_FLOW_STAGES + 1)).unwrap();
            let error = codec.decode::<FlowRoute>(&long).unwrap_err().to_string();
            assert!(error.contains("at most 64 stages"), "{error}");
        }
        let far = r#"{"stage":4294967295,"next":[{"function":"app::g"}]}"#;
        let error = Codec::Json
            .decode::<FlowRoute>(far.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(error.contains("there is no stage 4294967295"), "{error}");
        let long_id = format!(
            r#"{{"stage":0,"next":[{{"function":"{}"}}]}}"#,
            "f".repeat(600)
        );
        let error = Codec::Json
            .decode::<FlowRoute>(long_id.as_bytes())
            .unwrap_err()
            .to_string();
        assert!(error.contains("at most 512 bytes"), "{error}");
    }

    /// Any bytes, in either codec, decode to an envelope or a route, or to an error.
    mod robustness {
        use proptest::prelude::*;

        use super::*;

        proptest! {
            #[test]
            fn any_bytes_decode_as_an_envelope_or_an_error(bytes in prop::collection::vec(any::<u8>(), 0..600)) {
                let _ = Codec::Binary.decode::<Envelope>(&bytes);
                let _ = Codec::Json.decode::<Envelope>(&bytes);
                let _ = Codec::Json.decode::<FlowRoute>(&bytes);
            }

            #[test]
            fn any_text_decodes_as_a_route_or_an_error(text in "[{}\\[\\]\",:a-z0-9 ]{0,300}") {
                let _ = Codec::Json.decode::<FlowRoute>(text.as_bytes());
                let _ = Codec::Json.decode::<Envelope>(text.as_bytes());
            }
        }
    }
}
