"""accounts, JSON against Protocol Buffers: the article's Gatling report under wrk, and a client's decoding."""

import statistics

from common import load, ms, plt, table

MARKERS = ["accounts-load", "accounts-decode"]


def render(data, plots):
    return {"accounts-load": load_table(data, plots), "accounts-decode": decode_table(data)}


def load_table(data, plots):
    runs = load(data, "accounts-load")
    header = ["route", "format", "users", "requests", "req/s", "min", "mean", "max", "p50", "p95",
              "p99", "timeouts / errors"]
    rows = []
    for run in runs:
        rows.append([
            f"`{run['route']}`", run["format"], run["connections"], f"{run['requests']:,}",
            f"{run['requests_per_second']:.1f}",
            *(ms(run[f"{figure}_ms"] / 1e3) for figure in ["min", "mean", "max", "p50", "p95", "p99"]),
            f"{run['timeouts']} / {run['errors']}",
        ])
    first = runs[0]
    preface = (f"wrk `-t{first['threads']} -cUSERS -d{first['seconds']}s "
               f"--timeout {first['timeout_seconds']}s` per route, format and number of users (the "
               "article's Gatling users are wrk's connections); a timed-out request has no latency:\n\n")

    routes = list(dict.fromkeys(run["route"] for run in runs))
    figure, axes = plt.subplots(1, len(routes), figsize=(4 * len(routes), 3.5), squeeze=False)
    for axis, route in zip(axes[0], routes):
        for format_, color in [("json", "tab:red"), ("protobuf", "tab:blue")]:
            points = [run for run in runs if run["route"] == route and run["format"] == format_]
            users = [run["connections"] for run in points]
            axis.plot(users, [run["mean_ms"] for run in points], marker="o", color=color,
                      label=f"{format_} mean")
            axis.plot(users, [run["p95_ms"] for run in points], marker="^", color=color,
                      linestyle="--", label=f"{format_} p95")
        axis.set_xticks(sorted({run["connections"] for run in runs}))
        axis.set_ylim(bottom=0)
        axis.set_xlabel("users (wrk connections)")
        axis.set_ylabel("response time (ms)")
        axis.set_title(route, fontsize=10)
        axis.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(plots / "reproduce-accounts.png", dpi=110)
    plt.close(figure)
    return (preface + table(header, rows)
            + "\n\n![accounts: mean and p95 response time over users, JSON and protobuf, per route]"
            "(reproduce-accounts.png)")


def decode_table(data):
    runs = load(data, "accounts-decode")
    header = ["route", "format", "bytes", "request (median)", "decode min", "decode median",
              "decode max", "request + decode", "decode, protobuf / JSON"]
    json_median = {run["route"]: statistics.median(run["decode_seconds"])
                   for run in runs if run["format"] == "json"}
    rows = []
    for run in runs:
        decode, request = run["decode_seconds"], statistics.median(run["request_seconds"])
        median = statistics.median(decode)
        rows.append([
            f"`{run['route']}`", run["format"], f"{run['bytes']:,}", ms(request), ms(min(decode)),
            ms(median), ms(max(decode)), ms(request + median),
            f"**{median / json_median[run['route']]:.2f}x**" if run["format"] == "protobuf" else "",
        ])
    first = runs[0]
    return (f"{len(first['decode_seconds'])} requests and {len(first['decode_seconds'])} decodes of "
            f"each route and format after {first['warm_up']} of each unmeasured, one client:\n\n"
            + table(header, rows))
