"""fib over n, nested invocations (Cppless figure 5.1)."""

from common import sweep


def render(data, plots):
    return sweep(data, plots, "fib", lambda p: f"n = {p['n']}", lambda p: p["n"], "n",
           "fib: nested invocations")
