"""``python -m inferlint ...``: the Rust program, in place of this interpreter."""

from __future__ import annotations

import os
import sys

from ._binary import find


def main() -> None:
    exe = find()
    if exe is None:
        sys.stderr.write(
            "inferlint: the inferlint program is not installed beside this package "
            "(reinstall with 'pip install inferlint', or build it with 'cargo build --release')\n"
        )
        raise SystemExit(127)
    os.execv(exe, [exe, *sys.argv[1:]])


if __name__ == "__main__":
    main()
