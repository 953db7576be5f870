//! A real `redis-server` for tests: on a free loopback port, keeping nothing on disk, killed
//! when dropped. The Debian package `redis-server` provides it (`scripts/test.sh` installs it).

use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running `redis-server`.
#[derive(Debug)]
pub struct RedisServer {
    child: Child,
    port: u16,
}

impl RedisServer {
    /// Starts one whose working directory is `dir` (it writes nothing there).
    pub fn start(dir: &Path) -> Self {
        // The port is free when chosen; another process may take it before redis binds it,
        // so a server that exits at once is started again on another port.
        for _ in 0..5 {
            let port = free_port();
            let mut child = Command::new("redis-server")
                .args(["--bind", "127.0.0.1", "--port", &port.to_string()])
                .args(["--save", "", "--appendonly", "no"])
                .arg("--dir")
                .arg(dir)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .expect("redis-server is installed (`apt-get install redis-server`; scripts/test.sh does it)");
            let started = Instant::now();
            loop {
                if TcpStream::connect(("127.0.0.1", port)).is_ok() {
                    return Self { child, port };
                }
                if child.try_wait().expect("redis-server's status").is_some() {
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(30),
                    "redis-server never listened"
                );
                std::thread::sleep(Duration::from_millis(10));
            }
        }
        panic!("redis-server did not start on any of 5 free ports");
    }

    /// Its URL, for `FERRY_REDIS_URL`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A loopback port nobody listens on now.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .expect("free port")
        .port()
}
