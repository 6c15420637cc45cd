"""How the four scripts read, by issue 115's measures: lines, the share over 100 columns (and of those, the ones over
only because of a trailing comment), the mean non-blank line in characters, code tokens per non-blank line,
assignments of three or more names (all, and those that do not unpack one call's result) and the changed lines
against mappo.py. Writes benchmark/results/density.json and prints a table.

    python benchmark/measure/density.py [FILE ...]   # other files (CleanRL's ppo.py, say) are measured, not written
"""

import ast
import io
import json
import os
import subprocess
import sys
import tokenize

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = ["mappo.py", "ippo.py", "mappo_rnn.py", "mappo_async_seed.py"]
CODE_TOKENS_SKIPPED = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}


def wide_assignments(tree: ast.AST) -> tuple[int, int]:
    """(all, not one call's result): assignments whose target is a tuple of three or more names"""
    wide = [n for n in ast.walk(tree) if isinstance(n, ast.Assign) and any(_width(t) >= 3 for t in n.targets)]
    return len(wide), sum(not isinstance(n.value, ast.Call) for n in wide)


def _width(target: ast.expr) -> int:
    return len(target.elts) if isinstance(target, (ast.Tuple, ast.List)) else 1


def measure(path: str) -> dict:
    text = open(path).read()
    lines = text.splitlines()
    non_blank = [line.rstrip() for line in lines if line.strip()]
    wide = [line for line in non_blank if len(line) > 100]
    comment_only_wide = sum(len(line.split("  # ")[0].rstrip()) <= 100 for line in wide if "  # " in line)
    tokens = [t for t in tokenize.generate_tokens(io.StringIO(text).readline) if t.type not in CODE_TOKENS_SKIPPED]
    all_wide, not_call = wide_assignments(ast.parse(text))
    return {
        "lines": len(lines),
        "pct_over_100_columns": round(100 * len(wide) / len(lines), 1),
        "over_100_only_by_trailing_comment": comment_only_wide,
        "mean_non_blank_chars": round(sum(map(len, non_blank)) / len(non_blank), 1),
        "code_tokens_per_non_blank_line": round(len(tokens) / len(non_blank), 1),
        "assignments_of_3_plus_names": all_wide,
        "of_which_not_one_calls_result": not_call,
    }


def changed_lines(script: str) -> int:
    out = subprocess.run(["diff", "mappo.py", script], cwd=ROOT, capture_output=True, text=True).stdout
    return sum(line.startswith(("<", ">")) for line in out.splitlines())


def main():
    files = sys.argv[1:]
    rows = {f: measure(f) for f in files} if files else {s: measure(os.path.join(ROOT, s)) for s in SCRIPTS}
    if not files:
        for script in SCRIPTS[1:]:
            rows[script]["changed_lines_vs_mappo"] = changed_lines(script)
        with open(os.path.join(ROOT, "benchmark", "results", "density.json"), "w") as f:
            json.dump(rows, f, indent=1)
            f.write("\n")
    keys = list(next(iter(rows.values())))
    print("file | " + " | ".join(keys))
    for name, row in rows.items():
        print(f"{os.path.basename(name)} | " + " | ".join(str(row.get(k, "")) for k in keys))


if __name__ == "__main__":
    main()
