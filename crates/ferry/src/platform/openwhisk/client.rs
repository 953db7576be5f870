//! The `openwhisk` backend: functions deployed as OpenWhisk actions, invoked through the
//! controller's REST API.
//!
//! - A blocking invoke, `POST /api/v1/namespaces/{ns}/actions/{action}?blocking=true&result=true`
//!   with basic auth and the arguments as the JSON parameters.
//! - A blocking call the controller cannot finish in time (about 60 s) answers 202 with an
//!   activation id: the activation is then polled until its record exists.
//! - 429 is [`ErrorKind::Throttled`] and retried with the rest of the [`RetryPolicy`].
//! - With a store (`FERRY_STORE`, the `store` feature), parameters and results over the 1 MiB
//!   limit travel through it by reference, and shared values once each
//!   ([`crate::platform::offload`]); the actions need the same store.
//! - Errors: a ferry runtime puts the ferry error next to OpenWhisk's `error` field, so its kind
//!   travels back exactly. Other actions' application errors become [`ErrorKind::User`], the
//!   controller's time-limit message [`ErrorKind::Timeout`], and its other developer errors
//!   [`ErrorKind::Protocol`].

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use futures::future::BoxFuture;
use serde_json::Value;

use crate::platform::retry::RetryPolicy;
use crate::platform::{BackendKind, RemoteClient};
use crate::wire::Envelope;
use crate::{Error, ErrorKind, FunctionDescriptor, Result};

/// Where the controller is, who we are, and which action each function is.
#[derive(Clone)]
#[non_exhaustive]
pub struct OpenWhiskConfig {
    /// The controller's base URL, e.g. `https://openwhisk.example` (a bare host gets `https://`).
    pub api_host: String,
    /// `uuid:key`, sent as basic auth.
    pub auth: String,
    /// The namespace; `_` is the caller's default one.
    pub namespace: String,
    /// The action of each function: `{name}` and `{id}` are replaced, e.g. `shop-{name}` or
    /// `mypackage/{name}`. Default `{name}`.
    pub actions: String,
    /// The app `ferry deploy` deployed the program as (`FERRY_APP`): actions are then found
    /// by their deployed names ([`crate::naming`]) instead of the template.
    pub app: Option<String>,
    /// Accept any TLS certificate (a development deployment's self-signed one, like `wsk -i`).
    pub insecure: bool,
    /// How typed calls encode arguments and outputs (`FERRY_OPENWHISK_CODEC`):
    /// [`Codec::Json`](crate::Codec::Json), which any action reads, or
    /// [`Codec::BinaryInJson`](crate::Codec::BinaryInJson) between ferry programs.
    pub codec: crate::Codec,
    /// Largest JSON parameters sent; bigger arguments go through the store, or are refused
    /// before sending without one.
    pub max_payload: usize,
    /// Where parameters and results over the limit, and shared values, travel (`FERRY_STORE`,
    /// [`crate::store`]); the actions need the same store. Without one, larger parameters are
    /// refused and shared values travel in full with every call.
    #[cfg(feature = "store")]
    pub store: Option<crate::store::StoreLocation>,
    /// The store's region, credentials and endpoint: the AWS SDK's chain
    /// ([`AwsConfig::load`](crate::aws::AwsConfig::load)) at the first call that needs it when
    /// unset.
    #[cfg(feature = "store")]
    pub aws: Option<crate::aws::AwsConfig>,
    /// Longest wait for one request's answer.
    pub request_timeout: Duration,
    /// How long an activation that answered 202 is polled for.
    pub poll_limit: Duration,
    /// What is retried, how often.
    pub retry: RetryPolicy,
}

impl std::fmt::Debug for OpenWhiskConfig {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut debug = f.debug_struct("OpenWhiskConfig");
        debug
            .field("api_host", &self.api_host)
            .field("auth", &"<redacted>")
            .field("namespace", &self.namespace)
            .field("actions", &self.actions)
            .field("app", &self.app)
            .field("insecure", &self.insecure)
            .field("codec", &self.codec)
            .field("max_payload", &self.max_payload);
        #[cfg(feature = "store")]
        debug.field("store", &self.store).field("aws", &self.aws);
        debug
            .field("request_timeout", &self.request_timeout)
            .field("poll_limit", &self.poll_limit)
            .field("retry", &self.retry)
            .finish()
    }
}

impl OpenWhiskConfig {
    /// The controller at `api_host`, with the `uuid:key` credentials `auth`.
    pub fn new(api_host: impl Into<String>, auth: impl Into<String>) -> Self {
        Self {
            api_host: normalize_host(&api_host.into()),
            auth: auth.into(),
            namespace: "_".to_owned(),
            actions: "{name}".to_owned(),
            app: None,
            insecure: false,
            codec: crate::Codec::Json,
            max_payload: super::MAX_PAYLOAD,
            #[cfg(feature = "store")]
            store: None,
            #[cfg(feature = "store")]
            aws: None,
            request_timeout: Duration::from_secs(70),
            poll_limit: Duration::from_secs(900),
            retry: RetryPolicy::default(),
        }
    }

    /// From the environment, then the `wsk` CLI's properties file.
    ///
    /// - `__OW_API_HOST`, `__OW_API_KEY`, `__OW_NAMESPACE`: what OpenWhisk sets inside an action,
    ///   so a function running there fans out on its own platform;
    /// - else `APIHOST`, `AUTH` and `NAMESPACE` from `WSK_CONFIG_FILE` (default `~/.wskprops`);
    /// - `FERRY_APP` (deployed names), `FERRY_OPENWHISK_ACTIONS` (the action template),
    ///   `FERRY_OPENWHISK_INSECURE=1`, `FERRY_OPENWHISK_CODEC` (`json` or `binary-in-json`) and
    ///   `FERRY_STORE`.
    pub fn from_env() -> Result<Self> {
        Self::from_lookup(|key| std::env::var(key).ok())
    }

    fn from_lookup(lookup: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let env = |key: &str| lookup(key).filter(|v| !v.is_empty());
        let props_path = env("WSK_CONFIG_FILE")
            .map(PathBuf::from)
            .or_else(|| env("HOME").map(|home| Path::new(&home).join(".wskprops")));
        let props = match &props_path {
            Some(path) if path.exists() => read_wskprops(path)?,
            _ => Vec::new(),
        };
        let prop = |key: &str| props.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone());
        let looked = || match &props_path {
            Some(path) => format!("the environment and `{}`", path.display()),
            None => "the environment".to_owned(),
        };
        let api_host = env("__OW_API_HOST").or_else(|| prop("APIHOST")).ok_or_else(|| {
            Error::config(format!(
                "the openwhisk backend needs an API host: set __OW_API_HOST or APIHOST in a wskprops file (looked in {})",
                looked()
            ))
        })?;
        let auth = env("__OW_API_KEY").or_else(|| prop("AUTH")).ok_or_else(|| {
            Error::config(format!(
                "the openwhisk backend needs credentials (`uuid:key`): set __OW_API_KEY or AUTH in a wskprops file (looked in {})",
                looked()
            ))
        })?;
        let mut config = Self::new(api_host, auth);
        if let Some(namespace) = env("__OW_NAMESPACE").or_else(|| prop("NAMESPACE")) {
            config.namespace = namespace;
        }
        if let Some(actions) = crate::config::OPENWHISK_ACTIONS.text_in(&lookup) {
            config.actions = actions;
        }
        config.app = crate::config::APP.text_in(&lookup);
        config.insecure = crate::config::OPENWHISK_INSECURE.flag_in(&lookup)?;
        if crate::config::OPENWHISK_CODEC.word_in(&lookup)? == Some("binary-in-json") {
            config.codec = crate::Codec::BinaryInJson;
        }
        if let Some(store) = crate::config::STORE.text_in(&lookup) {
            #[cfg(feature = "store")]
            {
                config.store = Some(
                    store
                        .parse()
                        .map_err(|e: crate::store::StoreError| Error::config(e.to_string()))?,
                );
            }
            #[cfg(not(feature = "store"))]
            return Err(Error::config(format!(
                "`FERRY_STORE={store}` needs ferry's `store` feature, which this program was built without"
            )));
        }
        Ok(config)
    }

    /// Sets the namespace.
    #[must_use]
    pub fn namespace(mut self, namespace: impl Into<String>) -> Self {
        self.namespace = namespace.into();
        self
    }

    /// Sets the action template (`{name}`, `{id}`).
    #[must_use]
    pub fn actions(mut self, template: impl Into<String>) -> Self {
        self.actions = template.into();
        self
    }

    /// Finds actions by the names `ferry deploy` gave them under `app`.
    #[must_use]
    pub fn app(mut self, app: impl Into<String>) -> Self {
        self.app = Some(app.into());
        self
    }

    /// Sets the retry policy.
    #[must_use]
    pub fn retry(mut self, retry: RetryPolicy) -> Self {
        self.retry = retry;
        self
    }

    /// Sets how typed calls encode arguments and outputs: [`Codec::Json`](crate::Codec::Json)
    /// or [`Codec::BinaryInJson`](crate::Codec::BinaryInJson) (the binary codec base64'd into
    /// `{"__ferry_binary": "…"}`, for actions that are ferry programs); another codec is refused
    /// when a call is sent.
    #[must_use]
    pub fn codec(mut self, codec: crate::Codec) -> Self {
        self.codec = codec;
        self
    }

    /// Sets the largest parameters sent.
    #[must_use]
    pub fn max_payload(mut self, bytes: usize) -> Self {
        self.max_payload = bytes;
        self
    }

    /// Sends parameters and results over the limit, and shared values, through `store`, with
    /// the AWS settings of [`aws`](Self::aws) or else the SDK's chain.
    #[cfg(feature = "store")]
    #[must_use]
    pub fn store(mut self, store: crate::store::StoreLocation) -> Self {
        self.store = Some(store);
        self
    }

    /// Sets the region, credentials and endpoint of the store.
    #[cfg(feature = "store")]
    #[must_use]
    pub fn aws(mut self, aws: crate::aws::AwsConfig) -> Self {
        self.aws = Some(aws);
        self
    }

    /// The user and key of [`auth`](Self::auth), for basic auth.
    pub fn credentials(&self) -> (&str, &str) {
        self.auth.split_once(':').unwrap_or((&self.auth, ""))
    }

    /// The action that runs the function `name` (`id`): its deployed name under
    /// [`app`](Self::app), else the template's.
    pub fn action(&self, id: &str, name: &str) -> Result<String> {
        match &self.app {
            Some(app) => crate::Registry::global()?.deployed_name(app, id, name),
            None => Ok(self.actions.replace("{name}", name).replace("{id}", id)),
        }
    }
}

fn normalize_host(host: &str) -> String {
    let host = host.trim().trim_end_matches('/');
    if host.starts_with("http://") || host.starts_with("https://") {
        host.to_owned()
    } else {
        format!("https://{host}")
    }
}

/// `KEY=VALUE` lines, as the `wsk` CLI writes them.
fn read_wskprops(path: &Path) -> Result<Vec<(String, String)>> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::config(format!("cannot read `{}`: {e}", path.display())))?;
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| line.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect())
}

pub(crate) struct OpenWhiskBackend {
    config: OpenWhiskConfig,
    client: reqwest::Client,
    /// The store, set up at the first call (loading AWS settings may take requests).
    #[cfg(feature = "store")]
    offload: tokio::sync::OnceCell<crate::platform::offload::Offload>,
}

impl OpenWhiskBackend {
    pub(crate) fn new(config: OpenWhiskConfig) -> Result<Self> {
        let client = reqwest::Client::builder()
            .pool_max_idle_per_host(256)
            .timeout(config.request_timeout)
            .danger_accept_invalid_certs(config.insecure)
            .build()
            .map_err(|e| Error::config(format!("cannot build the http client: {e}")))?;
        Ok(Self {
            config,
            client,
            #[cfg(feature = "store")]
            offload: tokio::sync::OnceCell::new(),
        })
    }

    /// Sends the JSON event of `envelope`'s arguments through `send`: through the store when
    /// the backend has one ([`crate::platform::offload::exchange`]).
    #[cfg(feature = "store")]
    async fn exchange<F, Fut>(
        &self,
        envelope: &Envelope,
        payload: Bytes,
        action: &str,
        send: F,
    ) -> Result<Bytes>
    where
        F: FnOnce(Bytes) -> Fut,
        Fut: std::future::Future<Output = Result<Bytes>>,
    {
        let offload = match &self.config.store {
            Some(location) => Some(
                self.offload
                    .get_or_try_init(|| async {
                        let aws = match &self.config.aws {
                            Some(aws) => aws.clone(),
                            None => crate::aws::AwsConfig::load()
                                .await
                                .map_err(|e| Error::config(e.to_string()))?,
                        };
                        let store = crate::store::Store::new(&aws, location.clone())?;
                        Ok::<_, Error>(crate::platform::offload::Offload::new(store))
                    })
                    .await?,
            ),
            None => None,
        };
        let limit = self.config.max_payload;
        let kind = BackendKind::OpenWhisk;
        crate::platform::offload::exchange(offload, envelope, payload, limit, kind, action, send)
            .await
    }

    /// Sends the JSON event of `envelope`'s arguments through `send`.
    #[cfg(not(feature = "store"))]
    async fn exchange<F, Fut>(
        &self,
        envelope: &Envelope,
        payload: Bytes,
        _action: &str,
        send: F,
    ) -> Result<Bytes>
    where
        F: FnOnce(Bytes) -> Fut,
        Fut: std::future::Future<Output = Result<Bytes>>,
    {
        let limit = self.config.max_payload;
        send(crate::platform::json_event(
            envelope,
            payload,
            limit,
            BackendKind::OpenWhisk,
        )?)
        .await
    }

    async fn attempt(
        &self,
        url: &str,
        action: &str,
        envelope: &Envelope,
        payload: Bytes,
    ) -> Result<Answer> {
        let mut request = self
            .request(reqwest::Method::POST, url)
            .header("content-type", "application/json")
            .body(payload);
        if let Some(trace) = &envelope.trace {
            request = request.header("traceparent", trace);
        }
        let response = request
            .send()
            .await
            .map_err(|e| Error::unavailable(format!("cannot reach {url}: {e}")))?;
        let status = response.status().as_u16();
        let body = response
            .bytes()
            .await
            .map_err(|e| Error::unavailable(format!("connection to {url} broke: {e}")))?;
        match status {
            200 => Ok(Answer::Result(body)),
            202 => serde_json::from_slice::<Value>(&body)
                .ok()
                .and_then(|v| v.get("activationId")?.as_str().map(str::to_owned))
                .map(Answer::Accepted)
                .ok_or_else(|| {
                    Error::protocol(format!(
                        "the controller accepted the invocation without an activation id: {}",
                        String::from_utf8_lossy(&body)
                    ))
                }),
            // An application or developer error: the body is the action's result.
            502 => Err(failed_activation(&body, None)),
            _ => Err(controller_error(status, action, &body)),
        }
    }

    /// Waits for the record of an activation that outlived the blocking call.
    async fn poll(&self, activation: &str) -> Result<Bytes> {
        let url = format!(
            "{}/api/v1/namespaces/{}/activations/{activation}",
            self.config.api_host, self.config.namespace
        );
        let started = Instant::now();
        let mut pause = Duration::from_millis(50);
        loop {
            let response = self
                .request(reqwest::Method::GET, &url)
                .send()
                .await
                .map_err(|e| Error::unavailable(format!("cannot reach {url}: {e}")));
            match response {
                Ok(response) if response.status().as_u16() == 200 => {
                    let body = response.bytes().await.map_err(|e| {
                        Error::unavailable(format!("connection to {url} broke: {e}"))
                    })?;
                    return activation_outcome(&body);
                }
                // Not recorded yet (404), throttled, or a moment's outage: ask again.
                Ok(response) if matches!(response.status().as_u16(), 404 | 429 | 503) => {}
                Ok(response) => {
                    let status = response.status().as_u16();
                    let body = response.bytes().await.unwrap_or_default();
                    return Err(controller_error(status, activation, &body));
                }
                Err(error) if started.elapsed() < self.config.poll_limit => {
                    tracing::debug!(%error, "polling the activation again");
                }
                Err(error) => return Err(error),
            }
            if started.elapsed() >= self.config.poll_limit {
                return Err(Error::unavailable(format!(
                    "activation {activation} has no result after {} s of polling",
                    self.config.poll_limit.as_secs()
                )));
            }
            tokio::time::sleep(pause).await;
            pause = (pause * 3 / 2).min(Duration::from_secs(2));
        }
    }

    fn request(&self, method: reqwest::Method, url: &str) -> reqwest::RequestBuilder {
        let (user, key) = self.config.credentials();
        self.client
            .request(method, url)
            .basic_auth(user, Some(key))
            .header("accept", "application/json")
    }
}

enum Answer {
    Result(Bytes),
    Accepted(String),
}

/// An activation record (`GET …/activations/{id}`): its result, or its failure by status.
fn activation_outcome(body: &[u8]) -> Result<Bytes> {
    let record: Value = serde_json::from_slice(body)
        .map_err(|e| Error::protocol(format!("an unreadable activation record: {e}")))?;
    let response = &record["response"];
    let result = response.get("result").cloned().unwrap_or(Value::Null);
    let status = response["status"].as_str().unwrap_or_default();
    if status == "success" || response["success"] == Value::Bool(true) {
        return Ok(Bytes::from(serde_json::to_vec(&result).unwrap_or_default()));
    }
    let result = serde_json::to_vec(&result).unwrap_or_default();
    Err(failed_activation(&result, Some(status)))
}

/// The error of a failed activation from its result object.
fn failed_activation(result: &[u8], status: Option<&str>) -> Error {
    let result: Value = serde_json::from_slice(result).unwrap_or(Value::Null);
    if let Some(error) = result
        .get("ferry")
        .and_then(|e| serde_json::from_value::<Error>(e.clone()).ok())
    {
        return error;
    }
    let message = match result.get("error") {
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
        None => result.to_string(),
    };
    if let Some(limit_ms) = time_limit(&message) {
        return Error::new(ErrorKind::Timeout { limit_ms });
    }
    if let Some((size, limit)) = result_limit(&message) {
        return Error::new(ErrorKind::PayloadTooLarge { size, limit });
    }
    match status {
        Some("action developer error") => {
            Error::protocol(format!("action developer error: {message}"))
        }
        Some("whisk internal error") => {
            Error::unavailable(format!("whisk internal error: {message}"))
        }
        _ => Error::new(ErrorKind::User {
            message,
            type_name: "openwhisk application error".to_owned(),
        }),
    }
}

/// The limit in the controller's "The action exceeded its time limits of N milliseconds.".
fn time_limit(message: &str) -> Option<u64> {
    let rest = message.split("exceeded its time limits of ").nth(1)?;
    rest.split_whitespace().next()?.parse().ok()
}

/// The sizes in the invoker's "The action produced a response that exceeded the allowed length:
/// N > M bytes.": a result over the payload limit.
fn result_limit(message: &str) -> Option<(u64, u64)> {
    let rest = message.split("exceeded the allowed length: ").nth(1)?;
    let mut words = rest.split_whitespace();
    let size = words.next()?.parse().ok()?;
    let limit = words.nth(1)?.parse().ok()?;
    Some((size, limit))
}

/// An answer of the controller itself (not of the action).
fn controller_error(status: u16, action: &str, body: &[u8]) -> Error {
    let message = serde_json::from_slice::<Value>(body)
        .ok()
        .and_then(|v| v.get("error").and_then(Value::as_str).map(str::to_owned))
        .unwrap_or_else(|| String::from_utf8_lossy(body).trim().to_owned());
    match status {
        404 => Error::new(ErrorKind::UnknownFunction {
            id: action.to_owned(),
        }),
        413 => Error::new(ErrorKind::PayloadTooLarge { size: 0, limit: 0 }),
        429 => Error::new(ErrorKind::Throttled { message }),
        401 | 403 => Error::config(format!(
            "the controller refused the credentials ({status}): {message}"
        )),
        _ => Error::unavailable(format!("the controller answered {status}: {message}")),
    }
}

impl RemoteClient for OpenWhiskBackend {
    const KIND: BackendKind = BackendKind::OpenWhisk;
    const CODEC: crate::Codec = crate::Codec::Json;

    fn codec(&self) -> crate::Codec {
        self.config.codec
    }

    fn send(
        self: &Arc<Self>,
        envelope: Envelope,
        payload: Bytes,
        descriptor: Option<&'static FunctionDescriptor>,
    ) -> BoxFuture<'static, Result<Bytes>> {
        let backend = self.clone();
        Box::pin(async move {
            let name = descriptor.map_or(envelope.function.as_str(), |d| d.name);
            let action = backend.config.action(&envelope.function, name)?;
            let url = format!(
                "{}/api/v1/namespaces/{}/actions/{action}?blocking=true&result=true",
                backend.config.api_host, backend.config.namespace
            );
            let (backend, url, action, sent) = (&backend, &url, &action, &envelope);
            let send = |event: Bytes| async move {
                let attempt = || backend.attempt(url, action, sent, event.clone());
                let result = match backend.config.retry.run(attempt).await? {
                    Answer::Result(body) => body,
                    Answer::Accepted(activation) => backend.poll(&activation).await?,
                };
                // The function's output, out of the `{"result": …}` a ferry runtime puts it in.
                Ok(super::unwrap_result(&result).map_or(result, Bytes::from))
            };
            backend.exchange(&envelope, payload, action, send).await
        })
    }

    fn delivers_shared(&self) -> bool {
        #[cfg(feature = "store")]
        return self.config.store.is_some();
        #[cfg(not(feature = "store"))]
        false
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn results_unwrap_to_exactly_the_output() {
        for output in [
            json!(4),
            json!(null),
            json!("text"),
            json!([1, 2]),
            json!({"result": 4}),
            json!({"result": 4, "other": 1}),
            json!({"sum": 3}),
        ] {
            let result = serde_json::to_vec(&super::super::wrap_result(output.clone())).unwrap();
            let unwrapped = super::super::unwrap_result(&result).unwrap_or(result);
            assert_eq!(serde_json::from_slice::<Value>(&unwrapped).unwrap(), output);
        }
    }

    #[test]
    fn controller_messages_keep_their_meaning() {
        let error = failed_activation(
            br#"{"error": "The action exceeded its time limits of 1500 milliseconds."}"#,
            Some("action developer error"),
        );
        assert_eq!(error.kind(), &ErrorKind::Timeout { limit_ms: 1500 });
        let error = failed_activation(
            br#"{"error": "The action produced a response that exceeded the allowed length: 3000015 > 1048576 bytes. The truncated response was: {\"result\": \"xxx"}"#,
            None,
        );
        assert_eq!(
            error.kind(),
            &ErrorKind::PayloadTooLarge {
                size: 3_000_015,
                limit: 1_048_576
            }
        );
        let error = failed_activation(br#"{"error": "no such model"}"#, None);
        assert!(
            matches!(error.kind(), ErrorKind::User { message, .. } if message == "no such model")
        );
        let error = failed_activation(
            br#"{"error": "The action did not produce a valid response."}"#,
            Some("action developer error"),
        );
        assert!(matches!(error.kind(), ErrorKind::Protocol { .. }));
    }

    #[test]
    fn settings_come_from_the_environment_then_wskprops() {
        let props = std::env::temp_dir().join(format!("ferry-wskprops-{}", std::process::id()));
        std::fs::write(
            &props,
            "# wsk property file\nAPIHOST=whisk.local:3233\nAUTH=uuid:key\nNAMESPACE=shop\n",
        )
        .unwrap();
        let path = props.display().to_string();
        let from = |vars: &[(&str, &str)]| {
            let vars: Vec<(String, String)> = vars
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect();
            OpenWhiskConfig::from_lookup(move |key| {
                vars.iter().find(|(k, _)| k == key).map(|(_, v)| v.clone())
            })
        };
        let config = from(&[("WSK_CONFIG_FILE", &path)]).unwrap();
        assert_eq!(config.api_host, "https://whisk.local:3233");
        assert_eq!(
            (config.auth.as_str(), config.namespace.as_str()),
            ("uuid:key", "shop")
        );
        let config = from(&[
            ("WSK_CONFIG_FILE", &path),
            ("__OW_API_HOST", "http://10.0.0.1"),
            ("FERRY_OPENWHISK_ACTIONS", "app-{name}"),
        ])
        .unwrap();
        assert_eq!(config.api_host, "http://10.0.0.1");
        assert_eq!(config.action("x::f", "f").unwrap(), "app-f");
        let error = from(&[("WSK_CONFIG_FILE", "/nonexistent/wskprops")]).unwrap_err();
        assert!(error.to_string().contains("needs an API host"), "{error}");
        std::fs::remove_file(props).unwrap();
    }

    #[test]
    fn hosts_and_action_names() {
        let config = OpenWhiskConfig::new("openwhisk.example/", "u:k").actions("app-{name}");
        assert_eq!(config.api_host, "https://openwhisk.example");
        assert_eq!(config.action("m::add", "add").unwrap(), "app-add");
        assert_eq!(
            OpenWhiskConfig::new("http://127.0.0.1:3233", "u:k").api_host,
            "http://127.0.0.1:3233"
        );
    }
}
