//! A program on AWS Lambda: what every function should look like (its name, settings and code)
//! and how a deployed function differs from that. `ferry deploy` makes the difference vanish;
//! `ferry ls` shows it.
//!
//! Per function of the manifest:
//!
//! - name `<app>-<function>-<config hash>` ([`crate::naming`]);
//! - runtime `provided.al2023`, the program's zip as code (`bootstrap`), architecture from the
//!   binary (`x86_64` or `arm64`);
//! - `Handler` = the function's name (its id when the name is not unique): the runtime reads it
//!   as `_HANDLER` to pick the function;
//! - `MemorySize` = `memory_mb`; `Timeout` = the timeout rounded up to whole seconds;
//! - `concurrency` is recorded as the tag `ferry:concurrency` and nowhere else: classic Lambda
//!   gives an environment one invocation at a time, and Lambda Managed Instances set
//!   `AWS_LAMBDA_MAX_CONCURRENCY` from the capacity provider's per-environment maximum; ferry's
//!   runtime polls that many invocations and runs at most `concurrency` of them at once;
//! - `--env KEY=VALUE` variables, the `--role`, and the description `ferry function <id>`;
//! - tags `ferry:app`, `ferry:function` (the id) and `ferry:config-hash`, by which `ferry ls`
//!   recognises functions of the app that the program no longer has.
//!
//! A program that serves a web app (`ferry::web::serve`, `"web": true` in its manifest) gets one
//! more function, its web app:
//!
//! - named `<app>-web-<config hash>` ([`ferry_core::naming::web_name`]), `Handler` `web` (the program
//!   serves its router when `_HANDLER` names none of its functions), the same zip, the default
//!   settings of functions (256 MB, 60 s);
//! - environment `FERRY_BACKEND=lambda` and `FERRY_APP=<app>` besides the `--env` variables, so
//!   the handlers' `ferry::Context` invokes the app's deployed functions;
//! - tags `ferry:app`, `ferry:web` and `ferry:config-hash`;
//! - a Function URL with `AuthType` from `--function-url-auth` (`NONE` by default), and for
//!   `NONE` the two statements AWS requires for public access in the function's policy:
//!   `lambda:InvokeFunctionUrl` with `FunctionUrlAuthType` `NONE`, and `lambda:InvokeFunction`
//!   with `InvokedViaFunctionUrl` (required of function URLs created since October 2025), both for
//!   principal `*`. With `AWS_IAM` those statements are removed.

pub mod api;

use std::collections::BTreeMap;
use std::path::Path;

use anyhow::{Context as _, bail};
use ferry::aws::AwsConfig;
use ferry::store::{Store, StoreLocation};
use ferry_core::manifest::Manifest;
use sha2::{Digest as _, Sha256};

use self::api::{
    ApiError, Environment, FunctionInfo, FunctionSettings, FunctionUrlConfig, LambdaApi,
};
use crate::artifacts::{Artifacts, BuildInfo};
use crate::naming;

/// How tables show the web app where they show a function.
pub const WEB_ROW: &str = "(web)";

/// The runtime of every function: the OS-only runtime for custom `bootstrap` binaries.
pub const RUNTIME: &str = "provided.al2023";
/// Lambda's limits.
const MEMORY_MB: std::ops::RangeInclusive<u32> = 128..=10_240;
const MAX_TIMEOUT_S: u32 = 900;
/// The largest zip Lambda accepts in a direct upload; larger ones go through S3.
pub const MAX_INLINE_ZIP: u64 = 50 << 20;
/// The largest code Lambda accepts at all (unzipped, through S3): a zip larger than that cannot
/// unpack to less.
const MAX_ZIP: u64 = 250 << 20;

/// Settings shared by `ferry deploy` and `ferry ls` on Lambda.
#[derive(Debug, Clone, clap::Args)]
pub struct LambdaArgs {
    /// Prefix of the deployed names: Lambda functions and OpenWhisk actions (default: the
    /// binary's name).
    #[arg(long)]
    pub app: Option<String>,
    /// The IAM role the functions run as (an ARN; Lambda only).
    #[arg(long, env = ferry::config::LAMBDA_ROLE.name, value_name = "ARN")]
    pub role: Option<String>,
    /// An environment variable for every function (repeatable).
    #[arg(long = "env", value_name = "KEY=VALUE", value_parser = parse_env)]
    pub env: Vec<(String, String)>,
    /// The Lambda API endpoint (default: `AWS_ENDPOINT_URL_LAMBDA`, `AWS_ENDPOINT_URL`, or the
    /// region's).
    #[arg(long, value_name = "URL")]
    pub endpoint_url: Option<String>,
    /// The program's S3 store, `s3://bucket/prefix` (Lambda and OpenWhisk): the functions get
    /// it as `FERRY_STORE` for arguments, outputs and shared values over the payload limit, and
    /// on Lambda code over the 50 MiB direct-upload limit goes up through it. Without it, code
    /// that needs a bucket goes to `ferry-<account>-<region>`, created with expiry rules.
    #[arg(long, env = ferry::config::STORE.name, value_name = "S3_URL")]
    pub store: Option<String>,
    /// Who may call a web app's Function URL (Lambda only): `none`, anyone (ferry grants the
    /// public access AWS requires), or `aws-iam`, SigV4-signed requests of principals allowed
    /// to invoke it.
    #[arg(long, value_enum, value_name = "AUTH", default_value_t = FunctionUrlAuth::None)]
    pub function_url_auth: FunctionUrlAuth,
}

impl LambdaArgs {
    /// `--store`, checked.
    pub fn store_location(&self) -> anyhow::Result<Option<StoreLocation>> {
        Ok(self
            .store
            .as_deref()
            .map(str::parse::<StoreLocation>)
            .transpose()?)
    }

    /// Every function's environment: `--env`, and `FERRY_STORE` from `--store` unless `--env`
    /// sets it.
    pub fn function_env(&self) -> anyhow::Result<BTreeMap<String, String>> {
        let mut env: BTreeMap<String, String> = self.env.iter().cloned().collect();
        if let Some(store) = self.store_location()? {
            env.entry(ferry::config::STORE.name.to_owned())
                .or_insert_with(|| store.to_string());
        }
        Ok(env)
    }
}

/// Who may call a web app's Function URL.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum FunctionUrlAuth {
    /// `AuthType` `NONE`: public, with the policy statements AWS requires for that.
    None,
    /// `AuthType` `AWS_IAM`: signed requests of principals allowed to invoke the function.
    AwsIam,
}

impl FunctionUrlAuth {
    /// The `AuthType` of the Function URL.
    pub fn auth_type(self) -> &'static str {
        match self {
            Self::None => "NONE",
            Self::AwsIam => "AWS_IAM",
        }
    }
}

/// The ids of the policy statements that open a Function URL to anyone (`AuthType` `NONE`).
pub const PUBLIC_URL_STATEMENTS: [&str; 2] =
    ["ferry-function-url-public", "ferry-function-url-invoke"];

/// The AddPermission request of one of [`PUBLIC_URL_STATEMENTS`].
fn public_url_statement(statement_id: &str) -> serde_json::Value {
    if statement_id == PUBLIC_URL_STATEMENTS[0] {
        serde_json::json!({
            "StatementId": statement_id,
            "Action": "lambda:InvokeFunctionUrl",
            "Principal": "*",
            "FunctionUrlAuthType": "NONE",
        })
    } else {
        serde_json::json!({
            "StatementId": statement_id,
            "Action": "lambda:InvokeFunction",
            "Principal": "*",
            "InvokedViaFunctionUrl": true,
        })
    }
}

fn parse_env(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((key, value)) if !key.is_empty() => Ok((key.to_owned(), value.to_owned())),
        _ => Err(format!("expected KEY=VALUE, not `{text}`")),
    }
}

/// One function as it should be deployed.
#[derive(Debug, Clone)]
pub struct Desired {
    /// What the program calls it (name, or id when ambiguous): also the handler.
    pub handler: String,
    /// The Lambda function name.
    pub name: String,
    pub settings: FunctionSettings,
    pub tags: BTreeMap<String, String>,
}

/// The web app's function as it should be deployed: the function and who may call its URL.
#[derive(Debug, Clone)]
pub struct DesiredWeb {
    pub function: Desired,
    pub auth: FunctionUrlAuth,
}

/// A web app's Function URL as deployed: its configuration, if any, and which of
/// [`PUBLIC_URL_STATEMENTS`] the function's policy holds.
#[derive(Debug, Clone, Default)]
pub struct UrlState {
    pub config: Option<FunctionUrlConfig>,
    pub public_statements: Vec<&'static str>,
}

/// The program's code as uploaded.
#[derive(Debug, Clone)]
pub struct Code {
    pub zip: Vec<u8>,
    /// What Lambda reports as `CodeSha256`: the base64 SHA-256 of the zip.
    pub sha256: String,
    /// `x86_64` or `arm64`.
    pub architecture: &'static str,
}

/// A program on Lambda: the client and every function's desired state.
#[derive(Debug)]
pub struct Deployment {
    pub api: LambdaApi,
    pub region: String,
    pub aws: AwsConfig,
    /// The functions' role (empty for `ferry ls` without one).
    pub role: String,
    /// `--store`, which the functions get as `FERRY_STORE`.
    pub store: Option<StoreLocation>,
    pub app: String,
    pub functions: Vec<Desired>,
    /// The web app's function, when the program serves one.
    pub web: Option<DesiredWeb>,
    /// Whether the role is known (it is not compared when `ferry ls` is not given one).
    pub role_known: bool,
}

/// How a deployed function differs from its desired state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Difference {
    pub code: bool,
    /// The settings that differ, by API name.
    pub config: Vec<&'static str>,
}

impl Difference {
    pub fn is_empty(&self) -> bool {
        !self.code && self.config.is_empty()
    }
}

impl Deployment {
    /// Reads the built program in `artifacts`, resolves AWS settings and computes every
    /// function's desired state. Checks Lambda's limits before anything is sent.
    pub async fn new(
        artifacts: &Artifacts,
        args: &LambdaArgs,
        require_role: bool,
    ) -> anyhow::Result<(Self, BuildInfo, Manifest)> {
        let info = artifacts.build_info()?;
        let manifest = artifacts.manifest()?;
        let role = match (&args.role, require_role) {
            (Some(role), _) => {
                if !(role.starts_with("arn:") && role.contains(":role/")) {
                    bail!(
                        "`{role}` is not an IAM role ARN (like `arn:aws:iam::123456789012:role/lambda-basic`)"
                    );
                }
                role.clone()
            }
            (None, true) => bail!(
                "no IAM role for the functions: pass `--role arn:aws:iam::ACCOUNT:role/NAME` or set `FERRY_LAMBDA_ROLE`"
            ),
            (None, false) => String::new(),
        };
        let mut config = AwsConfig::load()
            .await
            .context("cannot find aws settings")?;
        if let Some(url) = &args.endpoint_url {
            config = config.with_lambda_endpoint(url)?;
        }
        let app = args.app.clone().unwrap_or_else(|| info.program.clone());
        let user_env = args.function_env()?;
        let store = args.store_location()?;

        let mut functions = Vec::new();
        for function in &manifest.functions {
            let handler = naming::handler(&manifest, function).to_owned();
            let config_hash = naming::config_hash(&function.config, &handler);
            let name = naming::lambda_name(&app, &handler, &config_hash)?;
            let memory = function.config.memory_mb;
            if !MEMORY_MB.contains(&memory) {
                bail!(
                    "function `{handler}` asks for {memory} MB; Lambda offers {} to {} MB",
                    MEMORY_MB.start(),
                    MEMORY_MB.end()
                );
            }
            let timeout_ms = function.config.timeout.as_millis();
            let timeout = u32::try_from(timeout_ms.div_ceil(1000).max(1)).unwrap_or(u32::MAX);
            if timeout > MAX_TIMEOUT_S {
                bail!(
                    "function `{handler}` has a timeout of {timeout}s; Lambda allows at most {MAX_TIMEOUT_S}s"
                );
            }
            let variables = user_env.clone();
            let mut description = format!("ferry function {}", function.id);
            description.truncate(256);
            let tags = BTreeMap::from([
                ("ferry:app".to_owned(), app.clone()),
                ("ferry:function".to_owned(), function.id.clone()),
                ("ferry:config-hash".to_owned(), config_hash.clone()),
                (
                    "ferry:concurrency".to_owned(),
                    function.config.concurrency.to_string(),
                ),
            ]);
            functions.push(Desired {
                settings: FunctionSettings {
                    role: role.clone(),
                    handler: handler.clone(),
                    runtime: RUNTIME.to_owned(),
                    memory_size: memory,
                    timeout,
                    description,
                    environment: Environment {
                        variables: Some(variables),
                    },
                },
                handler,
                name,
                tags,
            });
        }
        let web = if manifest.web {
            if let Some(function) = functions.iter().find(|f| f.handler == naming::WEB_HANDLER) {
                bail!(
                    "function `{}` has the handler the web app is deployed with (`{}`): rename it (`#[ferry::function(name = \"…\")]`) to deploy this web program",
                    function.handler,
                    naming::WEB_HANDLER
                );
            }
            let config = ferry_core::naming::WEB_CONFIG;
            let config_hash = naming::config_hash(&config, naming::WEB_HANDLER);
            let mut variables = user_env.clone();
            variables
                .entry(ferry::config::BACKEND.name.to_owned())
                .or_insert_with(|| "lambda".to_owned());
            variables
                .entry(ferry::config::APP.name.to_owned())
                .or_insert_with(|| app.clone());
            let function = Desired {
                handler: naming::WEB_HANDLER.to_owned(),
                name: naming::web_name(&app)?,
                settings: FunctionSettings {
                    role: role.clone(),
                    handler: naming::WEB_HANDLER.to_owned(),
                    runtime: RUNTIME.to_owned(),
                    memory_size: config.memory_mb,
                    timeout: u32::try_from(config.timeout.as_secs()).unwrap_or(u32::MAX),
                    description: format!("ferry web app of {app}")
                        .chars()
                        .take(256)
                        .collect(),
                    environment: Environment {
                        variables: Some(variables),
                    },
                },
                tags: BTreeMap::from([
                    ("ferry:app".to_owned(), app.clone()),
                    ("ferry:web".to_owned(), "true".to_owned()),
                    ("ferry:config-hash".to_owned(), config_hash),
                    (
                        "ferry:concurrency".to_owned(),
                        config.concurrency.to_string(),
                    ),
                ]),
            };
            Some(DesiredWeb {
                function,
                auth: args.function_url_auth,
            })
        } else {
            None
        };
        let deployment = Self {
            api: LambdaApi::new(&config)?,
            region: config.region().to_owned(),
            aws: config,
            role: role.clone(),
            store,
            app,
            functions,
            web,
            role_known: !role.is_empty(),
        };
        Ok((deployment, info, manifest))
    }

    /// How `deployed` differs from `desired` (`code` = `None`: the code is not compared).
    pub fn difference(
        &self,
        desired: &Desired,
        code: Option<&Code>,
        deployed: &FunctionInfo,
    ) -> Difference {
        let have = &deployed.configuration;
        let want = &desired.settings;
        let mut config = Vec::new();
        if have.memory_size != Some(want.memory_size) {
            config.push("MemorySize");
        }
        if have.timeout != Some(want.timeout) {
            config.push("Timeout");
        }
        if have.handler.as_deref() != Some(want.handler.as_str()) {
            config.push("Handler");
        }
        if have.runtime.as_deref() != Some(want.runtime.as_str()) {
            config.push("Runtime");
        }
        if self.role_known && have.role.as_deref() != Some(want.role.as_str()) {
            config.push("Role");
        }
        if have.description.as_deref().unwrap_or_default() != want.description {
            config.push("Description");
        }
        let have_env = have
            .environment
            .as_ref()
            .and_then(|e| e.variables.clone())
            .unwrap_or_default();
        if Some(&have_env) != want.environment.variables.as_ref() {
            config.push("Environment");
        }
        let code = code.is_some_and(|code| {
            let architecture = have
                .architectures
                .as_ref()
                .and_then(|a| a.first())
                .map_or("x86_64", String::as_str);
            have.code_sha256 != code.sha256 || architecture != code.architecture
        });
        Difference { code, config }
    }

    /// The web app's Function URL as deployed.
    pub async fn url_state(&self, web: &DesiredWeb) -> Result<UrlState, ApiError> {
        let name = &web.function.name;
        let config = self.api.get_function_url(name).await?;
        let statements = self.api.policy_statement_ids(name).await?;
        Ok(UrlState {
            config,
            public_statements: PUBLIC_URL_STATEMENTS
                .into_iter()
                .filter(|id| statements.iter().any(|s| s == id))
                .collect(),
        })
    }

    /// How the web app's Function URL differs from `web`'s: `FunctionUrl` (there is none),
    /// `AuthType`, `Permission` (public access granted or not as `AuthType` asks).
    pub fn url_difference(web: &DesiredWeb, state: &UrlState) -> Vec<&'static str> {
        let mut config = Vec::new();
        match &state.config {
            None => config.push("FunctionUrl"),
            Some(url) if url.auth_type != web.auth.auth_type() => config.push("AuthType"),
            Some(_) => {}
        }
        let public = web.auth == FunctionUrlAuth::None;
        let granted = state.public_statements.len();
        if (public && granted < PUBLIC_URL_STATEMENTS.len()) || (!public && granted > 0) {
            config.push("Permission");
        }
        config
    }

    /// Makes the web app's Function URL what `web` asks for: creates it or sets its `AuthType`,
    /// grants or withdraws public access. Returns the URL and what it changed (as
    /// [`Self::url_difference`] names it).
    pub async fn deploy_url(
        &self,
        web: &DesiredWeb,
    ) -> Result<(FunctionUrlConfig, Vec<&'static str>), ApiError> {
        let name = &web.function.name;
        let state = self.url_state(web).await?;
        let changed = Self::url_difference(web, &state);
        let auth_type = web.auth.auth_type();
        let url = match state.config {
            None => self.api.create_function_url(name, auth_type).await?,
            Some(url) if url.auth_type != auth_type => {
                self.api.update_function_url(name, auth_type).await?
            }
            Some(url) => url,
        };
        let public = web.auth == FunctionUrlAuth::None;
        for statement in PUBLIC_URL_STATEMENTS {
            let granted = state.public_statements.contains(&statement);
            if public && !granted {
                self.api
                    .add_permission(name, &public_url_statement(statement))
                    .await?;
            } else if !public && granted {
                self.api.remove_permission(name, statement).await?;
            }
        }
        Ok((url, changed))
    }

    /// Lists the deployed functions (ListFunctions): the first call, so a wrong endpoint or
    /// bad credentials stop the command at once with one message.
    pub async fn deployed_names(&self) -> anyhow::Result<Vec<String>> {
        let functions = self.api.list_functions().await?;
        Ok(functions.into_iter().map(|f| f.function_name).collect())
    }

    /// Of `deployed`, the functions under this app's prefix that the program does not have,
    /// recognised by their `ferry:app` tag: `(lambda name, function id)`.
    pub async fn extras(&self, deployed: &[String]) -> anyhow::Result<Vec<(String, String)>> {
        let prefix = naming::lambda_prefix(&self.app);
        let mut extras = Vec::new();
        for name in deployed {
            let desired = self.functions.iter().any(|f| &f.name == name)
                || self.web.as_ref().is_some_and(|w| &w.function.name == name);
            if !name.starts_with(&prefix) || desired {
                continue;
            }
            let Some(info) = self.api.get_function(name).await? else {
                continue;
            };
            let tags = info.tags.unwrap_or_default();
            if tags.get("ferry:app") == Some(&self.app) {
                let id = match tags.get("ferry:function") {
                    Some(id) => id.clone(),
                    None if tags.contains_key("ferry:web") => WEB_ROW.to_owned(),
                    None => String::new(),
                };
                extras.push((name.clone(), id));
            }
        }
        extras.sort();
        Ok(extras)
    }
}

impl Deployment {
    /// How the code goes up: inline when Lambda takes it so, else through the store: `--store`,
    /// or the bucket `ferry-<account>-<region>` (the account from the role), created on first
    /// use with the store's expiry rules. The zip is put under `code/<sha256>.zip` unless it is
    /// there.
    pub async fn upload(&self, code: &Code) -> anyhow::Result<api::CodeUpload> {
        if code.zip.len() as u64 <= MAX_INLINE_ZIP {
            return Ok(api::CodeUpload::Inline {
                zip_file: base64_simd::STANDARD.encode_to_string(&code.zip),
            });
        }
        let (location, own) = match &self.store {
            Some(store) => (store.clone(), false),
            None => {
                let account = self
                    .role
                    .split(':')
                    .nth(4)
                    .filter(|a| !a.is_empty())
                    .context("cannot tell the account from the role ARN: pass `--store s3://bucket/prefix`")?;
                let bucket = format!("ferry-{account}-{}", self.region);
                (StoreLocation::new(&bucket, &self.app)?, true)
            }
        };
        let store = Store::new(&self.aws, location.clone())?;
        if own && store.create_bucket().await.with_context(|| {
            format!(
                "cannot create the bucket for code over {} MiB: pass `--store s3://bucket/prefix`",
                MAX_INLINE_ZIP >> 20
            )
        })? {
            store.set_expiry().await?;
        }
        let digest = hex(&Sha256::digest(&code.zip));
        let key = location.key(&format!("code/{digest}.zip"));
        if !store.exists(&key).await? {
            store
                .put(&key, bytes::Bytes::from(code.zip.clone()))
                .await
                .with_context(|| format!("cannot upload the code to {location}"))?;
        }
        Ok(api::CodeUpload::S3 {
            s3_bucket: location.bucket().to_owned(),
            s3_key: key,
        })
    }
}

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write as _;
    bytes.iter().fold(String::new(), |mut text, b| {
        let _ = write!(text, "{b:02x}");
        text
    })
}

/// Reads the program's Lambda zip.
pub fn read_code(path: &Path, architecture: &str) -> anyhow::Result<Code> {
    let zip = std::fs::read(path).with_context(|| {
        format!(
            "cannot read `{}`: run `ferry build --platform lambda` first",
            path.display()
        )
    })?;
    if zip.len() as u64 > MAX_ZIP {
        bail!(
            "`{}` is {:.1} MiB; Lambda accepts code up to {} MiB unzipped (build with `--profile release`, and `strip = true` in the profile)",
            path.display(),
            zip.len() as f64 / (1 << 20) as f64,
            MAX_ZIP >> 20
        );
    }
    let architecture = match architecture {
        "x86_64" => "x86_64",
        "aarch64" => "arm64",
        other => bail!("Lambda runs x86_64 and arm64 code, not {other}"),
    };
    Ok(Code {
        sha256: base64_simd::STANDARD.encode_to_string(Sha256::digest(&zip)),
        zip,
        architecture,
    })
}
