"""Reading what a command the tests started prints, as a person at its console would: up to a line,
bounded in time, and saying what it printed when the line never comes."""

import os
import subprocess
import time


def read_until(process: subprocess.Popen, marker: str, seconds: float = 30, who: str = "the command") -> str:
    """What `process` printed up to and including the line holding `marker` (bounded in time)."""
    seen, deadline = b"", time.monotonic() + seconds
    os.set_blocking(process.stdout.fileno(), False)
    while marker.encode() not in seen:
        if time.monotonic() > deadline or process.poll() is not None:
            process.kill()
            raise AssertionError(f"no {marker!r} from {who}; it printed:\n{seen.decode()}")
        chunk = process.stdout.read()
        seen += chunk or b""
        time.sleep(0.02 if not chunk else 0)
    return seen.decode()
