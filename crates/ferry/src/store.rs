//! A bucket in S3 (or an S3-compatible store: MinIO, Ceph, moto) for what a platform's limits
//! cannot carry: Lambda code over the inline upload limit (`ferry deploy`), arguments and
//! outputs over Lambda's 6 MB or OpenWhisk's 1 MiB payload limit, and [`Shared`](crate::Shared)
//! values, uploaded once each.
//!
//! A store is a bucket and a key prefix, written `s3://bucket/prefix` (`FERRY_STORE`). Under the
//! prefix, ferry keeps:
//!
//! - `payloads/<random>`: one call's arguments or output, deleted by the caller once the call
//!   has ended; a lifecycle rule that `ferry deploy` sets expires what a crashed caller left
//!   after [`PAYLOAD_DAYS`] day;
//! - `shared/<blob id>`: a shared value's blob, named by its content hash, so uploads are
//!   idempotent and a host uploads each value once; expired after [`SHARED_DAYS`] days;
//! - `code/<sha256>.zip`: a program's Lambda code.
//!
//! Requests are SigV4-signed by [`Signer`] (with `UNSIGNED-PAYLOAD`, so large bodies are not
//! hashed twice); credentials, region and endpoint come from [`AwsConfig`]. With an endpoint set
//! (`AWS_ENDPOINT_URL_S3`, `AWS_ENDPOINT_URL`) buckets are addressed by path, as S3-compatible
//! stores expect; otherwise by virtual host on AWS.

use std::fmt;
use std::time::Duration;

use bytes::Bytes;

use crate::aws::{AwsConfig, Signer};

/// Days after which `payloads/` objects a caller never deleted expire.
pub const PAYLOAD_DAYS: u32 = 1;
/// Days after which `shared/` blobs expire (a host re-uploads a blob it needs again).
pub const SHARED_DAYS: u32 = 7;

/// Where a store is: a bucket and a key prefix (empty, or ending in `/`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreLocation {
    bucket: String,
    prefix: String,
}

impl StoreLocation {
    /// `bucket` with keys under `prefix` (a `/` is added at its end).
    ///
    /// # Errors
    ///
    /// `bucket` is not an S3 bucket name (3 to 63 lowercase letters, digits, `-` and `.`), or
    /// `prefix` has characters other than letters, digits and `-_./`.
    pub fn new(bucket: &str, prefix: &str) -> Result<Self, StoreError> {
        let valid_bucket = (3..=63).contains(&bucket.len())
            && bucket
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'.')
            && !bucket.starts_with(['-', '.'])
            && !bucket.ends_with(['-', '.']);
        if !valid_bucket {
            return Err(StoreError::new(
                StoreErrorKind::BadLocation,
                format!(
                    "`{bucket}` is not an s3 bucket name (3 to 63 lowercase letters, digits, `-` and `.`)"
                ),
            ));
        }
        let prefix = prefix.trim_matches('/');
        if !prefix
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-_./".contains(&b))
            || prefix.split('/').any(|part| part == ".." || part == ".")
        {
            return Err(StoreError::new(
                StoreErrorKind::BadLocation,
                format!("the store prefix `{prefix}` may hold only letters, digits and `-_./`"),
            ));
        }
        Ok(Self {
            bucket: bucket.to_owned(),
            prefix: if prefix.is_empty() {
                String::new()
            } else {
                format!("{prefix}/")
            },
        })
    }

    /// The bucket.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The key prefix: empty, or ending in `/`.
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The key of `name` under the prefix.
    pub fn key(&self, name: &str) -> String {
        format!("{}{name}", self.prefix)
    }
}

impl std::str::FromStr for StoreLocation {
    type Err = StoreError;

    /// `s3://bucket` or `s3://bucket/prefix`.
    fn from_str(text: &str) -> Result<Self, StoreError> {
        let Some(rest) = text.trim().strip_prefix("s3://") else {
            return Err(StoreError::new(
                StoreErrorKind::BadLocation,
                format!("a store is written `s3://bucket/prefix`, not `{text}`"),
            ));
        };
        let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
        Self::new(bucket, prefix)
    }
}

impl fmt::Display for StoreLocation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "s3://{}/{}",
            self.bucket,
            self.prefix.trim_end_matches('/')
        )
    }
}

/// A client of one store. Cheap to clone.
#[derive(Debug, Clone)]
pub struct Store {
    location: StoreLocation,
    /// The URL of the bucket's root, without a trailing `/`.
    base: String,
    signer: Signer,
    client: reqwest::Client,
}

impl Store {
    /// A client of `location`, reached as `aws` says (its S3 endpoint, region and credentials).
    ///
    /// # Errors
    ///
    /// The HTTP client cannot be built.
    pub fn new(aws: &AwsConfig, location: StoreLocation) -> Result<Self, StoreError> {
        let base = match aws.s3_endpoint() {
            Some(endpoint) => format!("{endpoint}/{}", location.bucket),
            // Virtual hosts need a bucket name that is one DNS label under TLS.
            None if location.bucket.contains('.') => {
                format!("{}/{}", regional_endpoint(aws.region()), location.bucket)
            }
            None => regional_endpoint(aws.region()).replacen(
                "https://",
                &format!("https://{}.", location.bucket),
                1,
            ),
        };
        let client = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(300))
            .build()
            .map_err(|e| {
                StoreError::new(
                    StoreErrorKind::Unavailable,
                    format!("cannot build the http client: {e}"),
                )
            })?;
        Ok(Self {
            location,
            base,
            signer: aws.signer("s3").with_unsigned_payload(),
            client,
        })
    }

    /// The store `FERRY_STORE` names, if it is set.
    ///
    /// # Errors
    ///
    /// `FERRY_STORE` is not `s3://bucket/prefix`.
    pub fn from_env(aws: &AwsConfig) -> Result<Option<Self>, StoreError> {
        crate::config::STORE
            .text()
            .map(|text| Self::new(aws, text.parse()?))
            .transpose()
    }

    /// Where this store is.
    pub fn location(&self) -> &StoreLocation {
        &self.location
    }

    /// Writes `body` at `key` (a full key, prefix included).
    ///
    /// # Errors
    ///
    /// S3 refused the request or could not be reached.
    pub async fn put(&self, key: &str, body: Bytes) -> Result<(), StoreError> {
        self.request(reqwest::Method::PUT, key, "", body).await?;
        Ok(())
    }

    /// The object at `key`.
    ///
    /// # Errors
    ///
    /// [`StoreErrorKind::NotFound`] when there is none; S3 refused the request or could not be
    /// reached.
    pub async fn get(&self, key: &str) -> Result<Bytes, StoreError> {
        self.request(reqwest::Method::GET, key, "", Bytes::new())
            .await
    }

    /// Whether an object is at `key`.
    ///
    /// # Errors
    ///
    /// S3 refused the request or could not be reached.
    pub async fn exists(&self, key: &str) -> Result<bool, StoreError> {
        match self
            .request(reqwest::Method::HEAD, key, "", Bytes::new())
            .await
        {
            Ok(_) => Ok(true),
            Err(e) if e.kind == StoreErrorKind::NotFound => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Deletes the object at `key` (there being none is no error).
    ///
    /// # Errors
    ///
    /// S3 refused the request or could not be reached.
    pub async fn delete(&self, key: &str) -> Result<(), StoreError> {
        match self
            .request(reqwest::Method::DELETE, key, "", Bytes::new())
            .await
        {
            Ok(_) => Ok(()),
            Err(e) if e.kind == StoreErrorKind::NotFound => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Creates the bucket in the region, unless this account already has it: whether it was
    /// created.
    ///
    /// # Errors
    ///
    /// The name is taken by another account, or S3 refused the request or could not be reached.
    pub async fn create_bucket(&self) -> Result<bool, StoreError> {
        // us-east-1 is the one region that takes no location constraint.
        let body = if self.signer.region() == "us-east-1" {
            Bytes::new()
        } else {
            Bytes::from(format!(
                "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LocationConstraint>{}</LocationConstraint></CreateBucketConfiguration>",
                self.signer.region()
            ))
        };
        match self.request(reqwest::Method::PUT, "", "", body).await {
            Ok(_) => Ok(true),
            Err(e) if e.message.contains("BucketAlreadyOwnedByYou") => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Sets the bucket's lifecycle: objects under the prefix's `payloads/` expire after
    /// [`PAYLOAD_DAYS`], under `shared/` after [`SHARED_DAYS`] (the bucket's other rules are
    /// replaced: a bucket of its own is best).
    ///
    /// # Errors
    ///
    /// S3 refused the request or could not be reached.
    pub async fn set_expiry(&self) -> Result<(), StoreError> {
        let rule = |id: &str, prefix: String, days: u32| {
            format!(
                "<Rule><ID>{id}</ID><Filter><Prefix>{prefix}</Prefix></Filter><Status>Enabled</Status><Expiration><Days>{days}</Days></Expiration></Rule>"
            )
        };
        let body = format!(
            "<LifecycleConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">{}{}</LifecycleConfiguration>",
            rule(
                "ferry-payloads",
                self.location.key("payloads/"),
                PAYLOAD_DAYS
            ),
            rule("ferry-shared", self.location.key("shared/"), SHARED_DAYS),
        );
        self.request(reqwest::Method::PUT, "", "lifecycle=", Bytes::from(body))
            .await?;
        Ok(())
    }

    async fn request(
        &self,
        method: reqwest::Method,
        key: &str,
        query: &str,
        body: Bytes,
    ) -> Result<Bytes, StoreError> {
        let mut url = format!("{}/{key}", self.base);
        if !query.is_empty() {
            url.push('?');
            url.push_str(query);
        }
        let unavailable = |e: &dyn fmt::Display| {
            StoreError::new(
                StoreErrorKind::Unavailable,
                format!("cannot reach s3 at {url}: {e}"),
            )
        };
        self.signer
            .ready()
            .await
            .map_err(|e| StoreError::new(StoreErrorKind::Refused { status: 0 }, e.to_string()))?;
        // Bucket configurations must carry a checksum of their body.
        let checksum = (!query.is_empty()).then(|| {
            use sha2::Digest as _;
            base64_simd::STANDARD.encode_to_string(sha2::Sha256::digest(&body))
        });
        let mut headers: Vec<(&str, &str)> = Vec::new();
        if let Some(checksum) = &checksum {
            headers.push(("x-amz-sdk-checksum-algorithm", "SHA256"));
            headers.push(("x-amz-checksum-sha256", checksum));
        }
        let signed = self
            .signer
            .sign(method.as_str(), &url, &headers, &[])
            .map_err(|e| StoreError::new(StoreErrorKind::Refused { status: 0 }, e.to_string()))?;
        let mut header_map = reqwest::header::HeaderMap::new();
        for (name, value) in headers {
            if let Ok(value) = reqwest::header::HeaderValue::from_str(value) {
                header_map.insert(name, value);
            }
        }
        signed.apply_to(&mut header_map);
        let response = self
            .client
            .request(method.clone(), &url)
            .headers(header_map)
            .body(body)
            .send()
            .await
            .map_err(|e| unavailable(&chain(&e)))?;
        let status = response.status();
        let answer = response
            .bytes()
            .await
            .map_err(|e| unavailable(&chain(&e)))?;
        if status.is_success() {
            return Ok(answer);
        }
        let text = String::from_utf8_lossy(&answer);
        let tag = |name: &str| {
            let open = format!("<{name}>");
            let start = text.find(&open)? + open.len();
            let end = text[start..].find('<')? + start;
            Some(text[start..end].to_owned())
        };
        let code = tag("Code").unwrap_or_default();
        let message = tag("Message").unwrap_or_default();
        let what = if key.is_empty() {
            format!("bucket `{}`", self.location.bucket)
        } else {
            format!("`s3://{}/{key}`", self.location.bucket)
        };
        let kind = match status.as_u16() {
            404 if code != "NoSuchBucket" => StoreErrorKind::NotFound,
            500.. => StoreErrorKind::Unavailable,
            status => StoreErrorKind::Refused { status },
        };
        Err(StoreError::new(
            kind,
            format!(
                "s3 answered {method} {what} with {status}{}{}",
                if code.is_empty() {
                    String::new()
                } else {
                    format!(" {code}")
                },
                if message.is_empty() {
                    String::new()
                } else {
                    format!(": {message}")
                },
            ),
        ))
    }
}

fn regional_endpoint(region: &str) -> String {
    let domain = if region.starts_with("cn-") {
        "amazonaws.com.cn"
    } else {
        "amazonaws.com"
    };
    format!("https://s3.{region}.{domain}")
}

/// An error with its chain of causes (reqwest's own message leaves out why a connection failed).
fn chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        message.push_str(": ");
        message.push_str(&cause.to_string());
        source = cause.source();
    }
    message
}

/// What went wrong with a store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreError {
    kind: StoreErrorKind,
    message: String,
}

/// The kind of a [`StoreError`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum StoreErrorKind {
    /// The location is not `s3://bucket/prefix`.
    BadLocation,
    /// No object at the key.
    NotFound,
    /// S3 refused the request (`status`: its HTTP status; 0 when it was never sent because
    /// credentials or signing failed).
    Refused {
        /// The HTTP status.
        status: u16,
    },
    /// S3 could not be reached, or failed (5xx).
    Unavailable,
}

impl StoreError {
    fn new(kind: StoreErrorKind, message: String) -> Self {
        Self { kind, message }
    }

    /// What kind of error this is.
    pub fn kind(&self) -> StoreErrorKind {
        self.kind
    }
}

impl fmt::Display for StoreError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for StoreError {}

impl From<StoreError> for crate::Error {
    fn from(error: StoreError) -> Self {
        match error.kind {
            StoreErrorKind::Unavailable => Self::unavailable(error.message),
            StoreErrorKind::NotFound => Self::protocol(error.message),
            _ => Self::config(error.message),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn locations_are_checked() {
        let location: StoreLocation = "s3://ferry-data/runs/a".parse().unwrap();
        assert_eq!(location.bucket(), "ferry-data");
        assert_eq!(location.key("payloads/x"), "runs/a/payloads/x");
        assert_eq!(location.to_string(), "s3://ferry-data/runs/a");
        let bare: StoreLocation = "s3://ferry-data".parse().unwrap();
        assert_eq!(bare.key("shared/1"), "shared/1");
        for bad in [
            "ferry-data",
            "s3://Ferry",
            "s3://ab",
            "s3://-ferry",
            "s3://ferry/a b",
            "s3://ferry/../x",
        ] {
            let error = bad.parse::<StoreLocation>().unwrap_err();
            assert_eq!(error.kind(), StoreErrorKind::BadLocation, "{bad}: {error}");
        }
    }

    #[test]
    fn buckets_are_addressed_as_the_endpoint_wants() {
        let aws = AwsConfig::new(
            "eu-west-1",
            crate::aws::Credentials::new("AKID", "secret", None),
        );
        let store = |aws: &AwsConfig, text: &str| Store::new(aws, text.parse().unwrap()).unwrap();
        assert_eq!(
            store(&aws, "s3://data").base,
            "https://data.s3.eu-west-1.amazonaws.com"
        );
        assert_eq!(
            store(&aws, "s3://my.data").base,
            "https://s3.eu-west-1.amazonaws.com/my.data"
        );
        let minio = aws.with_s3_endpoint("http://127.0.0.1:9000/").unwrap();
        assert_eq!(
            store(&minio, "s3://data/x").base,
            "http://127.0.0.1:9000/data"
        );
    }
}
