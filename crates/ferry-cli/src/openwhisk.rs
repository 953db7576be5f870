//! A program on Apache OpenWhisk: what every action should look like and how a deployed action
//! differs from that, over the controller's REST API. `ferry deploy` makes the difference vanish;
//! `ferry ls` shows it.
//!
//! Per function of the manifest, one action:
//!
//! - name `<app>-<function>-<config hash>` ([`crate::naming`]), in the namespace of the
//!   credentials (`__OW_NAMESPACE` / wskprops `NAMESPACE`, default `_`);
//! - code, one of two ([`ActionCode`]):
//!   - with `--registry`, ferry's OpenWhisk runtime image (`ferry build --platform openwhisk`,
//!     `FERRY_ROLE=openwhisk`), pushed to the registry as `<registry>/<app>-openwhisk:<digest>`
//!     with skopeo: `kind: blackbox`, `image` that reference, as `wsk action create --docker`.
//!     It serves up to the function's `concurrency` activations per container;
//!   - otherwise the program's ActionLoop zip (`exec` at the top level) on the native runtime
//!     image (`kind: blackbox`, `image: openwhisk/dockerskeleton`, as `wsk action create
//!     --native`), whose Go proxy runs one activation at a time and mixes up the answers of
//!     concurrent ones;
//! - `main` and the init parameter `FERRY_FUNCTION` = the function's name (its id when the name
//!   is not unique): the executable picks its function from them;
//! - limits: `memory` = `memory_mb`, `timeout` = the timeout in ms, `concurrency` = the
//!   function's concurrency on ferry's image, 1 on the native one. A controller allows
//!   concurrency 1 unless its operator raised `concurrency-limit.max`; its memory and time
//!   limits (its info document, `GET /`) are checked before anything is deployed, and a
//!   refusal names the limit to change;
//! - `--env KEY=VALUE` variables as init parameters, and `FERRY_STORE` from `--store` (the
//!   store's credentials are the action's own: pass them with `--env`);
//! - annotations `ferry:app`, `ferry:function` (the id), `ferry:config-hash` and
//!   `ferry:code-sha256`, by which deploys skip unchanged code and `ferry ls` recognises actions
//!   of the app that the program no longer has.
//!
//! A program that serves a web app (`ferry::web::serve`, `"web": true` in its manifest) gets one
//! more action, its web app: named `<app>-web-<config hash>` ([`ferry_core::naming::web_name`]), the
//! same code with `main` `web` and no `FERRY_FUNCTION` (so the executable serves its router), the
//! default settings of functions (256 MB, 60 s, one activation at a time, as the ActionLoop proxy
//! runs them), init parameters `FERRY_BACKEND=openwhisk` and `FERRY_APP=<app>` besides the
//! `--env` variables, and the annotations of a raw web action that owns its responses:
//! `web-export`, `raw-http`, `final`, `web-custom-options` (the app answers `OPTIONS` and sets
//! its own CORS headers) and `provide-api-key` (the handlers' `ferry::Context` invokes the app's
//! actions with the platform's `__OW_API_KEY`), all `true`. Its URL is
//! `{apihost}/api/v1/web/{namespace}/default/{action}`.
//!
//! Settings come from the environment and the `wsk` CLI's properties file, as for the
//! `openwhisk` backend ([`ferry::OpenWhiskConfig::from_env`]).

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context as _, bail};
use ferry::OpenWhiskConfig;
use ferry_core::manifest::Manifest;
use serde_json::{Value, json};

use crate::artifacts::{Artifacts, BuildInfo};
use crate::naming;
use crate::registry::RegistryArgs;

/// The runtime image of native ActionLoop actions.
pub const NATIVE_IMAGE: &str = "openwhisk/dockerskeleton";
/// The init parameter that names the function for the executable.
pub const FUNCTION_PARAMETER: &str = ferry::config::FUNCTION.name;
/// The annotations that make the web app's action a raw web action that owns its responses and
/// is given the API key.
pub const WEB_ANNOTATIONS: [&str; 5] = [
    "web-export",
    "raw-http",
    "final",
    "web-custom-options",
    "provide-api-key",
];

/// One action as it should be deployed.
#[derive(Debug, Clone)]
pub struct DesiredAction {
    /// What the program calls the function (name, or id when ambiguous).
    pub handler: String,
    /// The function's id.
    pub id: String,
    /// The action name.
    pub name: String,
    pub config_hash: String,
    pub limits: Value,
    /// Init parameters, sorted by key.
    pub parameters: BTreeMap<String, String>,
    /// The web app's action (a web action) rather than a function's.
    pub web: bool,
}

/// The actions' code.
#[derive(Debug, Clone)]
pub enum ActionCode {
    /// The ActionLoop zip, on the native runtime image: one activation per container.
    Zip {
        base64: String,
        /// Hex SHA-256 of the zip.
        sha256: String,
    },
    /// ferry's runtime image in a registry.
    Image {
        /// Where OpenWhisk pulls it from.
        reference: String,
        /// Hex SHA-256 of the image's `oci-archive` (reproducible: one build, one digest).
        sha256: String,
    },
}

impl ActionCode {
    /// Hex SHA-256 of what is deployed (the `ferry:code-sha256` annotation).
    pub fn sha256(&self) -> &str {
        match self {
            Self::Zip { sha256, .. } | Self::Image { sha256, .. } => sha256,
        }
    }
}

/// Whether the actions are ferry's image, which serves concurrent activations.
pub fn serves_concurrently(args: &RegistryArgs) -> bool {
    args.registry.is_some()
}

/// A program on OpenWhisk: the client and every action's desired state.
#[derive(Debug)]
pub struct ActionDeployment {
    pub client: Controller,
    pub app: String,
    pub actions: Vec<DesiredAction>,
    /// The web app's action, when the program serves one.
    pub web: Option<DesiredAction>,
}

/// How a deployed action differs from its desired state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ActionDifference {
    pub code: bool,
    /// What differs besides the code: `limits`, `main`, `parameters`, `annotations` (the web
    /// app's).
    pub config: Vec<&'static str>,
}

impl ActionDifference {
    pub fn is_empty(&self) -> bool {
        !self.code && self.config.is_empty()
    }
}

impl ActionDeployment {
    /// Reads the built program in `artifacts` and computes every action's desired state.
    /// `concurrent`: the actions are ferry's image ([`serves_concurrently`]), so their
    /// concurrency is the function's rather than 1.
    pub fn new(
        artifacts: &Artifacts,
        app: Option<&str>,
        env: &BTreeMap<String, String>,
        concurrent: bool,
    ) -> anyhow::Result<(Self, BuildInfo, Manifest)> {
        let info = artifacts.build_info()?;
        let manifest = artifacts.manifest()?;
        let config = OpenWhiskConfig::from_env().context("cannot find openwhisk settings")?;
        let app = app.map_or_else(|| info.program.clone(), str::to_owned);
        let mut actions = Vec::new();
        for function in &manifest.functions {
            let handler = naming::handler(&manifest, function).to_owned();
            let config_hash = naming::config_hash(&function.config, &handler);
            let name = naming::action_name(&app, &handler, &config_hash)?;
            let mut parameters = env.clone();
            parameters.insert(FUNCTION_PARAMETER.to_owned(), handler.clone());
            actions.push(DesiredAction {
                limits: json!({
                    "memory": function.config.memory_mb,
                    "timeout": function.config.timeout.as_millis() as u64,
                    "concurrency": if concurrent { function.config.concurrency } else { 1 },
                }),
                id: function.id.clone(),
                handler,
                name,
                config_hash,
                parameters,
                web: false,
            });
        }
        let web = if manifest.web {
            if let Some(action) = actions.iter().find(|a| a.handler == naming::WEB_HANDLER) {
                bail!(
                    "function `{}` has the handler the web app is deployed with (`{}`): rename it (`#[ferry::function(name = \"…\")]`) to deploy this web program",
                    action.handler,
                    naming::WEB_HANDLER
                );
            }
            let config = ferry_core::naming::WEB_CONFIG;
            let mut parameters = env.clone();
            parameters
                .entry(ferry::config::BACKEND.name.to_owned())
                .or_insert_with(|| "openwhisk".to_owned());
            parameters
                .entry(ferry::config::APP.name.to_owned())
                .or_insert_with(|| app.clone());
            Some(DesiredAction {
                handler: naming::WEB_HANDLER.to_owned(),
                id: String::new(),
                name: naming::web_name(&app)?,
                config_hash: naming::config_hash(&config, naming::WEB_HANDLER),
                limits: json!({
                    "memory": config.memory_mb,
                    "timeout": config.timeout.as_millis() as u64,
                    "concurrency": config.concurrency,
                }),
                parameters,
                web: true,
            })
        } else {
            None
        };
        let deployment = Self {
            client: Controller::new(config)?,
            app,
            actions,
            web,
        };
        Ok((deployment, info, manifest))
    }

    /// The action document `PUT` sends.
    pub fn document(&self, action: &DesiredAction, code: &ActionCode) -> Value {
        let parameters: Vec<Value> = action
            .parameters
            .iter()
            .map(|(key, value)| json!({ "key": key, "value": value, "init": true }))
            .collect();
        let mut annotations = vec![json!({ "key": "ferry:app", "value": self.app })];
        if action.web {
            annotations.push(json!({ "key": "ferry:web", "value": "true" }));
        } else {
            annotations.push(json!({ "key": "ferry:function", "value": action.id }));
        }
        annotations.extend([
            json!({ "key": "ferry:config-hash", "value": action.config_hash }),
            json!({ "key": "ferry:code-sha256", "value": code.sha256() }),
        ]);
        if action.web {
            annotations.push(
                json!({ "key": "description", "value": format!("ferry web app of {}", self.app) }),
            );
            annotations.extend(
                WEB_ANNOTATIONS
                    .iter()
                    .map(|key| json!({ "key": key, "value": true })),
            );
        } else {
            annotations.push(
                json!({ "key": "description", "value": format!("ferry function {}", action.id) }),
            );
        }
        let exec = match code {
            ActionCode::Zip { base64, .. } => json!({
                "kind": "blackbox",
                "image": NATIVE_IMAGE,
                "binary": true,
                "code": base64,
                "main": action.handler,
            }),
            ActionCode::Image { reference, .. } => json!({
                "kind": "blackbox",
                "image": reference,
                "binary": false,
                "main": action.handler,
            }),
        };
        json!({
            "exec": exec,
            "limits": action.limits,
            "parameters": parameters,
            "annotations": annotations,
        })
    }

    /// The web app's URL, of its deployed action document: the controller's web API, the
    /// action's namespace (the configured one when the document has none), package `default`.
    pub fn web_url(&self, deployed: &Value) -> String {
        let namespace = deployed["namespace"]
            .as_str()
            .filter(|ns| !ns.is_empty())
            .unwrap_or(&self.client.config.namespace);
        format!(
            "{}/api/v1/web/{namespace}/default/{}",
            self.client.api_host(),
            deployed["name"].as_str().unwrap_or_default()
        )
    }

    /// How `deployed` (an action document) differs from `desired` (`code` = `None`: the code
    /// is not compared).
    pub fn difference(
        &self,
        desired: &DesiredAction,
        code: Option<&ActionCode>,
        deployed: &Value,
    ) -> ActionDifference {
        let mut config = Vec::new();
        let limits = &deployed["limits"];
        if ["memory", "timeout", "concurrency"]
            .iter()
            .any(|key| limits[key] != desired.limits[key])
        {
            config.push("limits");
        }
        if deployed["exec"]["main"].as_str() != Some(desired.handler.as_str()) {
            config.push("main");
        }
        let have: BTreeMap<String, String> = deployed["parameters"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|p| {
                let value = match &p["value"] {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                Some((p["key"].as_str()?.to_owned(), value))
            })
            .collect();
        if have != desired.parameters {
            config.push("parameters");
        }
        if desired.web
            && WEB_ANNOTATIONS
                .iter()
                .any(|key| annotation_value(deployed, key) != Some(&Value::Bool(true)))
        {
            config.push("annotations");
        }
        let code = code
            .is_some_and(|code| annotation(deployed, "ferry:code-sha256") != Some(code.sha256()));
        ActionDifference { code, config }
    }

    /// Of `deployed` (action summaries), the actions of this app that the program does not
    /// have: `(action name, function id)`.
    pub fn extras(&self, deployed: &[Value]) -> Vec<(String, String)> {
        let mut extras: Vec<(String, String)> = deployed
            .iter()
            .filter(|action| annotation(action, "ferry:app") == Some(self.app.as_str()))
            .filter_map(|action| {
                let name = action["name"].as_str()?;
                let desired = self.actions.iter().chain(&self.web).any(|a| a.name == name);
                if desired {
                    return None;
                }
                let id = match annotation(action, "ferry:function") {
                    Some(id) => id,
                    None if annotation(action, "ferry:web").is_some() => crate::lambda::WEB_ROW,
                    None => "",
                };
                Some((name.to_owned(), id.to_owned()))
            })
            .collect();
        extras.sort();
        extras
    }
}

/// The value of an action's annotation, when it is a string.
pub fn annotation<'a>(action: &'a Value, key: &str) -> Option<&'a str> {
    annotation_value(action, key)?.as_str()
}

/// The value of an action's annotation.
fn annotation_value<'a>(action: &'a Value, key: &str) -> Option<&'a Value> {
    action["annotations"]
        .as_array()?
        .iter()
        .find(|a| a["key"] == key)
        .map(|a| &a["value"])
}

/// Reads the program's OpenWhisk zip.
pub fn read_code(path: &Path) -> anyhow::Result<ActionCode> {
    let zip = std::fs::read(path).with_context(|| {
        format!(
            "cannot read `{}`: run `ferry build --platform openwhisk` first",
            path.display()
        )
    })?;
    Ok(ActionCode::Zip {
        base64: base64_simd::STANDARD.encode_to_string(&zip),
        sha256: crate::registry::sha256_hex(&zip),
    })
}

/// The program's OpenWhisk image, as it will be known in `registry`
/// (`REGISTRY/<app>-openwhisk:<digest>`).
pub fn read_image(path: &Path, registry: &str, app: &str) -> anyhow::Result<ActionCode> {
    let image = crate::registry::image(
        path,
        registry,
        &format!("{app}-openwhisk"),
        "run `ferry build --platform openwhisk` first, statically linked (the image is FROM scratch)",
    )?;
    Ok(ActionCode::Image {
        reference: image.reference,
        sha256: image.sha256,
    })
}

/// The memory and time limits a controller allows (its info document, `GET /`), in MiB and
/// ms. It does not state its intra-container concurrency maximum: only a refusal tells.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ControllerLimits {
    pub memory_mb: std::ops::RangeInclusive<u64>,
    pub duration_ms: std::ops::RangeInclusive<u64>,
}

impl ControllerLimits {
    /// Of the controller's info document; `None` when it does not state them.
    pub fn of_info(info: &Value) -> Option<Self> {
        let limits = &info["limits"];
        let number = |key: &str| limits[key].as_u64();
        Some(Self {
            memory_mb: (number("min_action_memory")? >> 20)..=(number("max_action_memory")? >> 20),
            duration_ms: number("min_action_duration")?..=number("max_action_duration")?,
        })
    }

    /// What of `action`'s limits the controller would refuse, each naming the limit.
    pub fn refusals(&self, action: &DesiredAction) -> Vec<String> {
        let mut refused = Vec::new();
        let memory = action.limits["memory"].as_u64().unwrap_or_default();
        if !self.memory_mb.contains(&memory) {
            refused.push(format!(
                "`{}` asks for {memory} MB of memory, and this openwhisk allows {}–{} MB \
                 (`min_action_memory`/`max_action_memory`): change its `memory_mb`",
                action.handler,
                self.memory_mb.start(),
                self.memory_mb.end()
            ));
        }
        let timeout = action.limits["timeout"].as_u64().unwrap_or_default();
        if !self.duration_ms.contains(&timeout) {
            refused.push(format!(
                "`{}` has a {timeout} ms timeout, and this openwhisk allows {}–{} ms \
                 (`min_action_duration`/`max_action_duration`): change its `timeout`",
                action.handler,
                self.duration_ms.start(),
                self.duration_ms.end()
            ));
        }
        refused
    }
}

/// A controller's refusal of an action's concurrency, explained; other errors as they are.
pub fn explain_refusal(error: anyhow::Error) -> anyhow::Error {
    let text = format!("{error:#}");
    let Some(threshold) = text
        .split("exceeds allowed threshold of ")
        .nth(1)
        .filter(|_| text.contains("concurrency "))
        .and_then(|rest| rest.split_whitespace().next())
    else {
        return error;
    };
    error.context(format!(
        "this openwhisk runs at most {threshold} activation(s) per container (its \
         `concurrency-limit.max`, 1 by default): ask its operator to raise it, or lower the \
         function's `concurrency`"
    ))
}

/// The controller's REST API for actions.
#[derive(Debug)]
pub struct Controller {
    config: OpenWhiskConfig,
    http: reqwest::Client,
}

impl Controller {
    pub fn new(config: OpenWhiskConfig) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .danger_accept_invalid_certs(config.insecure)
            .timeout(std::time::Duration::from_secs(300))
            .build()
            .context("cannot build the http client")?;
        Ok(Self { config, http })
    }

    /// The controller's base URL.
    pub fn api_host(&self) -> &str {
        &self.config.api_host
    }

    /// The memory and time limits the controller states (its info document, `GET /`), if it
    /// does.
    pub async fn limits(&self) -> Option<ControllerLimits> {
        let url = format!("{}/", self.config.api_host.trim_end_matches('/'));
        let response = self.http.get(&url).send().await.ok()?;
        if !response.status().is_success() {
            return None;
        }
        ControllerLimits::of_info(&response.json::<Value>().await.ok()?)
    }

    fn url(&self, path: &str) -> String {
        format!(
            "{}/api/v1/namespaces/{}/{path}",
            self.config.api_host, self.config.namespace
        )
    }

    fn request(&self, method: reqwest::Method, url: &str) -> reqwest::RequestBuilder {
        let (user, key) = self.config.credentials();
        self.http.request(method, url).basic_auth(user, Some(key))
    }

    /// Every action of the namespace (summaries, without code).
    pub async fn list(&self) -> anyhow::Result<Vec<Value>> {
        let mut all = Vec::new();
        loop {
            let url = format!("{}?limit=200&skip={}", self.url("actions"), all.len());
            let page: Vec<Value> = self
                .send(self.request(reqwest::Method::GET, &url), &url)
                .await?;
            let done = page.len() < 200;
            all.extend(page);
            if done {
                return Ok(all);
            }
        }
    }

    /// An action, or `None` when it does not exist.
    pub async fn get(&self, name: &str) -> anyhow::Result<Option<Value>> {
        let url = format!("{}?code=false", self.url(&format!("actions/{name}")));
        let response = self
            .request(reqwest::Method::GET, &url)
            .send()
            .await
            .with_context(|| format!("cannot reach the openwhisk controller at {url}"))?;
        if response.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        Ok(Some(read(response, &url).await?))
    }

    /// Creates the action, or replaces it when `overwrite`; returns the action as stored.
    pub async fn put(
        &self,
        name: &str,
        document: &Value,
        overwrite: bool,
    ) -> anyhow::Result<Value> {
        let url = format!(
            "{}?overwrite={overwrite}",
            self.url(&format!("actions/{name}"))
        );
        self.send(
            self.request(reqwest::Method::PUT, &url).json(document),
            &url,
        )
        .await
    }

    async fn send<T: serde::de::DeserializeOwned>(
        &self,
        request: reqwest::RequestBuilder,
        url: &str,
    ) -> anyhow::Result<T> {
        let response = request
            .send()
            .await
            .with_context(|| format!("cannot reach the openwhisk controller at {url}"))?;
        read(response, url).await
    }
}

async fn read<T: serde::de::DeserializeOwned>(
    response: reqwest::Response,
    url: &str,
) -> anyhow::Result<T> {
    let status = response.status();
    let body = response
        .bytes()
        .await
        .with_context(|| format!("the connection to {url} broke"))?;
    if !status.is_success() {
        let message = serde_json::from_slice::<Value>(&body)
            .ok()
            .and_then(|v| v["error"].as_str().map(str::to_owned))
            .unwrap_or_else(|| String::from_utf8_lossy(&body).trim().to_owned());
        bail!("the openwhisk controller answered {status}: {message}");
    }
    serde_json::from_slice(&body).with_context(|| format!("{url} answered unreadable json"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn action(memory: u64, timeout: u64) -> DesiredAction {
        DesiredAction {
            handler: "f".to_owned(),
            id: "app::f".to_owned(),
            name: "app-f-0".to_owned(),
            config_hash: "0".to_owned(),
            limits: json!({"memory": memory, "timeout": timeout, "concurrency": 1}),
            parameters: BTreeMap::new(),
            web: false,
        }
    }

    #[test]
    fn the_controllers_limits_are_read_from_its_info_and_checked() {
        // As Apache OpenWhisk's controller states its shipped defaults.
        let info = json!({"limits": {
            "min_action_memory": 128u64 << 20, "max_action_memory": 512u64 << 20,
            "min_action_duration": 100, "max_action_duration": 300_000,
        }});
        let limits = ControllerLimits::of_info(&info).unwrap();
        assert_eq!(limits.memory_mb, 128..=512);
        assert!(limits.refusals(&action(256, 60_000)).is_empty());
        let refused = limits.refusals(&action(1024, 600_000));
        assert_eq!(refused.len(), 2, "{refused:?}");
        assert!(refused[0].contains("max_action_memory"), "{refused:?}");
        assert!(refused[1].contains("600000 ms timeout"), "{refused:?}");
        assert_eq!(ControllerLimits::of_info(&json!({"limits": {}})), None);
    }

    #[test]
    fn a_refused_concurrency_names_the_limit_to_raise() {
        let refused = anyhow::anyhow!(
            "the openwhisk controller answered 400 Bad Request: concurrency 8 exceeds allowed threshold of 1"
        );
        let explained = format!("{:#}", explain_refusal(refused));
        assert!(
            explained.contains("at most 1 activation(s) per container")
                && explained.contains("concurrency-limit.max")
                && explained.contains("concurrency 8 exceeds"),
            "{explained}"
        );
        let other = format!("{:#}", explain_refusal(anyhow::anyhow!("401 Unauthorized")));
        assert_eq!(other, "401 Unauthorized");
    }
}
