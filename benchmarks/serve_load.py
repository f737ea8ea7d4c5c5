"""`agentlab serve` under a class's load (issue 22; a script, not a test).

    .venv/bin/python benchmarks/serve_load.py [clients] [requests]    # default 50 x 40

Each client thread sends its requests one after another, each on a fresh connection (a new
client for each: the hardest case for the server), all clients at once. Printed: requests answered 200,
connection resets, requests with no answer (timeouts, closed without a reply), and the
latency's median, p99 and max.
"""

from __future__ import annotations

import http.client
import json
import statistics
import sys
import threading
import time

from agentlab.llm.serve import start_server

HELLO = {"model": "claude-haiku-5-5", "max_tokens": 50, "messages": [{"role": "user", "content": "Hi"}]}


def main(clients: int = 50, requests: int = 40) -> None:
    body, lock = json.dumps(HELLO).encode(), threading.Lock()
    statuses: list[int] = []
    seconds: list[float] = []
    resets = unanswered = 0

    def client(port: int) -> None:
        nonlocal resets, unanswered
        for _ in range(requests):
            started = time.perf_counter()
            connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
            try:
                connection.request("POST", "/v1/messages", body, {"content-type": "application/json"})
                response = connection.getresponse()
                response.read()
                with lock:
                    statuses.append(response.status)
                    seconds.append(time.perf_counter() - started)
            except ConnectionResetError:
                with lock:
                    resets += 1
            except (OSError, http.client.HTTPException):
                with lock:
                    unanswered += 1
            finally:
                connection.close()

    with start_server() as server:
        began = time.perf_counter()
        threads = [threading.Thread(target=client, args=(server.server_port,)) for _ in range(clients)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        wall = time.perf_counter() - began
    ordered = sorted(seconds)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))] if ordered else float("nan")
    print(f"{clients} clients x {requests} requests = {clients * requests} in {wall:.1f} s")
    print(f"200: {statuses.count(200)}, other statuses: {len(statuses) - statuses.count(200)}, "
          f"resets: {resets}, unanswered: {unanswered}")
    if ordered:
        print(f"latency: median {statistics.median(ordered) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, "
              f"max {ordered[-1] * 1000:.0f} ms")


if __name__ == "__main__":
    main(*(int(a) for a in sys.argv[1:3]))
