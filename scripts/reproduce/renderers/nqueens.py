"""N-Queens over n (Cppless figures 5.6–5.10)."""

from common import sweep


def render(data, plots):
    return sweep(data, plots, "nqueens", lambda p: f"n = {p['n']}", lambda p: p["n"], "n",
           "N-Queens, 64+ prefixes")
