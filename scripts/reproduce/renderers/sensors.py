"""Dyninka's sensor flow, chained against orchestrated (tables 4, 5)."""

from common import load_csv, ms, plt, table


def render(data, plots):
    sections = []
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.5), sharey=False)
    for axis, (name, title) in zip(axes, [
        ("sensors-dyninka", "no keep-alive, one CPU per service (Dyninka's setting)"),
        ("sensors-keep-alive", "keep-alive, services share both CPUs"),
    ]):
        rows = load_csv(data, name)
        modes = list(dict.fromkeys(row["mode"] for row in rows))
        levels = list(dict.fromkeys(int(row["clients"]) for row in rows))
        by = {(row["mode"], int(row["clients"])): row for row in rows}
        header = ["clients"]
        for mode in modes:
            header += [f"{mode} flows/s", "p99 ms", "errors"]
        header += [f"chained / {mode}" for mode in modes if mode != "chained"]
        body = []
        for level in levels:
            row = [level]
            for mode in modes:
                cell = by[(mode, level)]
                row += [f"{float(cell['flows_per_second']):.1f}", f"{float(cell['p99_ms']):.2f}",
                        f"{float(cell['error_rate']) * 100:.2f}%"]
            chained = float(by[("chained", level)]["flows_per_second"])
            row += [f"**{chained / float(by[(mode, level)]['flows_per_second']):.2f}x**"
                    for mode in modes if mode != "chained"]
            body.append(row)
        seconds = float(rows[0]["seconds"])
        level = f"{seconds:.0f}" if seconds >= 1 else f"{seconds:.1f}"
        sections.append(f"**{title}**, {level} s per level:\n\n" + table(header, body))
        for mode in modes:
            axis.plot(levels, [float(by[(mode, level)]["flows_per_second"]) for level in levels],
                      marker="o", label=mode)
        axis.set_xlabel("clients")
        axis.set_ylabel("flows/s")
        axis.set_title(title, fontsize=9)
        axis.legend()
    figure.tight_layout()
    figure.savefig(plots / "reproduce-sensors.png", dpi=110)
    plt.close(figure)
    return "\n\n".join(sections) + "\n\n![sensors flows/s over clients](reproduce-sensors.png)"
