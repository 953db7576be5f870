"""The thesis's e-commerce sync: four runners, bounded and all at once (several runs each, the
median shown), and rate-limited."""

import math
import re
import statistics

from common import load_csv, plt, table

MARKERS = ["shop-sync", "shop-sync-targets", "shop-sync-sources"]
RUNNERS = ["mono", "serverless-local", "serverless-http", "serverless-openwhisk"]
SHORT = {"serverless-local": "local", "serverless-http": "HTTP service",
         "serverless-openwhisk": "OpenWhisk container"}
DISPATCHES = [("shop-sync-bounded", "bounded"), ("shop-sync-all-at-once", "all at once")]


def runs(rows, dispatch=""):
    """One dict per (model count, runner) of a bench CSV (a row per count, a column per runner
    and metric)."""
    out = []
    for row in rows:
        for runner in RUNNERS:
            if f"seconds({runner})" not in row:
                continue
            cell = {metric: float(row[f"{metric}({runner})"]) for metric in
                    ["seconds", "successes", "fails", "latMedian", "latP99", "latP99.9",
                     "peakRssMiB", "benchPeakRssMiB"]}
            cell.update(models=int(row["Models Count"]), runner=runner, dispatch=dispatch)
            syncs = cell["successes"] + cell["fails"]
            cell["qps"] = syncs / cell["seconds"] if cell["seconds"] > 0 else 0.0
            # The monolith is served by the benchmarker's own process; the others beside it.
            cell["total"] = cell["benchPeakRssMiB"] + (0 if runner == "mono" else cell["peakRssMiB"])
            out.append(cell)
    return out


def mib(value):
    return "–" if math.isnan(value) else f"{value:.0f}"


def ratio_range(values):
    return f"{min(values):.2f}–{max(values):.2f}x" if values else "–"


def vs_mono(cells):
    mono = {(c["models"], c["dispatch"]): c["qps"] for c in cells if c["runner"] == "mono"}
    return {id(c): c["qps"] / mono[(c["models"], c["dispatch"])]
            for c in cells if mono.get((c["models"], c["dispatch"]))}


def median_runs(data):
    """Every unthrottled run (shop-sync-bounded-N.csv, shop-sync-all-at-once-N.csv), each cell
    compared with the monolith of its own run, folded into one cell per (models, dispatch, runner):
    the run of median throughput, with `qps_runs` and `ratio_runs` of every run and the median
    ratio to the monolith."""
    numbers = sorted({int(m.group(1)) for path in data.glob("shop-sync-bounded-*.csv")
                      if (m := re.fullmatch(r"shop-sync-bounded-(\d+)\.csv", path.name))})
    if not numbers:
        load_csv(data, "shop-sync-bounded-1")  # exits with its error
    groups = {}
    for number in numbers:
        cells = [cell for name, label in DISPATCHES for cell in runs(load_csv(data, f"{name}-{number}"), label)]
        ratios = vs_mono(cells)
        for cell in cells:
            cell["ratio"] = ratios.get(id(cell))
            groups.setdefault((cell["models"], cell["dispatch"], cell["runner"]), []).append(cell)
    folded = []
    for cells in groups.values():
        cells.sort(key=lambda c: c["qps"])
        median = dict(cells[(len(cells) - 1) // 2])
        median["qps_runs"] = [c["qps"] for c in cells]
        median["ratio_runs"] = [c["ratio"] for c in cells if c["ratio"] is not None]
        median["ratio"] = statistics.median(median["ratio_runs"]) if median["ratio_runs"] else None
        # Failures and syncs of every run, not only the median one's.
        median["fails"] = sum(c["fails"] for c in cells)
        median["successes"] = sum(c["successes"] for c in cells)
        folded.append(median)
    return folded, len(numbers)


def render(data, plots):
    unthrottled, run_count = median_runs(data)
    unthrottled.sort(key=lambda c: (c["models"], c["dispatch"] != "bounded", RUNNERS.index(c["runner"])))
    throttled = runs(load_csv(data, "shop-sync-throttled"))
    ratios = {id(c): c["ratio"] for c in unthrottled if c["ratio"] is not None}

    body = []
    for c in unthrottled:
        p999 = c["latP99.9"] / c["latMedian"] if c["latMedian"] > 0 else 0
        ratio_runs = c["ratio_runs"]
        body.append([c["models"], c["dispatch"], c["runner"], f"{c['seconds']:.3f}", f"{c['qps']:.1f}",
                     f"{min(c['qps_runs']):.0f}–{max(c['qps_runs']):.0f}",
                     f"{ratios.get(id(c), 0):.2f}x", ratio_range(ratio_runs) if c["runner"] != "mono" else "",
                     int(c["fails"]), f"{c['latMedian']:.1f}",
                     f"{c['latP99.9']:.1f}", f"{p999:.2f}", mib(c["peakRssMiB"]), mib(c["total"])])
    header = ["models", "sent", "runner", "seconds", "syncs/s", "syncs/s, all runs", "vs mono",
              "vs mono, all runs", "failed", "median ms", "p99.9 ms", "p99.9 / median", "runner MiB",
              "with benchmarker MiB"]
    unthrottled_table = table(header, body)

    body = []
    for c in sorted(throttled, key=lambda c: (c["models"], RUNNERS.index(c["runner"]))):
        p999 = c["latP99.9"] / c["latMedian"] if c["latMedian"] > 0 else 0
        body.append([c["models"], c["runner"], f"{c['seconds']:.3f}", f"{c['qps']:.1f}", int(c["fails"]),
                     f"{c['latMedian']:.2f}", f"{c['latP99']:.2f}", f"{c['latP99.9']:.2f}", f"{p999:.2f}",
                     mib(c["peakRssMiB"]), mib(c["total"])])
    throttled_table = table(["models", "runner", "seconds", "syncs/s", "failed", "median ms", "p99 ms",
                             "p99.9 ms", "p99.9 / median", "runner MiB", "with benchmarker MiB"], body)

    plot(unthrottled, throttled, plots / "reproduce-shop-sync.png")
    main = (
        f"Unthrottled, every sync sent at once: `bounded` keeps at most 256 in flight, `all at once`"
        f" all of them. Each row is the median of {run_count} runs by throughput (its latency and memory"
        " are that run's); `vs mono` is the median of each run's throughput over the monolith's in the"
        " same run, with every run's beside it; `failed` counts every run's. `runner MiB` is the peak RSS over the run summed over the runner's processes"
        " (for `mono` the benchmarker's own, which serves the monolith's route beside the mock servers);"
        " `with benchmarker MiB` adds the benchmarker's process (the mock servers) to it.\n\n"
        + unthrottled_table
        + "\n\nOne sync started every 100 ms (the thesis's rate limiter), sent bounded:\n\n"
        + throttled_table
        + "\n\n![shop-sync: throughput, p99.9 latency and peak RSS by model count](reproduce-shop-sync.png)"
    )
    return {"shop-sync": main, "shop-sync-targets": targets(unthrottled, throttled, ratios),
            "shop-sync-sources": sources(unthrottled, throttled, ratios)}


def by_runner(cells, ratios, dispatch):
    return ", ".join(
        f"{SHORT[runner]} {ratio_range([ratios[id(c)] for c in cells if c['runner'] == runner and c['dispatch'] == dispatch and id(c) in ratios])}"
        for runner in RUNNERS[1:])


def spread(values, digits=2, suffix="x"):
    return f"{min(values):.{digits}f}–{max(values):.{digits}f}{suffix}" if values else "–"


def targets(unthrottled, throttled, ratios):
    serverless = [ratios[id(c)] for c in unthrottled if c["runner"] != "mono" and id(c) in ratios]
    bounded = [ratios[id(c)] for c in unthrottled
               if c["runner"] != "mono" and c["dispatch"] == "bounded" and id(c) in ratios]
    failed = sum(int(c["fails"]) for c in unthrottled + throttled)
    syncs = {runner: sum(int(c["successes"] + c["fails"]) for c in unthrottled + throttled if c["runner"] == runner)
             for runner in RUNNERS}
    tails = {name: [c["latP99.9"] / c["latMedian"] for c in cells if c["latMedian"] > 0]
             for name, cells in [("bounded", [c for c in unthrottled if c["dispatch"] == "bounded"]),
                                 ("all at once", [c for c in unthrottled if c["dispatch"] == "all at once"]),
                                 ("rate-limited", throttled)]}
    tail_verdicts = [name for name, values in tails.items() if values and max(values) > 3]
    rows = [
        ["serverless throughput ≥ 0.8x the monolith's, unthrottled (thesis: ≈ 0.08x, 28 vs 333 syncs/s)",
         f"bounded: {by_runner(unthrottled, ratios, 'bounded')}; all at once: {by_runner(unthrottled, ratios, 'all at once')}",
         "met" if serverless and min(serverless) >= 0.8 else
         ("met bounded, missed all at once" if bounded and min(bounded) >= 0.8 else "missed")],
        ["0 failed syncs",
         f"{failed} of {max(syncs.values()):,} per runner, SH equal to PS after every run (the benchmarker checks)",
         "met" if failed == 0 else "missed"],
        ["p99.9 latency within 3x of the median",
         "; ".join(f"{name}: {spread(values)}" for name, values in tails.items()),
         "met" if not tail_verdicts else "missed " + ", ".join(tail_verdicts)],
    ]
    return table(["target", "measured", "verdict"], rows)


def sources(unthrottled, throttled, ratios):
    largest = max(c["models"] for c in unthrottled)
    memory = ", ".join(
        f"{'monolith' if c['runner'] == 'mono' else SHORT[c['runner']]} {mib(c['peakRssMiB'])}"
        for c in unthrottled if c["models"] == largest and c["dispatch"] == "bounded")
    bench = [c["benchPeakRssMiB"] for c in unthrottled if c["models"] == largest and c["runner"] != "mono"]
    medians = [c["latMedian"] for c in throttled]
    all_tails = [c["latP99.9"] / c["latMedian"] for c in unthrottled
                 if c["dispatch"] == "all at once" and c["latMedian"] > 0]
    link = "([shop-sync](#shop-sync-the-e-commerce-synchronisation-case-study-issue-4))"
    rows = [
        ["unthrottled throughput, serverless against the monolith", "28 against 333 syncs/s (0.08x)",
         f"at most 256 in flight: {by_runner(unthrottled, ratios, 'bounded')} {link}",
         "mock PS and SH servers on loopback, one machine"],
        ["every sync sent at once", "how the thesis sent them",
         f"{by_runner(unthrottled, ratios, 'all at once')}; p99.9 {spread(all_tails)} the median",
         "the benchmarker sends all; the runners still queue them (64 per process, ferry's `http` backend 256)"],
        ["one sync every 100 ms: median latency", "~280 ms serverless, ~60 ms monolith",
         f"{spread(medians, 1, ' ms')} on every runner",
         "loopback mocks instead of Shopify and Powersoft across the internet"],
        ["memory per runner", "among the metrics each run returned (\"memory and space usage\")",
         f"peak RSS at {largest:,} models, MiB: {memory}; the benchmarker's process with the mock servers "
         f"beside the serverless ones {spread(bench, 0, ' MiB')}",
         "`VmHWM` of each process over the run, summed over a runner's processes; the monolith shares its process with the mock servers"],
    ]
    return table(["seed's figure", "seed's number", "ferry's number", "same parameters? (what differs and why)"], rows)


def plot(unthrottled, throttled, path):
    figure, axes = plt.subplots(2, 2, figsize=(11, 7))
    colors = dict(zip(RUNNERS, ["tab:blue", "tab:red", "tab:green", "tab:purple"]))
    panels = [(axes[0][0], "qps", "syncs/s, unthrottled"), (axes[0][1], "latP99.9", "p99.9 ms, unthrottled"),
              (axes[1][0], "peakRssMiB", "runner's peak RSS, MiB")]
    for axis, metric, title in panels:
        for runner in RUNNERS:
            for dispatch, style in [("bounded", "-"), ("all at once", "--")]:
                cells = [c for c in unthrottled if c["runner"] == runner and c["dispatch"] == dispatch]
                axis.plot([c["models"] for c in cells], [c[metric] for c in cells], style, marker="o",
                          color=colors[runner], label=f"{runner}, {dispatch}")
        axis.set_xlabel("models")
        axis.set_title(title, fontsize=10)
    axes[0][0].legend(fontsize=7)
    axis = axes[1][1]
    for runner in RUNNERS:
        cells = sorted((c for c in throttled if c["runner"] == runner), key=lambda c: c["models"])
        axis.plot([c["models"] for c in cells], [c["latMedian"] for c in cells], "-", marker="o",
                  color=colors[runner], label=f"{runner}, median")
        axis.plot([c["models"] for c in cells], [c["latP99.9"] for c in cells], ":", marker="x",
                  color=colors[runner], label=f"{runner}, p99.9")
    axis.set_xlabel("models")
    axis.set_title("ms, one sync every 100 ms", fontsize=10)
    axis.legend(fontsize=7)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
