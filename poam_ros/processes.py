"""Child processes of the tools (node processes, benchmark peers): ending them boundedly."""

from __future__ import annotations

import subprocess


def wait_or_kill(process: subprocess.Popen, timeout: float) -> int | str:
    """The exit status of ``process`` if it ends within ``timeout`` s; otherwise it is killed,
    reaped, and "killed" is returned. A tool never hangs on a child that ignores its signal."""
    try:
        return process.wait(max(0.0, timeout))
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return "killed"
