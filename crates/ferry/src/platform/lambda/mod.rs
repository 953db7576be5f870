//! AWS Lambda: [`client`] is the `lambda` backend (the SigV4-signed Invoke API), [`server`] the
//! custom runtime (`bootstrap`) that serves a function behind the Runtime API.

#[cfg(feature = "lambda")]
pub(crate) mod client;
#[cfg(feature = "lambda")]
pub(crate) mod server;

#[cfg(feature = "lambda")]
pub use self::client::{LambdaCodec, LambdaConfig, LambdaHttp};

/// Lambda's limit on a synchronous invocation's request and on its response (6 MB).
pub(crate) const MAX_PAYLOAD: usize = 6 * 1024 * 1024;

/// Whether this process was started by Lambda (or an emulator of its Runtime API).
pub(crate) fn started_by_lambda() -> bool {
    std::env::var_os("AWS_LAMBDA_RUNTIME_API").is_some_and(|v| !v.is_empty())
}
