"""Pictures of the architecture, drawn by the kit so they stay true to it.

Each diagram is a small `networkx.DiGraph`: a node has a `label`, a `kind` (which sets its colour)
and a position `pos`; an edge may have a `label`. `draw(graph)` draws any of them with matplotlib
and returns the Axes. Building the graph apart from drawing it lets a test ask which boxes and
arrows a picture has without reading pixels.

- `pattern()`: planner -> executors -> synthesizer (notebook 01), flat or `hierarchical=True`;
- `planner_loop()`: task -> prompt + schema -> plan -> validation -> re-ask (notebook 03);
- `recovery_loop()`: run a step -> monitor -> retry, reroute or replan (notebook 04);
- `hierarchy_tree(root)`: a hierarchy's teams and workers as a tree (notebook 05; `print(root)`
  keeps the text form for logs);
- `control_and_data()`: what the planner sees against what the executors see (notebook 09);
- `prompt_cache()`: one call's prompt as a cached prefix and a fresh suffix, and what each part
  costs (notebook 11);
- `capstone()`: your own team, metered, checked and compared with the reference (notebook 12).
"""

from __future__ import annotations

import matplotlib.pyplot as plt
import networkx as nx
from matplotlib.axes import Axes
from matplotlib.patches import Patch

from agentlab.llm.usage import PRICES, cache_multipliers

COLOURS = {  # one colour per kind of box, the same in every picture
    "input": "#eeeeee",
    "planner": "#aec7e8",
    "executor": "#ffbb78",
    "synthesizer": "#98df8a",
    "check": "#c5b0d5",
    "model": "#f7b6d2",
    "failed": "#ff9896",
    "data": "#fff2a8",
    "researcher": "#ffbb78",  # a hierarchy's workers, by role
    "analyst": "#dbdb8d",
    "writer": "#9edae5",
    "cache_read": "#c7e9c0",  # a prompt's parts, by what they cost
    "cache_write": "#fdd0a2",
}


_READS = [cache_multipliers(model)["read"] for model in PRICES]  # a cache read, by model, x input

LEGEND = {
    "planner": "a team's planner (manager or lead)",
    "failed": "failed",
    "cache_read": f"read from the cache: {min(_READS):g}x to {max(_READS):g}x the input price, by model",
    "cache_write": "written to the cache: 1.25x (5 min) or 2x (1 hour)",
    "input": "fresh input: 1x",
}


def _graph(nodes: dict[str, tuple[str, str, tuple[float, float]]], edges: list[tuple]) -> nx.DiGraph:
    """nodes: name -> (label, kind, (x, y)); edges: (a, b) or (a, b, label)."""
    g = nx.DiGraph()
    for name, (label, kind, pos) in nodes.items():
        g.add_node(name, label=label, kind=kind, pos=pos)
    for a, b, *rest in edges:
        g.add_edge(a, b, label=rest[0] if rest else "", bend=rest[1] if len(rest) > 1 else None)
    return g


def pattern(hierarchical: bool = False, executors: int = 3) -> nx.DiGraph:
    """The planner-executor pattern: a planner splits the task, executors do the steps, a synthesizer
    joins their results. Hierarchical: the planner is a manager whose executors are sub-teams, each
    a lead planner with its own workers and its own synthesizer."""
    if not hierarchical:
        nodes = {
            "task": ("task", "input", (0, 2)),
            "planner": ("planner\n(writes the plan)", "planner", (2, 2)),
        }
        for i in range(executors):
            nodes[f"executor{i + 1}"] = (
                f"executor {i + 1}\n(one step)",
                "executor",
                (4.2, 2 + (executors - 1) / 2 - i),
            )
        nodes["synthesizer"] = ("synthesizer\n(joins the results)", "synthesizer", (6.4, 2))
        nodes["answer"] = ("answer", "input", (8.3, 2))
        edges = [("task", "planner")]
        edges += [
            e
            for i in range(executors)
            for e in (("planner", f"executor{i + 1}", "step"), (f"executor{i + 1}", "synthesizer", "result"))
        ]
        return _graph(nodes, [*edges, ("synthesizer", "answer")])
    nodes = {"task": ("task", "input", (0, 2.5)), "manager": ("manager\n(plans parts)", "planner", (2, 2.5))}
    edges: list[tuple] = [("task", "manager")]
    for t, y in (("a", 4), ("b", 1)):
        nodes[f"lead_{t}"] = (f"lead {t.upper()}\n(plans its part)", "planner", (4, y))
        nodes[f"synth_{t}"] = (f"synthesizer {t.upper()}", "synthesizer", (8, y))
        edges += [("manager", f"lead_{t}", "part"), (f"synth_{t}", "synthesizer", "part's answer")]
        for i, dy in ((1, 0.55), (2, -0.55)):
            worker = f"worker_{t}{i}"
            nodes[worker] = (f"worker {t.upper()}{i}", "executor", (6, y + dy))
            edges += [(f"lead_{t}", worker), (worker, f"synth_{t}")]
    nodes["synthesizer"] = ("synthesizer\n(joins the parts)", "synthesizer", (10, 2.5))
    nodes["answer"] = ("answer", "input", (11.8, 2.5))
    return _graph(nodes, [*edges, ("synthesizer", "answer")])


def planner_loop() -> nx.DiGraph:
    """How a model writes a plan the kit can trust: ask with the task and the plan's schema, read the
    reply, validate it, and on a problem ask again with the problem named, a bounded number of times."""
    nodes = {
        "task": ("task", "input", (0, 2)),
        "prompt": ("prompt\n+ JSON schema", "planner", (2, 2)),
        "model": ("model", "model", (4, 2)),
        "reply": ("reply\n(JSON text)", "data", (6, 2)),
        "validate": ("validate:\nparse, schema,\nroles, DAG", "check", (8, 2)),
        "plan": ("plan\n(runs)", "synthesizer", (10, 2)),
        "reask": ("re-ask:\nthe problem named", "failed", (6, 0.4)),
    }
    edges = [
        ("task", "prompt"),
        ("prompt", "model"),
        ("model", "reply"),
        ("reply", "validate"),
        ("validate", "plan", "valid"),
        ("validate", "reask", "invalid"),
        ("reask", "model", "at most n times"),
    ]
    return _graph(nodes, edges)


def recovery_loop() -> nx.DiGraph:
    """A monitored run: every step's result is checked, and a failure goes to a recovery policy that
    retries it, reroutes it to another agent, or replans what is left; then the run goes on."""
    nodes = {
        "plan": ("plan", "planner", (0, 2)),
        "step": ("run a step", "executor", (2, 2)),
        "monitor": ("monitor:\nerror? plausible?\ncritic?", "check", (4.3, 2)),
        "next": ("ok: the next step\n(or the answer)", "synthesizer", (6.8, 2)),
        "retry": ("retry\n(same agent)", "failed", (2.0, 0.3)),
        "reroute": ("reroute\n(another agent)", "failed", (4.3, 0.3)),
        "replan": ("replan\n(what is left)", "failed", (2.2, 3.6)),
    }
    edges = [
        ("plan", "step"),
        ("step", "monitor"),
        ("monitor", "next", "ok"),
        ("monitor", "retry", "failed"),
        ("monitor", "reroute", "failed"),
        ("monitor", "replan", "failed"),
        ("retry", "step"),
        ("reroute", "step"),
        ("replan", "plan"),
    ]
    return _graph(nodes, edges)


def control_and_data() -> nx.DiGraph:
    """Plan-then-execute as a defence: the planner sees only the trusted task and fixes the steps
    (control flow); the executors see tool outputs, which may carry planted text, but those only
    fill in values along the plan's arrows (data flow) and cannot add a step."""
    nodes = {
        "task": ("task\n(trusted)", "input", (0, 3)),
        "planner": ("planner\nsees the task only", "planner", (2.3, 3)),
        "plan": ("fixed plan:\nsteps and tools", "planner", (4.8, 3)),
        "executor": ("executors\nrun the plan's steps", "executor", (4.8, 1)),
        "tools": ("tool outputs\n(untrusted: may hold\na planted note)", "data", (2.3, 1)),
        "answer": ("answer", "synthesizer", (7.2, 1)),
    }
    edges = [
        ("task", "planner", "control"),
        ("planner", "plan", "control"),
        ("plan", "executor", "control"),
        ("executor", "tools", "call"),
        ("tools", "executor", "data"),
        ("executor", "answer", "data"),
    ]
    return _graph(nodes, edges)


def prompt_cache() -> nx.DiGraph:
    """One call of an agent's loop as the API caches it: the prompt is sent in a fixed order (tools,
    system prompt, the conversation so far, the newest turn); the prefix an earlier call wrote is read
    back, the newest turn is written for the next call, and a prefix under the model's minimum length
    is not cached at all: it is fresh input, as is everything when caching is off."""
    nodes = {
        "tools": ("tools\n(the same\nevery call)", "cache_read", (0, 2)),
        "system": ("system prompt\n(the same\nevery call)", "cache_read", (2.2, 2)),
        "history": ("turns 1 … t-1\n(re-sent history)", "cache_read", (4.6, 2)),
        "newest": ("turn t\n(newest reply\n+ tool result)", "cache_write", (7, 2)),
        "model": ("model", "model", (9.2, 2)),
        "next": ("call t+1 reads\nall of it back", "cache_read", (7, 0.3)),
        "short": ("a prefix under\nthe model's minimum:\nfresh input", "input", (2.2, 0.3)),
    }
    edges = [
        ("tools", "system"),
        ("system", "history"),
        ("history", "newest"),
        ("newest", "model", "call t"),
        ("newest", "next", "within its lifetime"),
        ("system", "short", "too short?"),
    ]
    g = _graph(nodes, edges)
    g.graph["legend"], g.graph["legend_at"] = True, "lower center"
    return g


def capstone() -> nx.DiGraph:
    """The capstone: your team is a function from a task to an answer, built from the course's parts
    (a planner on a model you route to, executors with their tools, a check you write, recovery),
    metered against a budget per task; the grader runs it and the reference on the same held-out
    tasks and compares them pair by pair."""
    nodes = {
        "task": ("task\n(held out)", "input", (0, 2)),
        "planner": ("planner\n(which model?)", "planner", (2.2, 2)),
        "researcher": ("researcher\nlookup, search", "researcher", (4.5, 3.2)),
        "analyst": ("analyst\ncalculate, convert", "analyst", (4.5, 2)),
        "writer": ("writer\n(reports)", "writer", (4.5, 0.8)),
        "check": ("your check\n(retry, replan,\nvote?)", "check", (6.8, 2)),
        "answer": ("answer", "input", (8.8, 2)),
        "budget": ("meter: $ per task\n(the grader's cap)", "model", (4.5, -0.6)),
        "grade": ("paired against\nthe reference", "synthesizer", (8.8, 0.3)),
    }
    edges = [
        ("task", "planner"),
        ("planner", "researcher", "steps"),
        ("planner", "analyst"),
        ("planner", "writer"),
        ("researcher", "analyst"),
        ("analyst", "writer"),
        ("writer", "check"),
        ("check", "answer"),
        ("answer", "grade"),
        ("planner", "budget", "every call"),
        ("writer", "budget"),
    ]
    return _graph(nodes, edges)


LEAF_SPACING = 1.0  # between two workers' boxes


def hierarchy_tree(root) -> nx.DiGraph:
    """A hierarchy's run (`agentlab.hierarchy.Node`) as a tree: one box per team, coloured by its
    status, and one leaf per worker step; a leaf is red when its step failed."""
    g, leaves = nx.DiGraph(), [0]

    def place(node, depth: int) -> float:
        name = node.path + (f" #{node.attempt}" if node.attempt > 1 else "") or "manager"
        kids, seen = [], set()
        children: dict[str, list] = {}
        for child in node.children:
            children.setdefault(child.path.rsplit("/", 1)[-1], []).append(child)
        for plan in node.run.plans:  # every plan the team followed: a replan's new steps too
            for step in plan:
                if step.id in seen:
                    continue
                seen.add(step.id)
                for child in children.get(step.id, []):
                    kids.append(place(child, depth + 1))
                    g.add_edge(name, child.path + (f" #{child.attempt}" if child.attempt > 1 else ""))
                if step.id in children:
                    continue
                leaf = f"{name}/{step.id}"
                failed = node.run.step_status.get(step.id) == "failed"
                kind = "failed" if failed else step.role if step.role in COLOURS else "executor"
                g.add_node(leaf, label=step.id, kind=kind, pos=(leaves[0] * LEAF_SPACING, -depth - 1))
                leaves[0] += 1
                kids.append((leaves[0] - 1) * LEAF_SPACING)
                g.add_edge(name, leaf)
        x = (min(kids) + max(kids)) / 2 if kids else leaves[0] * LEAF_SPACING
        role = "manager" if not node.path else f"lead {name}"
        said = f"\n= {str(node.answer)[:14]}" if node.status == "done" else f"\n{node.status}"
        g.add_node(
            name, label=role + said, kind="planner" if node.status == "done" else "failed", pos=(x, -depth)
        )
        return x

    place(root, 0)
    g.graph["legend"] = True  # leaves are named by step id only: a legend says which colour is which role
    return g


def draw(graph: nx.DiGraph, ax: Axes | None = None, title: str | None = None, box_size: float = 9) -> Axes:
    """Draw a diagram: its boxes at their positions, coloured by kind, and labelled arrows."""
    if ax is None:
        xs = [p[0] for _, p in graph.nodes(data="pos")]
        ys = [p[1] for _, p in graph.nodes(data="pos")]
        width = min(16.0, max(6.0, 1.15 * (max(xs) - min(xs) + 2)))
        height = min(9.0, max(2.6, 1.1 * (max(ys) - min(ys) + 1.6)))
        _, ax = plt.subplots(figsize=(width, height), layout="constrained")
    pos = dict(graph.nodes(data="pos"))
    boxes = {}
    for name, data in graph.nodes(data=True):
        x, y = data["pos"]
        boxes[name] = ax.text(
            x,
            y,
            data["label"],
            ha="center",
            va="center",
            fontsize=box_size,
            zorder=3,
            bbox=dict(boxstyle="round,pad=0.45", facecolor=COLOURS[data["kind"]], edgecolor="#444444"),
        )
    for a, b, data in graph.edges(data=True):
        (xa, ya), (xb, yb), label = pos[a], pos[b], data.get("label", "")
        back = xb < xa and abs(yb - ya) < 0.01  # an arrow back along a row bends, to stay clear of the boxes
        bend = data.get("bend") if data.get("bend") is not None else (0.45 if back else 0.0)
        ax.annotate(
            "",
            xy=(xb, yb),
            xytext=(xa, ya),
            zorder=2,
            arrowprops=dict(
                arrowstyle="-|>",
                color="#555555",
                lw=1.2,
                shrinkA=2,
                shrinkB=2,
                patchA=boxes[a].get_bbox_patch(),
                patchB=boxes[b].get_bbox_patch(),  # arrows end at the boxes' edges
                connectionstyle=f"arc3,rad={bend}",
            ),
        )
        if label:
            ax.text(
                (xa + xb) / 2,
                (ya + yb) / 2 + (abs(bend) * (xa - xb) / 2 if back else 0.12),
                label,
                ha="center",
                va="bottom",
                fontsize=box_size - 1,
                color="#333333",
                style="italic",
            )
    if graph.graph.get("legend"):
        kinds = sorted({kind for _, kind in graph.nodes(data="kind")}, key=list(COLOURS).index)
        handles = [Patch(facecolor=COLOURS[k], edgecolor="#444444", label=LEGEND.get(k, k)) for k in kinds]
        where = graph.graph.get("legend_at", "upper left")
        ax.legend(handles=handles, loc=where, fontsize=box_size, frameon=False)
    xs = [p[0] for p in pos.values()]
    ys = [p[1] for p in pos.values()]
    ax.set_xlim(min(xs) - 1, max(xs) + 1)
    bent = any(
        d.get("bend") or (pos[b][0] < pos[a][0] and abs(pos[a][1] - pos[b][1]) < 0.01)
        for a, b, d in graph.edges(data=True)
    )
    ax.set_ylim(min(ys) - 0.8, max(ys) + (1.8 if bent else 0.8))
    ax.axis("off")
    if title:
        ax.set_title(title)
    return ax
