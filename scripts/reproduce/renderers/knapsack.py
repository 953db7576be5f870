"""knapsack with the split that follows the work and the fixed one (Cppless figure 5.4)."""

from common import load, ms, table


def render(data, plots):
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
