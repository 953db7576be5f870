//! The article's two measurements of the service, as the `accounts-load` binary
//! (`scripts/reproduce.sh accounts`) and `cargo bench -p accounts --bench load` make them:
//!
//! - [`wrk`]: Debian's `wrk` loads one route in one format at N connections (the article: Gatling,
//!   20…300 users) and reports Gatling's figures: min, mean, max, p50, p95, p99 and timeouts;
//! - [`decode`]: what a client pays: one route fetched in one format, then its body decoded into
//!   the prost or serde types 20 times (the article: its iOS client, 20 runs).
//!
//! Both talk to a [`Server`]: the `accounts` binary, started on a loopback port of its own.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Instant;

use prost::Message;
use serde::{Deserialize, Serialize};

use crate::model::{Account, AccountList};

/// The routes the article loaded, in its order.
pub const ROUTES: &[&str] = &["/account/1", "/account/2", "/accountList"];
/// The formats, by name and the `Accept` header that asks for them.
pub const FORMATS: &[(&str, &str)] = &[
    ("json", "application/json"),
    ("protobuf", "application/x-protobuf"),
];
/// The article's numbers of simultaneous users.
pub const CONNECTIONS: &[u32] = &[20, 50, 100, 200, 300];

/// What went wrong, as a sentence for the person running the measurement.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

const SUMMARY_SCRIPT: &str = include_str!("summary.lua");
const SUMMARY_PREFIX: &str = "ferry-wrk-summary ";

/// The accounts service in a process of its own, stopped when dropped.
#[derive(Debug)]
pub struct Server {
    child: Child,
    /// `host:port` on loopback.
    pub address: String,
}

impl Server {
    /// Starts `program` (the `accounts` binary) on a free loopback port and waits until it
    /// announces its address.
    pub fn start(program: &Path) -> Result<Server, Error> {
        let mut child = Command::new(program)
            .env("FERRY_LISTEN", "127.0.0.1:0")
            .env_remove("FERRY_ROLE")
            .env_remove("AWS_LAMBDA_RUNTIME_API")
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| {
                format!(
                    "cannot start the accounts service {}: {e}",
                    program.display()
                )
            })?;
        let mut lines = BufReader::new(child.stderr.take().expect("stderr is piped")).lines();
        let address = lines.by_ref().map_while(Result::ok).find_map(|line| {
            line.strip_prefix("ferry: listening on http://")
                .map(str::to_owned)
        });
        let Some(address) = address else {
            let _ = child.kill();
            let status = child.wait()?;
            return Err(
                format!("the accounts service exited ({status}) before it listened").into(),
            );
        };
        std::thread::spawn(move || lines.for_each(drop));
        Ok(Server { child, address })
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One wrk run: its parameters and Gatling's figures, latencies in milliseconds.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LoadRun {
    pub route: String,
    pub format: String,
    pub connections: u32,
    pub threads: u32,
    pub seconds: u32,
    pub timeout_seconds: u32,
    /// Responses received (wrk counts a timed-out request in `timeouts`, not here).
    pub requests: u64,
    pub requests_per_second: f64,
    pub bytes: u64,
    pub min_ms: f64,
    pub mean_ms: f64,
    pub max_ms: f64,
    pub stdev_ms: f64,
    pub p50_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    /// Requests without an answer within `timeout_seconds`.
    pub timeouts: u64,
    /// Connect, read and write errors and answers other than 2xx or 3xx.
    pub errors: u64,
}

/// What `summary.lua` prints.
#[derive(Deserialize)]
struct WrkSummary {
    requests: u64,
    duration_us: u64,
    bytes: u64,
    connect_errors: u64,
    read_errors: u64,
    write_errors: u64,
    status_errors: u64,
    timeouts: u64,
    min_us: f64,
    mean_us: f64,
    max_us: f64,
    stdev_us: f64,
    p50_us: f64,
    p95_us: f64,
    p99_us: f64,
}

/// Loads `route` on `address` for `seconds` with wrk: two threads, `connections` connections,
/// `Accept` as `format` asks. Fails if wrk is missing, fails or got no answer at all.
pub fn wrk(
    address: &str,
    route: &str,
    format: (&str, &str),
    connections: u32,
    seconds: u32,
    timeout_seconds: u32,
) -> Result<LoadRun, Error> {
    let threads = 2.min(connections);
    let script = std::env::temp_dir().join(format!("accounts-wrk-{}.lua", std::process::id()));
    std::fs::write(&script, SUMMARY_SCRIPT)?;
    let output = Command::new("wrk")
        .arg(format!("-t{threads}"))
        .arg(format!("-c{connections}"))
        .arg(format!("-d{seconds}s"))
        .arg(format!("--timeout={timeout_seconds}s"))
        .arg("--script")
        .arg(&script)
        .args(["-H", &format!("Accept: {}", format.1)])
        .arg(format!("http://{address}{route}"))
        .output();
    let _ = std::fs::remove_file(&script);
    let output = match output {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(
                "wrk is not installed: install Debian's `wrk` (apt-get install wrk)".into(),
            );
        }
        other => other.map_err(|e| format!("cannot run wrk: {e}"))?,
    };
    let stdout = String::from_utf8_lossy(&output.stdout);
    let failed = || {
        format!(
            "wrk {route} ({}, {connections} connections) failed ({}):\n{stdout}{}",
            format.0,
            output.status,
            String::from_utf8_lossy(&output.stderr)
        )
    };
    if !output.status.success() {
        return Err(failed().into());
    }
    let line = stdout
        .lines()
        .find_map(|line| line.strip_prefix(SUMMARY_PREFIX))
        .ok_or_else(failed)?;
    let summary: WrkSummary = serde_json::from_str(line)
        .map_err(|e| format!("{}\nits summary does not parse: {e}", failed()))?;
    if summary.requests == 0 {
        return Err(format!("{}\nno request was answered", failed()).into());
    }
    Ok(LoadRun {
        route: route.to_owned(),
        format: format.0.to_owned(),
        connections,
        threads,
        seconds,
        timeout_seconds,
        requests: summary.requests,
        requests_per_second: summary.requests as f64 / (summary.duration_us as f64 / 1e6),
        bytes: summary.bytes,
        min_ms: summary.min_us / 1e3,
        mean_ms: summary.mean_us / 1e3,
        max_ms: summary.max_us / 1e3,
        stdev_ms: summary.stdev_us / 1e3,
        p50_ms: summary.p50_us / 1e3,
        p95_ms: summary.p95_us / 1e3,
        p99_ms: summary.p99_us / 1e3,
        timeouts: summary.timeouts,
        errors: summary.connect_errors
            + summary.read_errors
            + summary.write_errors
            + summary.status_errors,
    })
}

/// One route in one format as a client sees it: the body's size and the seconds of each request
/// and of each decode of the body into the prost or serde types, after `warm_up` unmeasured ones.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DecodeRun {
    pub route: String,
    pub format: String,
    pub bytes: usize,
    pub transactions: usize,
    pub warm_up: u32,
    /// One request each: connect, send, receive the whole body.
    pub request_seconds: Vec<f64>,
    pub decode_seconds: Vec<f64>,
}

/// Fetches `route` as `format` and times `runs` requests and `runs` decodes of the body, after
/// `warm_up` of each; checks the body holds the service's transactions.
pub fn decode(
    address: &str,
    route: &str,
    format: (&str, &str),
    runs: u32,
    warm_up: u32,
) -> Result<DecodeRun, Error> {
    let expected = expected_transactions(route)?;
    let mut body = Vec::new();
    let mut request_seconds = Vec::new();
    for run in 0..warm_up + runs {
        let started = Instant::now();
        body = get(address, route, format.1)?;
        if run >= warm_up {
            request_seconds.push(started.elapsed().as_secs_f64());
        }
    }
    let transactions = decode_body(route, format.0, &body)?;
    if transactions != expected {
        return Err(format!(
            "{route} as {} decoded to {transactions} transactions, not the service's {expected}",
            format.0
        )
        .into());
    }
    let mut decode_seconds = Vec::new();
    for run in 0..warm_up + runs {
        let started = Instant::now();
        std::hint::black_box(decode_body(route, format.0, std::hint::black_box(&body))?);
        if run >= warm_up {
            decode_seconds.push(started.elapsed().as_secs_f64());
        }
    }
    Ok(DecodeRun {
        route: route.to_owned(),
        format: format.0.to_owned(),
        bytes: body.len(),
        transactions,
        warm_up,
        request_seconds,
        decode_seconds,
    })
}

fn expected_transactions(route: &str) -> Result<usize, Error> {
    let accounts = crate::data::accounts().accounts;
    let count = |account: &Account| account.transactions.len();
    match route {
        "/accountList" => Ok(accounts.iter().map(count).sum()),
        _ => route
            .strip_prefix("/account/")
            .and_then(|id| id.parse::<u64>().ok())
            .and_then(|id| accounts.iter().find(|a| a.id == id))
            .map(count)
            .ok_or_else(|| format!("{route} is not a route of the service").into()),
    }
}

/// Decodes a body of `route` into the service's types; the number of transactions it holds.
fn decode_body(route: &str, format: &str, body: &[u8]) -> Result<usize, Error> {
    let count = |account: &Account| account.transactions.len();
    Ok(match (route == "/accountList", format) {
        (true, "protobuf") => AccountList::decode(body)?.accounts.iter().map(count).sum(),
        (true, _) => serde_json::from_slice::<AccountList>(body)?
            .accounts
            .iter()
            .map(count)
            .sum(),
        (false, "protobuf") => count(&Account::decode(body)?),
        (false, _) => count(&serde_json::from_slice::<Account>(body)?),
    })
}

/// `GET route` on a connection of its own with `Accept: accept`: the body of a 200 answer.
fn get(address: &str, route: &str, accept: &str) -> Result<Vec<u8>, Error> {
    let mut stream = TcpStream::connect(address)?;
    write!(
        stream,
        "GET {route} HTTP/1.1\r\nHost: {address}\r\nAccept: {accept}\r\nConnection: close\r\n\r\n"
    )?;
    let mut response = Vec::new();
    stream.read_to_end(&mut response)?;
    let end = response
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("GET {route}: the answer has no end of headers"))?;
    let head = String::from_utf8_lossy(&response[..end]).to_ascii_lowercase();
    let body = response.split_off(end + 4);
    let status = head.lines().next().unwrap_or_default();
    if !status.starts_with("http/1.1 200") {
        return Err(format!("GET {route} as {accept} answered `{status}`").into());
    }
    if head.contains("transfer-encoding: chunked") {
        return Err(
            format!("GET {route}: a chunked answer, which this client does not read").into(),
        );
    }
    let length = head
        .lines()
        .find_map(|line| line.strip_prefix("content-length:"))
        .and_then(|n| n.trim().parse::<usize>().ok());
    if length.is_some_and(|length| length != body.len()) {
        return Err(format!("GET {route}: {} bytes, not its content-length", body.len()).into());
    }
    Ok(body)
}
