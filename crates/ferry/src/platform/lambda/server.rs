//! AWS Lambda custom runtime: the program's binary is `bootstrap` (`FERRY_ROLE=lambda`, or
//! recognised by `AWS_LAMBDA_RUNTIME_API` being set).
//!
//! - The function is chosen by the runtime's one rule ([`crate::runtime`]): `FERRY_FUNCTION`,
//!   else `_HANDLER` (id or name), else the program's only function. A handler that names none
//!   of several functions is reported on `/runtime/init/error` and the runtime exits.
//! - The loop over `/runtime/invocation/next` stays warm; `AWS_LAMBDA_MAX_CONCURRENCY` > 1 runs
//!   that many loops at once (Lambda Managed Instances hand an environment that many invocations
//!   and refuse the rest as `Runtime.Unavailable` when fewer polls wait). At most the function's
//!   `concurrency` bodies run at once; invocations past it wait for a slot in the runtime.
//! - Each invocation's deadline is Lambda's less a margin ([`DEADLINE_MARGIN_MS`]), so its
//!   timeout is ferry's, posted by a runtime that lives on, not Lambda's.
//! - The event is the function's arguments as JSON (`null` or empty for none). The request id,
//!   deadline, function ARN and trace id come from the headers and reach the function as its
//!   invocation's metadata (`aws_request_id`, `invoked_function_arn`, `_X_AMZN_TRACE_ID`, absent
//!   when the invocation has none). Nothing is exported to the process environment per
//!   invocation: loops may overlap, and a variable would outlive its invocation.
//! - A sync body that overruns its timeout retires the runtime: its error is posted, the loops
//!   stop taking invocations, and the process exits with status 2 so Lambda starts a fresh one.
//! - The output goes to `/response`; a failure to `/error` as `{"errorMessage", "errorType",
//!   "stackTrace": [], "ferry": <the ferry error>}` with `Lambda-Runtime-Function-Error-Type`.
//!   An output over Lambda's 6 MB response limit becomes a `Function.ResponseSizeTooLarge`
//!   error rather than a rejected response.
//! - Nothing is printed on stdout: results travel only through the API, logs go to stderr.

use std::process::ExitCode;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use std::sync::Arc;

use bytes::Bytes;
use serde_json::json;

use crate::registry::Registration;
use crate::runtime::Runtime;
use crate::wire::Envelope;
use crate::{Codec, Error, ErrorKind, Registry};

pub(crate) fn serve(registry: &'static Registry) -> ExitCode {
    match api_base() {
        Ok(base) => crate::runtime::serve::run_to_exit("lambda runtime", run(registry, base)),
        Err(message) => {
            eprintln!("error: {message}");
            ExitCode::from(2)
        }
    }
}

async fn run(registry: &'static Registry, base: String) -> Result<(), String> {
    let client = api_client()?;
    let handler = std::env::var("_HANDLER").unwrap_or_default();
    let ctx = crate::runtime::serve::worker_context().map_err(|e| e.to_string())?;
    let runtime = Arc::new(Runtime::new(registry, ctx));
    let registration = match runtime.choose(&[("`_HANDLER`", &handler)]) {
        Ok(registration) => registration,
        Err(error) => {
            let body = json!({
                "errorMessage": error.to_string(),
                "errorType": "Runtime.HandlerNotFound",
                "stackTrace": [],
            });
            let _ = client
                .post(format!("{base}/runtime/init/error"))
                .header(
                    "Lambda-Runtime-Function-Error-Type",
                    "Runtime.HandlerNotFound",
                )
                .json(&body)
                .send()
                .await;
            return Err(error.to_string());
        }
    };
    let allowed = std::env::var("AWS_LAMBDA_MAX_CONCURRENCY")
        .ok()
        .and_then(|v| v.trim().parse::<u32>().ok())
        .unwrap_or(1)
        .max(1);
    let loops = allowed;
    let concurrency = registration.descriptor().config.concurrency.max(1);
    if loops > concurrency {
        tracing::warn!(
            function = registration.descriptor().id,
            max_concurrency = loops,
            concurrency,
            "AWS_LAMBDA_MAX_CONCURRENCY is over the function's concurrency: invocations past it \
             wait here for a slot; set the capacity provider's per-environment maximum to the \
             function's concurrency"
        );
    }
    tracing::info!(
        function = registration.descriptor().id,
        loops,
        "lambda runtime ready"
    );
    let mut tasks = Vec::new();
    for _ in 0..loops {
        let (client, base, runtime) = (client.clone(), base.clone(), runtime.clone());
        tasks.push(tokio::spawn(async move {
            serve_invocations(&client, &base, &runtime, registration).await
        }));
    }
    for task in tasks {
        task.await.map_err(|e| e.to_string())??;
    }
    match runtime.retired_because() {
        Some(reason) => Err(format!("retired: {reason}")),
        None => Ok(()),
    }
}

async fn serve_invocations(
    client: &reqwest::Client,
    base: &str,
    runtime: &Runtime,
    registration: &'static Registration,
) -> Result<(), String> {
    loop {
        // A retired runtime stops polling: the loops end and the process exits.
        let invocation = tokio::select! {
            next = next_invocation(client, base) => next?,
            () = runtime.retired() => return Ok(()),
        };
        let event = if invocation.event.trim_ascii() == b"null" {
            Bytes::new()
        } else {
            invocation.event.clone()
        };
        let result = match crate::platform::offload::resolve_event(event).await {
            Ok(event) => run_invocation(runtime, registration, &invocation, event).await,
            Err(error) => Err(error),
        };
        let result = result.map_err(|e| e.in_function(registration.descriptor().id));
        post_result(client, base, &invocation.request_id, result).await?;
    }
}

/// Runs one invocation: its envelope from the event and the headers, the shared values it
/// refers to fetched from the store (and held until it ends).
async fn run_invocation(
    runtime: &Runtime,
    registration: &'static Registration,
    invocation: &NextInvocation,
    event: Bytes,
) -> crate::Result<Vec<u8>> {
    let Split {
        arguments,
        codec,
        flow,
        shared,
    } = split_event(event);
    let mut envelope = Envelope::new(registration.descriptor().id, codec);
    envelope.deadline_ms = invocation.deadline_ms;
    envelope.trace = invocation.trace.clone();
    envelope
        .metadata
        .insert("aws_request_id".to_owned(), invocation.request_id.clone());
    if let Some(arn) = &invocation.arn {
        envelope
            .metadata
            .insert("invoked_function_arn".to_owned(), arn.clone());
    }
    if let Some(trace) = &invocation.trace {
        envelope
            .metadata
            .insert("_X_AMZN_TRACE_ID".to_owned(), trace.clone());
    }
    envelope.flow = flow?;
    envelope.blobs = shared?;
    let _pins = crate::platform::offload::pin_shared(&envelope.blobs).await?;
    runtime.invoke(registration, &envelope, arguments).await
}

/// An event taken apart: the arguments, their codec, the flow route a chained flow's caller
/// put in it, and the shared values its arguments refer to by id.
struct Split {
    arguments: Bytes,
    codec: Codec,
    flow: crate::Result<Option<crate::wire::FlowRoute>>,
    shared: crate::Result<Vec<crate::shared::BlobId>>,
}

/// Arguments are JSON, or the binary codec inside JSON when the event is
/// `{"__ferry_binary": "<base64>"}` (a caller's [`Codec::BinaryInJson`]), whose answer is then
/// in that codec too. Events that mention none of ferry's parameters are passed on untouched,
/// without being parsed.
fn split_event(event: Bytes) -> Split {
    use crate::platform::{BINARY_PARAM, FLOW_PARAM, SHARED_PARAM};
    let untouched = |event| Split {
        arguments: event,
        codec: Codec::Json,
        flow: Ok(None),
        shared: Ok(Vec::new()),
    };
    let mentions =
        |param: &str| memchr::memmem::find(&event, format!("\"{param}\"").as_bytes()).is_some();
    let binary = mentions(BINARY_PARAM);
    if !binary && !mentions(FLOW_PARAM) && !mentions(SHARED_PARAM) {
        return untouched(event);
    }
    let Ok(mut arguments) = serde_json::from_slice::<serde_json::Value>(&event) else {
        // Not JSON: decoding the arguments reports it.
        return untouched(event);
    };
    let flow = crate::platform::take_flow_param(&mut arguments);
    let shared = crate::platform::take_shared_param(&mut arguments);
    if let Some(encoded) = crate::platform::take_binary_param(&mut arguments) {
        let quoted = serde_json::to_vec(&encoded).unwrap_or_default();
        return Split {
            arguments: Bytes::from(quoted),
            codec: Codec::BinaryInJson,
            flow,
            shared,
        };
    }
    let arguments = match serde_json::to_vec(&arguments) {
        Ok(stripped) => Bytes::from(stripped),
        Err(_) => event,
    };
    Split {
        arguments,
        codec: Codec::Json,
        flow,
        shared,
    }
}

/// The Runtime API's base URL: Lambda gives `host:port`, emulators may give a URL with a path.
pub(crate) fn api_base() -> Result<String, String> {
    let api = std::env::var("AWS_LAMBDA_RUNTIME_API")
        .ok()
        .filter(|v| !v.is_empty())
        .ok_or("the lambda runtime needs AWS_LAMBDA_RUNTIME_API")?;
    Ok(
        if api.starts_with("http://") || api.starts_with("https://") {
            format!("{}/2018-06-01", api.trim_end_matches('/'))
        } else {
            format!("http://{api}/2018-06-01")
        },
    )
}

/// A client for the Runtime API: no timeout, since `/next` long-polls while Lambda freezes us.
/// The API is plain HTTP/1.1 on the sandbox's loopback: no TLS roots, no proxy settings and no
/// HTTP/2 to set up, which a cold start would pay for.
pub(crate) fn api_client() -> Result<reqwest::Client, String> {
    reqwest::Client::builder()
        .pool_idle_timeout(None)
        .no_proxy()
        .http1_only()
        .tls_built_in_root_certs(false)
        .build()
        .map_err(|e| format!("cannot build the http client: {e}"))
}

/// One invocation handed out by `/runtime/invocation/next`.
pub(crate) struct NextInvocation {
    pub request_id: String,
    /// The deadline ferry works to: Lambda's, less [`DEADLINE_MARGIN_MS`], so that a timeout is
    /// ferry's (a `ferry.Timeout` posted by a runtime that lives on) rather than Lambda's.
    pub deadline_ms: Option<u64>,
    pub trace: Option<String>,
    pub arn: Option<String>,
    pub event: Bytes,
}

/// Time kept back from Lambda's deadline: enough to post the error over loopback. Never more
/// than a tenth of the time an invocation has.
pub(crate) const DEADLINE_MARGIN_MS: u64 = 100;

/// Waits for the next invocation.
pub(crate) async fn next_invocation(
    client: &reqwest::Client,
    base: &str,
) -> Result<NextInvocation, String> {
    let next = loop {
        let next = client
            .get(format!("{base}/runtime/invocation/next"))
            .send()
            .await
            .map_err(|e| format!("cannot reach the runtime api: {e}"))?;
        // An emulator may end a long poll that found no work (cargo lambda's `--timeout`):
        // nothing was handed out, so poll again.
        if next.status() == reqwest::StatusCode::REQUEST_TIMEOUT {
            continue;
        }
        if !next.status().is_success() {
            return Err(format!(
                "the runtime api answered /next with {}",
                next.status()
            ));
        }
        break next;
    };
    // An empty header is an absent one (the RIE's managed mode sends an empty trace id).
    let header = |name: &str| {
        next.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .filter(|v| !v.is_empty())
            .map(str::to_owned)
    };
    let request_id = header("lambda-runtime-aws-request-id")
        .ok_or("an invocation without Lambda-Runtime-Aws-Request-Id")?;
    let deadline_ms = header("lambda-runtime-deadline-ms")
        .and_then(|d| d.parse::<u64>().ok())
        .map(|deadline| with_margin(absolute_deadline(deadline)));
    let trace = header("lambda-runtime-trace-id");
    let arn = header("lambda-runtime-invoked-function-arn");
    let event = next
        .bytes()
        .await
        .map_err(|e| format!("cannot read the event: {e}"))?;
    Ok(NextInvocation {
        request_id,
        deadline_ms,
        trace,
        arn,
        event,
    })
}

/// Posts an invocation's result to `/response`, or its failure to `/error`. An output over
/// Lambda's 6 MB limit goes through the store (`FERRY_STORE`), or becomes a `PayloadTooLarge`
/// error.
pub(crate) async fn post_result(
    client: &reqwest::Client,
    base: &str,
    request_id: &str,
    result: Result<Vec<u8>, Error>,
) -> Result<(), String> {
    let result = match result {
        Ok(output) if output.len() > super::MAX_PAYLOAD => {
            crate::platform::offload::store_output(output, super::MAX_PAYLOAD).await
        }
        other => other,
    };
    let posted = match result {
        Ok(output) => {
            client
                .post(format!("{base}/runtime/invocation/{request_id}/response"))
                .header("content-type", "application/json")
                .body(output)
                .send()
                .await
        }
        Err(error) => {
            let error_type = error_type(&error);
            tracing::warn!(%request_id, %error, "invocation failed");
            client
                .post(format!("{base}/runtime/invocation/{request_id}/error"))
                .header("Lambda-Runtime-Function-Error-Type", error_type)
                .json(&json!({
                    "errorMessage": error.to_string(),
                    "errorType": error_type,
                    "stackTrace": [],
                    "ferry": error,
                }))
                .send()
                .await
        }
    };
    posted
        .map(drop)
        .map_err(|error| format!("cannot post the result of {request_id}: {error}"))
}

/// Lambda sends the deadline in ms since the Unix epoch; some emulators send the time left.
/// No real deadline lies before 2001, so a smaller number is read as a duration from now.
fn absolute_deadline(value: u64) -> u64 {
    const YEAR_2001_MS: u64 = 978_307_200_000;
    if value >= YEAR_2001_MS {
        return value;
    }
    now_ms().saturating_add(value)
}

/// `deadline` less [`DEADLINE_MARGIN_MS`], or less a tenth of the time left if that is shorter.
fn with_margin(deadline: u64) -> u64 {
    let left = deadline.saturating_sub(now_ms());
    deadline.saturating_sub(DEADLINE_MARGIN_MS.min(left / 10))
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or(Duration::ZERO)
        .as_millis() as u64
}

fn error_type(error: &Error) -> &'static str {
    match error.kind() {
        ErrorKind::PayloadTooLarge { .. } => "Function.ResponseSizeTooLarge",
        ErrorKind::BadInput { .. } => "ferry.BadInput",
        ErrorKind::User { .. } => "ferry.User",
        ErrorKind::Panic { .. } => "ferry.Panic",
        ErrorKind::Timeout { .. } => "ferry.Timeout",
        ErrorKind::UnknownFunction { .. } => "ferry.UnknownFunction",
        _ => "ferry.Error",
    }
}

#[cfg(test)]
mod tests {
    use super::{DEADLINE_MARGIN_MS, absolute_deadline, now_ms, with_margin};

    #[test]
    fn deadlines_as_epoch_or_as_time_left() {
        assert_eq!(absolute_deadline(1_900_000_000_000), 1_900_000_000_000);
        let relative = absolute_deadline(600_000);
        assert!(relative > 1_700_000_000_000, "{relative}");
    }

    #[test]
    fn deadlines_keep_a_margin_to_post_the_timeout() {
        let lambda = now_ms() + 30_000;
        assert_eq!(with_margin(lambda), lambda - DEADLINE_MARGIN_MS);
        // A short invocation keeps a tenth of its time, not the whole margin.
        let short = now_ms() + 500;
        let kept = short - with_margin(short);
        assert!((45..=50).contains(&kept), "{kept}");
        let past = now_ms().saturating_sub(10);
        assert_eq!(with_margin(past), past);
    }

    /// Any event, flow route or not, splits into arguments and a route, or an error.
    mod robustness {
        use bytes::Bytes;
        use proptest::prelude::*;

        use super::super::split_event;

        proptest! {
            #[test]
            fn any_event_splits_or_is_an_error(
                bytes in prop::collection::vec(any::<u8>(), 0..400),
                route in "[{}\\[\\]\",:a-z0-9 ]{0,200}",
            ) {
                let _ = split_event(Bytes::from(bytes));
                let event = format!(r#"{{"a": 1, "__ferry_flow": {route}}}"#);
                let _ = split_event(Bytes::from(event));
                let event = format!(r#"{{"__ferry_shared": {route}, "__ferry_flow": {route}}}"#);
                let _ = split_event(Bytes::from(event));
                let event = format!(r#"{{"__ferry_binary": {route}, "__ferry_flow": {route}}}"#);
                let _ = split_event(Bytes::from(event));
            }
        }
    }
}
