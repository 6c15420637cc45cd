"""A baseline runner's child process: it never outlives the runner (loaded by path, as provenance.py is)."""

import signal
import subprocess
import sys


def die_with_parent():
    """In the child, before its program starts (Linux): SIGTERM when the runner ends, even by SIGKILL"""
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # 1: PR_SET_PDEATHSIG


def run_child(cmd: list, cwd: str, env=None) -> int:
    """cmd to its end -> its exit status. SIGTERM (a benchmark script's stop) or SIGHUP end the runner as Ctrl-C does
    (SystemExit 143), and then the child is stopped first: terminated, killed after 30 s."""
    for sig in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(sig, lambda *_: sys.exit(143))
    child = subprocess.Popen(cmd, cwd=cwd, env=env, preexec_fn=die_with_parent)
    try:
        return child.wait()
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the stop short
        if child.poll() is None:  # never outlive the run
            child.terminate()
            try:
                child.wait(timeout=30)
            except subprocess.TimeoutExpired:
                child.kill()
