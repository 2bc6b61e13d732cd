"""What every benchmark script writes about its run, and how it writes its RESULTS.md section.

    write_section(path, text, "<!-- name:start -->", "<!-- name:end -->")
    machine()    "2 cores (AMD EPYC), 23.5 GiB RAM, Linux 6.18"
    versions()   {"python": ..., "onnx": ..., ..., "maxlower": "0.1.0 (git 1a2b3c4)"}

Each script owns one marked section of benchmarks/RESULTS.md and rewrites only that one.
"""

from __future__ import annotations

import contextlib
import os
import platform
import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def write_section(path: Path, text: str, start_marker: str, end_marker: str) -> None:
    """Replace the text between the markers (markers included), or append it; the other
    sections of the file are kept."""
    old = path.read_text() if path.exists() else "# Benchmark results\n"
    start, end = old.find(start_marker), old.find(end_marker)
    if start != -1 and end > start:
        new = old[:start] + text.rstrip("\n") + old[end + len(end_marker) :]
    else:
        new = old.rstrip("\n") + "\n\n" + text
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(new if new.endswith("\n") else new + "\n")


def machine() -> str:
    memory = "unknown RAM"
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory = f"{int(line.split()[1]) / 2**20:.1f} GiB RAM"
    cpu = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    return f"{os.cpu_count()} cores ({cpu}), {memory}, {platform.system()} {platform.release()}"


def git_revision() -> str:
    try:
        return subprocess.run(
            ["git", "describe", "--always", "--dirty"],
            cwd=REPO_ROOT,
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def versions() -> dict[str, str]:
    """The versions that decide the figures (imported here, so that each script need not)."""
    import numpy as np
    import onnx
    import onnx_ir as ir
    import onnxruntime
    import onnxscript

    import maxlower

    return {
        "python": platform.python_version(),
        "onnx": onnx.__version__,
        "onnx_ir": ir.__version__,
        "onnxruntime": onnxruntime.__version__,
        "onnxscript": onnxscript.__version__,
        "numpy": np.__version__,
        "maxlower": f"{maxlower.__version__} (git {git_revision()})",
    }


def versions_text() -> str:
    return ", ".join(f"{name} {version}" for name, version in versions().items())
