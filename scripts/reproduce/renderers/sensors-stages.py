"""Dyninka's sensor flow stage by stage: the time between services, each stage's body against the
hop into it, and throughput over time, chained against orchestrated (`sensors load
--stage-timings --timeline`)."""

import math
import statistics

from common import load_csv, plt, table

HOP = "hop"
BODY = "body"


def quantile(values, q):
    """Nearest rank, as `sensors load` computes its p99."""
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[max(math.ceil(q * len(ordered)), 1) - 1]


def us(value):
    if math.isnan(value):
        return "–"
    if value >= 1e3:
        return f"{value / 1e3:.2f} ms"
    return f"{value:.0f} µs" if value >= 10 else f"{value:.1f} µs"


def parts(rows):
    """Per mode, the stages' names and, in flow order, each hop's and body's microseconds over
    the timed flows: [(kind, label, [µs…])]."""
    stages = [column[: -len("_started_us")] for column in rows[0] if column.endswith("_started_us")]
    by_mode = {}
    for row in rows:
        by_mode.setdefault(row["mode"], []).append(row)
    result = {}
    for mode, flows in by_mode.items():
        instants = [[0.0] + [float(flow[f"{stage}_{edge}_us"]) for stage in stages
                             for edge in ("started", "finished")] + [float(flow["received_us"])]
                    for flow in flows]
        sequence = []
        for i, stage in enumerate(stages):
            before = "client" if i == 0 else stages[i - 1]
            sequence.append((HOP, f"{before} → {stage}",
                             [t[2 * i + 1] - t[2 * i] for t in instants]))
            sequence.append((BODY, stage, [t[2 * i + 2] - t[2 * i + 1] for t in instants]))
        sequence.append((HOP, f"{stages[-1]} → client", [t[-1] - t[-2] for t in instants]))
        sequence.append(("flow", "whole flow", [t[-1] for t in instants]))
        result[mode] = sequence
    return stages, result


def render(data, plots):
    summary = load_csv(data, "sensors-stages")
    rows = load_csv(data, "sensors-stages-timings")
    timeline = load_csv(data, "sensors-stages-timeline")
    stages, by_mode = parts(rows)
    modes = list(by_mode)
    clients = summary[0]["clients"]
    seconds = float(summary[0]["seconds"])
    length = f"{seconds:.0f}" if seconds >= 1 else f"{seconds:.1f}"
    counts = ", ".join(f"{len(by_mode[mode][0][2]):,} {mode}" for mode in modes)
    flows = ", ".join(
        f"{row['mode']} **{float(row['flows_per_second']):.1f} flows/s** (p99 {float(row['p99_ms']):.2f} ms, "
        f"{float(row['error_rate']) * 100:.2f}% errors)" for row in summary)

    header = ["part of the flow"] + [f"{mode} {q}" for mode in modes for q in ("p50", "p99")]
    body = []
    for i, (kind, label, _) in enumerate(by_mode[modes[0]]):
        name = {HOP: f"hop {label}", BODY: f"`{label}` body", "flow": "**whole flow**"}[kind]
        cells = [name]
        for mode in modes:
            values = by_mode[mode][i][2]
            cells += [us(quantile(values, 0.50)), us(quantile(values, 0.99))]
        body.append(cells)
    share = []
    for mode in modes:
        sequence = by_mode[mode]
        hops = sum(statistics.fmean(v) for kind, _, v in sequence if kind == HOP)
        bodies = sum(statistics.fmean(v) for kind, _, v in sequence if kind == BODY)
        share.append(f"{mode} {us(hops)} in hops against {us(bodies)} in bodies "
                     f"({100 * hops / (hops + bodies):.0f}% hops)")

    throughput_header = ["mode", "buckets", "median flows/s", "min", "max", "first 1 s", "last 1 s"]
    throughput = []
    figure, axis = plt.subplots(figsize=(8, 3.2))
    for mode in modes:
        points = [row for row in timeline if row["mode"] == mode]
        width = float(points[0]["bucket_seconds"])
        # The last bucket holds the flows that finished after the deadline: partial, left out.
        full = points[:-1] if len(points) > 1 else points
        rates = [float(row["flows_per_second"]) for row in full]
        per_second = max(1, round(1 / width))
        window = lambda part: statistics.fmean(rates[part]) if rates[part] else math.nan
        throughput.append([mode, len(rates), f"{statistics.median(rates):.0f}", f"{min(rates):.0f}",
                           f"{max(rates):.0f}", f"{window(slice(0, per_second)):.0f}",
                           f"{window(slice(-per_second, None)):.0f}"])
        axis.plot([float(row["second"]) for row in full], rates, label=mode, linewidth=0.8)
    axis.set_xlabel("seconds into the run")
    axis.set_ylabel(f"flows/s per {width * 1e3:.0f} ms")
    axis.set_title(f"throughput over time, {clients} clients (each mode's own run)", fontsize=9)
    axis.set_ylim(bottom=0)
    axis.legend()
    figure.tight_layout()
    figure.savefig(plots / "reproduce-sensors-stages-throughput.png", dpi=110)
    plt.close(figure)

    # Time between services: p50 bars with the p99 marked, per hop, modes side by side.
    hop_labels = [label for kind, label, _ in by_mode[modes[0]] if kind == HOP]
    figure, axis = plt.subplots(figsize=(8, 3.5))
    step = 0.8 / len(modes)
    for m, mode in enumerate(modes):
        hops = [v for kind, _, v in by_mode[mode] if kind == HOP]
        xs = [i + (m - (len(modes) - 1) / 2) * step for i in range(len(hops))]
        bars = axis.bar(xs, [quantile(v, 0.50) for v in hops], width=step, label=f"{mode} p50")
        axis.scatter(xs, [quantile(v, 0.99) for v in hops], marker="_", s=200,
                     color=bars.patches[0].get_facecolor(), label=f"{mode} p99")
    axis.set_xticks(range(len(hop_labels)), [label.replace(" → ", "\n→ ") for label in hop_labels],
                    fontsize=7)
    axis.set_yscale("log")
    axis.set_ylabel("µs")
    axis.set_title("time between services (a stage's body finishing → the next one starting)",
                   fontsize=9)
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(plots / "reproduce-sensors-stages-hops.png", dpi=110)
    plt.close(figure)

    # Per-stage overhead: each stage's median body stacked on the median hop into it.
    figure, axis = plt.subplots(figsize=(8, 3.5))
    columns = stages + ["→ client"]
    for m, mode in enumerate(modes):
        sequence = by_mode[mode]
        hops = [quantile(v, 0.50) for kind, _, v in sequence if kind == HOP]
        bodies = [quantile(v, 0.50) for kind, _, v in sequence if kind == BODY] + [0.0]
        xs = [i + (m - (len(modes) - 1) / 2) * step for i in range(len(columns))]
        hop_bars = axis.bar(xs, hops, width=step, alpha=0.55, label=f"{mode}: hop into it")
        axis.bar(xs, bodies, width=step, bottom=hops, label=f"{mode}: its body",
                 color=hop_bars.patches[0].get_facecolor(), alpha=1.0, hatch="//")
    axis.set_xticks(range(len(columns)), columns, fontsize=8)
    axis.set_ylabel("µs (medians)")
    axis.set_title("per-stage overhead: the hop into each stage and its own work", fontsize=9)
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(plots / "reproduce-sensors-stages-overhead.png", dpi=110)
    plt.close(figure)

    return (
        f"{clients} clients, {length} s per mode, no keep-alive, one CPU per service: {flows}. "
        f"Timed flows (those that reach the moving average, a sample of them): {counts}.\n\n"
        + table(header, body)
        + "\n\nMean time per flow: " + "; ".join(share) + ".\n\n"
        + table(throughput_header, throughput)
        + "\n\n![time between services per hop](reproduce-sensors-stages-hops.png)\n\n"
        + "![per-stage body against the hop into it](reproduce-sensors-stages-overhead.png)\n\n"
        + "![throughput over time](reproduce-sensors-stages-throughput.png)"
    )
