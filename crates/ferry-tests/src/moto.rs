//! moto's server (PyPI `moto[server]`, which scripts/test.sh installs): a real implementation of
//! the Lambda, IAM, STS and S3 APIs on loopback, started by a test and killed when it ends.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use ferry::aws::{Credentials, Signer};

/// moto's account: role ARNs are `arn:aws:iam::123456789012:role/<name>`.
pub const ACCOUNT: &str = "123456789012";

/// A moto server on a free loopback port, killed on drop.
#[derive(Debug)]
pub struct Moto {
    child: Child,
    pub url: String,
}

impl Moto {
    pub fn start() -> Self {
        let python = std::env::var("FERRY_TEST_PYTHON").unwrap_or_else(|_| "python3".to_owned());
        // Port 0: the server binds a free port and says which.
        let mut child = Command::new(&python)
            .args(["-m", "moto.server", "-H", "127.0.0.1", "-p", "0"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start `{python} -m moto.server` ({e}): `pip install 'moto[server]'` (scripts/test.sh installs it)"));
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut sent = false;
            // Reads to the end, so the server never blocks on a full pipe.
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if sent {
                    continue;
                }
                match line.find("Running on http://") {
                    Some(at) => {
                        let _ = tx.send(Ok(line[at + "Running on ".len()..].trim().to_owned()));
                        sent = true;
                    }
                    None => {
                        let _ = tx.send(Err(line));
                    }
                }
            }
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        let mut said = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok(Ok(url)) => return Self { child, url },
                Ok(Err(line)) => said.push(line),
                Err(_) => {
                    let _ = child.kill();
                    let _ = child.wait();
                    panic!("moto did not start within a minute:\n{}", said.join("\n"));
                }
            }
        }
    }

    /// Creates the IAM role `name`: moto's Lambda accepts only roles IAM knows.
    pub fn create_role(&self, name: &str) {
        let body = format!(
            "Action=CreateRole&Version=2010-05-08&RoleName={name}&AssumeRolePolicyDocument=%7B%7D"
        );
        let (status, text) = self.signed_in(
            "us-east-1",
            "iam",
            "POST",
            "/",
            body.as_bytes(),
            "application/x-www-form-urlencoded",
        );
        assert_eq!(status, 200, "CreateRole {name}: {text}");
    }

    /// A signed call to moto in `region`, as any AWS client makes it (Lambda's resources are per
    /// region; IAM's are not).
    pub fn signed_in(
        &self,
        region: &str,
        service: &str,
        method: &str,
        path: &str,
        body: &[u8],
        content_type: &str,
    ) -> (u16, String) {
        let test = Credentials::new("test", "test", None);
        self.signed_as(&test, region, service, method, path, body, content_type)
    }

    /// [`signed_in`](Self::signed_in) with given credentials.
    #[allow(clippy::too_many_arguments)]
    pub fn signed_as(
        &self,
        credentials: &Credentials,
        region: &str,
        service: &str,
        method: &str,
        path: &str,
        body: &[u8],
        content_type: &str,
    ) -> (u16, String) {
        let signer = Signer::new(credentials, region, service);
        let url = format!("{}{path}", self.url);
        let signed = signer
            .sign(method, &url, &[("content-type", content_type)], body)
            .unwrap();
        blocking(async {
            let mut headers = reqwest::header::HeaderMap::new();
            headers.insert("content-type", content_type.parse().unwrap());
            signed.apply_to(&mut headers);
            let response = reqwest::Client::new()
                .request(method.parse().unwrap(), &url)
                .headers(headers)
                .body(body.to_vec())
                .send()
                .await
                .expect("moto answers");
            let status = response.status().as_u16();
            (status, response.text().await.unwrap())
        })
    }

    /// GetFunction, straight from the API.
    pub fn get_function(&self, name: &str) -> serde_json::Value {
        let (status, text) = self.signed_in(
            "us-east-1",
            "lambda",
            "GET",
            &format!("/2015-03-31/functions/{name}"),
            b"",
            "application/json",
        );
        assert_eq!(status, 200, "GetFunction {name}: {text}");
        serde_json::from_str(&text).unwrap()
    }

    /// The environment `ferry` gets: credentials for moto, and nothing of this machine's AWS
    /// settings (`home` stands in for `~`, so no `~/.aws` is read).
    pub fn env(&self, home: &std::path::Path) -> Vec<(String, String)> {
        vec![
            ("AWS_ACCESS_KEY_ID".into(), "test".into()),
            ("AWS_SECRET_ACCESS_KEY".into(), "test".into()),
            ("AWS_REGION".into(), "us-east-1".into()),
            ("AWS_ENDPOINT_URL_LAMBDA".into(), self.url.clone()),
            // Profiles that assume roles call STS: moto's.
            ("AWS_ENDPOINT_URL_STS".into(), self.url.clone()),
            ("AWS_ENDPOINT_URL_S3".into(), self.url.clone()),
            // No instance metadata service to wait for when nothing else gives credentials.
            ("AWS_EC2_METADATA_DISABLED".into(), "true".into()),
            ("HOME".into(), home.display().to_string()),
        ]
    }

    /// Creates the S3 bucket `name` in `region`, with versioning on, so that
    /// [`object_versions`](Self::object_versions) counts every upload of a key.
    pub fn create_versioned_bucket(&self, region: &str, name: &str) {
        // us-east-1 is the one region that takes no location constraint.
        let configuration = if region == "us-east-1" {
            String::new()
        } else {
            format!(
                "<CreateBucketConfiguration><LocationConstraint>{region}</LocationConstraint></CreateBucketConfiguration>"
            )
        };
        let (status, text) =
            self.signed_s3(region, "PUT", &format!("/{name}"), configuration.as_bytes());
        assert_eq!(status, 200, "CreateBucket {name}: {text}");
        let versioning =
            "<VersioningConfiguration><Status>Enabled</Status></VersioningConfiguration>";
        let (status, text) = self.signed_s3(
            region,
            "PUT",
            &format!("/{name}?versioning"),
            versioning.as_bytes(),
        );
        assert_eq!(status, 200, "PutBucketVersioning {name}: {text}");
    }

    /// Every version of every object under `prefix` in `bucket` (deleted ones included, delete
    /// markers not), by key: how often each key was written.
    pub fn object_versions(&self, region: &str, bucket: &str, prefix: &str) -> Vec<String> {
        let (status, text) = self.signed_s3(
            region,
            "GET",
            &format!("/{bucket}?versions&prefix={prefix}"),
            b"",
        );
        assert_eq!(status, 200, "ListObjectVersions {bucket}: {text}");
        text.split("<Version>")
            .skip(1)
            .filter_map(|version| {
                let (_, rest) = version.split_once("<Key>")?;
                rest.split_once("</Key>").map(|(key, _)| key.to_owned())
            })
            .collect()
    }

    /// The keys of the objects under `prefix` in `bucket` now.
    pub fn object_keys(&self, region: &str, bucket: &str, prefix: &str) -> Vec<String> {
        let (status, text) = self.signed_s3(
            region,
            "GET",
            &format!("/{bucket}?list-type=2&prefix={prefix}"),
            b"",
        );
        assert_eq!(status, 200, "ListObjectsV2 {bucket}: {text}");
        text.split("<Key>")
            .skip(1)
            .filter_map(|rest| rest.split_once("</Key>").map(|(key, _)| key.to_owned()))
            .collect()
    }

    /// The keys left under `prefix` in `bucket` once none are, or after 10 s: what callers that
    /// delete objects in the background have not deleted.
    pub fn keys_left(&self, region: &str, bucket: &str, prefix: &str) -> Vec<String> {
        let started = std::time::Instant::now();
        loop {
            let left = self.object_keys(region, bucket, prefix);
            if left.is_empty() || started.elapsed() > std::time::Duration::from_secs(10) {
                return left;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
    }

    fn signed_s3(&self, region: &str, method: &str, path: &str, body: &[u8]) -> (u16, String) {
        let test = Credentials::new("test", "test", None);
        let signer = Signer::new(&test, region, "s3").with_content_sha256(true);
        let url = format!("{}{path}", self.url);
        let signed = signer.sign(method, &url, &[], body).unwrap();
        blocking(async {
            let mut headers = reqwest::header::HeaderMap::new();
            signed.apply_to(&mut headers);
            let response = reqwest::Client::new()
                .request(method.parse().unwrap(), &url)
                .headers(headers)
                .body(body.to_vec())
                .send()
                .await
                .expect("moto answers");
            let status = response.status().as_u16();
            (status, response.text().await.unwrap())
        })
    }

    /// ListFunctions: the configuration of every function in `region`.
    pub fn list_functions(&self, region: &str) -> Vec<serde_json::Value> {
        let (status, text) = self.signed_in(
            region,
            "lambda",
            "GET",
            "/2015-03-31/functions/",
            b"",
            "application/json",
        );
        assert_eq!(status, 200, "ListFunctions: {text}");
        let list: serde_json::Value = serde_json::from_str(&text).unwrap();
        list["Functions"].as_array().cloned().unwrap_or_default()
    }
}

/// Runs a request to completion on a runtime of its own, on a thread of its own: the helpers
/// are called from sync tests and from async ones alike.
fn blocking<T: Send>(request: impl std::future::Future<Output = T> + Send) -> T {
    std::thread::scope(|scope| {
        scope
            .spawn(|| {
                tokio::runtime::Builder::new_current_thread()
                    .enable_all()
                    .build()
                    .unwrap()
                    .block_on(request)
            })
            .join()
            .unwrap()
    })
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
