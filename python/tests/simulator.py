"""`inferlint sim serve` for the tests: started on 127.0.0.1 with a free port, in a process
group of its own, and stopped by that group (everything it started, nothing else)."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
import urllib.request
from pathlib import Path

from inferlint._binary import find


class Sim:
    def __init__(self, args: list[str], log: Path) -> None:
        exe = find()
        assert exe is not None, "the inferlint program is not installed beside the package"
        self.log_path = log
        self._log = log.open("w", encoding="utf-8")
        self.proc = subprocess.Popen(
            [exe, "sim", "serve", "m", "--host", "127.0.0.1", "--port", "0", "--boot-secs", "0", *args],
            stdin=subprocess.DEVNULL,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        self.port = self._wait_port()
        self.url = f"http://127.0.0.1:{self.port}"

    def _wait_port(self) -> int:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            text = self.log_path.read_text(encoding="utf-8", errors="replace")
            if "Application startup complete." in text:
                for line in text.splitlines():
                    if "Starting vLLM server on http://" in line:
                        return int(line.rsplit(":", 1)[1].strip())
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        self.stop()
        raise AssertionError(f"the simulator did not start:\n{self.log_path.read_text()}")

    def load(self, requests: int, max_tokens: int) -> None:
        """`requests` completions at once, each bounded by a timeout."""
        errors: list[BaseException] = []

        def one() -> None:
            body = (
                '{"model": "m", "prompt": "Write one sentence about the weather.", '
                f'"max_tokens": {max_tokens}, "temperature": 0}}'
            ).encode()
            req = urllib.request.Request(
                self.url + "/v1/completions", body, {"Content-Type": "application/json"}
            )
            try:
                with urllib.request.urlopen(req, timeout=60) as r:
                    r.read()
            except BaseException as e:  # collected, raised by the caller's thread
                errors.append(e)

        threads = [threading.Thread(target=one) for _ in range(requests)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(90)
        assert not errors, errors

    def stop(self) -> None:
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(10)
        self._log.close()
