"""What every ``poam-ros`` command shares: how it refuses a bad configuration (one line on
stderr, status 2, before it starts anything) and how a stop signal ends it (status 130)."""

from __future__ import annotations

import argparse
import signal
import sys
from contextlib import contextmanager
from typing import Iterator

USAGE_ERROR = 2  # a bad configuration, refused before anything started (as argparse does)
INTERRUPTED = 130  # stopped by Ctrl-C or SIGTERM: the status a shell gives a SIGINT's end
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


def fail(command: str, error, status: int = USAGE_ERROR) -> int:
    """Print ``poam-ros <command>: <error>`` on one line to stderr and return ``status``.

    Whitespace runs are joined, because some errors (YAML's) come over several lines."""
    print(f"poam-ros {command}: {' '.join(str(error).split())}", file=sys.stderr)
    return status


class ArgumentParser(argparse.ArgumentParser):
    """argparse's parser, whose errors are one line too (argparse adds the usage)."""

    def error(self, message: str):
        self.exit(USAGE_ERROR, f"{self.prog}: {message} (see --help)\n")


@contextmanager
def interruptible() -> Iterator[None]:
    """While entered, SIGINT and SIGTERM raise ``KeyboardInterrupt`` in the main thread at
    once, so that a long command stops within a second (between two of torch's calls) and
    its ``except KeyboardInterrupt`` keeps what it has.

    Both are set here because neither default does that: a command started in the
    background by a non-interactive shell inherits SIGINT *ignored* (Python then installs
    no handler, and ``kill -INT`` does nothing), and SIGTERM ends the process without a
    word. Signals after the first are ignored, so that a second Ctrl-C does not cut short
    the writing of what the command has."""
    interrupted = False

    def handle(signum, frame) -> None:
        nonlocal interrupted
        if not interrupted:
            interrupted = True
            raise KeyboardInterrupt(signal.Signals(signum).name)

    previous = {signum: signal.signal(signum, handle) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
