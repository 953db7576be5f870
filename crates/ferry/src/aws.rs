//! AWS settings and request signing, without the AWS SDK: the region, credentials and Lambda
//! endpoint a program or tool finds in its environment, and Signature Version 4 for its requests.
//!
//! ```
//! use ferry::aws::{Credentials, Signer};
//!
//! let signer = Signer::new(
//!     &Credentials::new("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", None),
//!     "eu-west-1",
//!     "lambda",
//! );
//! let body = br#"{"n": 8}"#;
//! let url = "https://lambda.eu-west-1.amazonaws.com/2015-03-31/functions/f/invocations";
//! let signed = signer.sign("POST", url, &[("content-type", "application/json")], body)?;
//! assert!(signed.authorization().starts_with("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/"));
//! // Send the request with these headers added (reqwest: `SignedHeaders::apply_to`).
//! for (name, value) in signed.iter() {
//!     assert!(["x-amz-date", "authorization"].contains(&name), "{name}: {value}");
//! }
//! # Ok::<(), ferry::aws::AwsError>(())
//! ```
//!
//! [`AwsConfig::from_env`] resolves settings the way the AWS CLI does, for the sources that need
//! no SDK:
//!
//! - **Credentials**: `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN`);
//!   else the profile (`AWS_PROFILE`, default `default`) in the shared credentials file
//!   (`AWS_SHARED_CREDENTIALS_FILE`, default `~/.aws/credentials`), then in the config file
//!   (`AWS_CONFIG_FILE`, default `~/.aws/config`, section `[profile NAME]` or `[default]`).
//!   Profiles that delegate (`role_arn`, `credential_process`, `sso_*`, web identity) are
//!   refused with a message saying so: export static credentials instead, for example with
//!   `aws configure export-credentials --format env`.
//! - **Region**: `AWS_REGION`, else `AWS_DEFAULT_REGION`, else the profile's `region` (config
//!   file first, then credentials file).
//! - **Lambda endpoint**: `AWS_ENDPOINT_URL_LAMBDA`, else `AWS_ENDPOINT_URL`, else
//!   `https://lambda.{region}.amazonaws.com` (`.amazonaws.com.cn` in `cn-*` regions).
//!
//! Signing ([`Signer::sign`]) uses the `aws-sigv4` crate. A [`Signer`] is built once and holds
//! everything that does not change between requests; one signature then costs a few
//! microseconds (the canonical request, two SHA-256 digests and five HMACs), cheap enough for a
//! client sending thousands of invocations a second.

use std::borrow::Cow;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use aws_sigv4::http_request::{SignableBody, SignableRequest, SigningSettings, sign as sigv4_sign};
use aws_sigv4::sign::v4;
use aws_smithy_runtime_api::client::identity::Identity;

/// Static AWS credentials: an access key and, for temporary credentials, a session token.
///
/// `Debug` shows the access key id only.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    access_key_id: String,
    secret_access_key: String,
    session_token: Option<String>,
}

impl Credentials {
    /// Credentials from their parts.
    pub fn new(
        access_key_id: impl Into<String>,
        secret_access_key: impl Into<String>,
        session_token: Option<String>,
    ) -> Self {
        Self {
            access_key_id: access_key_id.into(),
            secret_access_key: secret_access_key.into(),
            session_token: session_token.filter(|t| !t.is_empty()),
        }
    }

    /// The access key id (`AKIA…` or, for temporary credentials, `ASIA…`).
    pub fn access_key_id(&self) -> &str {
        &self.access_key_id
    }

    /// The secret access key.
    pub fn secret_access_key(&self) -> &str {
        &self.secret_access_key
    }

    /// The session token of temporary credentials.
    pub fn session_token(&self) -> Option<&str> {
        self.session_token.as_deref()
    }
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Credentials")
            .field("access_key_id", &self.access_key_id)
            .field("secret_access_key", &"** redacted **")
            .field(
                "session_token",
                &self.session_token.as_ref().map(|_| "** redacted **"),
            )
            .finish()
    }
}

/// Region, credentials and Lambda endpoint, as found by [`AwsConfig::from_env`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsConfig {
    region: String,
    credentials: Credentials,
    credentials_source: String,
    lambda_endpoint: String,
}

impl AwsConfig {
    /// Settings from explicit values; the Lambda endpoint is the region's public one.
    pub fn new(region: impl Into<String>, credentials: Credentials) -> Self {
        let region = region.into();
        Self {
            lambda_endpoint: default_endpoint("lambda", &region),
            region,
            credentials,
            credentials_source: "given".to_owned(),
        }
    }

    /// Resolves region, credentials and the Lambda endpoint from the environment and the shared
    /// AWS files (see the [module docs](self) for the order).
    ///
    /// # Errors
    ///
    /// No credentials or no region found (the message says where it looked), a half-set pair
    /// of variables, an unreadable file, a profile that needs the AWS SDK, or an endpoint that
    /// is not an `http(s)://` URL.
    pub fn from_env() -> Result<Self, AwsError> {
        Self::resolve(&|name| std::env::var(name).ok().filter(|v| !v.is_empty()))
    }

    fn resolve(env: &dyn Fn(&str) -> Option<String>) -> Result<Self, AwsError> {
        let profile_name = env("AWS_PROFILE").unwrap_or_else(|| "default".to_owned());
        let home = env("HOME").map(PathBuf::from);
        let credentials_file = env("AWS_SHARED_CREDENTIALS_FILE")
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".aws/credentials")));
        let config_file = env("AWS_CONFIG_FILE")
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".aws/config")));
        let files = SharedFiles {
            credentials: load_file(credentials_file, FileKind::Credentials)?,
            config: load_file(config_file, FileKind::Config)?,
            profile: profile_name,
        };

        let (credentials, credentials_source) = match env_credentials(env)? {
            Some(credentials) => (credentials, "environment".to_owned()),
            None => files.credentials()?,
        };

        let region = match env("AWS_REGION").or_else(|| env("AWS_DEFAULT_REGION")) {
            Some(region) => region,
            None => files.region().ok_or_else(|| {
                AwsError::new(
                    AwsErrorKind::MissingRegion,
                    format!(
                        "no aws region: set `AWS_REGION` or `region` in profile `{}` (looked in: the environment, {})",
                        files.profile,
                        files.describe()
                    ),
                )
            })?,
        };
        let region = region.trim().to_owned();
        if region.is_empty()
            || !region
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-')
        {
            return Err(AwsError::new(
                AwsErrorKind::BadSetting,
                format!("`{region}` is not an aws region (like `eu-west-1`)"),
            ));
        }

        let lambda_endpoint = match endpoint_override(env, "AWS_ENDPOINT_URL_LAMBDA")? {
            Some(url) => url,
            None => match endpoint_override(env, "AWS_ENDPOINT_URL")? {
                Some(url) => url,
                None => default_endpoint("lambda", &region),
            },
        };

        Ok(Self {
            region,
            credentials,
            credentials_source,
            lambda_endpoint,
        })
    }

    /// Replaces the Lambda endpoint (`http://` or `https://`, without a trailing `/`).
    ///
    /// # Errors
    ///
    /// `url` is not an `http(s)://` URL.
    pub fn with_lambda_endpoint(mut self, url: &str) -> Result<Self, AwsError> {
        self.lambda_endpoint = check_endpoint("the lambda endpoint", url)?;
        Ok(self)
    }

    /// The region, like `eu-west-1`.
    pub fn region(&self) -> &str {
        &self.region
    }

    /// The credentials.
    pub fn credentials(&self) -> &Credentials {
        &self.credentials
    }

    /// Where the credentials came from: `environment`, `given`, or a file and profile
    /// (`/home/me/.aws/credentials, profile default`). For messages; never holds a secret.
    pub fn credentials_source(&self) -> &str {
        &self.credentials_source
    }

    /// The Lambda API's base URL, without a trailing `/` (`https://lambda.eu-west-1.amazonaws.com`).
    pub fn lambda_endpoint(&self) -> &str {
        &self.lambda_endpoint
    }

    /// A signer for `service` (`lambda`, `sts`, …) in this region with these credentials.
    pub fn signer(&self, service: &str) -> Signer {
        Signer::new(&self.credentials, &self.region, service)
    }
}

/// Signs requests with AWS Signature Version 4 for one service, region and set of credentials.
///
/// Build it once and share it (it is `Send + Sync` and cheap to clone); [`Signer::sign`] is
/// meant for the hot path of a client.
#[derive(Debug, Clone)]
pub struct Signer {
    identity: Identity,
    region: String,
    service: String,
    content_sha256: bool,
}

/// Headers that change on the way (proxies, tracing) or are written by signing itself; they are
/// never signed. The same list as the AWS SDKs.
const UNSIGNED_HEADERS: [&str; 4] = [
    "authorization",
    "user-agent",
    "x-amzn-trace-id",
    "transfer-encoding",
];

impl Signer {
    /// A signer for `service` in `region`.
    pub fn new(credentials: &Credentials, region: &str, service: &str) -> Self {
        let credentials = aws_credential_types::Credentials::new(
            credentials.access_key_id(),
            credentials.secret_access_key(),
            credentials.session_token().map(str::to_owned),
            None,
            "ferry",
        );
        Self {
            identity: credentials.into(),
            region: region.to_owned(),
            service: service.to_owned(),
            content_sha256: false,
        }
    }

    /// Also sends and signs `x-amz-content-sha256` (the body's SHA-256), as S3 requires. Lambda
    /// and most services do not need it; it is off by default.
    pub fn with_content_sha256(mut self, enabled: bool) -> Self {
        self.content_sha256 = enabled;
        self
    }

    /// The region signatures are made for.
    pub fn region(&self) -> &str {
        &self.region
    }

    /// The service signatures are made for.
    pub fn service(&self) -> &str {
        &self.service
    }

    /// Signs a request made now and returns the headers to add to it.
    ///
    /// - `url` is the full URL as sent, already percent-encoded (`https://host[:port]/path?query`);
    ///   the `host` header is taken from it unless `headers` has one.
    /// - `headers` are the request's other headers, all of which are signed (names in any
    ///   case), except `authorization`, `user-agent`, `x-amzn-trace-id` and
    ///   `transfer-encoding`. Headers added after signing are not covered by the signature.
    /// - `body` is the exact body sent.
    ///
    /// # Errors
    ///
    /// `url` is not a valid absolute URL, or a header value is not visible ASCII.
    pub fn sign(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Result<SignedHeaders, AwsError> {
        self.sign_at(method, url, headers, body, SystemTime::now())
    }

    /// [`sign`](Self::sign) for a request made at `time` (tests, replays).
    ///
    /// # Errors
    ///
    /// As [`sign`](Self::sign).
    pub fn sign_at(
        &self,
        method: &str,
        url: &str,
        headers: &[(&str, &str)],
        body: &[u8],
        time: SystemTime,
    ) -> Result<SignedHeaders, AwsError> {
        let mut settings = SigningSettings::default();
        // The excluded headers are filtered below instead: the default list is a fresh `Vec`
        // per signature.
        settings.excluded_headers = None;
        if self.content_sha256 {
            settings.payload_checksum_kind =
                aws_sigv4::http_request::PayloadChecksumKind::XAmzSha256;
        }
        let params = v4::SigningParams::builder()
            .identity(&self.identity)
            .region(&self.region)
            .name(&self.service)
            .time(time)
            .settings(settings)
            .build()
            .map_err(|e| AwsError::signing(url, &e))?
            .into();
        let request = SignableRequest::new(
            method,
            Cow::Borrowed(url),
            headers
                .iter()
                .filter(|(name, _)| {
                    !UNSIGNED_HEADERS
                        .iter()
                        .any(|unsigned| name.eq_ignore_ascii_case(unsigned))
                })
                .copied(),
            SignableBody::Bytes(body),
        )
        .map_err(|e| AwsError::signing(url, &e))?;
        let (instructions, _signature) = sigv4_sign(request, &params)
            .map_err(|e| AwsError::signing(url, &e))?
            .into_parts();
        let (headers, _query) = instructions.into_parts();
        Ok(SignedHeaders {
            headers: headers
                .into_iter()
                .map(|h| SignedHeader {
                    name: h.name(),
                    sensitive: h.sensitive(),
                    value: h.value().to_owned(),
                })
                .collect(),
        })
    }
}

/// The headers a signature adds to its request: `x-amz-date`, `authorization`, and
/// `x-amz-security-token` for temporary credentials (and `x-amz-content-sha256` when asked).
#[derive(Debug)]
pub struct SignedHeaders {
    headers: Vec<SignedHeader>,
}

struct SignedHeader {
    name: &'static str,
    value: String,
    sensitive: bool,
}

impl fmt::Debug for SignedHeader {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let value = if self.sensitive {
            "** redacted **"
        } else {
            &self.value
        };
        write!(f, "{}: {value}", self.name)
    }
}

impl SignedHeaders {
    /// Every header as `(lowercase name, value)`.
    pub fn iter(&self) -> impl Iterator<Item = (&'static str, &str)> + '_ {
        self.headers.iter().map(|h| (h.name, h.value.as_str()))
    }

    /// One header's value by lowercase name.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|h| h.name == name)
            .map(|h| h.value.as_str())
    }

    /// The `authorization` header's value.
    pub fn authorization(&self) -> &str {
        self.get("authorization").unwrap_or_default()
    }

    /// Adds the headers to `headers`, replacing earlier values; the session token is marked
    /// sensitive (hidden from `Debug`).
    pub fn apply_to(self, headers: &mut reqwest::header::HeaderMap) {
        for header in self.headers {
            // Signing only produces visible ASCII; a value that is not would have failed above.
            if let Ok(mut value) = reqwest::header::HeaderValue::try_from(header.value) {
                value.set_sensitive(header.sensitive);
                headers.insert(header.name, value);
            }
        }
    }
}

/// What went wrong resolving AWS settings or signing a request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AwsError {
    kind: AwsErrorKind,
    message: String,
}

/// The kind of an [`AwsError`]. Matches are expected to have a wildcard arm.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum AwsErrorKind {
    /// No credentials were found, or only half of a pair.
    MissingCredentials,
    /// No region was found.
    MissingRegion,
    /// A setting has an unusable value (an endpoint that is not a URL, a profile ferry cannot
    /// use).
    BadSetting,
    /// A shared credentials or config file could not be read or parsed.
    BadFile,
    /// A request could not be signed (an invalid URL or header).
    Signing,
}

impl AwsError {
    fn new(kind: AwsErrorKind, message: String) -> Self {
        Self { kind, message }
    }

    fn signing(url: &str, error: &dyn std::error::Error) -> Self {
        let mut message = format!("cannot sign the request to `{url}`: {error}");
        let mut source = error.source();
        while let Some(cause) = source {
            message.push_str(": ");
            message.push_str(&cause.to_string());
            source = cause.source();
        }
        Self::new(AwsErrorKind::Signing, message)
    }

    /// What kind of error this is.
    pub fn kind(&self) -> AwsErrorKind {
        self.kind
    }
}

impl fmt::Display for AwsError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for AwsError {}

fn env_credentials(env: &dyn Fn(&str) -> Option<String>) -> Result<Option<Credentials>, AwsError> {
    match (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")) {
        (Some(id), Some(secret)) => Ok(Some(Credentials::new(
            id.trim(),
            secret.trim(),
            env("AWS_SESSION_TOKEN").map(|t| t.trim().to_owned()),
        ))),
        (None, None) => Ok(None),
        (Some(_), None) => Err(AwsError::new(
            AwsErrorKind::MissingCredentials,
            "`AWS_ACCESS_KEY_ID` is set but `AWS_SECRET_ACCESS_KEY` is not".to_owned(),
        )),
        (None, Some(_)) => Err(AwsError::new(
            AwsErrorKind::MissingCredentials,
            "`AWS_SECRET_ACCESS_KEY` is set but `AWS_ACCESS_KEY_ID` is not".to_owned(),
        )),
    }
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum FileKind {
    Credentials,
    Config,
}

/// A shared file as found: where it would be, and its contents if it exists.
struct SharedFile {
    path: Option<PathBuf>,
    ini: Option<ini::Ini>,
    kind: FileKind,
}

fn load_file(path: Option<PathBuf>, kind: FileKind) -> Result<SharedFile, AwsError> {
    let ini = match &path {
        Some(path) if path.is_file() => Some(parse_file(path)?),
        _ => None,
    };
    Ok(SharedFile { path, ini, kind })
}

fn parse_file(path: &Path) -> Result<ini::Ini, AwsError> {
    let options = ini::ParseOption {
        // Values are taken literally (secrets contain `/` and `+`), and nested settings
        // (`s3 =` followed by indented lines) are allowed.
        enabled_quote: false,
        enabled_escape: false,
        enabled_indented_mutiline_value: true,
        ..ini::ParseOption::default()
    };
    ini::Ini::load_from_file_opt(path, options).map_err(|e| {
        AwsError::new(
            AwsErrorKind::BadFile,
            format!("cannot read aws settings from `{}`: {e}", path.display()),
        )
    })
}

impl SharedFile {
    /// The profile's section: `[NAME]` in the credentials file; `[profile NAME]` (or
    /// `[default]`) in the config file.
    fn profile(&self, name: &str) -> Option<&ini::Properties> {
        let ini = self.ini.as_ref()?;
        ini.iter().find_map(|(section, properties)| {
            let section = section?.trim();
            let matches = match self.kind {
                FileKind::Credentials => section == name,
                FileKind::Config => {
                    section
                        .strip_prefix("profile")
                        .filter(|rest| rest.starts_with(char::is_whitespace))
                        .is_some_and(|rest| rest.trim() == name)
                        || (name == "default" && section == "default")
                }
            };
            matches.then_some(properties)
        })
    }

    fn describe(&self) -> String {
        match (&self.path, &self.ini) {
            (None, _) => match self.kind {
                FileKind::Credentials => "no credentials file (`HOME` is not set)".to_owned(),
                FileKind::Config => "no config file (`HOME` is not set)".to_owned(),
            },
            (Some(path), None) => format!("`{}` (not found)", path.display()),
            (Some(path), Some(_)) => format!("`{}`", path.display()),
        }
    }
}

struct SharedFiles {
    credentials: SharedFile,
    config: SharedFile,
    profile: String,
}

/// Profile settings that ask for credentials ferry cannot produce without the AWS SDK.
const DELEGATING_KEYS: [&str; 6] = [
    "role_arn",
    "credential_process",
    "sso_session",
    "sso_start_url",
    "web_identity_token_file",
    "credential_source",
];

impl SharedFiles {
    fn describe(&self) -> String {
        format!(
            "{}, {}",
            self.credentials.describe(),
            self.config.describe()
        )
    }

    fn credentials(&self) -> Result<(Credentials, String), AwsError> {
        for file in [&self.credentials, &self.config] {
            let Some(section) = file.profile(&self.profile) else {
                continue;
            };
            let path = file.path.as_deref().unwrap_or(Path::new("?"));
            let source = format!("{}, profile {}", path.display(), self.profile);
            let id = section.get("aws_access_key_id").map(str::trim);
            let secret = section.get("aws_secret_access_key").map(str::trim);
            match (id, secret) {
                (Some(id), Some(secret)) if !id.is_empty() && !secret.is_empty() => {
                    let token = section
                        .get("aws_session_token")
                        .map(|t| t.trim().to_owned());
                    return Ok((Credentials::new(id, secret, token), source));
                }
                (None, None) => {
                    if let Some(key) = DELEGATING_KEYS.iter().find(|k| section.contains_key(**k)) {
                        return Err(AwsError::new(
                            AwsErrorKind::BadSetting,
                            format!(
                                "profile `{}` in `{}` gets its credentials through `{key}`, which needs the aws sdk; export static credentials instead (`aws configure export-credentials --profile {} --format env`)",
                                self.profile,
                                path.display(),
                                self.profile
                            ),
                        ));
                    }
                }
                _ => {
                    return Err(AwsError::new(
                        AwsErrorKind::MissingCredentials,
                        format!(
                            "profile `{}` in `{}` needs both `aws_access_key_id` and `aws_secret_access_key`",
                            self.profile,
                            path.display()
                        ),
                    ));
                }
            }
        }
        Err(AwsError::new(
            AwsErrorKind::MissingCredentials,
            format!(
                "no aws credentials: set `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`, or give profile `{}` `aws_access_key_id` and `aws_secret_access_key` (looked in: the environment, {})",
                self.profile,
                self.describe()
            ),
        ))
    }

    fn region(&self) -> Option<String> {
        [&self.config, &self.credentials]
            .into_iter()
            .filter_map(|file| file.profile(&self.profile)?.get("region"))
            .map(|r| r.trim().to_owned())
            .find(|r| !r.is_empty())
    }
}

fn endpoint_override(
    env: &dyn Fn(&str) -> Option<String>,
    var: &str,
) -> Result<Option<String>, AwsError> {
    env(var)
        .map(|url| check_endpoint(&format!("`{var}`"), &url))
        .transpose()
}

fn check_endpoint(what: &str, url: &str) -> Result<String, AwsError> {
    let url = url.trim().trim_end_matches('/');
    let rest = url
        .strip_prefix("https://")
        .or_else(|| url.strip_prefix("http://"));
    match rest {
        Some(host) if !host.is_empty() && !host.contains(['?', '#', ' ']) => Ok(url.to_owned()),
        _ => Err(AwsError::new(
            AwsErrorKind::BadSetting,
            format!("{what} must be an http:// or https:// url, not `{url}`"),
        )),
    }
}

fn default_endpoint(service: &str, region: &str) -> String {
    let domain = if region.starts_with("cn-") {
        "amazonaws.com.cn"
    } else {
        "amazonaws.com"
    };
    format!("https://{service}.{region}.{domain}")
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::time::{Duration, UNIX_EPOCH};

    use super::*;

    const ID: &str = "AKIDEXAMPLE";
    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";

    fn at(unix: u64) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(unix)
    }

    /// AWS's SigV4 test suite, `get-vanilla`: the published signature (also what botocore
    /// computes for this request).
    #[test]
    fn signs_get_vanilla() {
        let signer = Signer::new(&Credentials::new(ID, SECRET, None), "us-east-1", "service");
        // 2015-08-30T12:36:00Z
        let signed = signer
            .sign_at(
                "GET",
                "https://example.amazonaws.com/",
                &[],
                b"",
                at(1_440_938_160),
            )
            .unwrap();
        assert_eq!(signed.get("x-amz-date"), Some("20150830T123600Z"));
        assert_eq!(
            signed.authorization(),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20150830/us-east-1/service/aws4_request, \
             SignedHeaders=host;x-amz-date, \
             Signature=5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31"
        );
        assert_eq!(signed.iter().count(), 2);
    }

    const TOKEN: &str = "AQoDYXdzEPT//////////wEXAMPLEtc764bNrC9SAPBSM22wDOk4x4HIZ8j4FZTwdQWLWsKWHGBuFqwAeMicRXmxfpSPfIeoIYRqTflfKD8YUuwthAx7mSEI/qkPpKPi/kMcGdQrmGdeehM4IC1NtBmUpp2wUE8phUZampKsburEDy0KPkyQDYwT7WZ0wq5VSXDvp75YU9HFvlRd8Tx6q6fE8YQcHNVXAkiY9q6d+xo0rKwT38xVqr7ZD0u0iPPkUL64lIZbqBAz+scqKmlzm8FDrypNC9Yjc8fPOLn9FX9KSYvKTr4rvx3iSIlTJabIQwj2ICCR/oLxBA==";

    /// A Lambda Invoke with temporary credentials; the expected value was computed with
    /// botocore 1.43 (`SigV4Auth(creds, "lambda", "eu-west-1").add_auth(...)`).
    #[test]
    fn signs_a_lambda_invoke_with_a_session_token() {
        let signer = Signer::new(
            &Credentials::new(ID, SECRET, Some(TOKEN.to_owned())),
            "eu-west-1",
            "lambda",
        );
        // 2026-11-21T08:30:05Z
        let signed = signer
            .sign_at(
                "POST",
                "https://lambda.eu-west-1.amazonaws.com/2015-03-31/functions/my-app-count-queens-1a2b3c4d/invocations",
                &[
                    ("Content-Type", "application/json"),
                    ("X-Amz-Invocation-Type", "RequestResponse"),
                    // Not signed, like the SDKs.
                    ("User-Agent", "ferry"),
                ],
                br#"{"n": 8, "cols": 0, "left": 0, "right": 0}"#,
                at(1_795_249_805),
            )
            .unwrap();
        assert_eq!(signed.get("x-amz-date"), Some("20261121T083005Z"));
        assert_eq!(signed.get("x-amz-security-token"), Some(TOKEN));
        assert_eq!(
            signed.authorization(),
            "AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261121/eu-west-1/lambda/aws4_request, \
             SignedHeaders=content-type;host;x-amz-date;x-amz-invocation-type;x-amz-security-token, \
             Signature=9f3f88fb987056448c230ecd2ecc095414076e0f0063931fe8bf3400b06dedcd"
        );
        let mut headers = reqwest::header::HeaderMap::new();
        signed.apply_to(&mut headers);
        assert!(headers["x-amz-security-token"].is_sensitive());
        assert_eq!(headers.len(), 3);
    }

    /// A local endpoint with a port and an encoded query (how moto and LocalStack are reached);
    /// expected value from botocore.
    #[test]
    fn signs_host_with_port_and_query() {
        let signer = Signer::new(&Credentials::new(ID, SECRET, None), "us-east-1", "lambda");
        let signed = signer
            .sign_at(
                "GET",
                "http://127.0.0.1:5000/2015-03-31/functions/?Marker=abc%3D&MaxItems=50",
                &[],
                b"",
                at(1_795_249_805),
            )
            .unwrap();
        assert!(
            signed.authorization().ends_with(
                "Signature=e43934fdf4465921a7fbc45201580d3e11bc54b349d2fc5580db96890d40f1c3"
            ),
            "{}",
            signed.authorization()
        );
    }

    #[test]
    fn content_sha256_on_request() {
        let signer = Signer::new(&Credentials::new(ID, SECRET, None), "us-east-1", "s3")
            .with_content_sha256(true);
        let signed = signer
            .sign_at(
                "PUT",
                "https://b.s3.amazonaws.com/k",
                &[],
                b"",
                at(1_795_249_805),
            )
            .unwrap();
        assert_eq!(
            signed.get("x-amz-content-sha256"),
            Some("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        );
        assert!(signed.authorization().contains("x-amz-content-sha256"));
    }

    #[test]
    fn bad_url_is_an_error() {
        let signer = Signer::new(&Credentials::new(ID, SECRET, None), "us-east-1", "lambda");
        let error = signer.sign("GET", "not a url", &[], b"").unwrap_err();
        assert_eq!(error.kind(), AwsErrorKind::Signing);
        assert!(
            error
                .to_string()
                .starts_with("cannot sign the request to `not a url`"),
            "{error}"
        );
    }

    #[test]
    fn debug_hides_secrets() {
        let debug = format!("{:?}", Credentials::new(ID, SECRET, Some(TOKEN.to_owned())));
        assert!(debug.contains(ID));
        assert!(!debug.contains(SECRET) && !debug.contains(TOKEN), "{debug}");
    }

    /// A scratch directory with the given files.
    struct Scratch(PathBuf);

    impl Scratch {
        fn new(files: &[(&str, &str)]) -> Self {
            use std::sync::atomic::{AtomicU32, Ordering};
            static NEXT: AtomicU32 = AtomicU32::new(0);
            let dir = std::env::temp_dir().join(format!(
                "ferry-aws-{}-{}",
                std::process::id(),
                NEXT.fetch_add(1, Ordering::Relaxed)
            ));
            std::fs::create_dir_all(dir.join(".aws")).unwrap();
            for (name, text) in files {
                std::fs::write(dir.join(".aws").join(name), text).unwrap();
            }
            Self(dir)
        }

        fn home(&self) -> String {
            self.0.display().to_string()
        }
    }

    impl Drop for Scratch {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn resolve(vars: &[(&str, &str)]) -> Result<AwsConfig, AwsError> {
        let vars: HashMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        AwsConfig::resolve(&|name| vars.get(name).cloned())
    }

    #[test]
    fn environment_comes_first() {
        let scratch = Scratch::new(&[(
            "credentials",
            "[default]\naws_access_key_id = FILE\naws_secret_access_key = FILESECRET\n",
        )]);
        let config = resolve(&[
            ("HOME", &scratch.home()),
            ("AWS_ACCESS_KEY_ID", "ENVKEY"),
            ("AWS_SECRET_ACCESS_KEY", "ENVSECRET"),
            ("AWS_SESSION_TOKEN", "ENVTOKEN"),
            ("AWS_REGION", "eu-central-1"),
            ("AWS_DEFAULT_REGION", "us-east-2"),
        ])
        .unwrap();
        assert_eq!(
            config.credentials(),
            &Credentials::new("ENVKEY", "ENVSECRET", Some("ENVTOKEN".into()))
        );
        assert_eq!(config.credentials_source(), "environment");
        assert_eq!(config.region(), "eu-central-1");
        assert_eq!(
            config.lambda_endpoint(),
            "https://lambda.eu-central-1.amazonaws.com"
        );
    }

    #[test]
    fn profiles_from_the_shared_files() {
        let scratch = Scratch::new(&[
            (
                "credentials",
                "[default]\naws_access_key_id = D\naws_secret_access_key = DS\n\n[work]\naws_access_key_id = W\naws_secret_access_key = a/b+c=\\d\naws_session_token = WT\n",
            ),
            (
                "config",
                "[default]\nregion = us-west-2\n\n[profile work]\nregion = ap-south-1\ns3 =\n  max_concurrent_requests = 10\n\n[profile cfg-only]\naws_access_key_id = C\naws_secret_access_key = CS\nregion = cn-north-1\n",
            ),
        ]);
        let home = scratch.home();
        let default = resolve(&[("HOME", &home)]).unwrap();
        assert_eq!(default.credentials(), &Credentials::new("D", "DS", None));
        assert_eq!(default.region(), "us-west-2");
        assert!(
            default
                .credentials_source()
                .ends_with(".aws/credentials, profile default")
        );

        let work = resolve(&[("HOME", &home), ("AWS_PROFILE", "work")]).unwrap();
        assert_eq!(
            work.credentials(),
            &Credentials::new("W", "a/b+c=\\d", Some("WT".into()))
        );
        assert_eq!(work.region(), "ap-south-1");

        let cfg = resolve(&[("HOME", &home), ("AWS_PROFILE", "cfg-only")]).unwrap();
        assert_eq!(cfg.credentials(), &Credentials::new("C", "CS", None));
        assert_eq!(
            cfg.lambda_endpoint(),
            "https://lambda.cn-north-1.amazonaws.com.cn"
        );

        // Explicit file locations win over `HOME`.
        let other = Scratch::new(&[(
            "c",
            "[default]\naws_access_key_id = O\naws_secret_access_key = OS\nregion = sa-east-1\n",
        )]);
        let path = other.0.join(".aws/c").display().to_string();
        let explicit = resolve(&[
            ("HOME", &home),
            ("AWS_SHARED_CREDENTIALS_FILE", &path),
            ("AWS_CONFIG_FILE", "/nonexistent/config"),
        ])
        .unwrap();
        assert_eq!(explicit.credentials().access_key_id(), "O");
        assert_eq!(explicit.region(), "sa-east-1");
    }

    #[test]
    fn endpoint_overrides() {
        let base = [
            ("AWS_ACCESS_KEY_ID", "K"),
            ("AWS_SECRET_ACCESS_KEY", "S"),
            ("AWS_REGION", "us-east-1"),
        ];
        let with = |extra: &[(&'static str, &'static str)]| {
            let mut vars = base.to_vec();
            vars.extend_from_slice(extra);
            resolve(&vars)
        };
        assert_eq!(
            with(&[("AWS_ENDPOINT_URL", "http://127.0.0.1:5000/")])
                .unwrap()
                .lambda_endpoint(),
            "http://127.0.0.1:5000"
        );
        assert_eq!(
            with(&[
                ("AWS_ENDPOINT_URL", "http://a:1"),
                ("AWS_ENDPOINT_URL_LAMBDA", "https://b")
            ])
            .unwrap()
            .lambda_endpoint(),
            "https://b"
        );
        let error = with(&[("AWS_ENDPOINT_URL_LAMBDA", "localhost:5000")]).unwrap_err();
        assert_eq!(error.kind(), AwsErrorKind::BadSetting);
        assert_eq!(
            error.to_string(),
            "`AWS_ENDPOINT_URL_LAMBDA` must be an http:// or https:// url, not `localhost:5000`"
        );
    }

    #[test]
    fn missing_settings_say_where_they_were_looked_for() {
        let scratch = Scratch::new(&[]);
        let home = scratch.home();
        let error = resolve(&[("HOME", &home), ("AWS_REGION", "us-east-1")]).unwrap_err();
        assert_eq!(error.kind(), AwsErrorKind::MissingCredentials);
        let message = error.to_string();
        assert!(
            message.starts_with("no aws credentials: set `AWS_ACCESS_KEY_ID`"),
            "{message}"
        );
        assert!(
            message.contains(&format!("`{home}/.aws/credentials` (not found)")),
            "{message}"
        );
        assert!(
            message.contains(&format!("`{home}/.aws/config` (not found)")),
            "{message}"
        );

        let error = resolve(&[
            ("HOME", &home),
            ("AWS_ACCESS_KEY_ID", "K"),
            ("AWS_SECRET_ACCESS_KEY", "S"),
        ])
        .unwrap_err();
        assert_eq!(error.kind(), AwsErrorKind::MissingRegion);
        assert!(
            error
                .to_string()
                .starts_with("no aws region: set `AWS_REGION` or `region` in profile `default`"),
            "{error}"
        );

        let error =
            resolve(&[("AWS_ACCESS_KEY_ID", "K"), ("AWS_REGION", "us-east-1")]).unwrap_err();
        assert_eq!(
            error.to_string(),
            "`AWS_ACCESS_KEY_ID` is set but `AWS_SECRET_ACCESS_KEY` is not"
        );

        let error = resolve(&[
            ("AWS_ACCESS_KEY_ID", "K"),
            ("AWS_SECRET_ACCESS_KEY", "S"),
            ("AWS_REGION", "eu west"),
        ])
        .unwrap_err();
        assert_eq!(error.kind(), AwsErrorKind::BadSetting);
    }

    #[test]
    fn profiles_that_need_the_sdk_are_refused() {
        let scratch = Scratch::new(&[(
            "config",
            "[profile admin]\nrole_arn = arn:aws:iam::123456789012:role/admin\nsource_profile = default\nregion = us-east-1\n",
        )]);
        let error = resolve(&[("HOME", &scratch.home()), ("AWS_PROFILE", "admin")]).unwrap_err();
        assert_eq!(error.kind(), AwsErrorKind::BadSetting);
        assert!(
            error
                .to_string()
                .contains("through `role_arn`, which needs the aws sdk"),
            "{error}"
        );

        let scratch = Scratch::new(&[("credentials", "[default]\naws_access_key_id = ONLY\n")]);
        let error = resolve(&[("HOME", &scratch.home())]).unwrap_err();
        assert!(
            error
                .to_string()
                .contains("needs both `aws_access_key_id` and `aws_secret_access_key`"),
            "{error}"
        );

        let scratch = Scratch::new(&[("credentials", "[default\naws_access_key_id = X\n")]);
        let error = resolve(&[("HOME", &scratch.home())]).unwrap_err();
        assert_eq!(error.kind(), AwsErrorKind::BadFile);
    }
}
