//! The `http` backend: functions served by ferry's HTTP service mode (Knative, Cloud Run,
//! OpenFaaS, or any `FERRY_ROLE=http` process), reached over pooled keep-alive HTTP/1.1 — or h2c
//! when asked — with the binary codec, a bearer token, and the retry policy.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::future::BoxFuture;

use crate::platform::retry::RetryPolicy;
use crate::platform::{BackendKind, RemoteClient};
use crate::shared::BlobId;
use crate::wire::Envelope;
use crate::{Codec, Error, ErrorKind, FunctionDescriptor, Result};

/// Where and how to reach functions served over HTTP.
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpConfig {
    /// Base URL of the service (`FERRY_HTTP_URL`), e.g. `http://127.0.0.1:8080`; functions are
    /// at `{base}/functions/{name}`.
    pub base_url: String,
    /// A URL per function instead (`FERRY_HTTP_URL_TEMPLATE`), with `{name}` and `{id}`
    /// placeholders, e.g. `https://{name}.apps.example/functions/{name}` for one Knative
    /// service per function.
    pub url_template: Option<String>,
    /// Functions at URLs of their own (function name or id → URL), ahead of the template and
    /// the base URL: one service per function, each on its own port or host
    /// (`FERRY_HTTP_ROUTES`: `name=url,name=url`).
    pub routes: std::collections::BTreeMap<String, String>,
    /// Sent as `Authorization: Bearer …` (`FERRY_AUTH_TOKEN`).
    pub token: Option<String>,
    /// Speak HTTP/2 without TLS (h2c, prior knowledge) instead of HTTP/1.1 (`FERRY_HTTP_H2C=1`).
    pub h2c: bool,
    /// Keep connections open for the next request (the default); off, each request opens its
    /// own connection, as a client without keep-alive (`hey -disable-keepalive`) does.
    pub keep_alive: bool,
    /// Longest wait for one attempt's answer.
    pub request_timeout: Duration,
    /// Longest wait on a peer that has gone silent (`FERRY_HTTP_PEER_TIMEOUT_MS`; default
    /// 10 s): to accept a connection, to acknowledge what was sent (`TCP_USER_TIMEOUT`), and to
    /// answer the TCP keepalive probes sent while a call waits for its answer. A host that
    /// drops off the network loses no packets loudly (no refusal, no reset): without this, a
    /// call to it would wait for `request_timeout`. A live peer's kernel answers probes however
    /// long its function runs.
    pub peer_timeout: Duration,
    /// Most requests in flight at once (`FERRY_HTTP_MAX_IN_FLIGHT`; default 256); more wait
    /// their turn. Over HTTP/1.1 each one is a connection, and a fan-out of thousands opening at
    /// once overflows the service's accept queue.
    pub max_in_flight: usize,
    /// What is retried, how often.
    pub retry: RetryPolicy,
}

impl HttpConfig {
    /// Functions under `base_url`.
    pub fn new(base_url: impl Into<String>) -> Self {
        Self {
            base_url: base_url.into().trim_end_matches('/').to_owned(),
            url_template: None,
            routes: std::collections::BTreeMap::new(),
            token: None,
            h2c: false,
            keep_alive: true,
            request_timeout: Duration::from_secs(900),
            peer_timeout: Duration::from_secs(10),
            max_in_flight: 256,
            retry: RetryPolicy::default(),
        }
    }

    /// From `FERRY_HTTP_URL` (or `FERRY_HTTP_URL_TEMPLATE`), `FERRY_AUTH_TOKEN` and
    /// `FERRY_HTTP_H2C`.
    pub fn from_env() -> Result<Self> {
        use crate::config::{
            AUTH_TOKEN, HTTP_H2C, HTTP_MAX_IN_FLIGHT, HTTP_PEER_TIMEOUT_MS, HTTP_ROUTES, HTTP_URL,
            HTTP_URL_TEMPLATE,
        };
        let template = HTTP_URL_TEMPLATE.text();
        let base = HTTP_URL.text();
        let routes = HTTP_ROUTES.routes()?;
        if base.is_none() && template.is_none() && routes.is_empty() {
            return Err(Error::config(
                "the http backend needs FERRY_HTTP_URL (e.g. http://127.0.0.1:8080), FERRY_HTTP_URL_TEMPLATE or FERRY_HTTP_ROUTES",
            ));
        }
        let mut config = Self::new(base.unwrap_or_default());
        config.url_template = template;
        config.routes = routes;
        config.token = AUTH_TOKEN.text();
        config.h2c = HTTP_H2C.flag()?;
        if let Some(n) = HTTP_MAX_IN_FLIGHT.number()? {
            config.max_in_flight = n;
        }
        if let Some(ms) = HTTP_PEER_TIMEOUT_MS.number()? {
            config.peer_timeout = Duration::from_millis(ms);
        }
        Ok(config)
    }

    /// Serves the function `name` (or id) from `url`, the full URL of its route
    /// (`http://host:port/functions/name`).
    #[must_use]
    pub fn route(mut self, name: impl Into<String>, url: impl Into<String>) -> Self {
        self.routes.insert(name.into(), url.into());
        self
    }

    /// Sets the bearer token.
    #[must_use]
    pub fn token(mut self, token: impl Into<String>) -> Self {
        self.token = Some(token.into());
        self
    }

    /// Uses h2c.
    #[must_use]
    pub fn h2c(mut self, on: bool) -> Self {
        self.h2c = on;
        self
    }

    /// Keeps connections open between requests, or opens one per request.
    #[must_use]
    pub fn keep_alive(mut self, on: bool) -> Self {
        self.keep_alive = on;
        self
    }

    /// Sets the retry policy.
    #[must_use]
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Sets the longest wait on a silent peer.
    #[must_use]
    pub fn peer_timeout(mut self, timeout: Duration) -> Self {
        self.peer_timeout = timeout.max(Duration::from_millis(1));
        self
    }

    /// Sets the most requests in flight.
    #[must_use]
    pub fn max_in_flight(mut self, n: usize) -> Self {
        self.max_in_flight = n.max(1);
        self
    }

    fn url(&self, id: &str, name: &str) -> String {
        if let Some(url) = self.routes.get(name).or_else(|| self.routes.get(id)) {
            return url.clone();
        }
        match &self.url_template {
            Some(template) => template.replace("{name}", name).replace("{id}", id),
            None => format!("{}/functions/{name}", self.base_url),
        }
    }
}

pub(crate) struct HttpBackend {
    config: HttpConfig,
    client: reqwest::Client,
    in_flight: tokio::sync::Semaphore,
    /// When each blob URL last took an upload, behind a gate so one upload serves many calls.
    uploads: std::sync::Mutex<HashMap<String, Arc<tokio::sync::Mutex<Option<Instant>>>>>,
}

impl HttpBackend {
    pub(crate) fn new(config: HttpConfig) -> Result<Self> {
        // Keepalive probes a quarter of the peer timeout apart (whole seconds, the kernel's
        // unit), from a quarter of it on: a silent peer is given up after about the timeout.
        let probe = Duration::from_secs((config.peer_timeout.as_secs() / 4).max(1));
        let mut builder = reqwest::Client::builder()
            .pool_max_idle_per_host(if config.keep_alive { 256 } else { 0 })
            .timeout(config.request_timeout)
            .connect_timeout(config.peer_timeout)
            .tcp_keepalive(probe)
            .tcp_keepalive_interval(probe)
            .tcp_keepalive_retries(3);
        #[cfg(any(target_os = "android", target_os = "fuchsia", target_os = "linux"))]
        {
            builder = builder.tcp_user_timeout(config.peer_timeout);
        }
        if config.h2c {
            builder = builder.http2_prior_knowledge();
        }
        let client = builder
            .build()
            .map_err(|e| Error::config(format!("cannot build the http client: {e}")))?;
        Ok(Self {
            in_flight: tokio::sync::Semaphore::new(config.max_in_flight.max(1)),
            config,
            client,
            uploads: Default::default(),
        })
    }

    /// Sends a shared value's blob to the service behind `function_url` (`PUT /blobs/{id}`),
    /// unless another call uploaded it there after `sent_at`, when the service that answered
    /// the call found it missing: a fan-out's first wave all miss, and one upload serves them.
    async fn upload_blob(&self, function_url: &str, id: &BlobId, sent_at: Instant) -> Result<()> {
        let url = match function_url.rfind("/functions/") {
            Some(at) => format!("{}/blobs/{id}", &function_url[..at]),
            None => format!("{}/blobs/{id}", function_url.trim_end_matches('/')),
        };
        let gate = self
            .uploads
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .entry(url.clone())
            .or_default()
            .clone();
        let mut last_upload = gate.lock().await;
        if last_upload.is_some_and(|done| done > sent_at) {
            return Ok(());
        }
        let blob = crate::shared::host_blob(id).ok_or_else(|| crate::shared::not_held(id))?;
        self.config
            .retry
            .run(|| async {
                let mut request = self
                    .client
                    .put(&url)
                    .header("content-type", "application/octet-stream")
                    .body(blob.clone());
                if let Some(token) = &self.config.token {
                    request = request.bearer_auth(token);
                }
                let response = request
                    .send()
                    .await
                    .map_err(|e| self.unavailable(&url, "cannot reach", e))?;
                let status = response.status();
                if status.is_success() {
                    return Ok(());
                }
                let body = response.bytes().await.unwrap_or_default();
                Err(serde_json::from_slice::<Error>(&body).unwrap_or_else(|_| {
                    Error::unavailable(format!(
                        "{url} answered {status}: {}",
                        String::from_utf8_lossy(&body).trim()
                    ))
                }))
            })
            .await?;
        *last_upload = Some(Instant::now());
        Ok(())
    }

    async fn attempt(&self, url: &str, envelope: &Envelope, payload: Bytes) -> Result<Bytes> {
        let media = match envelope.codec {
            Codec::Binary => "application/x-ferry-binary",
            Codec::Json | Codec::BinaryInJson => "application/json",
        };
        let mut request = self
            .client
            .post(url)
            .header("content-type", media)
            .header("accept", media)
            .header("x-request-id", envelope.invocation.to_string())
            .body(payload);
        if let Some(token) = &self.config.token {
            request = request.bearer_auth(token);
        }
        if let Some(trace) = &envelope.trace {
            request = request.header("traceparent", trace);
        }
        if let Some(route) = &envelope.flow {
            let route = serde_json::to_string(route)
                .map_err(|e| Error::protocol(format!("cannot encode the flow route: {e}")))?;
            request = request.header(super::FLOW_HEADER, route);
        }
        if !envelope.blobs.is_empty() {
            let ids = crate::shared::ids_to_header(&envelope.blobs);
            request = request.header(super::BLOBS_HEADER, ids);
        }
        let response = request
            .send()
            .await
            .map_err(|e| self.unavailable(url, "cannot reach", e))?;
        let status = response.status();
        let body = response
            .bytes()
            .await
            .map_err(|e| self.unavailable(url, "lost the connection to", e))?;
        if status.is_success() {
            return Ok(body);
        }
        // A ferry service answers with the error itself; anything else gets a kind by status.
        if let Ok(error) = serde_json::from_slice::<Error>(&body) {
            return Err(error);
        }
        let text = String::from_utf8_lossy(&body);
        Err(Error::new(match status.as_u16() {
            404 => ErrorKind::UnknownFunction {
                id: envelope.function.clone(),
            },
            413 => ErrorKind::PayloadTooLarge { size: 0, limit: 0 },
            429 => ErrorKind::Throttled {
                message: format!("{url} answered {status}: {}", text.trim()),
            },
            _ => ErrorKind::Unavailable {
                message: format!("{url} answered {status}: {}", text.trim()),
            },
        }))
    }

    /// A request to `url` that failed in transport: `unavailable`, with reqwest's error and its
    /// causes (`error sending request` alone does not say whether the peer refused, vanished or
    /// timed out), and which bound ran out if one did.
    fn unavailable(&self, url: &str, what: &str, error: reqwest::Error) -> Error {
        let timed_out = error.is_timeout();
        let connecting = error.is_connect();
        let error = error.without_url();
        let mut text = format!("{what} {url}: {error}");
        let mut cause = std::error::Error::source(&error);
        let mut silent = false;
        while let Some(error) = cause {
            silent |= error
                .downcast_ref::<std::io::Error>()
                .is_some_and(|e| e.kind() == std::io::ErrorKind::TimedOut);
            let more = error.to_string();
            if !text.contains(&more) {
                text.push_str(": ");
                text.push_str(&more);
            }
            cause = error.source();
        }
        let peer_ms = self.config.peer_timeout.as_millis();
        if timed_out && connecting {
            text.push_str(&format!(
                " (no connection within {peer_ms} ms, `FERRY_HTTP_PEER_TIMEOUT_MS`)"
            ));
        } else if silent {
            text.push_str(&format!(
                " (the peer was silent for {peer_ms} ms, `FERRY_HTTP_PEER_TIMEOUT_MS`)"
            ));
        } else if timed_out {
            let request_s = self.config.request_timeout.as_secs();
            text.push_str(&format!(" (no answer within {request_s} s)"));
        }
        Error::unavailable(text)
    }
}

/// Whether the retry policy tries a failed attempt again: unavailability and throttling
/// ([`RetryPolicy`]'s rule), unless the service answered with what a further call of its own
/// met (a nested invocation's or the next flow stage's error, naming another function). That
/// call's client applied the policy already; applied again at every hop, attempts multiply (a
/// flow through three services would try a vanished one 4 × 4 × 4 times).
fn retried_here(error: &Error, id: &str, name: &str) -> bool {
    matches!(
        error.kind(),
        ErrorKind::Unavailable { .. } | ErrorKind::Throttled { .. }
    ) && error.function().is_none_or(|f| f == id || f == name)
}

/// Rounds of uploading missing blobs and sending the request again, apart from the retry
/// policy's attempts.
const MAX_BLOB_UPLOADS: u32 = 3;

/// The blobs a `missing_shared` answer asks for, when this call refers to every one of them
/// (otherwise the error is someone else's and is passed on).
fn to_upload(error: &Error, envelope: &Envelope) -> Option<Vec<BlobId>> {
    let ErrorKind::MissingShared { ids, .. } = error.kind() else {
        return None;
    };
    let ids: Vec<BlobId> = ids
        .iter()
        .map(|id| id.parse().ok())
        .collect::<Option<_>>()?;
    let ours = !ids.is_empty() && ids.iter().all(|id| envelope.blobs.contains(id));
    ours.then_some(ids)
}

impl RemoteClient for HttpBackend {
    const KIND: BackendKind = BackendKind::Http;
    const DELIVERS_SHARED: bool = true;

    fn send(
        self: &std::sync::Arc<Self>,
        envelope: Envelope,
        payload: Bytes,
        descriptor: Option<&'static FunctionDescriptor>,
    ) -> BoxFuture<'static, Result<Bytes>> {
        let backend = self.clone();
        Box::pin(async move {
            let name = descriptor.map_or(envelope.function.as_str(), |d| d.name);
            let url = backend.config.url(&envelope.function, name);
            let _slot = backend
                .in_flight
                .acquire()
                .await
                .map_err(|_| Error::unavailable("the http backend is closed"))?;
            let mut uploads = 0;
            loop {
                let mut sent_at = Instant::now();
                let outcome = backend
                    .config
                    .retry
                    .run_while(
                        || {
                            sent_at = Instant::now();
                            backend.attempt(&url, &envelope, payload.clone())
                        },
                        |error| retried_here(error, &envelope.function, name),
                    )
                    .await;
                let Some(missing) = outcome.as_ref().err().and_then(|e| to_upload(e, &envelope))
                else {
                    return outcome;
                };
                // Behind a load balancer the next attempt may reach another replica that lacks
                // the blobs too: a few rounds, then a clear error.
                if uploads == MAX_BLOB_UPLOADS {
                    return Err(crate::shared::missing(
                        &missing,
                        format!(
                            "{url} still lacked it after {MAX_BLOB_UPLOADS} uploads; \
                             do replicas behind a load balancer each need their own copy?"
                        ),
                    ));
                }
                uploads += 1;
                for id in &missing {
                    backend.upload_blob(&url, id, sent_at).await?;
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_further_hop_gave_up_on_is_not_retried_again() {
        let (id, name) = ("app::first", "first");
        let unavailable = || Error::unavailable("down");
        // Met by this hop: no function named, or this call's (by id or by name, as a service
        // that refuses a call names it).
        assert!(retried_here(&unavailable(), id, name));
        assert!(retried_here(&unavailable().in_function(id), id, name));
        assert!(retried_here(&unavailable().in_function(name), id, name));
        let throttled = Error::new(ErrorKind::Throttled {
            message: "429".into(),
        });
        assert!(retried_here(&throttled, id, name));
        // Passed back from a further call: its client retried already.
        assert!(!retried_here(
            &unavailable().in_function("app::third"),
            id,
            name
        ));
        assert!(!retried_here(
            &throttled.in_function("app::third"),
            id,
            name
        ));
        // Never retried, whoever met it.
        assert!(!retried_here(&Error::panic("no").in_function(id), id, name));
    }

    #[test]
    fn routes_come_before_the_template_and_the_base() {
        let routes = crate::config::HTTP_ROUTES
            .routes_in(
                &[(
                    "FERRY_HTTP_ROUTES",
                    " read=http://a:1/functions/read, value = http://b:2/f ,",
                )][..],
            )
            .unwrap();
        let mut config = HttpConfig::new("http://base:8080/");
        config.routes = routes;
        config = config.route("app::only-by-id", "http://c:3/x");
        assert_eq!(config.url("app::read", "read"), "http://a:1/functions/read");
        assert_eq!(config.url("app::value", "value"), "http://b:2/f");
        assert_eq!(config.url("app::only-by-id", "only-by-id"), "http://c:3/x");
        assert_eq!(
            config.url("app::other", "other"),
            "http://base:8080/functions/other"
        );
        let error = crate::config::HTTP_ROUTES
            .routes_in(&[("FERRY_HTTP_ROUTES", "read")][..])
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("`FERRY_HTTP_ROUTES` must be `name=target` entries"),
            "{error}"
        );
    }
}
