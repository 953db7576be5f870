//! JSON against Protocol Buffers under load, as the article compared them: wrk (Debian's `wrk`)
//! against the accounts service on loopback at 20, 50, 100, 200 and 300 concurrent connections,
//! 4 s each, for the article's three routes, and a client's decoding of each answer (20 runs).
//! The measurements are `accounts::load`'s, which `scripts/reproduce.sh accounts` runs too.
//!
//! `cargo bench -p accounts --bench load` prints Markdown tables, writes them to
//! `target/ferry-bench/accounts-load.md` and plots throughput to
//! `target/ferry-bench/accounts-load.svg`. Server and load generator share the machine's cores,
//! so compare the two formats with each other rather than the absolute numbers with another
//! machine's.

use accounts::load::{self, CONNECTIONS, FORMATS, LoadRun, ROUTES, Server};
use plotters::prelude::*;
use std::fmt::Write as _;

fn plot(runs: &[LoadRun], path: &std::path::Path) -> Result<(), Box<dyn std::error::Error>> {
    let root = SVGBackend::new(path, (1440, 420)).into_drawing_area();
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
                .map(|r| (r.connections, r.requests_per_second))
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
    let server =
        Server::start(env!("CARGO_BIN_EXE_accounts").as_ref()).unwrap_or_else(|e| panic!("{e}"));
    let mut report = String::from(
        "| route | format | bytes | decode min | median | max |\n|---|---|---|---|---|---|\n",
    );
    for route in ROUTES {
        for &format in FORMATS {
            let run = load::decode(&server.address, route, format, 20, 3)
                .unwrap_or_else(|e| panic!("{e}"));
            let mut seconds = run.decode_seconds.clone();
            seconds.sort_by(f64::total_cmp);
            let _ = writeln!(
                report,
                "| `{route}` | {} | {} | {:.2} ms | {:.2} ms | {:.2} ms |",
                format.0,
                run.bytes,
                seconds[0] * 1e3,
                seconds[seconds.len() / 2] * 1e3,
                seconds[seconds.len() - 1] * 1e3
            );
        }
    }
    report.push_str(
        "\n| route | format | connections | requests | req/s | min | mean | max | p50 | p95 | p99 | timeouts / errors |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n",
    );
    let mut runs = Vec::new();
    for route in ROUTES {
        for &format in FORMATS {
            for &connections in CONNECTIONS {
                let run = load::wrk(&server.address, route, format, connections, 4, 2)
                    .unwrap_or_else(|e| panic!("{e}"));
                let _ = writeln!(
                    report,
                    "| `{route}` | {} | {connections} | {} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {} / {} |",
                    format.0,
                    run.requests,
                    run.requests_per_second,
                    run.min_ms,
                    run.mean_ms,
                    run.max_ms,
                    run.p50_ms,
                    run.p95_ms,
                    run.p99_ms,
                    run.timeouts,
                    run.errors
                );
                eprintln!(
                    "{route} {} {connections}: {:.1}/s",
                    format.0, run.requests_per_second
                );
                runs.push(run);
            }
        }
    }
    drop(server);

    println!("\n{report}");
    let out = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/ferry-bench");
    let _ = std::fs::create_dir_all(&out);
    let _ = std::fs::write(out.join("accounts-load.md"), &report);
    if let Err(error) = plot(&runs, &out.join("accounts-load.svg")) {
        eprintln!("cannot draw the plot: {error}");
    }
}
