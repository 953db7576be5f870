//! Across hosts, not only across ports: a host program and three HTTP services, each in a
//! network namespace of its own, joined by veth pairs to a bridge in a fifth, with addresses from
//! one /24 that exists only inside them (nothing is routed out, the machine's own namespace is
//! not touched). The `across-hosts` program runs a chained flow through the three services and a
//! fan-out onto each; while slow ones are in flight the third service's link goes down, so its
//! packets vanish (no refusal, no reset: what a host that dies or drops off the network looks
//! like). Every call must end, within a bound, in what docs/reliability.md says: `unavailable`
//! after the retry policy's attempts, naming the cut-off function and its URL, the other hosts'
//! work unharmed; once the link is back, the same calls succeed.
//!
//! Needs root and iproute2 (`ip netns`); skipped with a message where namespaces cannot be made,
//! except under CI (`CI` set), where that is a failure.

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::Value;

/// The /24 the hosts share; it exists only in the test's namespaces.
const SUBNET: &str = "10.213.13";
const PORT: u16 = 8080;
/// How long a silent peer is given, for every participant (`FERRY_HTTP_PEER_TIMEOUT_MS`).
const PEER_TIMEOUT: Duration = Duration::from_secs(2);
/// How long each step of the slow calls sleeps: longer than the peer timeout, so a healthy but
/// silent connection outlives it.
const STEP: Duration = Duration::from_millis(2500);
const FLOWS: usize = 4;
const TASKS: usize = 6;
/// The retry policy's attempts (`RetryPolicy::default()`).
const ATTEMPTS: usize = 4;

/// The services: namespace suffix, address, the function each serves.
const SERVICES: [(&str, &str, &str); 3] = [
    ("svc1", "11", "first_hop"),
    ("svc2", "12", "second_hop"),
    ("svc3", "13", "third_hop"),
];

fn address(host: &str) -> String {
    format!("{SUBNET}.{host}")
}

fn url(host: &str, function: &str) -> String {
    format!("http://{}:{PORT}/functions/{function}", address(host))
}

/// Runs `ip` with `args`: its error output when it fails.
fn ip(args: &[&str]) -> Result<(), String> {
    let output = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run `ip`: {e}"))?;
    if output.status.success() {
        Ok(())
    } else {
        Err(format!(
            "`ip {}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// A stream of a child's lines: each kept, and sent on as it comes.
struct Lines {
    all: Arc<Mutex<Vec<String>>>,
    next: Receiver<String>,
}

impl Lines {
    fn read(stream: impl Read + Send + 'static) -> Self {
        let all = Arc::new(Mutex::new(Vec::new()));
        let (send, next) = channel();
        let kept = all.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stream).lines().map_while(Result::ok) {
                kept.lock().unwrap().push(line.clone());
                let _ = send.send(line);
            }
        });
        Self { all, next }
    }

    /// The next line, within `deadline`; `what` says what was awaited.
    fn next_by(&self, deadline: Instant, what: &str) -> String {
        let left = deadline.saturating_duration_since(Instant::now());
        self.next
            .recv_timeout(left)
            .unwrap_or_else(|e| panic!("{what}: no line in time ({e})"))
    }

    fn all(&self) -> Vec<String> {
        self.all.lock().unwrap().clone()
    }
}

/// The test's hosts: its namespaces and the processes in them, all removed when it ends,
/// whether it passed or not.
struct Hosts {
    /// Unique to this run: namespaces are machine-wide.
    prefix: String,
    namespaces: Vec<String>,
    children: Vec<Child>,
}

impl Hosts {
    fn ns(&self, host: &str) -> String {
        format!("{}-{host}", self.prefix)
    }

    /// A bridge in a namespace of its own, and one namespace per host joined to it by a veth
    /// pair: `eth0` in the host at `SUBNET.{last}`, its peer a port of the bridge.
    fn build(hosts: &[(&str, &str)]) -> Result<Self, String> {
        let mut built = Self {
            prefix: format!("ferry-hosts-{}", std::process::id()),
            namespaces: Vec::new(),
            children: Vec::new(),
        };
        let lan = built.ns("lan");
        ip(&["netns", "add", &lan])?;
        built.namespaces.push(lan.clone());
        ip(&["-n", &lan, "link", "add", "br0", "type", "bridge"])?;
        ip(&["-n", &lan, "link", "set", "br0", "up"])?;
        for (host, last) in hosts {
            let ns = built.ns(host);
            ip(&["netns", "add", &ns])?;
            built.namespaces.push(ns.clone());
            let port = format!("to-{host}");
            ip(&[
                "-n", &lan, "link", "add", &port, "type", "veth", "peer", "name", "eth0", "netns",
                &ns,
            ])?;
            ip(&["-n", &lan, "link", "set", &port, "master", "br0", "up"])?;
            let cidr = format!("{}/24", address(last));
            ip(&["-n", &ns, "addr", "add", &cidr, "dev", "eth0"])?;
            ip(&["-n", &ns, "link", "set", "eth0", "up"])?;
            ip(&["-n", &ns, "link", "set", "lo", "up"])?;
        }
        Ok(built)
    }

    /// `program` in `host`'s namespace, with `env`; killed with the test.
    fn start(&mut self, host: &str, program: &str, args: &[&str], env: &[(&str, String)]) -> usize {
        let mut command = Command::new("ip");
        command
            .args(["netns", "exec", &self.ns(host), program])
            .args(args)
            .env_remove("FERRY_ROLE")
            .env_remove("FERRY_BACKEND")
            .env_remove("FERRY_HTTP_URL")
            .env_remove("AWS_LAMBDA_RUNTIME_API")
            .envs(env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        // Should the test itself be killed, its hosts' processes go with it.
        // SAFETY: `prctl` is async-signal-safe and touches nothing of the parent's.
        unsafe {
            command.pre_exec(|| {
                libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
                Ok(())
            });
        }
        self.children
            .push(command.spawn().expect("start a program in a namespace"));
        self.children.len() - 1
    }

    /// Takes `host`'s link down (`up: false`) or up again.
    fn link(&self, host: &str, up: bool) {
        let ns = self.ns(host);
        let state = if up { "up" } else { "down" };
        ip(&["-n", &ns, "link", "set", "eth0", state]).unwrap();
    }
}

impl Drop for Hosts {
    fn drop(&mut self) {
        for child in &mut self.children {
            let _ = child.kill();
            let _ = child.wait();
        }
        for ns in self.namespaces.iter().rev() {
            if let Err(e) = ip(&["netns", "del", ns]) {
                eprintln!("cleaning up: {e}");
            }
        }
    }
}

/// The hosts, or `None` (the test skipped) where namespaces, veth pairs or a bridge cannot be
/// made: not root, no iproute2, no such kernel module. Under CI that is a failure.
fn hosts_or_skip(hosts: &[(&str, &str)]) -> Option<Hosts> {
    // SAFETY: `geteuid` has no preconditions.
    let built = if unsafe { libc::geteuid() } != 0 {
        Err("network namespaces need root".to_owned())
    } else {
        Hosts::build(hosts)
    };
    match built {
        Ok(hosts) => Some(hosts),
        Err(why) => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI must run the multi-host test, but its hosts cannot be made: {why}"
            );
            eprintln!(
                "SKIPPED: the multi-host test cannot make its hosts here ({why}); \
                 it needs root and iproute2 (`ip netns`)"
            );
            None
        }
    }
}

fn json(line: &str) -> Value {
    serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"))
}

/// Lines of `lines` with `field` equal to `value`.
fn with<'a>(lines: &'a [Value], field: &str, value: &str) -> Vec<&'a Value> {
    lines.iter().filter(|l| l[field] == value).collect()
}

fn hops(line: &Value) -> Vec<String> {
    serde_json::from_value(line["hops"].clone())
        .unwrap_or_else(|_| panic!("no hops, so it failed: {line}"))
}

/// How many `retrying` logs in `log` are about `url`.
fn retries_of(log: &[String], url: &str) -> usize {
    log.iter()
        .filter(|l| l.contains("retrying") && l.contains(url))
        .count()
}

#[test]
fn a_host_cut_off_mid_run_fails_its_calls_by_name_and_nothing_hangs() {
    let started = Instant::now();
    let hosts = [
        ("host", "10"),
        ("svc1", "11"),
        ("svc2", "12"),
        ("svc3", "13"),
    ];
    let Some(mut hosts) = hosts_or_skip(&hosts) else {
        return;
    };
    let program = env!("CARGO_BIN_EXE_across-hosts");
    let routes = SERVICES
        .iter()
        .map(|(_, last, function)| format!("{function}={}", url(last, function)))
        .collect::<Vec<_>>()
        .join(",");
    let common = |name: &str| {
        vec![
            ("FERRY_BACKEND", "http".to_owned()),
            ("FERRY_HTTP_ROUTES", routes.clone()),
            (
                "FERRY_HTTP_PEER_TIMEOUT_MS",
                PEER_TIMEOUT.as_millis().to_string(),
            ),
            ("FERRY_LOG", "ferry::platform::retry=debug".to_owned()),
            ("ACROSS_HOSTS_NAME", name.to_owned()),
        ]
    };

    // The services: each announces where it listens once it does.
    let mut logs = Vec::new();
    for (host, last, _) in SERVICES {
        let mut env = common(host);
        env.push(("FERRY_ROLE", "http".to_owned()));
        env.push(("FERRY_LISTEN", format!("{}:{PORT}", address(last))));
        let child = hosts.start(host, program, &[], &env);
        let log = Lines::read(hosts.children[child].stderr.take().unwrap());
        // Drained, should a service ever print: a full pipe would stall it.
        let _ = Lines::read(hosts.children[child].stdout.take().unwrap());
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            let line = log.next_by(deadline, &format!("{host} starting"));
            if line.starts_with("ferry: listening on ") {
                assert_eq!(
                    line,
                    format!("ferry: listening on http://{}:{PORT}", address(last))
                );
                break;
            }
        }
        logs.push(log);
    }

    // The host program.
    let step_ms = STEP.as_millis().to_string();
    let (flows, tasks) = (FLOWS.to_string(), TASKS.to_string());
    let args = ["--step-ms", &step_ms, "--flows", &flows, "--tasks", &tasks];
    let child = hosts.start("host", program, &args, &common("host"));
    let out = Lines::read(hosts.children[child].stdout.take().unwrap());
    let host_log = Lines::read(hosts.children[child].stderr.take().unwrap());
    let mut stdin = hosts.children[child].stdin.take().unwrap();
    let until = |event: &str, limit: Duration| -> Vec<Value> {
        let deadline = Instant::now() + limit;
        let mut lines = Vec::new();
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let Ok(line) = out.next.recv_timeout(left) else {
                panic!("no `{event}` within {limit:?}, a call hung; so far: {lines:#?}");
            };
            let line = json(&line);
            if line["event"] == event {
                return lines;
            }
            lines.push(line);
        }
    };

    // 1. All hosts reachable.
    let healthy = until("in-flight", Duration::from_secs(30));
    for what in ["chained", "orchestrated"] {
        let flow = with(&healthy, "what", what);
        assert_eq!(flow.len(), 1, "{healthy:?}");
        assert_eq!(hops(flow[0]), ["svc1", "svc2", "svc3"], "{what}");
    }
    for (host, _, function) in SERVICES {
        let tasks = with(&healthy, "function", function);
        assert_eq!(tasks.len(), 4, "{healthy:?}");
        for task in tasks {
            assert_eq!(hops(task), [host], "{task}");
        }
    }

    // 2. The slow calls are in flight: the third host drops off the network.
    hosts.link("svc3", false);
    let cut = Instant::now();
    let load = until("waiting", Duration::from_secs(120));
    let ended = cut.elapsed();
    eprintln!("after the cut, every call ended within {ended:?}");
    for line in &load {
        eprintln!("{line}");
    }
    let third = url("13", "third_hop");
    let third_id = "across_hosts::third_hop";
    let is_cut_off = |line: &Value| {
        let error = &line["error"];
        assert_eq!(error["kind"], "unavailable", "{line}");
        assert_eq!(error["function"], third_id, "{line}");
        let message = error["message"].as_str().unwrap();
        assert!(message.contains(&third), "names the cut-off URL: {line}");
        // And why: the peer timeout ran out, or the neighbour's address could not be resolved.
        assert!(
            message.contains("`FERRY_HTTP_PEER_TIMEOUT_MS`")
                || message.contains("No route to host"),
            "says why: {line}"
        );
    };
    // Each flow ran its first two steps, then could not reach the third host.
    let flows = with(&load, "what", "chained");
    assert_eq!(flows.len(), FLOWS, "{load:?}");
    for flow in flows {
        is_cut_off(flow);
        assert_eq!(flow["error"]["stage"], 2, "{flow}");
        assert!(
            flow["ms"].as_u64().unwrap() >= 2 * STEP.as_millis() as u64,
            "the first two steps ran: {flow}"
        );
    }
    // The fan-outs onto the other hosts succeeded, though their connections stayed silent
    // longer than the peer timeout; each task onto the third host failed, naming it.
    for (host, _, function) in SERVICES {
        let tasks = with(&load, "function", function);
        assert_eq!(tasks.len(), TASKS, "{load:?}");
        for (index, task) in tasks.iter().enumerate() {
            assert_eq!(task["task"], index, "{task}");
            if host == "svc3" {
                is_cut_off(task);
                assert_eq!(task["error"]["task"], index, "{task}");
            } else {
                assert_eq!(hops(task), [host], "{task}");
            }
        }
    }
    // The retry policy, once per hop: the second service tried the third host 4 times per
    // flow, the host 4 times per task; nobody tried again what a further hop had given up on.
    let (svc1_log, svc2_log, host_log) = (logs[0].all(), logs[1].all(), host_log.all());
    assert_eq!(
        retries_of(&svc2_log, &third),
        FLOWS * (ATTEMPTS - 1),
        "{svc2_log:#?}"
    );
    assert_eq!(
        retries_of(&host_log, &third),
        TASKS * (ATTEMPTS - 1),
        "{host_log:#?}"
    );
    let retried = |log: &[String]| log.iter().filter(|l| l.contains("retrying")).count();
    assert_eq!(retried(&svc1_log), 0, "{svc1_log:#?}");
    assert_eq!(
        retried(&host_log),
        TASKS * (ATTEMPTS - 1),
        "only the third host's tasks were retried: {host_log:#?}"
    );
    // Bounded: two steps, then one peer timeout per attempt (and backoff); generously, for a
    // busy machine.
    let bound = 2 * STEP + ATTEMPTS as u32 * PEER_TIMEOUT + Duration::from_secs(10);
    assert!(ended < bound, "{ended:?} after the cut, bound {bound:?}");

    // 3. The link back: the same calls succeed (no dead connection kept in a pool).
    hosts.link("svc3", true);
    writeln!(stdin, "restored").unwrap();
    let recovered = until("done", Duration::from_secs(30));
    let flow = with(&recovered, "what", "chained");
    assert_eq!(hops(flow[0]), ["svc1", "svc2", "svc3"], "{recovered:?}");
    let tasks = with(&recovered, "what", "fan-out");
    assert_eq!(tasks.len(), 4, "{recovered:?}");
    for task in tasks {
        assert_eq!(hops(task), ["svc3"], "{task}");
    }
    let status = {
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(status) = hosts.children[child].try_wait().unwrap() {
                break status;
            }
            assert!(Instant::now() < deadline, "the host program did not exit");
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    assert!(status.success(), "{status}: {:#?}", host_log);
    eprintln!("took {:?}", started.elapsed());
}
