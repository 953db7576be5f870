//! What the Lambda client benches share: an Invoke endpoint
//! (`POST /2015-03-31/functions/{name}/invocations`) that answers `null` at once, so that the
//! client's own cost shows. It runs in a child process (the bench re-executed), so client and
//! endpoint are separate processes sharing the machine's cores, as against a real endpoint.

use std::io::{BufRead, BufReader};
use std::process::{Child, Command, Stdio};

const SERVE: &str = "FERRY_BENCH_INSTANT_ENDPOINT";

/// The endpoint's process, killed when dropped (or when the bench dies first).
pub struct Endpoint {
    child: Child,
    /// Its base URL, `http://127.0.0.1:PORT`.
    pub url: String,
}

impl Drop for Endpoint {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// In the re-executed bench, serves the endpoint until killed and returns true; in the bench
/// itself, returns false at once. Call it first in `main`.
pub fn serve_if_asked() -> bool {
    if std::env::var_os(SERVE).is_none() {
        return false;
    }
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let app = axum::Router::new().route(
            "/2015-03-31/functions/{name}/invocations",
            axum::routing::post(|| async { ([("content-type", "application/json")], "null") }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        println!("{}", listener.local_addr().unwrap());
        axum::serve(listener, app).await.unwrap();
    });
    true
}

/// Starts the endpoint in a child process.
pub fn start() -> Endpoint {
    use std::os::unix::process::CommandExt as _;
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.env(SERVE, "1").stdout(Stdio::piped());
    // SAFETY: prctl is async-signal-safe and touches only the child being started.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = command.spawn().expect("start the endpoint");
    let mut address = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut address)
        .unwrap();
    let url = format!("http://{}", address.trim());
    Endpoint { child, url }
}
