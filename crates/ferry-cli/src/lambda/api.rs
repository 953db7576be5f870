//! The few calls of the Lambda control plane (`/2015-03-31/functions…`, and
//! `/2021-10-31/functions/{name}/url` for Function URLs) that `ferry deploy` and `ferry ls` make,
//! signed with [`ferry::aws`]. Only the fields ferry reads or writes are modelled.
//!
//! Throttling (429), server errors (5xx) and `ResourceConflictException` for an update still in
//! progress are retried with backoff; a conflict with something that already exists is not, and
//! other errors carry AWS's code and message.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use ferry::aws::{AwsConfig, Signer};
use reqwest::header::{CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{Method, StatusCode};
use serde::{Deserialize, Serialize};

const API: &str = "2015-03-31";
/// The API version of the Function URL operations.
const URL_API: &str = "2021-10-31";
const ATTEMPTS: u32 = 6;

/// A Lambda client for one region and endpoint.
#[derive(Debug, Clone)]
pub struct LambdaApi {
    http: reqwest::Client,
    endpoint: String,
    signer: Signer,
}

/// A function's configuration, as the API returns it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct FunctionConfiguration {
    pub function_name: String,
    #[serde(default)]
    pub code_sha256: String,
    #[serde(default)]
    pub memory_size: Option<u32>,
    #[serde(default)]
    pub timeout: Option<u32>,
    #[serde(default)]
    pub handler: Option<String>,
    #[serde(default)]
    pub runtime: Option<String>,
    #[serde(default)]
    pub role: Option<String>,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub environment: Option<Environment>,
    #[serde(default)]
    pub architectures: Option<Vec<String>>,
    #[serde(default)]
    pub last_update_status: Option<String>,
    #[serde(default)]
    pub last_update_status_reason: Option<String>,
}

/// Environment variables of a function.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct Environment {
    #[serde(default)]
    pub variables: Option<BTreeMap<String, String>>,
}

/// GetFunction's answer.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct FunctionInfo {
    pub configuration: FunctionConfiguration,
    #[serde(default)]
    pub tags: Option<BTreeMap<String, String>>,
}

/// The settings ferry writes on CreateFunction and UpdateFunctionConfiguration.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "PascalCase")]
pub struct FunctionSettings {
    pub role: String,
    pub handler: String,
    pub runtime: String,
    pub memory_size: u32,
    pub timeout: u32,
    pub description: String,
    pub environment: Environment,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
struct CreateFunction<'a> {
    function_name: &'a str,
    #[serde(flatten)]
    settings: &'a FunctionSettings,
    code: &'a CodeUpload,
    architectures: [&'a str; 1],
    package_type: &'static str,
    tags: &'a BTreeMap<String, String>,
}

/// Where a function's code comes from: the zip itself, or an object in S3.
#[derive(Debug, Clone, Serialize)]
#[serde(untagged)]
pub enum CodeUpload {
    Inline {
        /// The zip, base64.
        #[serde(rename = "ZipFile")]
        zip_file: String,
    },
    S3 {
        #[serde(rename = "S3Bucket")]
        s3_bucket: String,
        #[serde(rename = "S3Key")]
        s3_key: String,
    },
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
struct UpdateCode<'a> {
    #[serde(flatten)]
    code: &'a CodeUpload,
    architectures: [&'a str; 1],
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct FunctionList {
    #[serde(default)]
    functions: Vec<FunctionConfiguration>,
    #[serde(default)]
    next_marker: Option<String>,
}

/// A function's Function URL, as GetFunctionUrlConfig and CreateFunctionUrlConfig return it.
#[derive(Debug, Clone, Deserialize)]
#[serde(rename_all = "PascalCase")]
pub struct FunctionUrlConfig {
    pub function_url: String,
    /// `NONE` or `AWS_IAM`.
    pub auth_type: String,
}

#[derive(Debug, Serialize)]
#[serde(rename_all = "PascalCase")]
struct UrlAuth<'a> {
    auth_type: &'a str,
}

/// GetPolicy's answer: the policy is a JSON document in a string.
#[derive(Debug, Deserialize)]
#[serde(rename_all = "PascalCase")]
struct PolicyAnswer {
    policy: String,
}

/// A failed API call: the operation, the HTTP status, and AWS's error code and message.
#[derive(Debug)]
pub struct ApiError {
    pub operation: String,
    pub status: Option<StatusCode>,
    pub code: String,
    pub message: String,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.status {
            Some(status) => write!(
                f,
                "lambda {}: {}: {} (http {})",
                self.operation,
                self.code,
                self.message,
                status.as_u16()
            ),
            None => write!(f, "lambda {}: {}", self.operation, self.message),
        }
    }
}

impl std::error::Error for ApiError {}

impl LambdaApi {
    pub fn new(config: &AwsConfig) -> anyhow::Result<Self> {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(300))
            .user_agent(concat!("ferry/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self {
            http,
            endpoint: config.lambda_endpoint().to_owned(),
            signer: config.signer("lambda"),
        })
    }

    /// The endpoint calls go to.
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// GetFunction; `None` when there is no such function.
    pub async fn get_function(&self, name: &str) -> Result<Option<FunctionInfo>, ApiError> {
        let path = format!("/{API}/functions/{name}");
        match self
            .call(Method::GET, &path, None, "GetFunction", name)
            .await
        {
            Ok(body) => parse(&body, "GetFunction", name).map(Some),
            Err(error) if error.code == "ResourceNotFoundException" => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// CreateFunction.
    pub async fn create_function(
        &self,
        name: &str,
        settings: &FunctionSettings,
        code: &CodeUpload,
        architecture: &str,
        tags: &BTreeMap<String, String>,
    ) -> Result<FunctionConfiguration, ApiError> {
        let body = serde_json::to_vec(&CreateFunction {
            function_name: name,
            settings,
            code,
            architectures: [architecture],
            package_type: "Zip",
            tags,
        })
        .map_err(|e| local_error("CreateFunction", name, &e))?;
        let path = format!("/{API}/functions");
        let body = self
            .call(Method::POST, &path, Some(body), "CreateFunction", name)
            .await?;
        parse(&body, "CreateFunction", name)
    }

    /// UpdateFunctionCode.
    pub async fn update_code(
        &self,
        name: &str,
        code: &CodeUpload,
        architecture: &str,
    ) -> Result<FunctionConfiguration, ApiError> {
        let body = serde_json::to_vec(&UpdateCode {
            code,
            architectures: [architecture],
        })
        .map_err(|e| local_error("UpdateFunctionCode", name, &e))?;
        let path = format!("/{API}/functions/{name}/code");
        let body = self
            .call(Method::PUT, &path, Some(body), "UpdateFunctionCode", name)
            .await?;
        parse(&body, "UpdateFunctionCode", name)
    }

    /// UpdateFunctionConfiguration.
    pub async fn update_configuration(
        &self,
        name: &str,
        settings: &FunctionSettings,
    ) -> Result<FunctionConfiguration, ApiError> {
        let body = serde_json::to_vec(settings)
            .map_err(|e| local_error("UpdateFunctionConfiguration", name, &e))?;
        let path = format!("/{API}/functions/{name}/configuration");
        let operation = "UpdateFunctionConfiguration";
        let body = self
            .call(Method::PUT, &path, Some(body), operation, name)
            .await?;
        parse(&body, operation, name)
    }

    /// GetFunctionUrlConfig; `None` when the function has no Function URL.
    pub async fn get_function_url(
        &self,
        name: &str,
    ) -> Result<Option<FunctionUrlConfig>, ApiError> {
        let path = format!("/{URL_API}/functions/{name}/url");
        let operation = "GetFunctionUrlConfig";
        match self.call(Method::GET, &path, None, operation, name).await {
            Ok(body) => parse(&body, operation, name).map(Some),
            Err(error) if error.code == "ResourceNotFoundException" => Ok(None),
            Err(error) => Err(error),
        }
    }

    /// CreateFunctionUrlConfig with `auth_type` (`NONE` or `AWS_IAM`). A URL created meanwhile
    /// (a conflict) is read back instead.
    pub async fn create_function_url(
        &self,
        name: &str,
        auth_type: &str,
    ) -> Result<FunctionUrlConfig, ApiError> {
        let operation = "CreateFunctionUrlConfig";
        let body = serde_json::to_vec(&UrlAuth { auth_type })
            .map_err(|e| local_error(operation, name, &e))?;
        let path = format!("/{URL_API}/functions/{name}/url");
        match self
            .call(Method::POST, &path, Some(body), operation, name)
            .await
        {
            Ok(body) => parse(&body, operation, name),
            Err(error) if error.code == "ResourceConflictException" => {
                match self.get_function_url(name).await? {
                    Some(config) => Ok(config),
                    None => Err(error),
                }
            }
            Err(error) => Err(error),
        }
    }

    /// UpdateFunctionUrlConfig: sets the URL's `auth_type`.
    pub async fn update_function_url(
        &self,
        name: &str,
        auth_type: &str,
    ) -> Result<FunctionUrlConfig, ApiError> {
        let operation = "UpdateFunctionUrlConfig";
        let body = serde_json::to_vec(&UrlAuth { auth_type })
            .map_err(|e| local_error(operation, name, &e))?;
        let path = format!("/{URL_API}/functions/{name}/url");
        let body = self
            .call(Method::PUT, &path, Some(body), operation, name)
            .await?;
        parse(&body, operation, name)
    }

    /// The statement ids of the function's resource-based policy (GetPolicy); none when it has
    /// no policy.
    pub async fn policy_statement_ids(&self, name: &str) -> Result<Vec<String>, ApiError> {
        let operation = "GetPolicy";
        let path = format!("/{API}/functions/{name}/policy");
        let body = match self.call(Method::GET, &path, None, operation, name).await {
            Ok(body) => body,
            Err(error) if error.code == "ResourceNotFoundException" => return Ok(Vec::new()),
            Err(error) => return Err(error),
        };
        let answer: PolicyAnswer = parse(&body, operation, name)?;
        let policy: serde_json::Value = parse(answer.policy.as_bytes(), operation, name)?;
        Ok(policy["Statement"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|statement| statement["Sid"].as_str().map(str::to_owned))
            .collect())
    }

    /// AddPermission: adds `statement` (an AddPermission request body with its `StatementId`)
    /// to the function's policy. A statement of that id already there is left as it is.
    pub async fn add_permission(
        &self,
        name: &str,
        statement: &serde_json::Value,
    ) -> Result<(), ApiError> {
        let operation = "AddPermission";
        let body = serde_json::to_vec(statement).map_err(|e| local_error(operation, name, &e))?;
        let path = format!("/{API}/functions/{name}/policy");
        match self
            .call(Method::POST, &path, Some(body), operation, name)
            .await
        {
            Ok(_) => Ok(()),
            Err(error) if error.code == "ResourceConflictException" => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// RemovePermission: takes the statement `statement_id` out of the function's policy (gone
    /// already is fine).
    pub async fn remove_permission(&self, name: &str, statement_id: &str) -> Result<(), ApiError> {
        let operation = "RemovePermission";
        let path = format!(
            "/{API}/functions/{name}/policy/{}",
            percent_encode(statement_id)
        );
        match self
            .call(Method::DELETE, &path, None, operation, name)
            .await
        {
            Ok(_) => Ok(()),
            Err(error) if error.code == "ResourceNotFoundException" => Ok(()),
            Err(error) => Err(error),
        }
    }

    /// Waits (up to five minutes) until the function's last update has finished, so the next
    /// update is accepted; fails if the update failed.
    pub async fn wait_until_updated(&self, name: &str) -> Result<(), ApiError> {
        let path = format!("/{API}/functions/{name}/configuration");
        let mut delay = Duration::from_millis(250);
        for _ in 0..120 {
            let body = self
                .call(Method::GET, &path, None, "GetFunctionConfiguration", name)
                .await?;
            let config: FunctionConfiguration = parse(&body, "GetFunctionConfiguration", name)?;
            match config.last_update_status.as_deref() {
                Some("InProgress") => {}
                Some("Failed") => {
                    return Err(ApiError {
                        operation: format!("update of `{name}`"),
                        status: None,
                        code: "Failed".to_owned(),
                        message: format!(
                            "the update of `{name}` failed: {}",
                            config.last_update_status_reason.unwrap_or_default()
                        ),
                    });
                }
                _ => return Ok(()),
            }
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(5));
        }
        Err(ApiError {
            operation: format!("update of `{name}`"),
            status: None,
            code: "Timeout".to_owned(),
            message: format!("the update of `{name}` did not finish in five minutes"),
        })
    }

    /// ListFunctions, every page.
    pub async fn list_functions(&self) -> Result<Vec<FunctionConfiguration>, ApiError> {
        let mut functions = Vec::new();
        let mut marker: Option<String> = None;
        loop {
            let mut path = format!("/{API}/functions/?MaxItems=50");
            if let Some(marker) = &marker {
                path.push_str("&Marker=");
                path.push_str(&percent_encode(marker));
            }
            let body = self
                .call(Method::GET, &path, None, "ListFunctions", "")
                .await?;
            let page: FunctionList = parse(&body, "ListFunctions", "")?;
            functions.extend(page.functions);
            match page.next_marker.filter(|m| !m.is_empty()) {
                Some(next) => marker = Some(next),
                None => return Ok(functions),
            }
        }
    }

    /// One signed call, retried on throttling, server errors and update conflicts.
    async fn call(
        &self,
        method: Method,
        path: &str,
        body: Option<Vec<u8>>,
        operation: &str,
        name: &str,
    ) -> Result<Vec<u8>, ApiError> {
        let url = format!("{}{path}", self.endpoint);
        let body = body.unwrap_or_default();
        let content_type = "application/json";
        let what = if name.is_empty() {
            operation.to_owned()
        } else {
            format!("{operation} `{name}`")
        };
        let mut delay = Duration::from_millis(500);
        let mut attempt = 1;
        loop {
            // Temporary credentials (an assumed role, `credential_process`) are refreshed
            // before they expire; a no-op otherwise.
            self.signer.ready().await.map_err(|e| ApiError {
                operation: what.clone(),
                status: None,
                code: "Credentials".to_owned(),
                message: e.to_string(),
            })?;
            let signed = self
                .signer
                .sign(
                    method.as_str(),
                    &url,
                    &[("content-type", content_type)],
                    &body,
                )
                .map_err(|e| ApiError {
                    operation: what.clone(),
                    status: None,
                    code: "Signing".to_owned(),
                    message: e.to_string(),
                })?;
            let mut headers = HeaderMap::new();
            headers.insert(CONTENT_TYPE, HeaderValue::from_static(content_type));
            signed.apply_to(&mut headers);
            let response = self
                .http
                .request(method.clone(), &url)
                .headers(headers)
                .body(body.clone())
                .send()
                .await
                .map_err(|e| ApiError {
                    operation: what.clone(),
                    status: None,
                    code: "Unreachable".to_owned(),
                    message: format!(
                        "cannot reach the lambda api at {}: {}",
                        self.endpoint,
                        error_chain(&e)
                    ),
                })?;
            let status = response.status();
            let error_type = response
                .headers()
                .get("x-amzn-errortype")
                .and_then(|v| v.to_str().ok())
                .map(|v| v.split(':').next().unwrap_or(v).to_owned());
            let bytes = response.bytes().await.map_err(|e| ApiError {
                operation: what.clone(),
                status: Some(status),
                code: "Unreadable".to_owned(),
                message: format!("cannot read the answer: {}", error_chain(&e)),
            })?;
            if status.is_success() {
                return Ok(bytes.to_vec());
            }
            let error = api_error(&what, status, error_type, &bytes);
            // A conflict is an update in progress (worth waiting for) or something that exists
            // already ("Function already exist", "FunctionUrlConfig exists", "The statement id
            // (…) provided already exists"), which waiting does not change.
            let in_progress = error.code == "ResourceConflictException"
                && !error.message.to_ascii_lowercase().contains("exist");
            let retry = status == StatusCode::TOO_MANY_REQUESTS
                || status.is_server_error()
                || in_progress
                || error.code == "TooManyRequestsException";
            if !retry || attempt == ATTEMPTS {
                return Err(error);
            }
            tracing::debug!(%error, attempt, "retrying");
            tokio::time::sleep(delay).await;
            delay = (delay * 2).min(Duration::from_secs(8));
            attempt += 1;
        }
    }
}

fn api_error(
    operation: &str,
    status: StatusCode,
    error_type: Option<String>,
    body: &[u8],
) -> ApiError {
    let json: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let field = |names: &[&str]| {
        names
            .iter()
            .find_map(|n| json.get(*n).and_then(|v| v.as_str()))
            .map(str::to_owned)
    };
    let code = error_type
        .or_else(|| field(&["__type", "code", "Code"]))
        .map(|c| c.rsplit('#').next().unwrap_or(&c).to_owned())
        .unwrap_or_else(|| {
            status
                .canonical_reason()
                .unwrap_or("Error")
                .replace(' ', "")
        });
    let message = field(&["message", "Message", "errorMessage"]).unwrap_or_else(|| {
        let text = String::from_utf8_lossy(body);
        let text = text.trim();
        if text.is_empty() || text.starts_with('<') {
            "no message".to_owned()
        } else {
            text.chars().take(300).collect()
        }
    });
    ApiError {
        operation: operation.to_owned(),
        status: Some(status),
        code,
        message,
    }
}

fn parse<T: serde::de::DeserializeOwned>(
    body: &[u8],
    operation: &str,
    name: &str,
) -> Result<T, ApiError> {
    serde_json::from_slice(body).map_err(|e| ApiError {
        operation: format!("{operation} `{name}`"),
        status: None,
        code: "Unreadable".to_owned(),
        message: format!("unexpected answer: {e}"),
    })
}

fn local_error(operation: &str, name: &str, error: &dyn std::error::Error) -> ApiError {
    ApiError {
        operation: format!("{operation} `{name}`"),
        status: None,
        code: "Request".to_owned(),
        message: error.to_string(),
    }
}

fn error_chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

/// Percent-encodes a query value (RFC 3986 unreserved characters stay).
fn percent_encode(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    for byte in value.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            out.push(byte as char);
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}
