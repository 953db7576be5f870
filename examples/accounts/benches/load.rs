//! JSON against Protocol Buffers under load, as the article compared them: wrk (Debian's `wrk`)
//! against the accounts service on loopback at 20, 50, 100, 200 and 300 concurrent connections,
//! 4 s each, for `/account/1` (1,001 transactions) and `/accountList` (11,002).
//!
//! `cargo bench -p accounts --bench load` prints a Markdown table, writes it to
//! `target/ferry-bench/accounts-load.md` and plots throughput to `docs/accounts-load.svg`.
//! Server and load generator share the machine's cores, so compare the two formats with each
//! other rather than the absolute numbers with another machine's.

use std::fmt::Write as _;
use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use plotters::prelude::*;

const CLIENTS: &[u32] = &[20, 50, 100, 200, 300];
const ROUTES: &[&str] = &["/account/1", "/accountList"];
const FORMATS: &[(&str, &str)] = &[
    ("json", "application/json"),
    ("protobuf", "application/x-protobuf"),
];

struct Run {
    route: &'static str,
    format: &'static str,
    clients: u32,
    requests_per_second: f64,
    mean_ms: f64,
    p99_ms: f64,
    errors: u64,
}

/// A wrk duration (`812.34us`, `12.5ms`, `1.02s`) in milliseconds.
fn millis(text: &str) -> f64 {
    let (number, scale) = if let Some(n) = text.strip_suffix("us") {
        (n, 1e-3)
    } else if let Some(n) = text.strip_suffix("ms") {
        (n, 1.0)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1e3)
    } else {
        (text, 1.0)
    };
    number.parse::<f64>().unwrap_or(f64::NAN) * scale
}

fn wrk(address: &str, route: &'static str, format: (&'static str, &str), clients: u32) -> Run {
    let output = Command::new("wrk")
        .args([
            "-t2",
            &format!("-c{clients}"),
            "-d4s",
            "--timeout",
            "10s",
            "--latency",
        ])
        .args(["-H", &format!("Accept: {}", format.1)])
        .arg(format!("http://{address}{route}"))
        .output()
        .expect("wrk is installed (Debian package `wrk`)");
    let text = String::from_utf8_lossy(&output.stdout);
    let mut run = Run {
        route,
        format: format.0,
        clients,
        requests_per_second: 0.0,
        mean_ms: f64::NAN,
        p99_ms: f64::NAN,
        errors: 0,
    };
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["Requests/sec:", rate, ..] => run.requests_per_second = rate.parse().unwrap_or(0.0),
            // The thread-stats row (`Latency avg stdev max +/-`), not the distribution header.
            ["Latency", mean, _, _, _] => run.mean_ms = millis(mean),
            ["99%", p99] => run.p99_ms = millis(p99),
            ["Socket", "errors:", rest @ ..] => {
                run.errors += rest
                    .iter()
                    .filter_map(|w| w.trim_end_matches(',').parse::<u64>().ok())
                    .sum::<u64>();
            }
            ["Non-2xx", "or", "3xx", "responses:", n] => {
                run.errors += n.parse::<u64>().unwrap_or(0)
            }
            _ => {}
        }
    }
    eprintln!(
        "{route} {} {clients}: {:.1}/s mean {:.1} ms p99 {:.1} ms errors {}",
        format.0, run.requests_per_second, run.mean_ms, run.p99_ms, run.errors
    );
    run
}

fn plot(runs: &[Run], path: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (960, 420)).into_drawing_area();
    root.fill(&WHITE)?;
    let panels = root.split_evenly((1, ROUTES.len()));
    for (panel, route) in panels.iter().zip(ROUTES) {
        let top = runs
            .iter()
            .filter(|r| r.route == *route)
            .map(|r| r.requests_per_second)
            .fold(0.0, f64::max)
            * 1.15;
        let mut chart = ChartBuilder::on(panel)
            .caption(format!("{route}: requests/s"), ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(36)
            .y_label_area_size(56)
            .build_cartesian_2d(0u32..320u32, 0f64..top.max(1.0))?;
        chart
            .configure_mesh()
            .x_desc("concurrent connections")
            .y_desc("requests/s")
            .draw()?;
        for ((format, _), color) in FORMATS.iter().zip([RED, BLUE]) {
            let points: Vec<(u32, f64)> = runs
                .iter()
                .filter(|r| r.route == *route && r.format == *format)
                .map(|r| (r.clients, r.requests_per_second))
                .collect();
            chart
                .draw_series(LineSeries::new(points.clone(), color.stroke_width(2)))?
                .label(*format)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 18, y)], color));
            chart.draw_series(points.iter().map(|p| Circle::new(*p, 3, color.filled())))?;
        }
        chart
            .configure_series_labels()
            .background_style(WHITE.mix(0.8))
            .border_style(BLACK)
            .draw()?;
    }
    root.present()?;
    Ok(())
}

fn main() {
    let mut server = Command::new(env!("CARGO_BIN_EXE_accounts"))
        .env("FERRY_LISTEN", "127.0.0.1:0")
        .env_remove("FERRY_ROLE")
        .env_remove("AWS_LAMBDA_RUNTIME_API")
        .stderr(Stdio::piped())
        .spawn()
        .expect("start the accounts service");
    let mut lines = BufReader::new(server.stderr.take().unwrap()).lines();
    let address = lines
        .by_ref()
        .map_while(Result::ok)
        .find_map(|l| {
            l.strip_prefix("ferry: listening on http://")
                .map(str::to_owned)
        })
        .expect("the service announces its address");
    std::thread::spawn(move || lines.for_each(drop));

    let mut runs = Vec::new();
    for route in ROUTES {
        for format in FORMATS {
            for &clients in CLIENTS {
                runs.push(wrk(&address, route, *format, clients));
            }
        }
    }
    let _ = server.kill();
    let _ = server.wait();

    let mut report = String::from(
        "| route | connections | JSON req/s | protobuf req/s | JSON mean / p99 | protobuf mean / p99 | errors (JSON, protobuf) |\n|---|---|---|---|---|---|---|\n",
    );
    for route in ROUTES {
        for &clients in CLIENTS {
            let find = |format: &str| {
                runs.iter()
                    .find(|r| r.route == *route && r.format == format && r.clients == clients)
                    .expect("measured")
            };
            let (json, protobuf) = (find("json"), find("protobuf"));
            let _ = writeln!(
                report,
                "| `{route}` | {clients} | {:.1} | {:.1} | {:.1} / {:.1} ms | {:.1} / {:.1} ms | {}, {} |",
                json.requests_per_second,
                protobuf.requests_per_second,
                json.mean_ms,
                json.p99_ms,
                protobuf.mean_ms,
                protobuf.p99_ms,
                json.errors,
                protobuf.errors
            );
        }
    }
    println!("\n{report}");
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let _ = std::fs::create_dir_all(root.join("target/ferry-bench"));
    let _ = std::fs::write(root.join("target/ferry-bench/accounts-load.md"), &report);
    if let Err(error) = plot(&runs, &root.join("docs/accounts-load.svg")) {
        eprintln!("cannot draw the plot: {error}");
    }
}
