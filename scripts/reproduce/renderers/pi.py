"""pi's sweep over tasks (Cppless figures 5.15, 5.16)."""

from common import load, sweep


def render(data, plots):
    samples = load(data, "pi")[0]["parameters"]["samples"]
    return sweep(
        data, plots, "pi", lambda p: f"{p['tasks']} task{'s' if p['tasks'] > 1 else ''}",
        lambda p: p["tasks"], "tasks", "pi: Monte-Carlo over tasks", log_x=True,
        preface=f"{samples:,} samples.\n\n",
    )
