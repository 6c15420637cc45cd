"""Pastes benchmark outputs into README.md between `<!-- NAME: made by benchmark/ -->` and `<!-- end NAME -->`, so
the README's results are the files that benchmark/ wrote, never typed by hand.

    python benchmark/update_readme.py results=benchmark/results/acceptance/summary.md,benchmark/results/throughput.md
"""

import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def main(specs):
    path = os.path.join(ROOT, "README.md")
    with open(path) as f:
        readme = f.read()
    for spec in specs:
        name, files = spec.split("=", 1)
        parts = []
        for rel in files.split(","):
            with open(os.path.join(ROOT, rel)) as f:
                parts.append(f"From `{rel}`:\n\n" + f.read().strip())
            png = os.path.join(os.path.dirname(rel), "curves.png")
            if rel.endswith("summary.md") and os.path.exists(os.path.join(ROOT, png)):
                parts.append(f"![eval curves]({png})")
        start, end = f"<!-- {name}: made by benchmark/ -->", f"<!-- end {name} -->"
        block = f"{start}\n" + "\n\n".join(parts) + f"\n{end}"
        pattern = re.escape(start) + r"(.*?" + re.escape(end) + r")?"
        readme, n = re.subn(pattern, lambda _: block, readme, count=1, flags=re.S)
        if n != 1:
            sys.exit(f"README.md has no marker {start}")
    with open(path, "w") as f:
        f.write(readme)


if __name__ == "__main__":
    main(sys.argv[1:])
