"""Renders the data of scripts/reproduce.sh into docs/benchmarks.md and its plots.

Each measured table sits between `<!-- reproduce:NAME -->` and `<!-- /reproduce:NAME -->` in the
document; this replaces what is between them and leaves the prose around it alone. Every marker
must have a renderer and every renderer a marker, so neither can be forgotten.
"""

import argparse
import csv
import datetime
import json
import re
import statistics
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

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
        sys.exit(f"error: no records in {path}: run scripts/reproduce.sh {name.split('-')[0]}")
    return records


def load_csv(data, name):
    path = data / f"{name}.csv"
    rows = []
    if path.exists():
        with path.open() as file:
            rows = list(csv.DictReader(file))
    if not rows:
        sys.exit(f"error: no rows in {path}: run scripts/reproduce.sh {name.split('-')[0]}")
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


def render_sweep(data, plots, name, label, x_of, x_label, title, log_x=False, preface=""):
    records = load(data, name)
    plot_speedup(records, x_of, x_label, title, plots / f"reproduce-{name}.png", log_x=log_x)
    return (
        preface
        + table(FAN_OUT_HEADER, fan_out_rows(records, label))
        + f"\n\n![{title}: speedup over {x_label}](reproduce-{name}.png)"
    )


def render_pi(data, plots):
    samples = load(data, "pi")[0]["parameters"]["samples"]
    return render_sweep(
        data, plots, "pi", lambda p: f"{p['tasks']} task{'s' if p['tasks'] > 1 else ''}",
        lambda p: p["tasks"], "tasks", "pi: Monte-Carlo over tasks", log_x=True,
        preface=f"{samples:,} samples.\n\n",
    )


def render_nqueens(data, plots):
    return render_sweep(data, plots, "nqueens", lambda p: f"n = {p['n']}", lambda p: p["n"], "n",
                        "N-Queens, 64+ prefixes")


def render_fib(data, plots):
    return render_sweep(data, plots, "fib", lambda p: f"n = {p['n']}", lambda p: p["n"], "n",
                        "fib: nested invocations")


def render_floorplan(data, plots):
    records = load(data, "floorplan")
    rows = fan_out_rows(records, lambda p: f"{p['input']} (cutoff {p['cutoff']})")
    for row, record in zip(rows, records):
        row[0] += f", area {record['summary']['result']}"
    return table(FAN_OUT_HEADER, rows)


def render_raytracer(data, plots):
    records = load(data, "raytracer")
    header = ["tiles", "wall", "dispatch→start p50 / p99", "run p50 / p99", "return p50 / p99",
              "Lambda GB-s", "Lambda $"]
    rows = []
    for record in records:
        summary, latency = record["summary"], record["summary"]["latency"]
        part = lambda name: f"{latency[name]['p50_ms']:.1f} / {latency[name]['p99_ms']:.1f} ms"
        gb_seconds, dollars = cost(summary["tasks"], summary["seconds"], 2)
        rows.append([summary["tasks"], ms(summary["seconds"]), part("dispatch_to_start"),
                     part("run"), part("return_to_host"), f"{gb_seconds:.3f}", f"${dollars:.6f}"])
    figure, axis = plt.subplots(figsize=(6, 3.5))
    tiles = [r["summary"]["tasks"] for r in records]
    for name, label in [("dispatch_to_start", "dispatch → start"), ("run", "run"),
                        ("return_to_host", "return → host")]:
        axis.plot(tiles, [r["summary"]["latency"][name]["p50_ms"] for r in records], marker="o",
                  label=f"{label}, median")
    axis.set_xscale("log", base=2)
    axis.set_yscale("log")
    axis.set_xlabel("tiles")
    axis.set_ylabel("ms per invocation")
    size = records[0]["parameters"]["size"]
    axis.set_title(f"raytracer {size}x{size}: where an invocation's time goes")
    axis.legend()
    figure.tight_layout()
    figure.savefig(plots / "reproduce-raytracer.png", dpi=110)
    plt.close(figure)
    return (
        f"{size}x{size}, every tile dispatched at once, scene as `Shared<Scene>`.\n\n"
        + table(header, rows)
        + "\n\n![raytracer latency parts over tiles](reproduce-raytracer.png)"
    )


def render_knapsack(data, plots):
    records = load(data, "knapsack")
    header = ["instance", "split", "sequential", "local", "speedup", "tasks", "optimum"]
    rows = []
    for record in records:
        parameters, summary = record["parameters"], record["summary"]
        sequential = summary["sequential"]["seconds"]
        split = parameters["split_after_ms"]
        for run in summary["runs"]:
            rows.append([
                f"{parameters['family']}, {parameters['items']} items, seed {parameters['seed']}",
                f"{'after ' + str(split) + ' ms' if split else 'fixed'}, {run['mode']}",
                ms(sequential), ms(run["seconds"]), f"**{sequential / run['seconds']:.2f}x**",
                run["tasks"], summary["optimum"],
            ])
    return table(header, rows)


def render_sensors(data, plots):
    sections = []
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.5), sharey=False)
    for axis, (name, title) in zip(axes, [
        ("sensors-dyninka", "no keep-alive, one CPU per service (Dyninka's setting)"),
        ("sensors-keep-alive", "keep-alive, services share both CPUs"),
    ]):
        rows = load_csv(data, name)
        modes = list(dict.fromkeys(row["mode"] for row in rows))
        levels = list(dict.fromkeys(int(row["clients"]) for row in rows))
        by = {(row["mode"], int(row["clients"])): row for row in rows}
        header = ["clients"]
        for mode in modes:
            header += [f"{mode} flows/s", "p99 ms", "errors"]
        header += [f"chained / {mode}" for mode in modes if mode != "chained"]
        body = []
        for level in levels:
            row = [level]
            for mode in modes:
                cell = by[(mode, level)]
                row += [f"{float(cell['flows_per_second']):.1f}", f"{float(cell['p99_ms']):.2f}",
                        f"{float(cell['error_rate']) * 100:.2f}%"]
            chained = float(by[("chained", level)]["flows_per_second"])
            row += [f"**{chained / float(by[(mode, level)]['flows_per_second']):.2f}x**"
                    for mode in modes if mode != "chained"]
            body.append(row)
        seconds = float(rows[0]["seconds"])
        level = f"{seconds:.0f}" if seconds >= 1 else f"{seconds:.1f}"
        sections.append(f"**{title}**, {level} s per level:\n\n" + table(header, body))
        for mode in modes:
            axis.plot(levels, [float(by[(mode, level)]["flows_per_second"]) for level in levels],
                      marker="o", label=mode)
        axis.set_xlabel("clients")
        axis.set_ylabel("flows/s")
        axis.set_title(title, fontsize=9)
        axis.legend()
    figure.tight_layout()
    figure.savefig(plots / "reproduce-sensors.png", dpi=110)
    plt.close(figure)
    return "\n\n".join(sections) + "\n\n![sensors flows/s over clients](reproduce-sensors.png)"


RENDERERS = {
    "pi": render_pi,
    "nqueens": render_nqueens,
    "fib": render_fib,
    "floorplan": render_floorplan,
    "raytracer": render_raytracer,
    "knapsack": render_knapsack,
    "sensors": render_sensors,
}


def replace_between(document, name, content):
    pattern = re.compile(
        rf"(<!-- reproduce:{re.escape(name)} -->\n)(?:.*?\n)?(<!-- /reproduce:{re.escape(name)} -->)",
        re.S,
    )
    if not pattern.search(document):
        sys.exit(f"error: the document has no <!-- reproduce:{name} --> … <!-- /reproduce:{name} --> markers")
    return pattern.sub(lambda m: m.group(1) + content + "\n" + m.group(2), document, count=1)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--document", type=Path, required=True)
    parser.add_argument("--plots", type=Path, required=True)
    parser.add_argument("--seconds", type=int, required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("experiments", nargs="+")
    args = parser.parse_args()

    document = args.document.read_text()
    markers = set(re.findall(r"<!-- reproduce:([\w-]+) -->", document))
    if markers - {"run"} != set(RENDERERS):
        sys.exit(
            f"error: markers without a renderer: {sorted(markers - set(RENDERERS) - {'run'})}; "
            f"renderers without a marker: {sorted(set(RENDERERS) - markers)}"
        )
    for name in args.experiments:
        content = RENDERERS[name](args.data, args.plots)
        document = replace_between(document, name, content)
    kind = "quick run" if args.quick else "full run"
    minutes = args.seconds / 60
    document = replace_between(
        document, "run",
        f"Last {kind} ({datetime.date.today().isoformat()}): `scripts/reproduce.sh{' --quick' if args.quick else ''}"
        f" {' '.join(args.experiments)}`, {minutes:.1f} minutes.",
    )
    args.document.write_text(document)


if __name__ == "__main__":
    main()
