//! AWS settings and request signing: the region, credentials and Lambda endpoint a program or
//! tool finds in its environment (through the AWS SDK's credential chain), and Signature
//! Version 4 for its requests (without the SDK's service clients).
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
//! [`AwsConfig::load`] (or, without `.await`, [`AwsConfig::from_env`]) resolves settings with
//! the AWS SDK's own default chains (`aws-config`), as the AWS CLI and SDKs do:
//!
//! - **Credentials**: `AWS_ACCESS_KEY_ID` + `AWS_SECRET_ACCESS_KEY` (+ `AWS_SESSION_TOKEN`);
//!   else the profile (`AWS_PROFILE`, default `default`) in `~/.aws/credentials` and
//!   `~/.aws/config` (`AWS_SHARED_CREDENTIALS_FILE`, `AWS_CONFIG_FILE`): static keys, a role
//!   to assume (`role_arn` with `source_profile` or `credential_source`), `credential_process`,
//!   IAM Identity Center (`sso_session`, after `aws sso login`), web identity
//!   (`web_identity_token_file`); else web identity from `AWS_WEB_IDENTITY_TOKEN_FILE` and
//!   `AWS_ROLE_ARN` (EKS); else the container's credentials (ECS, `AWS_CONTAINER_CREDENTIALS_*`);
//!   else the instance's role (IMDS, unless `AWS_EC2_METADATA_DISABLED=true`).
//! - **Region**: `AWS_REGION`, else `AWS_DEFAULT_REGION`, else the profile's `region`, else the
//!   instance's (IMDS).
//! - **Lambda endpoint**: `AWS_ENDPOINT_URL_LAMBDA`, else the profile's `endpoint_url` for
//!   Lambda (a `[services]` section), else `AWS_ENDPOINT_URL`, else the profile's
//!   `endpoint_url`, else `https://lambda.{region}.amazonaws.com` (`.amazonaws.com.cn` in
//!   `cn-*` regions).
//!
//! Temporary credentials (an assumed role, `credential_process` with an `Expiration`, SSO,
//! container and instance roles) are refreshed by the [`Signer`] five minutes before they
//! expire: `.await` [`Signer::ready`] before signing.
//!
//! Signing ([`Signer::sign`]) uses the `aws-sigv4` crate. A [`Signer`] is built once and holds
//! everything that does not change between requests; one signature then costs a few
//! microseconds (the canonical request, two SHA-256 digests and five HMACs), cheap enough for a
//! client sending thousands of invocations a second.

use std::borrow::Cow;
use std::fmt;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, SystemTime};

use arc_swap::ArcSwap;
use aws_credential_types::provider::error::CredentialsError;
use aws_credential_types::provider::{ProvideCredentials, SharedCredentialsProvider};

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

/// Region, credentials and Lambda endpoint, as found by [`AwsConfig::load`].
///
/// Cheap to clone: clones (and the [`Signer`]s made from them) share one credentials cache.
#[derive(Debug, Clone)]
pub struct AwsConfig {
    region: String,
    credentials: CredentialsCache,
    credentials_source: String,
    lambda_endpoint: String,
    /// An S3 endpoint set in the environment (an S3-compatible store, an emulator); `None`:
    /// AWS's own, per bucket.
    s3_endpoint: Option<String>,
}

impl AwsConfig {
    /// Settings from explicit values; the Lambda endpoint is the region's public one.
    pub fn new(region: impl Into<String>, credentials: Credentials) -> Self {
        let region = region.into();
        Self {
            lambda_endpoint: default_endpoint("lambda", &region),
            s3_endpoint: None,
            region,
            credentials: CredentialsCache::fixed(&credentials),
            credentials_source: "given".to_owned(),
        }
    }

    /// Resolves region, credentials and the Lambda endpoint with the AWS SDK's default chains
    /// (see the [module docs](self)), and fetches the credentials once, so that a missing or
    /// refused source is reported here rather than at the first request.
    ///
    /// # Errors
    ///
    /// No credentials or no region found (the message says where to set them), a credentials
    /// provider that failed (STS refused the role, `credential_process` failed, an expired SSO
    /// session), or an endpoint that is not an `http(s)://` URL.
    pub async fn load() -> Result<Self, AwsError> {
        let sdk = aws_config::defaults(aws_config::BehaviorVersion::latest())
            .http_client(sdk_http_client())
            .load()
            .await;
        Self::from_sdk_config(&sdk).await
    }

    /// [`load`](Self::load) for callers that cannot `.await`: the loading runs on a private
    /// single-threaded runtime (on a scoped thread of its own when called inside a runtime, so
    /// it never blocks on itself). Later credential refreshes run on the caller's runtime.
    ///
    /// # Errors
    ///
    /// As [`load`](Self::load).
    pub fn from_env() -> Result<Self, AwsError> {
        let run = || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(|e| {
                    AwsError::new(
                        AwsErrorKind::BadSetting,
                        format!("cannot start a runtime to load aws settings: {e}"),
                    )
                })?
                .block_on(Self::load())
        };
        if tokio::runtime::Handle::try_current().is_ok() {
            std::thread::scope(|scope| {
                scope
                    .spawn(run)
                    .join()
                    .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
            })
        } else {
            run()
        }
    }

    /// Settings from an SDK configuration the caller loaded (with its own profile, region or
    /// credentials provider): its region, its credentials provider (fetched once now, then
    /// refreshed by signers before they expire), and the Lambda endpoint it configures
    /// (`AWS_ENDPOINT_URL_LAMBDA`, `AWS_ENDPOINT_URL`, a profile's `endpoint_url`), else the
    /// region's.
    ///
    /// # Errors
    ///
    /// As [`load`](Self::load).
    pub async fn from_sdk_config(sdk: &aws_types::SdkConfig) -> Result<Self, AwsError> {
        let provider = sdk
            .credentials_provider()
            .ok_or_else(|| missing_credentials(None))?;
        let credentials = provider
            .provide_credentials()
            .await
            .map_err(|e| credentials_error(&e))?;
        let credentials_source = provider_name(&credentials);

        let Some(region) = sdk.region() else {
            return Err(AwsError::new(
                AwsErrorKind::MissingRegion,
                format!(
                    "no aws region: set `AWS_REGION`, or `region` in profile `{}` of {}",
                    profile_name(),
                    describe_files()
                ),
            ));
        };
        let region = region.as_ref().trim().to_owned();
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

        let lambda_endpoint = match configured_endpoint(sdk, "Lambda") {
            Some(url) => check_endpoint(
                "the lambda endpoint (`AWS_ENDPOINT_URL_LAMBDA`, `AWS_ENDPOINT_URL` or a profile's `endpoint_url`)",
                &url,
            )?,
            None => default_endpoint("lambda", &region),
        };
        let s3_endpoint = configured_endpoint(sdk, "S3")
            .map(|url| {
                check_endpoint(
                    "the s3 endpoint (`AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL` or a profile's `endpoint_url`)",
                    &url,
                )
            })
            .transpose()?;

        Ok(Self {
            region,
            credentials: CredentialsCache::provided(provider, credentials, &credentials_source),
            credentials_source,
            lambda_endpoint,
            s3_endpoint,
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

    /// Replaces the S3 endpoint (`http://` or `https://`): an S3-compatible store, whose
    /// buckets are then addressed by path (`{endpoint}/{bucket}/{key}`).
    ///
    /// # Errors
    ///
    /// `url` is not an `http(s)://` URL.
    pub fn with_s3_endpoint(mut self, url: &str) -> Result<Self, AwsError> {
        self.s3_endpoint = Some(check_endpoint("the s3 endpoint", url)?);
        Ok(self)
    }

    /// The S3 endpoint set in the environment, if any; `None` means AWS's own
    /// (`https://{bucket}.s3.{region}.amazonaws.com`).
    pub fn s3_endpoint(&self) -> Option<&str> {
        self.s3_endpoint.as_deref()
    }

    /// The region, like `eu-west-1`.
    pub fn region(&self) -> &str {
        &self.region
    }

    /// The credentials signers use now: for temporary credentials from a provider, the latest
    /// ones fetched (a [`Signer`] refreshes them; this does not).
    pub fn credentials(&self) -> Credentials {
        self.credentials.current().credentials.clone()
    }

    /// Where the credentials came from: `given` for [`new`](Self::new), else the name of the
    /// AWS SDK provider that gave them (`EnvironmentVariable`, `ProfileFile`,
    /// `AssumeRoleProvider`, `CredentialProcess`, `SSO`, `WebIdentityToken`, `IMDSv2`, …) and
    /// the profile. For messages; never holds a secret.
    pub fn credentials_source(&self) -> &str {
        &self.credentials_source
    }

    /// The Lambda API's base URL, without a trailing `/` (`https://lambda.eu-west-1.amazonaws.com`).
    pub fn lambda_endpoint(&self) -> &str {
        &self.lambda_endpoint
    }

    /// A signer for `service` (`lambda`, `sts`, …) in this region with these credentials,
    /// sharing this configuration's credentials cache.
    pub fn signer(&self, service: &str) -> Signer {
        Signer {
            credentials: self.credentials.clone(),
            region: self.region.clone(),
            service: service.to_owned(),
            content_sha256: false,
            unsigned_payload: false,
        }
    }
}

/// The HTTP client the SDK's providers use (STS, SSO, IMDS, ECS): hyper with rustls on `ring`,
/// the TLS stack reqwest already links, and the system's root certificates.
fn sdk_http_client() -> aws_smithy_runtime_api::client::http::SharedHttpClient {
    use aws_smithy_http_client::tls;
    aws_smithy_http_client::Builder::new()
        // Refreshes are minutes apart, and `from_env` loads on a runtime that then ends: pooled
        // connections are not worth keeping.
        .pool_idle_timeout(Duration::from_secs(5))
        .tls_provider(tls::Provider::Rustls(
            tls::rustls_provider::CryptoMode::Ring,
        ))
        .build_https()
}

/// How long before they expire credentials are refreshed.
const REFRESH_AHEAD: Duration = Duration::from_secs(5 * 60);
/// Credentials this close to expiry are not used: signing waits for fresh ones.
const EXPIRY_MARGIN: Duration = Duration::from_secs(10);
/// After a failed refresh, how long the still-valid credentials are used before trying again.
const RETRY_REFRESH_AFTER: Duration = Duration::from_secs(5);

/// Credentials in the form signing needs, with their expiry.
struct Cached {
    identity: Identity,
    credentials: Credentials,
    expiry: Option<SystemTime>,
}

impl Cached {
    fn new(credentials: Credentials, expiry: Option<SystemTime>) -> Self {
        let sdk = aws_credential_types::Credentials::new(
            credentials.access_key_id(),
            credentials.secret_access_key(),
            credentials.session_token().map(str::to_owned),
            expiry,
            "ferry",
        );
        Self {
            identity: sdk.into(),
            credentials,
            expiry,
        }
    }

    fn from_sdk(credentials: &aws_credential_types::Credentials) -> Self {
        Self::new(
            Credentials::new(
                credentials.access_key_id(),
                credentials.secret_access_key(),
                credentials.session_token().map(str::to_owned),
            ),
            credentials.expiry(),
        )
    }

    /// Whether these credentials are due for a refresh at `now`.
    fn stale(&self, now: SystemTime) -> bool {
        self.expiry
            .is_some_and(|expiry| now + REFRESH_AHEAD >= expiry)
    }

    /// Whether these credentials may still sign at `now`.
    fn usable(&self, now: SystemTime) -> bool {
        self.expiry
            .is_none_or(|expiry| now + EXPIRY_MARGIN < expiry)
    }
}

/// Fixed credentials, or a provider's with the latest ones it gave.
#[derive(Clone)]
enum CredentialsCache {
    Fixed(Arc<Cached>),
    Provided(Arc<Provided>),
}

impl fmt::Debug for CredentialsCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Fixed(cached) => f.debug_tuple("Fixed").field(&cached.credentials).finish(),
            Self::Provided(provided) => f
                .debug_struct("Provided")
                .field("source", &provided.source)
                .field("credentials", &provided.current.load().credentials)
                .field("expiry", &provided.current.load().expiry)
                .finish(),
        }
    }
}

/// A credentials provider and what it last gave. Readers load `current` without a lock; one
/// refresh at a time holds `refresh`.
struct Provided {
    provider: SharedCredentialsProvider,
    current: ArcSwap<Cached>,
    refresh: tokio::sync::Mutex<RefreshState>,
    source: String,
}

#[derive(Default)]
struct RefreshState {
    failed_at: Option<SystemTime>,
}

impl CredentialsCache {
    fn fixed(credentials: &Credentials) -> Self {
        Self::Fixed(Arc::new(Cached::new(credentials.clone(), None)))
    }

    fn provided(
        provider: SharedCredentialsProvider,
        first: aws_credential_types::Credentials,
        source: &str,
    ) -> Self {
        Self::Provided(Arc::new(Provided {
            provider,
            current: ArcSwap::from_pointee(Cached::from_sdk(&first)),
            refresh: tokio::sync::Mutex::new(RefreshState::default()),
            source: source.to_owned(),
        }))
    }

    fn current(&self) -> Arc<Cached> {
        match self {
            Self::Fixed(cached) => cached.clone(),
            Self::Provided(provided) => provided.current.load_full(),
        }
    }

    /// Makes sure the credentials are fresh: nothing to do for fixed ones or ones far from
    /// expiry (one atomic load). Credentials due for a refresh but still valid are refreshed by
    /// one caller while the others go on with them; expired ones make every caller wait for the
    /// refresh.
    async fn ready(&self) -> Result<(), AwsError> {
        let Self::Provided(provided) = self else {
            return Ok(());
        };
        let now = SystemTime::now();
        let usable = {
            let current = provided.current.load();
            if !current.stale(now) {
                return Ok(());
            }
            current.usable(now)
        };
        let mut state = if usable {
            match provided.refresh.try_lock() {
                Ok(state) => state,
                // Another caller is refreshing; these credentials still do meanwhile.
                Err(_) => return Ok(()),
            }
        } else {
            provided.refresh.lock().await
        };
        // Someone else may have refreshed while this caller waited.
        let now = SystemTime::now();
        let current = provided.current.load_full();
        if !current.stale(now) {
            return Ok(());
        }
        if current.usable(now)
            && state
                .failed_at
                .is_some_and(|at| now < at + RETRY_REFRESH_AFTER)
        {
            return Ok(());
        }
        match provided.provider.provide_credentials().await {
            Ok(fresh) => {
                state.failed_at = None;
                provided.current.store(Arc::new(Cached::from_sdk(&fresh)));
                Ok(())
            }
            Err(error) => {
                let error = credentials_error(&error);
                state.failed_at = Some(SystemTime::now());
                if current.usable(SystemTime::now()) {
                    tracing::warn!(
                        source = %provided.source,
                        "cannot refresh aws credentials, using the current ones until they expire: {error}"
                    );
                    Ok(())
                } else {
                    Err(error)
                }
            }
        }
    }
}

/// Signs requests with AWS Signature Version 4 for one service, region and set of credentials.
///
/// Build it once and share it (it is `Send + Sync` and cheap to clone); [`Signer::sign`] is
/// meant for the hot path of a client.
///
/// A signer from [`AwsConfig::signer`] whose credentials come from a provider (an assumed
/// role, `credential_process`, SSO, a container or instance role) refreshes them before they
/// expire: `.await` [`Signer::ready`] before [`Signer::sign`]. While the credentials are more
/// than five minutes from expiry, `ready` is one atomic load; within five minutes one caller
/// fetches new ones while the others go on signing with the current ones. Signers of fixed
/// credentials ([`Signer::new`], [`AwsConfig::new`]) need no `ready`.
#[derive(Debug, Clone)]
pub struct Signer {
    credentials: CredentialsCache,
    region: String,
    service: String,
    content_sha256: bool,
    unsigned_payload: bool,
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
    /// A signer of fixed `credentials` for `service` in `region`.
    pub fn new(credentials: &Credentials, region: &str, service: &str) -> Self {
        Self {
            credentials: CredentialsCache::fixed(credentials),
            region: region.to_owned(),
            service: service.to_owned(),
            content_sha256: false,
            unsigned_payload: false,
        }
    }

    /// Sends `x-amz-content-sha256: UNSIGNED-PAYLOAD` and leaves the body out of the signature,
    /// as S3 allows: large objects are not hashed twice (the signature covers the headers; TLS,
    /// and ferry's own content hashes where it has them, cover the body).
    pub fn with_unsigned_payload(mut self) -> Self {
        self.content_sha256 = true;
        self.unsigned_payload = true;
        self
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

    /// Refreshes the credentials if they expire within five minutes (see [`Signer`]); returns
    /// at once otherwise. Call it before [`sign`](Self::sign) wherever credentials may come
    /// from a provider.
    ///
    /// # Errors
    ///
    /// The credentials expired (or are about to) and the provider failed to give new ones.
    /// A failure while the current credentials are still valid is logged and retried later.
    pub async fn ready(&self) -> Result<(), AwsError> {
        self.credentials.ready().await
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
    /// `url` is not a valid absolute URL, a header value is not visible ASCII, or the
    /// credentials have expired (`.await` [`ready`](Self::ready) first).
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
        let guard;
        let identity = match &self.credentials {
            CredentialsCache::Fixed(cached) => &cached.identity,
            CredentialsCache::Provided(provided) => {
                guard = provided.current.load();
                if !guard.usable(time) {
                    return Err(AwsError::new(
                        AwsErrorKind::ExpiredCredentials,
                        format!(
                            "the aws credentials from {} expired: `Signer::ready` refreshes them before signing",
                            provided.source
                        ),
                    ));
                }
                &guard.identity
            }
        };
        let params = v4::SigningParams::builder()
            .identity(identity)
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
            if self.unsigned_payload {
                SignableBody::UnsignedPayload
            } else {
                SignableBody::Bytes(body)
            },
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
    /// A setting has an unusable value (an endpoint that is not a URL, a profile the AWS SDK
    /// cannot use).
    BadSetting,
    /// A shared credentials or config file could not be read or parsed.
    BadFile,
    /// A request could not be signed (an invalid URL or header).
    Signing,
    /// A credentials provider failed: STS refused to assume the role, `credential_process`
    /// failed, the SSO session expired, the instance metadata service did not answer.
    Provider,
    /// The credentials expired and were not refreshed.
    ExpiredCredentials,
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

/// The profile the SDK reads (`AWS_PROFILE`, else `default`), for messages.
fn profile_name() -> String {
    std::env::var("AWS_PROFILE")
        .ok()
        .filter(|p| !p.trim().is_empty())
        .unwrap_or_else(|| "default".to_owned())
}

/// The shared files the SDK reads, for messages: where each is, and whether it exists.
fn describe_files() -> String {
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let file = |var: &str, default: &str| -> String {
        let path = std::env::var_os(var)
            .filter(|p| !p.is_empty())
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(default)));
        match path {
            None => format!("`~/{default}` (`HOME` is not set)"),
            Some(path) if path.is_file() => format!("`{}`", path.display()),
            Some(path) => format!("`{}` (not found)", path.display()),
        }
    };
    format!(
        "{} or {}",
        file("AWS_CONFIG_FILE", ".aws/config"),
        file("AWS_SHARED_CREDENTIALS_FILE", ".aws/credentials")
    )
}

fn missing_credentials(cause: Option<&str>) -> AwsError {
    let mut message = format!(
        "no aws credentials: set `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`, or configure profile `{}` (`aws_access_key_id`, `role_arn`, `credential_process`, `sso_session`, `web_identity_token_file`) in {}, or run where container or instance credentials are available",
        profile_name(),
        describe_files()
    );
    if let Some(cause) = cause {
        message.push_str(" (");
        message.push_str(cause);
        message.push(')');
    }
    AwsError::new(AwsErrorKind::MissingCredentials, message)
}

/// An SDK provider's error as ferry's, with its chain of causes.
fn credentials_error(error: &CredentialsError) -> AwsError {
    let mut cause = String::new();
    let mut source = std::error::Error::source(error);
    while let Some(next) = source {
        if !cause.is_empty() {
            cause.push_str(": ");
        }
        cause.push_str(&next.to_string());
        source = next.source();
    }
    if cause.is_empty() {
        cause = error.to_string();
    }
    match error {
        CredentialsError::CredentialsNotLoaded(_) => missing_credentials(Some(&cause)),
        CredentialsError::InvalidConfiguration(_) => AwsError::new(
            AwsErrorKind::BadSetting,
            format!(
                "the aws credentials of profile `{}` are misconfigured: {cause}",
                profile_name()
            ),
        ),
        _ => AwsError::new(
            AwsErrorKind::Provider,
            format!("cannot get aws credentials: {cause}"),
        ),
    }
}

/// The name of the SDK provider that gave `credentials` (with the profile when one was read).
/// `aws-credential-types` shows it only in `Debug`, which redacts the secrets.
fn provider_name(credentials: &aws_credential_types::Credentials) -> String {
    let debug = format!("{credentials:?}");
    let name = debug
        .split_once("provider_name: \"")
        .and_then(|(_, rest)| rest.split_once('"'))
        .map(|(name, _)| name.to_owned())
        .filter(|name| {
            !name.is_empty()
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "-_ .".contains(c))
        })
        .unwrap_or_else(|| "the aws sdk's default chain".to_owned());
    if name == "EnvironmentVariable" {
        "environment".to_owned()
    } else {
        format!("{name}, profile {}", profile_name())
    }
}

/// The endpoint the SDK's own client for `service_id` (`Lambda`, `S3`) would use, if one is
/// configured: set in code, else the service's (`AWS_ENDPOINT_URL_<SERVICE>`, a profile's
/// `[services]` section), else the global one (`AWS_ENDPOINT_URL`, a profile's `endpoint_url`).
fn configured_endpoint(sdk: &aws_types::SdkConfig, service_id: &str) -> Option<String> {
    let configured = if sdk.get_origin("endpoint_url").is_client_config() {
        sdk.endpoint_url().map(str::to_owned)
    } else {
        sdk.service_config()
            .and_then(|config| {
                config.load_config(
                    aws_types::service_config::ServiceConfigKey::builder()
                        .service_id(service_id)
                        .env("AWS_ENDPOINT_URL")
                        .profile("endpoint_url")
                        .build()
                        .ok()?,
                )
            })
            .or_else(|| sdk.endpoint_url().map(str::to_owned))
    };
    configured.filter(|url| !url.trim().is_empty())
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

    /// A provider that counts its calls and gives credentials expiring `lifetime` after each
    /// call (or fails when `fail` is set).
    #[derive(Debug)]
    struct Counting {
        calls: std::sync::atomic::AtomicUsize,
        lifetime: Duration,
        fail: std::sync::atomic::AtomicBool,
    }

    impl Counting {
        fn new(lifetime: Duration) -> Arc<Self> {
            Arc::new(Self {
                calls: 0.into(),
                lifetime,
                fail: false.into(),
            })
        }

        fn calls(&self) -> usize {
            self.calls.load(std::sync::atomic::Ordering::SeqCst)
        }
    }

    #[derive(Debug)]
    struct Shared(Arc<Counting>);

    impl ProvideCredentials for Shared {
        fn provide_credentials<'a>(
            &'a self,
        ) -> aws_credential_types::provider::future::ProvideCredentials<'a>
        where
            Self: 'a,
        {
            let n = self
                .0
                .calls
                .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
                + 1;
            let result = if self.0.fail.load(std::sync::atomic::Ordering::SeqCst) {
                Err(CredentialsError::provider_error("sts is down"))
            } else {
                Ok(aws_credential_types::Credentials::new(
                    format!("ASIA{n}"),
                    "secret",
                    Some(format!("token{n}")),
                    Some(SystemTime::now() + self.0.lifetime),
                    "Counting",
                ))
            };
            aws_credential_types::provider::future::ProvideCredentials::ready(result)
        }
    }

    async fn config_with(counting: &Arc<Counting>) -> AwsConfig {
        let sdk = aws_types::SdkConfig::builder()
            .region(aws_types::region::Region::new("eu-west-1"))
            .credentials_provider(SharedCredentialsProvider::new(Shared(counting.clone())))
            .endpoint_url("http://127.0.0.1:9/")
            .behavior_version(aws_config::BehaviorVersion::latest())
            .build();
        AwsConfig::from_sdk_config(&sdk).await.unwrap()
    }

    #[tokio::test]
    async fn a_providers_settings() {
        let counting = Counting::new(Duration::from_secs(3600));
        let config = config_with(&counting).await;
        assert_eq!(counting.calls(), 1, "fetched once at load");
        assert_eq!(config.region(), "eu-west-1");
        assert_eq!(config.lambda_endpoint(), "http://127.0.0.1:9");
        assert!(
            config
                .credentials_source()
                .starts_with("Counting, profile "),
            "{}",
            config.credentials_source()
        );
        assert_eq!(config.credentials().access_key_id(), "ASIA1");
        assert_eq!(config.credentials().session_token(), Some("token1"));
    }

    #[tokio::test]
    async fn fresh_credentials_are_not_fetched_again() {
        let counting = Counting::new(Duration::from_secs(3600));
        let signer = config_with(&counting).await.signer("lambda");
        for _ in 0..100 {
            signer.ready().await.unwrap();
            let signed = signer
                .sign("GET", "https://x.amazonaws.com/", &[], b"")
                .unwrap();
            assert_eq!(signed.get("x-amz-security-token"), Some("token1"));
        }
        assert_eq!(counting.calls(), 1);
    }

    #[tokio::test]
    async fn credentials_near_expiry_are_refreshed_once_per_due_time() {
        // Expire in 2 minutes: within the refresh window, so every `ready` refreshes.
        let counting = Counting::new(Duration::from_secs(120));
        let config = config_with(&counting).await;
        let signer = config.signer("lambda");
        signer.ready().await.unwrap();
        assert_eq!(counting.calls(), 2);
        let signed = signer
            .sign("GET", "https://x.amazonaws.com/", &[], b"")
            .unwrap();
        assert_eq!(signed.get("x-amz-security-token"), Some("token2"));
        assert!(signed.authorization().contains("Credential=ASIA2/"));
        // Signers of one config share the cache.
        assert_eq!(config.credentials().access_key_id(), "ASIA2");
        assert_eq!(
            config
                .signer("sts")
                .sign("GET", "https://x.amazonaws.com/", &[], b"")
                .unwrap()
                .get("x-amz-security-token"),
            Some("token2")
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_callers_refresh_once() {
        // A provider that takes its time: every caller arrives while the refresh runs.
        #[derive(Debug)]
        struct Slow(Arc<Counting>);
        impl ProvideCredentials for Slow {
            fn provide_credentials<'a>(
                &'a self,
            ) -> aws_credential_types::provider::future::ProvideCredentials<'a>
            where
                Self: 'a,
            {
                aws_credential_types::provider::future::ProvideCredentials::new(async move {
                    let n = self
                        .0
                        .calls
                        .fetch_add(1, std::sync::atomic::Ordering::SeqCst)
                        + 1;
                    // The first answer (at load) has expired already; later ones last an hour.
                    let lifetime = if n == 1 {
                        Duration::ZERO
                    } else {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        Duration::from_secs(3600)
                    };
                    Ok(aws_credential_types::Credentials::new(
                        format!("ASIA{n}"),
                        "secret",
                        Some(format!("token{n}")),
                        Some(SystemTime::now() + lifetime),
                        "Slow",
                    ))
                })
            }
        }
        let counting = Counting::new(Duration::ZERO);
        let sdk = aws_types::SdkConfig::builder()
            .region(aws_types::region::Region::new("us-east-1"))
            .credentials_provider(SharedCredentialsProvider::new(Slow(counting.clone())))
            .behavior_version(aws_config::BehaviorVersion::latest())
            .build();
        let signer = AwsConfig::from_sdk_config(&sdk)
            .await
            .unwrap()
            .signer("lambda");
        // Expired: signing without `ready` is refused.
        let error = signer
            .sign("GET", "https://x.amazonaws.com/", &[], b"")
            .unwrap_err();
        assert_eq!(error.kind(), AwsErrorKind::ExpiredCredentials);
        assert!(error.to_string().contains("Slow"), "{error}");
        let tasks: Vec<_> = (0..16)
            .map(|_| {
                let signer = signer.clone();
                tokio::spawn(async move {
                    signer.ready().await.unwrap();
                    signer
                        .sign("GET", "https://x.amazonaws.com/", &[], b"")
                        .unwrap()
                        .get("x-amz-security-token")
                        .map(str::to_owned)
                })
            })
            .collect();
        for task in tasks {
            assert_eq!(task.await.unwrap().as_deref(), Some("token2"));
        }
        assert_eq!(counting.calls(), 2, "one load, one refresh");
    }

    #[tokio::test]
    async fn a_failed_refresh_keeps_valid_credentials_and_fails_expired_ones() {
        let counting = Counting::new(Duration::from_secs(120));
        let signer = config_with(&counting).await.signer("lambda");
        counting
            .fail
            .store(true, std::sync::atomic::Ordering::SeqCst);
        // Still valid for two minutes: the failure is logged, signing goes on.
        signer.ready().await.unwrap();
        assert_eq!(counting.calls(), 2);
        // And not retried at once.
        signer.ready().await.unwrap();
        assert_eq!(counting.calls(), 2);
        signer
            .sign("GET", "https://x.amazonaws.com/", &[], b"")
            .unwrap();

        let expired = Counting::new(Duration::ZERO);
        let signer = config_with(&expired).await.signer("lambda");
        expired
            .fail
            .store(true, std::sync::atomic::Ordering::SeqCst);
        let error = signer.ready().await.unwrap_err();
        assert_eq!(error.kind(), AwsErrorKind::Provider);
        assert_eq!(error.to_string(), "cannot get aws credentials: sts is down");
    }

    #[tokio::test]
    async fn missing_settings_say_where_to_set_them() {
        let no_credentials = aws_types::SdkConfig::builder()
            .region(aws_types::region::Region::new("us-east-1"))
            .behavior_version(aws_config::BehaviorVersion::latest())
            .build();
        let error = AwsConfig::from_sdk_config(&no_credentials)
            .await
            .unwrap_err();
        assert_eq!(error.kind(), AwsErrorKind::MissingCredentials);
        assert!(
            error
                .to_string()
                .starts_with("no aws credentials: set `AWS_ACCESS_KEY_ID` and `AWS_SECRET_ACCESS_KEY`, or configure profile `"),
            "{error}"
        );
        assert!(error.to_string().contains(".aws/credentials`"), "{error}");

        let error = credentials_error(&CredentialsError::not_loaded(
            "no providers in chain provided credentials",
        ));
        assert_eq!(error.kind(), AwsErrorKind::MissingCredentials);
        assert!(
            error
                .to_string()
                .ends_with("(no providers in chain provided credentials)"),
            "{error}"
        );

        let counting = Counting::new(Duration::from_secs(3600));
        let no_region = aws_types::SdkConfig::builder()
            .credentials_provider(SharedCredentialsProvider::new(Shared(counting)))
            .behavior_version(aws_config::BehaviorVersion::latest())
            .build();
        let error = AwsConfig::from_sdk_config(&no_region).await.unwrap_err();
        assert_eq!(error.kind(), AwsErrorKind::MissingRegion);
        assert!(
            error
                .to_string()
                .starts_with("no aws region: set `AWS_REGION`, or `region` in profile `"),
            "{error}"
        );
    }

    #[tokio::test]
    async fn endpoint_overrides() {
        let counting = Counting::new(Duration::from_secs(3600));
        let config = config_with(&counting).await;
        assert_eq!(
            config
                .clone()
                .with_lambda_endpoint("https://b/")
                .unwrap()
                .lambda_endpoint(),
            "https://b"
        );
        let error = config.with_lambda_endpoint("localhost:5000").unwrap_err();
        assert_eq!(error.kind(), AwsErrorKind::BadSetting);
        assert_eq!(
            error.to_string(),
            "the lambda endpoint must be an http:// or https:// url, not `localhost:5000`"
        );
        let cn = AwsConfig::new("cn-north-1", Credentials::new(ID, SECRET, None));
        assert_eq!(
            cn.lambda_endpoint(),
            "https://lambda.cn-north-1.amazonaws.com.cn"
        );
        assert_eq!(cn.credentials_source(), "given");
    }
}
