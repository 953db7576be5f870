"""What the renderers of scripts/reproduce/renderers/ share: loading records, tables, the cost model."""

import csv
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402,F401  (re-exported to the renderers)

# Lambda's price (x86, us-east-1) and the memory that buys one full vCPU: the cost model.
PRICE_PER_GB_SECOND = 0.0000166667
PRICE_PER_REQUEST = 0.20 / 1_000_000
LAMBDA_MEMORY_GB = 1769 / 1024


def load(data, name):
    path = data / f"{name}.jsonl"
    records = []
    if path.exists():
        records = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    if not records:
        sys.exit(f"error: no records in {path}: rerun the experiment that writes it (scripts/reproduce.sh --list)")
    return records


def load_csv(data, name):
    path = data / f"{name}.csv"
    rows = []
    if path.exists():
        with path.open() as file:
            rows = list(csv.DictReader(file))
    if not rows:
        sys.exit(f"error: no rows in {path}: rerun the experiment that writes it (scripts/reproduce.sh --list)")
    return rows


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def ms(seconds):
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.3f} s"


def spread(runs):
    return f"{ms(min(runs))} – {ms(max(runs))}" if runs else ""


def cost(tasks, seconds, workers):
    """GB-seconds and dollars of the run on Lambda: every worker busy for the whole run, at the
    memory of one vCPU, plus the requests."""
    gb_seconds = seconds * workers * LAMBDA_MEMORY_GB
    return gb_seconds, gb_seconds * PRICE_PER_GB_SECOND + tasks * PRICE_PER_REQUEST


def fan_out_rows(records, label):
    rows = []
    for record in records:
        summary = record["summary"]
        gb_seconds, dollars = cost(summary["tasks"], summary["seconds"], summary["workers"])
        speedup = summary.get("speedup")
        rows.append(
            [
                label(record["parameters"]),
                summary["tasks"],
                ms(summary["sequential_seconds"]) if summary.get("sequential_seconds") else "",
                ms(summary["seconds"]),
                spread(summary.get("runs", [])),
                len(summary.get("runs", [])),
                f"**{speedup:.2f}x**" if speedup else "",
                f"{gb_seconds:.3f}",
                f"${dollars:.6f}",
            ]
        )
    return rows


FAN_OUT_HEADER = [
    "run",
    "tasks",
    "sequential",
    "local (median)",
    "min–max",
    "runs",
    "speedup",
    "Lambda GB-s",
    "Lambda $",
]


def plot_speedup(records, x_of, x_label, title, path, log_x=False):
    xs = [x_of(r["parameters"]) for r in records]
    ys = [r["summary"].get("speedup") or 0 for r in records]
    figure, axis = plt.subplots(figsize=(6, 3.5))
    axis.plot(xs, ys, marker="o", label="local platform, 2 workers")
    axis.axhline(2, color="grey", linestyle="--", linewidth=1, label="2 cores")
    if log_x:
        axis.set_xscale("log", base=2)
    axis.set_xlabel(x_label)
    axis.set_ylabel("speedup over sequential")
    axis.set_title(title)
    axis.legend()
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def sweep(data, plots, name, label, x_of, x_label, title, log_x=False, preface=""):
    records = load(data, name)
    plot_speedup(records, x_of, x_label, title, plots / f"reproduce-{name}.png", log_x=log_x)
    return (
        preface
        + table(FAN_OUT_HEADER, fan_out_rows(records, label))
        + f"\n\n![{title}: speedup over {x_label}](reproduce-{name}.png)"
    )
