"""The command line, from Python: ``main(argv)`` runs the Rust ``inferlint`` program
installed with this package and returns its exit code, so verdict lines, formats and exit
codes are the program's own."""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Sequence

from ._binary import find

__all__ = ["build_parser", "main"]


def build_parser() -> argparse.ArgumentParser:
    """A parser that takes a command line for the program as it is. The commands and their
    options are the program's (``inferlint --help``); this one only carries them over."""
    ap = argparse.ArgumentParser(
        prog="inferlint",
        description="Measures what your inference server actually did, and flags what it "
        "didn't tell you. Every command is the inferlint program's: see 'inferlint --help'.",
        add_help=False,
    )
    ap.add_argument("args", nargs=argparse.REMAINDER, help="the program's command line")
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    """Runs ``inferlint ARGV...`` (``sys.argv[1:]`` by default) and returns its exit code.
    Its output goes to this process's stdout and stderr."""
    args = list(sys.argv[1:] if argv is None else argv)
    exe = find()
    if exe is None:
        print("inferlint: the inferlint program is not installed beside this package", file=sys.stderr)
        return 127
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        sys.stdout.fileno()
        sys.stderr.fileno()
    except (AttributeError, OSError, ValueError):
        # Streams without a file (pytest's capture, a notebook): pass the output through.
        done = subprocess.run([exe, *args], capture_output=True, text=True, check=False)
        sys.stdout.write(done.stdout)
        sys.stderr.write(done.stderr)
        return done.returncode
    return subprocess.call([exe, *args])
