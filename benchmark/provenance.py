"""Where a baseline's run came from, for the meta of its results: the exact command, the commit of the checkout it ran
(and the tracked files edited since), the versions of the packages that decide its numbers, and the machine. The
runners under benchmark/ (JaxMARL, Mava, BenchMARL) each call provenance() in their own venv: standard library only."""

import importlib.metadata
import os
import platform
import subprocess
import sys


def version(package: str):
    """The installed version of package, None where it is not installed"""
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def checkout_state(path: str) -> dict:
    """A git checkout's commit and the tracked files that differ from it (commit None: not a git checkout)"""
    git = lambda *args: subprocess.run(["git", "-C", path, *args], capture_output=True, text=True)  # noqa: E731
    commit = git("rev-parse", "HEAD").stdout.strip() or None
    edited = git("status", "--porcelain", "--untracked-files=no").stdout.splitlines() if commit else []
    return dict(path=os.path.abspath(path), commit=commit, modified=[line[3:] for line in edited] if commit else None)


def provenance(checkout=None, packages=()) -> dict:
    """command (argv, with the interpreter), python, machine, each package's version, and the checkout's state"""
    out = dict(command=[sys.executable, *sys.argv], python=platform.python_version(), machine=platform.machine())
    out["packages"] = {name: version(name) for name in packages}
    if checkout:
        out["checkout"] = checkout_state(checkout)
    return out
