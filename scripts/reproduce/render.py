"""Renders the data of scripts/reproduce.sh into docs/benchmarks.md and its plots.

Each measured table sits between `<!-- reproduce:NAME -->` and `<!-- /reproduce:NAME -->` in the
document; this replaces what is between them and leaves the prose around it alone. An experiment's
renderer, scripts/reproduce/renderers/EXPERIMENT.py, has `render(data, plots)`, which returns the
text of the marker named as the experiment, or a dict of texts by marker when it fills several
(then it lists them in `MARKERS`). Every marker must have a renderer and every renderer its
markers, so neither can be forgotten. `data/runs.json` keeps when each experiment last ran and how
long it took: the `run` marker's table.
"""

import argparse
import datetime
import importlib.util
import json
import re
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from common import table  # noqa: E402


def renderers():
    modules = {}
    for path in sorted((HERE / "renderers").glob("*.py")):
        spec = importlib.util.spec_from_file_location(f"renderer_{path.stem}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules[path.stem] = module
    return modules


def markers_of(name, module):
    return list(getattr(module, "MARKERS", [name]))


def replace_between(document, name, content):
    pattern = re.compile(
        rf"(<!-- reproduce:{re.escape(name)} -->\n)(?:.*?\n)?(<!-- /reproduce:{re.escape(name)} -->)",
        re.S,
    )
    if not pattern.search(document):
        sys.exit(f"error: the document has no <!-- reproduce:{name} --> … <!-- /reproduce:{name} --> markers")
    return pattern.sub(lambda m: m.group(1) + content + "\n" + m.group(2), document, count=1)


def runs_table(runs):
    rows = []
    total = 0
    for name, run in runs.items():
        total += run["seconds"]
        rows.append([f"`{name}`", run["date"], f"{run['seconds']} s" if run["seconds"] < 120 else f"{run['seconds'] / 60:.1f} min",
                     "quick" if run.get("quick") else "full"])
    return (table(["experiment", "last run", "took", "size"], rows)
            + f"\n\nAll of them, one after the other: {total / 60:.0f} minutes.")


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--document", type=Path, required=True)
    parser.add_argument("--plots", type=Path, required=True)
    parser.add_argument("--quick", action="store_true")
    parser.add_argument("durations", nargs="+", help="EXPERIMENT=SECONDS of each experiment that ran")
    args = parser.parse_args()

    modules = renderers()
    document = args.document.read_text()
    markers = set(re.findall(r"<!-- reproduce:([\w-]+) -->", document)) - {"run"}
    rendered = {marker for name, module in modules.items() for marker in markers_of(name, module)}
    if markers != rendered:
        sys.exit(
            f"error: markers without a renderer: {sorted(markers - rendered)}; "
            f"renderers without a marker: {sorted(rendered - markers)}"
        )
    runs_path = args.data / "runs.json"
    runs = json.loads(runs_path.read_text()) if runs_path.exists() else {}
    for duration in args.durations:
        name, seconds = duration.split("=")
        if name not in modules:
            sys.exit(f"error: no renderer scripts/reproduce/renderers/{name}.py")
        content = modules[name].render(args.data, args.plots)
        if isinstance(content, str):
            content = {name: content}
        if set(content) != set(markers_of(name, modules[name])):
            sys.exit(f"error: {name}'s renderer filled {sorted(content)}, not its MARKERS")
        for marker, text in content.items():
            document = replace_between(document, marker, text)
        runs[name] = {"date": datetime.date.today().isoformat(), "seconds": int(seconds),
                      "quick": args.quick}
    runs_path.write_text(json.dumps(runs, indent=1) + "\n")
    document = replace_between(document, "run", runs_table(runs))
    args.document.write_text(document)


if __name__ == "__main__":
    main()
