"""How much each install line of README.md downloads: the wheels of requirements.txt from PyPI, with torch 2.13.0 as
PyTorch's CPU wheel (CPU only) or as PyPI's CUDA build and the CUDA libraries it requires (GPU). Writes
benchmark/results/install.json, which README.md quotes.

    python benchmark/measure/install_size.py [--cpu-torch-wheel PATH]

pip runs with --isolated (no pip.conf: PyPI and the CPU index only). Where download.pytorch.org cannot be reached,
--cpu-torch-wheel gives a copy of its CPU wheel to measure instead (the file, not a build of it).
"""

import argparse
import glob
import json
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CPU_INDEX = "https://download.pytorch.org/whl/cpu"


def download(requirements: list[str], extra: list[str]) -> tuple[float, list[str]]:
    """MB of the wheels pip downloads for these requirements (dependencies included), and their names."""
    with tempfile.TemporaryDirectory() as tmp:
        cmd = [sys.executable, "-m", "pip", "download", "--isolated", "--only-binary=:all:", "--no-cache-dir", "-d", tmp]
        subprocess.run(cmd + extra + requirements, check=True, capture_output=True, text=True)
        files = glob.glob(os.path.join(tmp, "*.whl"))
        return sum(os.path.getsize(f) for f in files) / 1e6, sorted(os.path.basename(f) for f in files)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpu-torch-wheel", help="a local copy of PyTorch's CPU wheel, if its index is out of reach")
    parser.add_argument("--out", default=os.path.join(ROOT, "benchmark", "results", "install.json"))
    opts = parser.parse_args()
    with open(os.path.join(ROOT, "requirements.txt")) as f:
        reqs = [line.split("#")[0].strip() for line in f if line.split("#")[0].strip()]
    torch_req = next(r for r in reqs if r.startswith("torch=="))
    rest = [r for r in reqs if r != torch_req]
    rest_mb, _ = download(rest, ["--no-deps"])  # requirements.txt is the whole locked set
    gpu_install_mb, _ = download(reqs, [])  # torch from PyPI: the CUDA build, with the CUDA libraries it requires
    if opts.cpu_torch_wheel:
        cpu_mb, cpu_source = os.path.getsize(opts.cpu_torch_wheel) / 1e6, os.path.basename(opts.cpu_torch_wheel)
    else:
        cpu_mb, files = download([torch_req], ["--no-deps", "--index-url", CPU_INDEX])
        cpu_source = files[0]
    result = dict(
        date=time.strftime("%Y-%m-%d"),
        python=platform.python_version(),
        requirements_without_torch_mb=round(rest_mb),
        torch_cpu_mb=round(cpu_mb),
        torch_cpu_wheel=cpu_source,
        cpu_install_mb=round(rest_mb + cpu_mb),
        gpu_install_mb=round(gpu_install_mb),
    )
    with open(opts.out, "w") as f:
        json.dump(result, f, indent=1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
