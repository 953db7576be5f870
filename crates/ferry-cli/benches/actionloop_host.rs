//! `ferry actionloop-host` with a Python ActionLoop executable that waits 50 ms per activation:
//! one copy and one client against 8 copies and 8 clients (the intra-concurrency the official
//! proxy lacks).
//!
//! `cargo bench -p ferry-cli --bench actionloop_host` prints a Markdown table (also written to
//! `target/ferry-bench/actionloop_host.md`).

use std::fmt::Write as _;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::json;

const RUN_FOR: Duration = Duration::from_secs(3);

fn python_action() -> String {
    let output = Command::new("python3")
        .args(["-c", "import sys; print(sys.executable)"])
        .output()
        .expect("python3");
    let python = String::from_utf8(output.stdout).unwrap();
    format!(
        "#!{}\nimport os, sys, time\nresults = os.fdopen(3, 'w')\nif os.environ.get('__OW_WAIT_FOR_ACK'):\n    results.write('{{\"ok\": true}}\\n'); results.flush()\nfor line in sys.stdin:\n    time.sleep(0.05)\n    results.write('{{\"done\": true}}\\n'); results.flush()\n",
        python.trim()
    )
}

fn zipped(exec: &[u8]) -> String {
    let mut buffer = std::io::Cursor::new(Vec::new());
    {
        let mut zip = zip::ZipWriter::new(&mut buffer);
        let options = zip::write::SimpleFileOptions::default().unix_permissions(0o755);
        zip.start_file("exec", options).unwrap();
        zip.write_all(exec).unwrap();
        zip.finish().unwrap();
    }
    base64_simd::STANDARD.encode_to_string(buffer.into_inner())
}

struct Host {
    child: Child,
    base: String,
}

impl Host {
    fn start(copies: u32) -> Self {
        let mut child = Command::new(env!("CARGO_BIN_EXE_ferry"))
            .args([
                "actionloop-host",
                "--listen",
                "127.0.0.1:0",
                "--copies",
                &copies.to_string(),
                "--wait-for-ack",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start the host");
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let base = lines
            .by_ref()
            .map_while(Result::ok)
            .find_map(|l| l.strip_prefix("ferry: listening on ").map(str::to_owned))
            .expect("address");
        std::thread::spawn(move || lines.for_each(drop));
        Self { child, base }
    }
}

impl Drop for Host {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn throughput(copies: u32, clients: usize) -> f64 {
    let host = Host::start(copies);
    let http = reqwest::Client::new();
    let init = json!({"value": {"code": zipped(python_action().as_bytes()), "binary": true}});
    let status = http
        .post(format!("{}/init", host.base))
        .json(&init)
        .send()
        .await
        .unwrap()
        .status();
    assert_eq!(status, 200);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..clients {
        let url = format!("{}/run", host.base);
        tasks.push(tokio::spawn(async move {
            let http = reqwest::Client::new();
            let mut done = 0u64;
            while started.elapsed() < RUN_FOR {
                let response = http
                    .post(&url)
                    .json(&json!({"value": {}}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(response.status(), 200);
                let _ = response.bytes().await;
                done += 1;
            }
            done
        }));
    }
    let mut total = 0;
    for task in tasks {
        total += task.await.unwrap();
    }
    total as f64 / started.elapsed().as_secs_f64()
}

fn main() {
    let runtime = tokio::runtime::Runtime::new().unwrap();
    let (one, eight) = runtime.block_on(async {
        tokio::spawn(async { (throughput(1, 1).await, throughput(8, 8).await) })
            .await
            .unwrap()
    });
    let mut report = String::from("| measurement | value |\n|---|---|\n");
    let _ = writeln!(
        report,
        "| Python action waiting 50 ms, 1 copy, 1 client | {one:.1} activations/s |"
    );
    let _ = writeln!(
        report,
        "| same, 8 copies, 8 clients | {eight:.1} activations/s |"
    );
    let _ = writeln!(report, "| ratio | {:.2}x |", eight / one);
    println!("\n{report}");
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/ferry-bench");
    let _ = std::fs::create_dir_all(&dir);
    let _ = std::fs::write(dir.join("actionloop_host.md"), &report);
}
