"""The benches' own Markdown tables (experiments/benches.sh): each bench's report, captured into
benches-NAME.md, goes between its markers; the prose around them is the document's."""

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
]

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
    header, rule, rows = report_table(data, "invoke-1thread")
    out["bench-invoke-1thread"] = markdown(header, rule, [[rate(c) for c in row] for row in rows])

    header, _, rows = report_table(data, "fan-out-memory")
    after = [["after: tasks pulled as room frees up"] + [rate(c) for c in row] for row in rows]
    out["bench-fan-out-memory"] = table(["code"] + header, FAN_OUT_BEFORE + after)

    header, rule, rows = report_table(data, "lambda-client")
    out["bench-lambda-client"] = markdown(header, rule, [[row[0], rate(row[1])] for row in rows])
    return out
