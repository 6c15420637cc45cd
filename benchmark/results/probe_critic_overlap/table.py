import statistics as st
rows = {"h": [], "x": []}
for line in open("ab.log"):
    tag = line.split()[0]
    cells = [c.strip() for c in line.split("|")[1:-1]]
    rows[tag].append(dict(sps=float(cells[3]), env=float(cells[5]), update=float(cells[6]), rest=float(cells[7])))
name = {"h": "mappo.py at 7d73732", "x": "with critic_overlap.patch"}
out = ["| mappo.py | runs | SPS per run | median SPS | median s / iteration: env | update (on the loop's path) | rest |", "|---|---|---|---|---|---|---|"]
for t in ("h", "x"):
    r = rows[t]
    med = lambda k: st.median(x[k] for x in r)
    sps = ", ".join("%.0f" % x["sps"] for x in r)
    out.append(f"| {name[t]} | {len(r)} | {sps} | {med('sps'):.0f} | {med('env'):.3f} | {med('update'):.3f} | {med('rest'):.3f} |")
open("table.md", "w").write("\n".join(out) + "\n")
print("\n".join(out))
