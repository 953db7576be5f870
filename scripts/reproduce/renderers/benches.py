"""The benches' own Markdown tables (experiments/benches.sh): each bench's report, captured into
benches-NAME.md, goes between its markers; the prose around them is the document's."""

import json
import re
import sys

from common import table

MARKERS = [
    "bench-codecs",
    "bench-invoke",
    "bench-invoke-1thread",
    "bench-fan-out-memory",
    "bench-openwhisk",
    "bench-lambda",
    "bench-lambda-codec",
    "bench-lambda-shared",
    "bench-lambda-client",
    "bench-raytracer",
    "bench-targets",
]

# Issue #2's targets for the binary codec: Cppless's structs on a t3.medium, encode and decode.
CPPLESS_STRUCTS_MS = (97, 81)

# fan_out_memory's "before" rows: the same bench on the commit before tasks were pulled lazily
# (4d54977), measured once; they are history, not something this experiment reruns.
FAN_OUT_BEFORE = [
    ["before: every task collected first (4d54977)", "inline", "1,000,000", "3.58 s", "279,642/s", "4.7 MiB", "1,028.4 MiB"],
    ["before: every task collected first (4d54977)", "local", "1,000,000", "13.88 s", "72,032/s", "5.2 MiB", "1,033.0 MiB"],
]


def report_table(data, name, required=True):
    """The first Markdown table of benches-NAME.md: its header, then its rows, as lists of cells."""
    path = data / f"benches-{name}.md"
    lines = path.read_text().splitlines() if path.exists() else []
    rows = []
    for line in lines:
        if line.startswith("|"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split("|")])
        elif rows:
            break
    if len(rows) < 3:
        if not required:
            return None
        sys.exit(f"error: no table in {path}: rerun scripts/reproduce.sh benches")
    return rows[0], rows[1], rows[2:]


def markdown(header, rule, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(rule) + "|"]
    return "\n".join(lines + ["| " + " | ".join(row) + " |" for row in rows])


def rate(cell):
    """1234567/s as 1,234,567/s and 1000000 as 1,000,000, as the document writes numbers."""
    number = cell.removesuffix("/s")
    return f"{int(number):,}" + cell[len(number):] if number.isdigit() else cell


def number(cell):
    """The first number of a cell: 1,234/s, 44.7 µs, 1.77 GiB/s (4.20 ms), 34.2 ms."""
    return float(re.search(r"[\d,]+(?:\.\d+)?", cell).group().replace(",", ""))


def column(header, name):
    return header.index(name)


def joined(values, unit=""):
    values = sorted(set(values))
    return " and ".join(f"{v}{unit}" for v in values)


def targets(invoke, codecs, pi):
    """Issue #2's targets, each with what this run measured and whether it holds."""
    header, rows = invoke
    local = [row for row in rows if row[0] == "local"]
    at_64 = [number(row[column(header, "64 in flight")]) for row in local]
    peak = max(number(cell) for row in local for cell in row[column(header, "1 in flight"):])
    p50 = [number(row[column(header, "p50 round trip")]) for row in local]
    p99 = [number(row[column(header, "p99 round trip")]) for row in local]
    out = [
        ["local: ≥ 50,000 no-op invocations/s with ≥ 64 in flight",
         f"{joined(f'{v:,.0f}' for v in at_64)}/s at 64 in flight, up to {peak:,.0f}/s",
         "met" if min(at_64) >= 50_000 else "missed"],
        ["local: p50 round trip ≤ 50 µs at 1 in flight",
         f"{joined(p50, ' µs')}, p99 {joined(p99, ' µs')}",
         "met" if max(p50) <= 50 else "missed"],
    ]

    header, rows = codecs
    binary = {row[column(header, "memory")]: row for row in rows if row[0] == "binary"}
    u64_cells = [i for i, name in enumerate(header) if name in ("encode", "decode")][:2]
    struct_cells = [i for i, name in enumerate(header) if name in ("encode", "decode")][2:]
    rates = {memory: [number(row[i]) for i in u64_cells] for memory, row in binary.items()}
    struct_ms = {memory: [number(row[i]) for i in struct_cells] for memory, row in binary.items()}

    def holds(memory_values, bar):
        return {memory: all(bar(i, v) for i, v in enumerate(values)) for memory, values in memory_values.items()}

    def verdict(held):
        if all(held.values()):
            return "met"
        return "met on a warm heap, not with fresh memory" if held.get("warm heap") else "missed"

    out.append(["binary codec: ≥ 2 GiB/s encode and decode, 1M u64",
                "; ".join(f"{v[0]:.2f} / {v[1]:.2f} GiB/s ({memory})" for memory, v in rates.items()),
                verdict(holds(rates, lambda _, v: v >= 2))])
    out.append([f"binary codec: structs ≥ 3x faster than Cppless ({CPPLESS_STRUCTS_MS[0]} / {CPPLESS_STRUCTS_MS[1]} ms)",
                "; ".join(f"{v[0]:.1f} / {v[1]:.1f} ms = {CPPLESS_STRUCTS_MS[0] / v[0]:.2f}x / "
                          f"{CPPLESS_STRUCTS_MS[1] / v[1]:.2f}x ({memory})" for memory, v in struct_ms.items()),
                verdict(holds(struct_ms, lambda i, v: CPPLESS_STRUCTS_MS[i] / v >= 3))])

    at_64_tasks = [r["summary"] for r in pi if r["parameters"].get("tasks") == 64]
    if at_64_tasks:
        speedup = at_64_tasks[0]["speedup"]
        out.append(["pi, 64 tasks, `local`: speedup ≥ 1.8 over sequential",
                    f"{speedup:.2f}x (the pi table above)", "met" if speedup >= 1.8 else "missed"])
    else:
        out.append(["pi, 64 tasks, `local`: speedup ≥ 1.8 over sequential",
                    "not run: `scripts/reproduce.sh pi`", ""])
    return table(["target", "measured", "verdict"], out)


def render(data, plots):
    out = {}
    for marker, name in [
        ("bench-codecs", "codecs"),
        ("bench-openwhisk", "openwhisk"),
        ("bench-lambda", "lambda"),
        ("bench-lambda-codec", "lambda-codec"),
        ("bench-lambda-shared", "lambda-shared"),
        ("bench-raytracer", "raytracer"),
    ]:
        out[marker] = markdown(*report_table(data, name))

    # invoke: the default runtimes (two runs in a full run), then one thread per runtime.
    header, rule, rows = report_table(data, "invoke")
    again = report_table(data, "invoke-again", required=False)
    if again:
        rows += again[2]
    out["bench-invoke"] = markdown(header, rule, [[rate(c) for c in row] for row in rows])
    invoke = (header, rows)
    header, rule, rows = report_table(data, "invoke-1thread")
    out["bench-invoke-1thread"] = markdown(header, rule, [[rate(c) for c in row] for row in rows])

    header, _, rows = report_table(data, "fan-out-memory")
    after = [["after: tasks pulled as room frees up"] + [rate(c) for c in row] for row in rows]
    out["bench-fan-out-memory"] = table(["code"] + header, FAN_OUT_BEFORE + after)

    pi_path = data / "pi.jsonl"
    pi = [json.loads(line) for line in pi_path.read_text().splitlines() if line.strip()] if pi_path.exists() else []
    header, _, rows = report_table(data, "codecs")
    out["bench-targets"] = targets(invoke, (header, rows), pi)

    header, rule, rows = report_table(data, "lambda-client")
    out["bench-lambda-client"] = markdown(header, rule, [[row[0], rate(row[1])] for row in rows])
    return out
