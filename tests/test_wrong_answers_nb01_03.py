# ruff: noqa: E501 (an answer is a line of code, or a few joined by \n: kept on one line each)
"""A class's plausible wrong answers to notebooks 01-03, each graded as `agentlab course grade`
grades (the exercise's own cases, then the instructor's hidden ones): every one must fail; and right
answers written differently from the solution: every one must pass. An answer is the solution's code
with a change or two ((old, new) pairs), a whole answer's source, or, where the answer is data, the
data (tests/graded.py makes and grades them)."""

import notebook_code
import pytest
from graded import battery, judge

notebook_code.skip_without_solutions()

CONCERNS = {
    "bottleneck": "c",
    "single point of failure": "a",
    "decomposition cost": "e",
    "swarms avoid": {"bottleneck", "single point of failure"},
    "swarms give up": "y",
}
WHEN = {"p": "flat", "q": "hierarchy", "r": "flat", "s": "hierarchy"}
REROUTE = "output = team[backup](step, context)"
RAISE_NO_BACKUP = (
    'raise RuntimeError(f"step {step.id!r} ({step.role}) failed, and no role stands in: {output}")'
)
VOTES = "kept = [v for v in newest if newest[v] == max(newest.values())]"
LAST = "last = max(step.depends_on, key=lambda dep: finish[dep], default=None)"
HEADS = "heads[step.id] = durations[step.id] + max((heads[w] for w in waiters[step.id]), default=0.0)"
SORT = "return Plan(sorted(plan, key=lambda s: -heads[s.id]))"

WRONG = {
    "01.concerns": [
        {**CONCERNS, "bottleneck": "a", "single point of failure": "c"},
        {**CONCERNS, "decomposition cost": "b"},
        {**CONCERNS, "bottleneck": "d"},
        {**CONCERNS, "swarms avoid": {"bottleneck"}},
        {**CONCERNS, "swarms avoid": {"bottleneck", "single point of failure", "decomposition cost"}},
        {**CONCERNS, "swarms avoid": set()},
        {**CONCERNS, "swarms give up": "x"},
        {**CONCERNS, "swarms give up": "z"},
        {**CONCERNS, "swarms avoid": {"single point of failure", "decomposition cost"}},
    ],
    "01.when-hierarchy": [
        {**WHEN, "p": "hierarchy"},
        {**WHEN, "q": "flat"},
        {**WHEN, "r": "hierarchy"},
        {**WHEN, "s": "flat"},
        dict.fromkeys(WHEN, "flat"),
        dict.fromkeys(WHEN, "hierarchy"),
        {"p": "hierarchy", "q": "flat", "r": "hierarchy", "s": "flat"},
        {"p": "flat", "q": "flat", "r": "hierarchy", "s": "hierarchy"},
    ],
    "01.sentinel": [
        [(REROUTE, "output = team[backup](step, {**context, step.id: output})")],
        [
            (
                REROUTE,
                "output = team[step.role](step, context)\n            if output.startswith('FAILED'):\n                output = team[backup](step, context)",
            )
        ],
        [('if output.startswith("FAILED"):', 'if "FAILED" in output:')],
        [('if output.startswith("FAILED"):', 'if output == "FAILED":')],
        [(REROUTE, "team[step.role] = team[backup]\n            output = team[step.role](step, context)")],
        [
            (
                '            if output.startswith("FAILED"):\n                raise',
                "            if False:\n                raise",
            )
        ],
        [(RAISE_NO_BACKUP, "outputs[step.id] = output\n                continue")],
        [(REROUTE, "output = team[backup](step, {})")],
        [("backup = stand_in.get(step.role)", 'backup = "generalist"')],
        [(REROUTE, "output = team[step.role](step, context)")],
        [(RAISE_NO_BACKUP, 'raise RuntimeError("a step failed and nobody stands in")')],
        [
            (
                "backup = stand_in.get(step.role)",
                "backup = stand_in.get(step.role)\n            stand_in[step.role] = backup",
            )
        ],
        [
            ("    outputs = {}\n", "    outputs, moved = {}, {}\n"),
            (
                "output = team[step.role](step, context)\n",
                "output = team[moved.get(step.role, step.role)](step, context)\n",
            ),
            (REROUTE, REROUTE + "\n            moved[step.role] = backup"),
        ],
        [
            (
                'if output.startswith("FAILED"):\n                raise',
                'if output.startswith("FAILED:"):\n                raise',
            )
        ],
    ],
    "01.hierarchy": [
        [("context = {dep: chunk_outputs[dep] for dep in step.depends_on}", "context = dict(chunk_outputs)")],
        [('            calls["executor"] += 1\n', "")],
        [('calls["sub-planner"] += 1', 'calls["sub-planner"] = 1')],
        [("for step in chunk_plan.topological_order():", "for step in chunk_plan:")],
        [("chunk_outputs[chunk_plan.final_step.id]", "chunk_outputs[chunk_plan.steps[-1].id]")],
        [
            (
                "results.append(chunk_outputs[chunk_plan.final_step.id])",
                "results.extend(chunk_outputs.values())",
            )
        ],
        [("synthesize(task, results)", "synthesize(task, sorted(results))")],
        [
            ('    calls["manager"] += 1\n', ""),
            (
                '        calls["sub-planner"] += 1',
                '        calls["sub-planner"] += 1\n        calls["manager"] += 1',
            ),
        ],
        [("return deliverable, calls", "return calls, deliverable")],
        [
            ('            calls["executor"] += 1\n', ""),
            ("results.append(", 'calls["executor"] += 1\n        results.append('),
        ],
        [
            (
                "results.append(chunk_outputs[chunk_plan.final_step.id])",
                "results.append(chunk_outputs[chunk_plan.final_step.id])\n        deliverable = synthesize(task, results)",
            ),
            ("    deliverable = synthesize(task, results)\n    calls", "    calls"),
        ],
        [("synthesize(task, results)", "synthesize(task, results[::-1])")],
        [("calls = Counter()", "calls = Counter(planner=1)")],
    ],
    "01.reconcile": [
        "_solved = majority\n\ndef majority(findings):\n    if not any(findings.values()):\n        raise ValueError('no findings')\n    return _solved(findings)",
        [(VOTES, "kept = [v for v in votes if votes[v] == most]")],
        [(VOTES, "kept = [max(votes, key=votes.get)]")],
        [(VOTES, "kept = [min(newest, key=newest.get)] if len(newest) > 1 else list(newest)")],
        [("cited = tuple(s for s, f in pairs if f.value == kept[0])", "cited = tuple(s for s, _ in pairs)")],
        [('tuple(s for s, _ in pairs), "a tie', 'tuple(s for s, f in pairs if f.value in newest), "a tie')],
        [
            (
                "newest = {v: max(f.as_of for _, f in pairs if f.value == v) for v in votes if votes[v] == most}",
                "newest = {v: max(f.as_of for _, f in pairs) for v in votes if votes[v] == most}",
            )
        ],
        [
            (
                "newest = {v: max(f.as_of for _, f in pairs if f.value == v) for v in votes if votes[v] == most}",
                "newest = {v: max(f.as_of for _, f in pairs if f.value == v) for v in votes}",
            )
        ],
        [("    for claim, pairs in said.items():", "    for claim, pairs in sorted(said.items()):")],
        [("if len(kept) > 1:", "if len(kept) > 1 and False:")],
        [("votes = Counter(f.value for _, f in pairs)", "votes = Counter(f.value for _, f in pairs[:3])")],
        [("Resolved(claim, None,", "Resolved(claim, kept[0],")],
    ],
    "02.critical-path": [
        [("for step in plan.topological_order():", "for step in plan:")],
        [("end = max(finish, key=finish.get)", "end = plan.final_step.id")],
        [(LAST, "last = step.depends_on[0] if step.depends_on else None")],
        [(LAST, "last = max(step.depends_on, key=lambda dep: durations[dep], default=None)")],
        [("return chain[::-1], length", "return chain[::-1], len(chain)")],
        [("return chain[::-1], length", "return chain, length")],
        [("+ durations[step.id]", "+ int(durations[step.id])")],
        [("return chain[::-1], length", "return chain[::-1], round(length, 1)")],
        [("end = max(finish, key=finish.get)", "end = min(finish, key=finish.get)")],
        [
            (
                "        before[step.id] = last",
                "        before[step.id] = last\n        durations[step.id] = finish[step.id]",
            )
        ],
        [(LAST, "last = max(step.depends_on, default=None)")],
        [("return chain[::-1], length", "return chain[::-1], float(round(length))")],
    ],
    "02.makespan": [
        [("waiting = list(plan)", "waiting = sorted(plan, key=lambda s: s.id)")],
        [("waiting = list(plan)", "waiting = list(plan.topological_order())")],
        [("waiting = list(plan)", "waiting = sorted(plan, key=lambda s: -durations[s.id])")],
        [("if end == now]", "if end == now][:1]")],
        [("len(running) < workers and ", "")],
        [("now + durations[step.id]", "now + int(durations[step.id])")],
        "def finish_time(plan, durations, workers):\n    return max(sum(durations.values()) / workers, plan.critical_path(durations)[1])",
        "def finish_time(plan, durations, workers):\n    return plan.critical_path(durations)[1]",
        [("len(running) < workers", "len(running) <= workers")],
        [("waiting.remove(step)", "waiting.remove(step)\n                durations[step.id] = 0")],
        [("waiting = list(plan)", "waiting = sorted(plan, key=lambda s: durations[s.id])")],
        [("now = min(running.values())", "now = max(running.values())")],
    ],
    "02.longest-first": [
        [(SORT, "return Plan(sorted(plan, key=lambda s: -durations[s.id]))")],
        [
            (
                HEADS,
                "heads[step.id] = durations[step.id] + max((durations[w] for w in waiters[step.id]), default=0.0)",
            )
        ],
        [("durations[step.id] +", "step.duration +")],
        [
            ("reversed(plan.topological_order())", "reversed(list(plan))"),
            ("heads[w] for", "heads.get(w, 0) for"),
        ],
        [(SORT, "return Plan(sorted(plan, key=lambda s: heads[s.id]))")],
        [(HEADS, "heads[step.id] = durations[step.id] + sum(heads[w] for w in waiters[step.id])")],
        [(SORT, "return sorted(plan, key=lambda s: -heads[s.id])")],
        [
            (
                SORT,
                "return Plan([Step(s.id, s.role, s.instruction, s.depends_on) for s in sorted(plan, key=lambda s: -heads[s.id])])",
            )
        ],
        [(HEADS, "heads[step.id] = 1 + max((heads[w] for w in waiters[step.id]), default=0)")],
        "def longest_chain_first(plan, durations):\n    return Plan(plan.topological_order())",
        [("(heads[w] for w in waiters[step.id])", "(durations[w] + heads[w] for w in waiters[step.id])")],
    ],
    "03.read-plan": [
        [('if c == "{"]', 'if c == "{"][:3]')],
        "def read_plan(text, roles):\n    try:\n        return Plan.from_dict(json.loads(text[text.index('{'): text.rindex('}') + 1]), roles=roles)\n    except (ValueError, json.JSONDecodeError) as e:\n        raise PlanError(str(e))",
        [("for start in starts:", "for start in starts[:1]:")],
        [("            first_error = first_error or e\n            continue", "            raise")],
        [("Plan.from_dict(data, roles=roles)", "Plan.from_dict(data)")],
        [
            (
                "            return Plan.from_dict(data, roles=roles)",
                "            try:\n                return Plan.from_dict(data, roles=roles)\n            except PlanError:\n                continue",
            )
        ],
        "def read_plan(text, roles):\n    body = text.strip().removeprefix('```json').removesuffix('```')\n    try:\n        return Plan.from_dict(json.loads(body), roles=roles)\n    except json.JSONDecodeError as e:\n        raise PlanError(str(e))",
        [("return Plan.from_dict(data, roles=roles)", "return data")],
        "import re\n\ndef read_plan(text, roles):\n    found = re.search(r'\\{.*\\}', text, re.S)\n    if not found:\n        raise PlanError('no JSON')\n    try:\n        return Plan.from_dict(json.loads(found.group()), roles=roles)\n    except json.JSONDecodeError as e:\n        raise PlanError(str(e))",
        [
            (
                'raise PlanError("the reply holds no JSON object',
                'raise ValueError("the reply holds no JSON object',
            )
        ],
        [("    e = first_error\n    raise PlanError(", "    raise first_error\n    raise PlanError(")],
    ],
    "03.ends-in-report": [
        [("ends = [step for step in plan if step.id not in used]", "ends = [plan.steps[-1]]")],
        [("ends = [step for step in plan if step.id not in used]", "ends = [plan.final_step]")],
        [('        if step.role != "writer":', "        if False:")],
        [("if len(ends) > 1:", "if False:")],
        [('f"step {step.id!r} ({step.role})', 'f"step {step.id} ({step.role})')],
        [('raise PlanError(\n                f"step', 'raise ValueError(\n                f"step')],
        [("if len(ends) > 1:", "if len([s for s in plan if s.role == 'writer']) > 1:")],
        [
            (
                "ends = [step for step in plan if step.id not in used]",
                "ends = [step for step in plan if step.id not in used and step.role != 'writer'] or [s for s in plan if s.role == 'writer'][:1]",
            )
        ],
        "def ends_in_one_report(plan):\n    last = plan.steps[-1]\n    if last.role != 'writer':\n        raise PlanError(f'step {last.id!r} ends the plan')",
        [
            (
                "used = {dep for step in plan for dep in step.depends_on}",
                "used = {dep for step in plan for dep in step.depends_on[:1]}",
            )
        ],
    ],
    "03.score": [
        [("task.check(run.deliverable)", "(run.deliverable == task.answer)")],
        [
            (
                "        run = solve(task.question)\n",
                "        run = solve(task.question)\n        if run.status != 'done':\n            continue\n",
            )
        ],
        [('row["calls"] /= row["tasks"]', 'row["calls"] /= max(row["right"], 1)')],
        [('for key in (task.family, "all"):', "for key in (task.family,):")],
        [('        row["calls"] /= row["tasks"]\n', "        pass\n")],
        [("len(run.calls)", "len([c for c in run.calls if c[1] != 'planner'])")],
        [('row["calls"] /= row["tasks"]', 'row["calls"] /= len(tasks)')],
        [("len(run.calls)", "(len(run.calls) if run.status == 'done' else 0)")],
        [('row["calls"] /= row["tasks"]', 'row["calls"] //= row["tasks"]')],
        [("task.check(run.deliverable)", "(task.answer in str(run.deliverable))")],
    ],
}
RIGHT = {
    "01.concerns": [
        {**CONCERNS, "swarms avoid": ["single point of failure", "bottleneck"]},
        {**CONCERNS, "swarms avoid": ("bottleneck", "single point of failure")},
        {**CONCERNS, "swarms avoid": frozenset({"bottleneck", "single point of failure"})},
    ],
    "01.when-hierarchy": [{"s": "hierarchy", "r": "flat", "q": "hierarchy", "p": "flat"}, dict(WHEN)],
    "01.sentinel": [
        [
            (
                'if output.startswith("FAILED"):\n            backup',
                'if output.lstrip().startswith("FAILED"):\n            backup',
            )
        ],
        [
            (
                'if output.startswith("FAILED"):\n            backup',
                'if output.split(":")[0].strip() == "FAILED":\n            backup',
            )
        ],
        [
            (
                "backup = stand_in.get(step.role)\n            if backup is None:",
                "if step.role not in stand_in:",
            ),
            (
                '{output}")\n            print',
                '{output}")\n            backup = stand_in[step.role]\n            print',
            ),
        ],
        [('print(f"step {step.id}: the {step.role} answered {output!r}; rerouted to the {backup}")', "pass")],
    ],
    "01.hierarchy": [
        [("chunk_outputs = {}  #", "chunk_outputs = dict()  #")],
        [
            ("results = []", "results = list()"),
            ("calls = Counter()", "calls = {}"),
            ('calls["manager"] += 1', 'calls["manager"] = 1'),
            ('calls["sub-planner"] += 1', 'calls["sub-planner"] = calls.get("sub-planner", 0) + 1'),
            ('calls["executor"] += 1', 'calls["executor"] = calls.get("executor", 0) + 1'),
            ('calls["synthesizer"] += 1', 'calls["synthesizer"] = 1'),
        ],
        [
            (
                "results.append(chunk_outputs[chunk_plan.final_step.id])",
                "results.append(chunk_outputs[chunk_plan.topological_order()[-1].id])",
            )
        ],
    ],
    "01.reconcile": [
        [("most = max(votes.values())", "most = votes.most_common(1)[0][1]")],
        [(VOTES, "kept = [v for v, d in newest.items() if d == max(newest.values())]")],
    ],
    "02.critical-path": [
        [
            (
                LAST,
                "last = None\n        for dep in step.depends_on:\n            if last is None or finish[dep] > finish[last]:\n                last = dep",
            )
        ],
        [("return chain[::-1], length", "return list(reversed(chain)), float(length)")],
    ],
    "02.makespan": [
        [("waiting = list(plan)", "waiting = [s for s in plan]")],
        [
            (
                "for step_id in [s for s, end in running.items() if end == now]:",
                "for step_id in [s for s in list(running) if running[s] <= now]:",
            )
        ],
    ],
    "02.longest-first": [
        [(SORT, "return Plan(sorted(plan, key=lambda s: heads[s.id], reverse=True))")],
        "import functools\n\ndef longest_chain_first(plan, durations):\n    @functools.cache\n    def head(i):\n        return durations[i] + max((head(t.id) for t in plan if i in t.depends_on), default=0.0)\n    return Plan(sorted(plan.steps, key=lambda s: -head(s.id)))",
    ],
    "03.read-plan": [
        [
            (
                'starts = [i for i, c in enumerate(text) if c == "{"]',
                'starts = [i for i in range(len(text)) if text[i] == "{"]',
            )
        ],
        "def read_plan(text, roles):\n    decoder, error = json.JSONDecoder(), None\n    for i, c in enumerate(text):\n        if c != '{':\n            continue\n        try:\n            data, _ = decoder.raw_decode(text, i)\n        except json.JSONDecodeError as e:\n            error = error or e\n            continue\n        if isinstance(data, dict):\n            return Plan.from_dict(data, roles=roles)\n    raise PlanError(f'no plan in the reply: {error}')",
    ],
    "03.ends-in-report": [
        [
            (
                "ends = [step for step in plan if step.id not in used]",
                "ends = [step for step in plan if not any(step.id in other.depends_on for other in plan)]",
            )
        ],
        "def ends_in_one_report(plan):\n    ends = [s for s in plan if not plan.dependants(s.id)]\n    bad = [s for s in ends if s.role != 'writer']\n    if bad:\n        raise PlanError(f'step {bad[0].id!r} ends the plan but is not the report')\n    if len(ends) != 1:\n        raise PlanError('more than one report: ' + ', '.join(repr(s.id) for s in ends))",
    ],
    "03.score": [
        [
            (
                'row["right"] += task.check(run.deliverable)',
                'row["right"] += 1 if task.check(run.deliverable) else 0',
            )
        ],
        "from collections import defaultdict\n\ndef score(tasks, solve):\n    right, count, calls = defaultdict(int), defaultdict(int), defaultdict(int)\n    for t in tasks:\n        run = solve(t.question)\n        for k in (t.family, 'all'):\n            right[k] += bool(t.check(run.deliverable))\n            count[k] += 1\n            calls[k] += len(run.calls)\n    return {k: {'right': right[k], 'tasks': count[k], 'calls': calls[k] / count[k]} for k in count}",
    ],
}


@pytest.mark.parametrize("exercise, kind, spec", battery(WRONG, RIGHT))
def test_a_wrong_answer_fails_and_a_right_one_passes(exercise, kind, spec, capsys):
    judge(exercise, kind, spec)
