# ruff: noqa: E501 (an answer is a line of code, or a few joined by \n: kept on one line each)
"""A class's plausible wrong answers to notebooks 04-05, each graded as `agentlab course grade`
grades (the exercise's own cases, then the instructor's hidden ones): every one must fail; and right
answers written differently from the solution: every one must pass. An answer is the solution's code
with a change or two ((old, new) pairs), a whole answer's source, or, where the answer is data, the
data (tests/graded.py makes and grades them).
04.message-key is left out: another helper is changing that exercise."""

import notebook_code
import pytest
from graded import battery, judge

notebook_code.skip_without_solutions()

TRIES = "tries = [step] * (1 + retries)"
STAND_IN = "tries.append(replace(step, role=stand_in[step.role], tool=None, args={}))"
CANDIDATE = "candidate = (largest, calls, depth, branching)"

WRONG = {
    "04.total-check": [
        [
            (
                "largest = max(float(part) for part in parts)",
                "largest = float(max(part.strip() for part in parts))",
            )
        ],
        [
            (
                "largest = max(float(part) for part in parts)",
                "largest = max(float(part) for part in parts[:2])",
            )
        ],
        [
            (
                "    try:\n        question",
                "    if step.role != 'analyst':\n        return None\n    try:\n        question",
            )
        ],
        [("if total < largest:", "if total and total < largest:")],
        [
            (
                "fill_in(step.instruction, context)",
                "fill_in('What is ' + step.args.get('expression', '') + '?', context)",
            )
        ],
        [("total = world.number_in(output)", "total = float(output)")],
        [("if total < largest:", "if total != sum(float(p) for p in parts):")],
        [
            (
                "if not isinstance(question, world.Arithmetic):\n        return None",
                "if not isinstance(question, world.Arithmetic):\n        return 'not a sum'",
            )
        ],
        [("if total < largest:", "if total <= largest:")],
        [
            (
                "total = world.number_in(output)",
                "total = float(re.findall(r'-?[\\d.]+', output.replace(',', ''))[0]) if re.findall(r'-?[\\d.]+', output.replace(',', '')) else None",
            )
        ],
        [("fill_in(step.instruction, context)", "step.instruction")],
        [("if total < largest:", "if total < min(float(part) for part in parts):")],
    ],
    "04.retry-then-reroute": [
        [
            (
                '            failure = Failure("error"',
                '            if tried is not step:\n                raise\n            failure = Failure("error"',
            )
        ],
        [(TRIES, "tries = [step] * retries")],
        [(TRIES, "tries = [step] * (2 + retries)")],
        [(STAND_IN, "tries.append(replace(step, role=stand_in[step.role]))")],
        [
            (
                "failure = inspect(step, output, context, checks)",
                "failure = Failure('sentinel', output) if output.startswith('FAILED') else None",
            )
        ],
        [('    tried_by = ", ".join', '    return None, attempts\n    tried_by = ", ".join')],
        [
            (TRIES, "tries = []"),
            ("    for tried in tries:", "    tries += [step] * (1 + retries)\n    for tried in tries:"),
        ],
        [('raise RuntimeError(f"step {step.id!r} failed after', 'raise RuntimeError(f"failed after')],
        [("except Exception as error:", "except ValueError as error:")],
        [("inspect(step, output, context, checks)", "inspect(step, output, context)")],
        [
            (
                "output = team[tried.role](tried, context).output",
                "output = team[tried.role](tried, context if tried is step else {}).output",
            )
        ],
        [("attempts.append((tried.role, failure))", "attempts.append((step.role, failure))")],
        [
            (
                STAND_IN,
                "tries.append(replace(step, role=stand_in[step.role], tool=None, args={}, instruction='Answer: ' + step.instruction))",
            )
        ],
    ],
    "04.installments": [
        [("Budget(calls=n * calls_per_installment)", "Budget(calls=calls_per_installment)")],
        [("resume=True", "resume=False")],
        [('if run.status != "stopped":', 'if run.status == "done":')],
        [("range(1, max_installments + 1)", "range(1, max_installments + 2)")],
        [("range(1, max_installments + 1)", "range(1, max_installments)")],
        [
            (
                'raise RuntimeError(f"the run is not over after max_installments={max_installments} installments")',
                'raise RuntimeError("the run is not over")',
            )
        ],
        [("            return runs", "            return [run]")],
        [("checkpoint=path", "checkpoint=f'{path}.{n}'")],
        [("Budget(calls=n * calls_per_installment)", "Budget(calls=(n + 1) * calls_per_installment)")],
        [
            (
                'raise RuntimeError(f"the run is not over after max_installments={max_installments} installments")',
                "return runs",
            )
        ],
    ],
    "05.team-calls": [
        [
            (
                "        if level == depth:\n            return 2",
                "        if level == depth:\n            return 1",
            )
        ],
        [("            return 2 + team(items, level + 1)", "            return 2")],
        [("team(size + (i < extra), level + 1)", "team(size, level + 1)")],
        "def predict_calls(width, depth, branching):\n    return 2 * sum(branching ** k for k in range(depth))",
        [("return team(width, 1)", "return team(width, 0)")],
        [("parts = min(branching, items)", "parts = branching")],
        [("return 2 + sum(", "return 3 + sum(")],
        [("size, extra = divmod(items, parts)", "size, extra = -(-items // parts), 0")],
        [("parts = min(branching, items)", "parts = max(2, min(branching, items))")],
        [
            (
                "return 2 + sum(team(size + (i < extra), level + 1) for i in range(parts))",
                "return 2 + parts * team(size + (extra > 0), level + 1)",
            )
        ],
    ],
    "05.rollup": [
        [("if role != LEAD", "")],
        [("c.usage.total_tokens", "c.usage.input_tokens")],
        [
            (
                "levels[team.level] = levels.get(team.level, 0) + own",
                "levels[team.level - 1] = levels.get(team.level - 1, 0) + own",
            )
        ],
        [("levels[team.level] = levels.get(team.level, 0) + own", "levels[team.level] = own")],
        [("for team in root.walk():", "for team in [root]:")],
        "def tokens_by_level(root):\n    from agentlab.hierarchy import rollup\n    return {int(k.split()[-1]): v.usage.total_tokens for k, v in rollup(root).by_level.items()}",
        [("c.usage.total_tokens", "c.usage.output_tokens")],
        [
            (
                "levels[team.level] = levels.get(team.level, 0) + own",
                "levels[f'level {team.level}'] = levels.get(f'level {team.level}', 0) + own",
            )
        ],
        [("if role != LEAD", "if role == LEAD")],
        [("own = sum(c.usage.total_tokens for", "own = sum(1 for")],
    ],
    "05.shape": [
        [("if calls <= budget:", "if calls < budget:")],
        [(CANDIDATE, "candidate = (calls, largest, depth, branching)")],
        [(CANDIDATE, "candidate = (largest, calls, -depth, branching)")],
        [("return None if best is None else best[2:]", "return None if best is None else best[:1:-1]")],
        [("for depth in (1, 2, 3):", "for depth in (1, 2):")],
        [("return None if best is None else best[2:]", "return (1, 2) if best is None else best[2:]")],
        [(CANDIDATE, "candidate = (largest, calls, depth, -branching)")],
        [("largest = max(len(team.run.plan) for team in tree.walk())", "largest = len(tree.run.plan)")],
        [("calls = len(tree.calls())", "calls = len(list(tree.walk()))")],
        [(CANDIDATE, "candidate = (largest, -calls, depth, branching)")],
    ],
}
RIGHT = {
    "04.total-check": [
        [("largest = max(float(part) for part in parts)", "largest = max(map(float, parts))")],
        [("if total < largest:", "if any(total < float(p) for p in parts):")],
    ],
    "04.retry-then-reroute": [
        [(TRIES, "tries = [step] * retries + [step]")],
        [(TRIES, "tries = [step for _ in range(retries + 1)]")],
    ],
    "04.installments": [
        "def run_in_installments(task, planner, team, path, calls_per_installment, max_installments=20):\n    runs = []\n    while len(runs) < max_installments:\n        budget = Budget(calls=(len(runs) + 1) * calls_per_installment)\n        runs.append(orchestrate(task, planner, team, checkpoint=path, resume=True, budget=budget))\n        if runs[-1].status != 'stopped':\n            return runs\n    raise RuntimeError(f'not finished within max_installments={max_installments}')",
        [
            ("for n in range(1, max_installments + 1):", "for n in range(max_installments):"),
            ("Budget(calls=n * calls_per_installment)", "Budget(calls=(n + 1) * calls_per_installment)"),
        ],
    ],
    "05.team-calls": [
        "def predict_calls(width, depth, branching):\n    return 2 * sum(min(branching ** level, width) for level in range(depth))",
        [("team(size + (i < extra), level + 1)", "team(size + (i >= parts - extra), level + 1)")],
        "def predict_calls(width, depth, branching):\n    def calls(items, level):\n        if level == depth:\n            return 2\n        k = min(branching, items)\n        if k < 2:\n            return 2 + calls(items, level + 1)\n        sizes = [items // k + (1 if i < items % k else 0) for i in range(k)]\n        return 2 + sum(calls(s, level + 1) for s in sizes)\n    return calls(width, 1)",
    ],
    "05.rollup": [
        [
            (
                "levels[team.level] = levels.get(team.level, 0) + own",
                "levels.setdefault(team.level, 0)\n        levels[team.level] += own",
            )
        ],
        "from collections import Counter\n\ndef tokens_by_level(root):\n    out = Counter()\n    for team in root.walk():\n        out[team.level] += sum(c.usage.total_tokens for _, role, c in team.run.calls if role != LEAD)\n    return dict(out)",
    ],
    "05.shape": [
        "def choose_shape(width, budget):\n    question = world.fanout_task(random.Random(0), width, 'total').question\n    options = []\n    for d in (1, 2, 3):\n        for b in (2, 3, 4):\n            tree = Hierarchy(SimulatedLLM(seed=0), depth=d, branching=b).solve(question)\n            if len(tree.calls()) <= budget:\n                options.append((max(len(t.run.plan) for t in tree.walk()), len(tree.calls()), d, b))\n    options.sort()\n    return (options[0][2], options[0][3]) if options else None",
        [
            (CANDIDATE, "candidate = (largest, calls, depth, branching)"),
            (
                "best = candidate if best is None else min(best, candidate)",
                "best = min([c for c in (best, candidate) if c is not None])",
            ),
        ],
    ],
}


@pytest.mark.parametrize("exercise, kind, spec", battery(WRONG, RIGHT))
def test_a_wrong_answer_fails_and_a_right_one_passes(exercise, kind, spec, capsys):
    judge(exercise, kind, spec)
