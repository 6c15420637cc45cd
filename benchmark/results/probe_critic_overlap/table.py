"""ab.log -> table.md: per variant (h: mappo.py at 7d73732, x: with critic_overlap.patch) each run's SPS and the
medians of the runs. Run in this folder: python table.py"""

import statistics

NAMES = {"h": "mappo.py at 7d73732", "x": "with critic_overlap.patch"}
rows = {tag: [] for tag in NAMES}
for line in open("ab.log"):
    cells = [c.strip() for c in line.split("|")[1:-1]]  # env | envs | raw SPS | SPS | ratio | env | update | rest
    rows[line.split()[0]].append(dict(sps=float(cells[3]), env=float(cells[5]), update=float(cells[6]), rest=float(cells[7])))

out = [
    "| mappo.py | runs | SPS per run | median SPS | median s / iteration: env | update (on the loop's path) | rest |",
    "|---|---|---|---|---|---|---|",
]
for tag, runs in rows.items():
    median = {k: statistics.median(run[k] for run in runs) for k in ("sps", "env", "update", "rest")}
    each = ", ".join(f"{run['sps']:.0f}" for run in runs)
    out.append(
        f"| {NAMES[tag]} | {len(runs)} | {each} | {median['sps']:.0f} | {median['env']:.3f} | {median['update']:.3f} "
        f"| {median['rest']:.3f} |"
    )
open("table.md", "w").write("\n".join(out) + "\n")
print("\n".join(out))
