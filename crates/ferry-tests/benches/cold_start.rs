//! Size and cold start of Lambda `bootstrap` binaries: the same program built with every ferry
//! platform and with the `lambda` feature alone (`examples/lambda-only`).
//!
//! Cold start is the time from spawning the binary to its first `GET
//! /2018-06-01/runtime/invocation/next` on a Runtime API listening in this process; the binaries
//! are started in turn, so machine noise falls on both alike.
//!
//! ```sh
//! cargo build --release -p lambda-only --features all-platforms
//! cp target/release/lambda-only target/lambda-only-all-platforms
//! cargo build --release -p lambda-only
//! cargo bench -p ferry-tests --bench cold_start -- \
//!     $PWD/target/lambda-only-all-platforms $PWD/target/release/lambda-only
//! ```
//!
//! (Absolute paths: cargo runs the benchmark in the package's folder.) `PATH#HANDLER` gives a
//! bootstrap's `_HANDLER` (default `count_inside`); the Lambda variables a bootstrap may require
//! are set, so any custom runtime can be compared (a `lambda_runtime` one, say).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const RUNS: usize = 60;

/// Spawns `binary` as a Lambda bootstrap and returns how long it took to ask for its first
/// invocation.
fn cold_start(binary: &Path, handler: &str, api: &TcpListener) -> Duration {
    let address = api.local_addr().unwrap();
    let started = Instant::now();
    let mut child = Command::new(binary)
        .env_clear()
        .env("AWS_LAMBDA_RUNTIME_API", address.to_string())
        // What Lambda sets, so that any bootstrap starts (`lambda_runtime` needs all three).
        .env("AWS_LAMBDA_FUNCTION_NAME", "cold-start")
        .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
        .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
        .env("_HANDLER", handler)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start the bootstrap");
    let (stream, _) = api.accept().expect("the bootstrap connects");
    let mut line = String::new();
    BufReader::new(&stream).read_line(&mut line).unwrap();
    let elapsed = started.elapsed();
    assert!(
        line.starts_with("GET /2018-06-01/runtime/invocation/next"),
        "{line}"
    );
    let _ = (&stream).write_all(b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 0\r\n\r\n");
    let _ = child.kill();
    let _ = child.wait();
    elapsed
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn main() {
    // `path#handler` names the function a bootstrap serves (`count_inside` by default).
    let binaries: Vec<(String, String)> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with("--"))
        .map(|a| match a.split_once('#') {
            Some((path, handler)) => (path.to_owned(), handler.to_owned()),
            None => (a, "count_inside".to_owned()),
        })
        .collect();
    assert!(
        !binaries.is_empty(),
        "give the bootstrap binaries to compare (see the module docs)"
    );
    let api = TcpListener::bind("127.0.0.1:0").unwrap();
    let mut times: Vec<Vec<Duration>> = vec![Vec::new(); binaries.len()];
    for run in 0..RUNS + 5 {
        for (index, (binary, handler)) in binaries.iter().enumerate() {
            let time = cold_start(Path::new(binary), handler, &api);
            // The first runs warm the page cache.
            if run >= 5 {
                times[index].push(time);
            }
        }
    }
    println!("| binary | size | stripped | cold start p50 | p90 | min |");
    println!("| --- | ---: | ---: | ---: | ---: | ---: |");
    for ((binary, _), times) in binaries.iter().zip(&mut times) {
        times.sort();
        let size = std::fs::metadata(binary).unwrap().len();
        let stripped = std::env::temp_dir().join(format!("cold-start-{}", std::process::id()));
        std::fs::copy(binary, &stripped).unwrap();
        let stripped_size = Command::new("strip")
            .arg(&stripped)
            .status()
            .ok()
            .filter(std::process::ExitStatus::success)
            .and_then(|_| std::fs::metadata(&stripped).ok())
            .map_or_else(
                || "n/a".to_owned(),
                |m| format!("{:.1} MiB", m.len() as f64 / 1048576.0),
            );
        let _ = std::fs::remove_file(&stripped);
        println!(
            "| `{binary}` | {:.1} MiB | {stripped_size} | {:.2} ms | {:.2} ms | {:.2} ms |",
            size as f64 / 1048576.0,
            percentile(times, 0.5).as_secs_f64() * 1e3,
            percentile(times, 0.9).as_secs_f64() * 1e3,
            times[0].as_secs_f64() * 1e3,
        );
    }
}
