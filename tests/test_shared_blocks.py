"""The four scripts share their env adapters, backends and plumbing by copy (CleanRL's way: each file stands alone).
Nothing else keeps the copies together, so this does: every top-level block (def, class, constant) that mappo.py and a
variant both have is the same text, except the variant's own algorithm (VARIANT_OWN) and the blocks whose changes
are recorded in tests/shared_blocks/<variant>/<block>.diff, which must be exactly those changes. A fix made in one copy
only fails here; a fix made in all of them keeps the recorded diffs as they are.

    python tests/test_shared_blocks.py --record   # rewrite the recorded diffs (after a deliberate change)
"""

import ast
import difflib
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RECORDED = ROOT / "tests" / "shared_blocks"
VARIANTS = ("ippo.py", "mappo_rnn.py", "mappo_async_seed.py")
# what each variant is about: its own networks, rollout, update and training loop (the README lists the changes)
VARIANT_OWN = {
    "ippo.py": {"Args", "train"},
    "mappo_rnn.py": {"Args", "Actor", "Critic", "rollout", "ppo_losses", "ppo_update", "evaluate", "train"},
    "mappo_async_seed.py": {"Args", "Actor", "Critic", "ppo_losses", "ppo_update", "evaluate", "train"},
}


def blocks(source: str) -> dict[str, str]:
    """Top-level defs, classes (decorators included) and assignments of a script -> name: source text"""
    lines, out = source.splitlines(), {}
    for node in ast.parse(source).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            start = min([node.lineno] + [d.lineno for d in node.decorator_list])
            out[node.name] = "\n".join(lines[start - 1 : node.end_lineno])
        elif isinstance(node, ast.Assign) and all(isinstance(t, ast.Name) for t in node.targets):
            out[",".join(t.id for t in node.targets)] = "\n".join(lines[node.lineno - 1 : node.end_lineno])
    return out


def changed_lines(base: str, variant: str) -> str:
    """The lines a variant removes (-) and adds (+), in order, without positions: what a recorded .diff holds"""
    diff = difflib.unified_diff(base.splitlines(), variant.splitlines(), n=0, lineterm="")
    return "".join(line + "\n" for line in diff if line[:1] in "+-" and not line.startswith(("+++", "---")))


def drift(base_source: str, variant_source: str, own: set, recorded: dict[str, str]) -> list[str]:
    """Every way the variant's shared blocks depart from mappo.py's beyond what is recorded -> messages"""
    base, variant = blocks(base_source), blocks(variant_source)
    problems = []
    for name in sorted(set(base) & set(variant) - own):
        changes = changed_lines(base[name], variant[name])
        if changes != recorded.get(name, ""):
            problems.append(
                f"{name}: differs from mappo.py's by\n{changes or '(nothing)'}expected\n{recorded.get(name, '(nothing)')}"
            )
    return problems + [f"{name}: recorded, but not in both scripts" for name in set(recorded) - (set(base) & set(variant))]


def recorded_diffs(variant: str) -> dict[str, str]:
    folder = RECORDED / variant.removesuffix(".py")
    return {p.stem: p.read_text() for p in sorted(folder.glob("*.diff"))}


@pytest.mark.parametrize("variant", VARIANTS)
def test_shared_blocks_identical(variant):
    """The env adapters, backends and plumbing of `variant` are mappo.py's, but for the recorded changes"""
    base, source = (ROOT / "mappo.py").read_text(), (ROOT / variant).read_text()
    assert drift(base, source, VARIANT_OWN[variant], recorded_diffs(variant)) == []
    shared = set(blocks(base)) & set(blocks(source)) - VARIANT_OWN[variant]
    assert {"JaxVecEnv", "SMAXVecEnv", "HanabiVecEnv", "MPEVecEnv", "SMACliteVecEnv", "make_env", "load_checkpoint"} <= shared


def test_a_fix_in_one_copy_only_is_caught():
    """A change to a shared block of one script, or to a recorded change, fails the check"""
    base, rnn = (ROOT / "mappo.py").read_text(), (ROOT / "mappo_rnn.py").read_text()
    recorded = recorded_diffs("mappo_rnn.py")
    assert drift(base, rnn, VARIANT_OWN["mappo_rnn.py"], recorded) == []
    fixed = base.replace("    def close(self):\n", "    def close(self):  # fixed here only\n", 1)
    [problem] = drift(fixed, rnn, VARIANT_OWN["mappo_rnn.py"], recorded)
    assert problem.startswith("FrameStack: differs") and "# fixed here only" in problem
    assert drift(
        base, rnn.replace('"data_chunk_length"):', '"data_chunk_length", "x"):'), VARIANT_OWN["mappo_rnn.py"], recorded
    )


if __name__ == "__main__" and sys.argv[1:] == ["--record"]:
    base = blocks((ROOT / "mappo.py").read_text())
    for variant in VARIANTS:
        folder, own = RECORDED / variant.removesuffix(".py"), VARIANT_OWN[variant]
        folder.mkdir(parents=True, exist_ok=True)
        for old in folder.glob("*.diff"):
            old.unlink()
        source = blocks((ROOT / variant).read_text())
        for name in sorted(set(base) & set(source) - own):
            if changes := changed_lines(base[name], source[name]):
                (folder / f"{name}.diff").write_text(changes)
                print(f"recorded {folder.name}/{name}.diff")
