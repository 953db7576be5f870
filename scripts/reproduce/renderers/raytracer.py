"""The raytracer over tiles, each invocation's time split (Cppless figures 5.12–5.14)."""

from common import cost, load, ms, plt, table


def render(data, plots):
    records = load(data, "raytracer")
    header = ["tiles", "wall", "dispatch→start p50 / p99", "run p50 / p99", "return p50 / p99",
              "Lambda GB-s", "Lambda $"]
    rows = []
    for record in records:
        summary, latency = record["summary"], record["summary"]["latency"]
        part = lambda name: f"{latency[name]['p50_ms']:.1f} / {latency[name]['p99_ms']:.1f} ms"
        gb_seconds, dollars = cost(summary["tasks"], summary["seconds"], 2)
        rows.append([summary["tasks"], ms(summary["seconds"]), part("dispatch_to_start"),
                     part("run"), part("return_to_host"), f"{gb_seconds:.3f}", f"${dollars:.6f}"])
    figure, axis = plt.subplots(figsize=(6, 3.5))
    tiles = [r["summary"]["tasks"] for r in records]
    for name, label in [("dispatch_to_start", "dispatch → start"), ("run", "run"),
                        ("return_to_host", "return → host")]:
        axis.plot(tiles, [r["summary"]["latency"][name]["p50_ms"] for r in records], marker="o",
                  label=f"{label}, median")
    axis.set_xscale("log", base=2)
    axis.set_yscale("log")
    axis.set_xlabel("tiles")
    axis.set_ylabel("ms per invocation")
    size = records[0]["parameters"]["size"]
    axis.set_title(f"raytracer {size}x{size}: where an invocation's time goes")
    axis.legend()
    figure.tight_layout()
    figure.savefig(plots / "reproduce-raytracer.png", dpi=110)
    plt.close(figure)
    return (
        f"{size}x{size}, every tile dispatched at once, scene as `Shared<Scene>`.\n\n"
        + table(header, rows)
        + "\n\n![raytracer latency parts over tiles](reproduce-raytracer.png)"
    )
