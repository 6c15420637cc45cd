"""One formatter for the whole repo: diffs between the scripts show ideas, not formatting drift."""

import importlib
import re
import subprocess
import sys

import pytest

from conftest import ROOT


def test_ruff_format_and_lint():
    fmt = subprocess.run([sys.executable, "-m", "ruff", "format", "--check", "."], cwd=ROOT, capture_output=True, text=True)
    assert fmt.returncode == 0, fmt.stdout + fmt.stderr
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", "."], cwd=ROOT, capture_output=True, text=True)
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_readme_is_what_update_readme_writes():
    """Every number in README.md and benchmark/results/README.md is written by benchmark/report/update_readme.py from
    benchmark/results (or from the scripts: their sizes, and the lines the links point to): both must be exactly what it
    would write now."""
    proc = subprocess.run(
        [sys.executable, "benchmark/report/update_readme.py", "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr


def test_update_readme_rewrites_stale_numbers():
    sys.path.insert(0, str(ROOT / "benchmark" / "report"))
    import update_readme

    stale = 'ippo.py is <!-- gen diff ippo.py -->999<!-- /gen --> lines off; [GAE](mappo.py#L1 "def compute_gae(")'
    fresh = update_readme.render(stale)
    lines = (ROOT / "mappo.py").read_text().splitlines()
    assert f"-->{update_readme.diff('ippo.py')}<!--" in fresh and "999" not in fresh
    assert f'(mappo.py#L{1 + next(i for i, line in enumerate(lines) if "def compute_gae(" in line)} "' in fresh


def test_update_readme_stops_at_a_marker_it_cannot_read():
    """a marker the generator's pattern misses (here a '#' in an argument) would leave its old numbers in place unseen"""
    sys.path.insert(0, str(ROOT / "benchmark" / "report"))
    import update_readme

    with pytest.raises(SystemExit, match="1 '<!-- gen' marker"):
        update_readme.render("<!-- gen diff ippo.py#1 -->999<!-- /gen -->")
    assert "999" not in update_readme.render("<!-- gen diff ippo.py -->999<!-- /gen -->")


def test_update_readme_writes_images_relative_to_each_doc():
    """benchmark/results/README.md shows the same figures as README.md, so their paths start from its own folder"""
    sys.path.insert(0, str(ROOT / "benchmark" / "report"))
    import update_readme

    block = "<!-- gen figures smax_hard_10m_paper -->\n<!-- /gen -->"
    top, detail = update_readme.render(block), update_readme.render(block, "benchmark/results/README.md")
    assert "](benchmark/results/smax_hard_10m_paper/curves.png)" in top
    assert "](smax_hard_10m_paper/curves.png)" in detail
    assert (ROOT / "benchmark" / "results" / "smax_hard_10m_paper" / "curves.png").exists()
    assert update_readme.DOCS == ("README.md", "benchmark/results/README.md")  # both checked by the test above


def test_readme_links_into_the_results_doc_reach_its_headings():
    """README.md points to the tables it moved to benchmark/results/README.md by heading anchors (GitHub's: lower case,
    punctuation dropped, spaces to hyphens): a renamed heading would leave a link that lands at the top"""
    detail = (ROOT / "benchmark" / "results" / "README.md").read_text()
    slugs = {re.sub(r"[^\w\- ]", "", h.lower()).replace(" ", "-") for h in re.findall(r"^#+ (.+)$", detail, flags=re.M)}
    links = re.findall(r"\]\(benchmark/results/README\.md#([^)]+)\)", (ROOT / "README.md").read_text())
    assert len(set(links)) >= 8, links  # the parse itself: each moved table has a pointer
    assert set(links) <= slugs, set(links) - slugs


@pytest.mark.parametrize("script", ["mappo.py", "ippo.py", "mappo_rnn.py", "mappo_async_seed.py"])
def test_help_shows_every_default_with_its_source(script, monkeypatch, capsys):
    """--help gives every env and algorithm flag its default and where that default comes from: [MAPPO: ...] or
    [Async MAPPO: ...] for the papers, [ours...] for our own choice. The help texts are the fields' docstrings in Args (CleanRL's form)."""
    source = (ROOT / script).read_text()
    args = source[source.index("    # env\n") : source.index("\n\n\n", source.index("    # env\n"))]
    fields = re.findall(r'^    (\w+): .*\n    """(.*)"""$', args, re.M)
    assert len(fields) >= 30, "the Args fields were not found"
    monkeypatch.setenv("COLUMNS", "400")  # one line per flag
    with pytest.raises(SystemExit):  # the script's own parse_args, in this process
        importlib.import_module(script[: -len(".py")]).parse_args(["--help"])
    out = capsys.readouterr().out
    lines = out.splitlines()
    for name, comment in fields:
        flag = "--" + name.replace("_", "-")
        [i] = [i for i, line in enumerate(lines) if re.search(rf"^[│ ] *{flag}[ ,]", line)]
        line = lines[i] + (lines[i + 1] if "(default:" not in lines[i] else "")  # a long flag has its help below it
        assert "(default:" in line and comment.strip() in line, (flag, line)
        assert any(source in comment for source in ("[MAPPO:", "[Async MAPPO:", "[ours", "ours:")), (flag, comment)
