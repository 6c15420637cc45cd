"""h_N.json / x_N.json (benchmark/throughput.py's rows, written by ab.sh) -> table.md: per variant (h: mappo.py at
7d73732, x: with critic_overlap.patch) each run's SPS and the medians of the runs. Run in this folder."""

import glob
import json
import statistics

NAMES = {"h": "mappo.py at 7d73732", "x": "with critic_overlap.patch"}
KEYS = ("sps", "env_s", "update_s", "other_s")
out = [
    "| mappo.py | runs | SPS per run | median SPS | median s / iteration: env | update (on the loop's path) | rest |",
    "|---|---|---|---|---|---|---|",
]
for tag, name in NAMES.items():
    runs = [json.load(open(path))[0] for path in sorted(glob.glob(f"{tag}_*.json"))]
    median = {k: statistics.median(run[k] for run in runs) for k in KEYS}
    each = ", ".join(f"{run['sps']:.0f}" for run in runs)
    out.append(
        f"| {name} | {len(runs)} | {each} | {median['sps']:.0f} | {median['env_s']:.3f} | {median['update_s']:.3f} "
        f"| {median['other_s']:.3f} |"
    )
open("table.md", "w").write("\n".join(out) + "\n")
print("\n".join(out))
