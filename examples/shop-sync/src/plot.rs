//! PNG plots of a results CSV: total time, syncs per second, and median and p99.9 latency
//! against the model count, one line per runner.
//!
//! plotters draws SVG; `rsvg-convert` (Debian's `librsvg2-bin`) renders it to PNG with the
//! system's fonts, so no font has to be bundled.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context as _, bail, ensure};
use plotters::prelude::*;

/// One chart: file suffix, title, y-axis label, and how to get the value from a row.
struct Chart {
    suffix: &'static str,
    title: &'static str,
    y_label: &'static str,
    value: fn(&Row, &str) -> Option<f64>,
}

const CHARTS: &[Chart] = &[
    Chart {
        suffix: "time",
        title: "Time to sync every model",
        y_label: "seconds",
        value: |row, runner| row.get("seconds", runner),
    },
    Chart {
        suffix: "qps",
        title: "Throughput",
        y_label: "syncs per second",
        value: |row, runner| {
            let syncs = row.get("successes", runner)? + row.get("fails", runner)?;
            let seconds = row.get("seconds", runner)?;
            (seconds > 0.0).then(|| syncs / seconds)
        },
    },
    Chart {
        suffix: "latency-median",
        title: "Median latency of one sync",
        y_label: "milliseconds",
        value: |row, runner| row.get("latMedian", runner),
    },
    Chart {
        suffix: "latency-p999",
        title: "p99.9 latency of one sync",
        y_label: "milliseconds",
        value: |row, runner| row.get("latP99.9", runner),
    },
];

const COLORS: &[RGBColor] = &[
    RGBColor(31, 119, 180),
    RGBColor(214, 39, 40),
    RGBColor(44, 160, 44),
    RGBColor(148, 103, 189),
    RGBColor(255, 127, 14),
];

struct Row {
    models: f64,
    cells: HashMap<String, f64>,
}

impl Row {
    fn get(&self, metric: &str, runner: &str) -> Option<f64> {
        self.cells.get(&format!("{metric}({runner})")).copied()
    }
}

/// Draws every chart of `csv` into `directory`, named `{csv stem}-{chart}.png`; returns the
/// files written.
pub fn plot_csv(csv: &Path, directory: &Path) -> anyhow::Result<Vec<PathBuf>> {
    let text =
        std::fs::read_to_string(csv).with_context(|| format!("cannot read {}", csv.display()))?;
    let (runners, rows) =
        parse(&text).with_context(|| format!("{} is not a results CSV", csv.display()))?;
    let stem = csv
        .file_stem()
        .and_then(|s| s.to_str())
        .unwrap_or("shop-sync");
    std::fs::create_dir_all(directory)
        .with_context(|| format!("cannot create {}", directory.display()))?;
    let mut written = Vec::new();
    for chart in CHARTS {
        let png = directory.join(format!("{stem}-{}.png", chart.suffix));
        let svg = std::env::temp_dir().join(format!(
            "{stem}-{}-{}.svg",
            chart.suffix,
            std::process::id()
        ));
        draw(chart, &runners, &rows, &svg)
            .map_err(|e| anyhow::anyhow!("cannot draw {}: {e}", png.display()))?;
        let converted = Command::new("rsvg-convert")
            .args(["--background-color", "white", "-o"])
            .arg(&png)
            .arg(&svg)
            .status();
        let _ = std::fs::remove_file(&svg);
        match converted {
            Ok(status) if status.success() => written.push(png),
            Ok(status) => bail!("rsvg-convert failed ({status}) on {}", png.display()),
            Err(error) => bail!(
                "cannot run rsvg-convert ({error}): install it (Debian: `apt-get install librsvg2-bin`)"
            ),
        }
    }
    Ok(written)
}

/// Runner names (from the `seconds(…)` columns) and rows.
fn parse(text: &str) -> anyhow::Result<(Vec<String>, Vec<Row>)> {
    let mut lines = text.lines().filter(|l| !l.trim().is_empty());
    let header: Vec<&str> = lines.next().context("it is empty")?.split(',').collect();
    ensure!(
        header.first() == Some(&"Models Count"),
        "the first column is not `Models Count`"
    );
    let runners: Vec<String> = header
        .iter()
        .filter_map(|c| c.strip_prefix("seconds(")?.strip_suffix(')'))
        .map(str::to_owned)
        .collect();
    ensure!(!runners.is_empty(), "it has no `seconds(…)` column");
    let rows = lines
        .map(|line| {
            let values: Vec<f64> = line
                .split(',')
                .map(|v| v.trim().parse::<f64>())
                .collect::<Result<_, _>>()
                .with_context(|| format!("row `{line}` is not all numbers"))?;
            ensure!(
                values.len() == header.len(),
                "row `{line}` has {} cells for {} columns",
                values.len(),
                header.len()
            );
            Ok(Row {
                models: values[0],
                cells: header[1..]
                    .iter()
                    .map(|c| (*c).to_owned())
                    .zip(values[1..].iter().copied())
                    .collect(),
            })
        })
        .collect::<anyhow::Result<Vec<Row>>>()?;
    ensure!(!rows.is_empty(), "it has no rows");
    Ok((runners, rows))
}

fn draw(
    chart: &Chart,
    runners: &[String],
    rows: &[Row],
    svg: &Path,
) -> Result<(), Box<dyn std::error::Error>> {
    let series: Vec<(&String, Vec<(f64, f64)>)> = runners
        .iter()
        .map(|runner| {
            let points = rows
                .iter()
                .filter_map(|row| Some((row.models, (chart.value)(row, runner)?)))
                .collect();
            (runner, points)
        })
        .collect();
    let x_max = rows.iter().map(|r| r.models).fold(0.0, f64::max);
    let y_max = series
        .iter()
        .flat_map(|(_, points)| points.iter().map(|p| p.1))
        .fold(0.0, f64::max);

    let root = SVGBackend::new(svg, (800, 500)).into_drawing_area();
    root.fill(&WHITE)?;
    let mut plot = ChartBuilder::on(&root)
        .caption(chart.title, ("sans-serif", 24))
        .margin(16)
        .x_label_area_size(48)
        .y_label_area_size(72)
        // Headroom above the highest point keeps the legend off the lines.
        .build_cartesian_2d(0.0..x_max * 1.05, 0.0..(y_max * 1.4).max(1e-9))?;
    let decimals = if y_max >= 100.0 { 0 } else { 1 };
    plot.configure_mesh()
        .x_desc("models")
        .y_desc(chart.y_label)
        .x_label_formatter(&|x| format!("{x:.0}"))
        .y_label_formatter(&|y| format!("{y:.decimals$}"))
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 17))
        .draw()?;
    for (index, (runner, points)) in series.iter().enumerate() {
        let color = COLORS[index % COLORS.len()];
        plot.draw_series(LineSeries::new(
            points.iter().copied(),
            color.stroke_width(3),
        ))?
        .label(runner.as_str())
        .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], color.stroke_width(3)));
        plot.draw_series(points.iter().map(|p| Circle::new(*p, 4, color.filled())))?;
    }
    plot.configure_series_labels()
        .position(SeriesLabelPosition::UpperLeft)
        .label_font(("sans-serif", 16))
        .background_style(WHITE.mix(0.85))
        .border_style(BLACK)
        .draw()?;
    root.present()?;
    Ok(())
}
