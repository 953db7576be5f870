//! Plain HTTP, for Knative, Cloud Run and OpenFaaS: [`client`] is the `http` backend, [`server`]
//! the service mode (`FERRY_ROLE=http`) that serves every function of the program.

#[cfg(feature = "http")]
pub(crate) mod client;
#[cfg(feature = "http")]
pub(crate) mod server;

#[cfg(feature = "http")]
pub use self::client::HttpConfig;

/// Carries a chained flow's route ([`crate::wire::FlowRoute`] as JSON) to a stage.
pub(crate) const FLOW_HEADER: &str = "x-ferry-flow";
/// The ids of the shared values a request's arguments refer to.
pub(crate) const BLOBS_HEADER: &str = "x-ferry-blobs";
/// The ids an instance lacks, in its 428 answer.
pub(crate) const MISSING_BLOBS_HEADER: &str = "x-ferry-missing-blobs";
