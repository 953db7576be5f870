"""Hexaville (seed 003): wrk against a web app on the Lambda runtime, warm and a process per
invocation, behind an API Gateway stand-in and a Lambda emulator."""

from common import load, table

MODES = {"warm": "ferry's warm runtime", "per-invocation": "a process per invocation (shim)"}


def render(data, plots):
    records = load(data, "hexaville")

    def rate(summary):
        return summary["requests"] / (summary["duration_us"] / 1e6)

    spawned = {r["parameters"]["emulator"]: rate(r["summary"])
               for r in records if r["parameters"]["mode"] == "per-invocation"}
    header = ["runtime", "payload", "req/s", "× per invocation", "p50 ms", "p99 ms", "requests",
              "errors", "emulator"]
    rows = []
    for record in records:
        parameters, summary = record["parameters"], record["summary"]
        baseline = spawned.get(parameters["emulator"])
        rows.append([
            MODES.get(parameters["mode"], parameters["mode"]),
            parameters["payload"],
            f"**{rate(summary):.1f}**",
            f"{rate(summary) / baseline:.2f}x" if baseline else "",
            f"{summary['p50_us'] / 1e3:.2f}",
            f"{summary['p99_us'] / 1e3:.2f}",
            summary["requests"],
            sum(value for key, value in summary.items() if key.endswith(("_errors", "timeouts"))),
            parameters["emulator"],
        ])
    first = records[0]["parameters"]
    return (
        f"`wrk -t{first['threads']} -c{first['connections']} -d{first['seconds']}s` on "
        f"`GET {first['route']}`, one instance:\n\n" + table(header, rows)
    )
