"""`agentlab gateway` under a class's load (issue 39; a script, not a test).

    .venv/bin/python benchmarks/gateway_load.py [learners] [requests]    # default 50 x 40

`agentlab serve` (the upstream) and `agentlab gateway serve` each run in a process of their own,
as in a class; the learners are threads here, each with its own token, a daily budget and a cap
on requests at once, sending its requests one after another down one kept-alive connection (as
the SDK does). The same load is sent straight to the upstream, then through the gateway, so the
difference is what the gateway adds (checking the token and limits, forwarding, pricing, the
ledger's commit and the recording). Then one learner alone, 200 requests, both ways: the added
latency without queueing. Printed: requests/s, latency median and p99 both ways and their
difference, refusals and failures, the gateway's memory (resident now and at its peak), and the
machine's load average, since on a shared machine other work shows in every figure.
"""

from __future__ import annotations

import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from agentlab.gateway.store import Ledger

HELLO = {"model": "claude-haiku-5-5", "max_tokens": 50, "messages": [{"role": "user", "content": "Hi"}]}
AGENTLAB = str(Path(sys.executable).with_name("agentlab"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def started(command: list[str], marker: str, env: dict[str, str]) -> subprocess.Popen:
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = process.stdout.readline()
        if marker in line:
            return process
        if not line and process.poll() is not None:
            break
    process.kill()
    raise RuntimeError(f"{command[1]} did not start")


def load(port: int, tokens: list[str], requests: int) -> tuple[list[float], list[int], float]:
    """Each token's thread sends `requests` requests on one kept-alive connection: the latencies,
    the statuses, and the wall time."""
    body, lock = json.dumps(HELLO).encode(), threading.Lock()
    seconds: list[float] = []
    statuses: list[int] = []

    def learner(token: str) -> None:
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        headers = {"content-type": "application/json", "x-api-key": token}
        for _ in range(requests):
            began = time.perf_counter()
            try:
                connection.request("POST", "/v1/messages", body, headers)
                response = connection.getresponse()
                response.read()
                status = response.status
            except (OSError, http.client.HTTPException):
                connection.close()
                connection = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                status = 0
            with lock:
                seconds.append(time.perf_counter() - began)
                statuses.append(status)
        connection.close()

    began = time.perf_counter()
    threads = [threading.Thread(target=learner, args=(token,)) for token in tokens]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return seconds, statuses, time.perf_counter() - began


def quantiles(seconds: list[float]) -> tuple[float, float]:
    ordered = sorted(seconds)
    return statistics.median(ordered), ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]


def memory(pid: int) -> str:
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines() if ":" in line
    )
    return f"resident {fields['VmRSS'].strip()}, peak {fields['VmHWM'].strip()}"


def main(learners: int = 50, requests: int = 40) -> None:
    env = {**os.environ, "ANTHROPIC_API_KEY": "sk-ant-benchmark-key", "NO_PROXY": "127.0.0.1"}
    with tempfile.TemporaryDirectory() as folder:
        db = str(Path(folder) / "class.db")
        ledger = Ledger(db)
        tokens = [ledger.add_learner(f"learner-{n:02d}", 2.0, concurrent=4) for n in range(learners)]
        ledger.close()
        up, way = free_port(), free_port()
        upstream = started([AGENTLAB, "serve", "--port", str(up)], "Ctrl-C", env)
        command = [AGENTLAB, "gateway", "serve", "--db", db, "--upstream", f"http://127.0.0.1:{up}"]
        gateway = started([*command, "--port", str(way)], "Ctrl-C stops it", env)
        try:
            print(f"load average before: {os.getloadavg()[0]:.2f} (2 cores shared: other work shows here)")
            load(way, tokens[:2], 5)  # warm both (imports, connections)
            figures = {}
            for name, port in (("direct", up), ("gateway", way)):
                seconds, statuses, wall = load(port, tokens, requests)
                figures[name] = quantiles(seconds)
                ok = statuses.count(200)
                print(
                    f"{name:>8}: {learners} learners x {requests} requests in {wall:.1f} s = "
                    f"{len(statuses) / wall:.0f} requests/s; 200: {ok}, other: {len(statuses) - ok}; "
                    f"latency median {figures[name][0] * 1000:.1f} ms, p99 {figures[name][1] * 1000:.1f} ms"
                )
            added = [(g - d) * 1000 for g, d in zip(figures["gateway"], figures["direct"], strict=True)]
            print(  # under load the difference is mostly queueing, and p99s of two runs need not order
                f"added under load: median {added[0]:+.1f} ms, p99 {added[1]:+.1f} ms (quantiles subtracted)"
            )
            alone = {
                name: quantiles(load(port, tokens[:1], 200)[0]) for name, port in (("d", up), ("g", way))
            }
            added = [(g - d) * 1000 for g, d in zip(alone["g"], alone["d"], strict=True)]
            print(
                f"added for one learner alone (200 requests): median {added[0]:.1f} ms, p99 {added[1]:.1f} ms"
            )
            print(f"gateway memory: {memory(gateway.pid)}")
            print(f"load average after: {os.getloadavg()[0]:.2f}")
        finally:
            for process in (gateway, upstream):
                process.terminate()
                process.wait(timeout=10)
        ledger = Ledger(db)
        recorded = sum(len(ledger.exchanges(f"learner-{n:02d}")) for n in range(learners))
        print(f"ledger: {sum(r['calls'] for r in ledger.report()[:-1])} calls billed, {recorded} recorded")
        ledger.close()


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
