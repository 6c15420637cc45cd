"""One formatter for the whole repo (STYLE.md): diffs between the scripts show ideas, not formatting drift."""

import os
import subprocess
import sys

from conftest import ROOT


def test_ruff_format_and_lint():
    fmt = subprocess.run([sys.executable, "-m", "ruff", "format", "--check", "."], cwd=ROOT, capture_output=True, text=True)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_readme_gives_the_true_size_of_the_ippo_diff():
    """README.md says how many lines ippo.py changes from mappo.py (STYLE.md budgets about 40); the number must be
    the one `diff mappo.py ippo.py | grep -c '^[<>]'` gives for the files as they are."""
    out = subprocess.run(["diff", "mappo.py", "ippo.py"], cwd=ROOT, capture_output=True, text=True).stdout
    changed = sum(line.startswith(("<", ">")) for line in out.splitlines())
    with open(os.path.join(ROOT, "README.md")) as f:
        assert f"({changed} changed lines, `diff mappo.py ippo.py" in f.read()
