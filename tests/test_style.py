"""One formatter for the whole repo (STYLE.md): diffs between the scripts show ideas, not formatting drift."""

import subprocess
import sys

from conftest import ROOT


def test_ruff_format_and_lint():
    fmt = subprocess.run([sys.executable, "-m", "ruff", "format", "--check", "."], cwd=ROOT, capture_output=True, text=True)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr
