"""Cppless's client curve (figure 5.19): invocation latency against invocations at once."""

from common import load, plt, table

BACKENDS = {
    "local": "local (2 workers)",
    "http": "http (one service)",
    "lambda-emulator": "lambda, cargo-lambda's emulator",
    "lambda-client": "lambda client, instant endpoint",
}


def render(data, plots):
    records = [r for r in load(data, "client-curve")]
    by = {(r["backend"], r["invocations"]): r for r in records}
    backends = [b for b in BACKENDS if any(r["backend"] == b for r in records)]
    counts = sorted({r["invocations"] for r in records})
    header = ["invocations at once"] + [f"{BACKENDS[b]}: all answered / p50 / p99" for b in backends]
    rows = []
    for count in counts:
        row = [f"{count:,}"]
        for backend in backends:
            r = by.get((backend, count))
            row.append(f"{r['median_wall_ms']:.2f} / {r['p50_ms']:.2f} / {r['p99_ms']:.2f} ms" if r else "")
        rows.append(row)
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.5))
    for backend in backends:
        points = [by[(backend, c)] for c in counts if (backend, c) in by]
        xs = [p["invocations"] for p in points]
        axes[0].plot(xs, [p["median_wall_ms"] for p in points], marker="o", label=BACKENDS[backend])
        axes[1].plot(xs, [p["invocations"] / p["median_wall_ms"] for p in points], marker="o",
                     label=BACKENDS[backend])
    for axis, label in [(axes[0], "ms until all answered (median)"), (axes[1], "invocations per ms")]:
        axis.set_xscale("log", base=2)
        axis.set_xlabel("invocations dispatched at once")
        axis.set_ylabel(label)
    axes[0].set_yscale("log")
    axes[0].legend(fontsize=8)
    axes[0].set_title("latency of N invocations at once", fontsize=9)
    axes[1].set_title("rate", fontsize=9)
    figure.tight_layout()
    figure.savefig(plots / "reproduce-client-curve.png", dpi=110)
    plt.close(figure)
    rounds = records[0]["rounds"]
    concurrency = next((r["emulator_concurrency"] for r in records if r.get("emulator_concurrency")), None)
    return (
        f"A no-op function; each count {rounds} rounds after a warm-up round; the emulated runtime"
        f" runs {concurrency} invocations side by side, and is sent at most {concurrency} at once:"
        " `cargo lambda watch` stops for good once about 100 invocations wait in its queue"
        " (so does `lambda_runtime`'s `run_concurrent` under it).\n\n"
        + table(header, rows)
        + "\n\n![latency and rate over invocations at once](reproduce-client-curve.png)"
    )
