"""What does the kit's loop cost per step, next to LangGraph's, on a chain, a fan-out and a lattice?

Run it with `.venv/bin/python benchmarks/overhead_shapes.py [PYTHON]` (a minute or so). PYTHON
is an interpreter that has `langgraph` installed (`python -m venv /tmp/lg &&
/tmp/lg/bin/pip install langgraph`; the kit does not depend on it): the same three graphs are
then timed in LangGraph too, in turns with the kit (A B A B ...), so both see the same machine.

Every node is a no-op, so what is measured is the orchestrator's own work: scheduling, handing a
step to a worker and back, the trace. Three shapes of 200 nodes: a chain (each node needs the
one before), a fan-out (one node, 200 beside each other needing it, one needing them all) and
a lattice (rows of 8, each node needing two of the row before). The kit runs `run_plan` on its
default virtual clock with 16 workers (threads), LangGraph `graph.invoke` (its thread pool for
the branches of a step). Figures are CPU microseconds per node, the least of every turn's calls
(CPU, not wall, and the least: on a shared machine both the wall clock and a median also measure
everyone else's work, which only ever adds).
The goal: the kit at least 10x below LangGraph on every shape.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

N, WIDTH, TURNS, BEST_OF, WORKERS = 200, 8, 7, 5, 16
SHAPES = ("chain", "fan-out", "lattice")


def needs(shape: str) -> dict[str, list[str]]:
    """Each node of `shape` and the nodes it needs, in written order."""
    if shape == "chain":
        return {f"n{i}": [f"n{i - 1}"] if i else [] for i in range(N)}
    if shape == "fan-out":
        branches = {f"b{i}": ["root"] for i in range(N - 2)}
        return {"root": [], **branches, "join": list(branches)}
    graph = {}
    for i in range(N):
        row, col = divmod(i, WIDTH)
        above = {f"n{i - WIDTH}", f"n{(row - 1) * WIDTH + (col + 1) % WIDTH}"}
        graph[f"n{i}"] = [] if row == 0 else sorted(above)
    return graph


def best_cpu_us(run) -> float:
    """The least CPU time of `BEST_OF` calls of `run`, in microseconds per node."""
    best = float("inf")
    for _ in range(BEST_OF):
        began = time.process_time()
        run()
        best = min(best, time.process_time() - began)
    return best / N * 1e6


def agentlab_turn() -> dict[str, float]:
    from agentlab.agents import Agent
    from agentlab.plan import Plan, Step
    from agentlab.run import run_plan

    team = {"worker": Agent("worker", lambda step, context: "ok")}
    figures = {}
    for shape in SHAPES:
        plan = Plan([Step(node, "worker", "no-op", tuple(before)) for node, before in needs(shape).items()])
        run_plan(plan, team, workers=WORKERS)  # warm
        figures[shape] = best_cpu_us(lambda plan=plan: run_plan(plan, team, workers=WORKERS))
    return figures


def langgraph_turn() -> dict[str, float]:
    import operator
    from typing import Annotated, TypedDict

    from langgraph.graph import END, START, StateGraph

    State = TypedDict("State", {"done": Annotated[list, operator.add]})  # noqa: UP013 - evaluated now

    figures = {}
    for shape in SHAPES:
        graph = StateGraph(State)
        nodes = needs(shape)
        for node in nodes:
            graph.add_node(node, lambda state: {"done": []})
        for node, before in nodes.items():
            if not before:
                graph.add_edge(START, node)
            elif len(before) == 1:
                graph.add_edge(before[0], node)
            else:
                graph.add_edge(before, node)  # runs once all of them have
        graph.add_edge(list(nodes)[-1], END)
        app = graph.compile()
        app.invoke({"done": []})  # warm
        figures[shape] = best_cpu_us(lambda app=app: app.invoke({"done": []}, {"recursion_limit": 10 * N}))
    return figures


def main(argv: list[str]) -> int:
    if argv[:1] == ["--langgraph-turn"]:
        print(json.dumps(langgraph_turn()))
        return 0
    other = argv[0] if argv else None
    kit: dict[str, list[float]] = {s: [] for s in SHAPES}
    rival: dict[str, list[float]] = {s: [] for s in SHAPES}
    for _ in range(TURNS):
        for shape, us in agentlab_turn().items():
            kit[shape].append(us)
        if other:
            turn = [other, __file__, "--langgraph-turn"]
            said = subprocess.run(turn, capture_output=True, text=True, check=True)
            for shape, us in json.loads(said.stdout).items():
                rival[shape].append(us)
    print(f"CPU us per node, no-op nodes, {N} nodes, the least of {TURNS} turns of {BEST_OF} calls")
    print(f"{'shape':<10}{'agentlab':>10}{'LangGraph':>11}{'ratio':>8}")
    ok = True
    for shape in SHAPES:
        ours = min(kit[shape])
        theirs = min(rival[shape]) if rival[shape] else float("nan")
        ok &= not rival[shape] or theirs / ours >= 10
        print(f"{shape:<10}{ours:>10.1f}{theirs:>11.1f}{theirs / ours:>7.1f}x")
    print("goal (at least 10x below LangGraph on every shape):", "met" if ok else "NOT met")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
