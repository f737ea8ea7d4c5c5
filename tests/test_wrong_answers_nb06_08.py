# ruff: noqa: E501 (an answer is a line of code, or a few joined by \n: kept on one line each)
"""A class's plausible wrong answers to notebooks 06-08, each graded as `agentlab course grade`
grades (the exercise's own cases, then the instructor's hidden ones): every one must fail; and right
answers written differently from the solution: every one must pass. An answer is the solution's code
with a change or two ((old, new) pairs), a whole answer's source, or, where the answer is data, the
data (tests/graded.py makes and grades them).
07.pick is left out: another helper is rewriting it."""

import notebook_code
import pytest
from graded import battery, judge

notebook_code.skip_without_solutions()

TIES = "pieces = min(n for n, chance in chances.items() if chance == best)"
CHANCES = "chances = {n: (1 - fail / n) ** n * (1 - handoff) ** (n - 1) for n in range(1, most + 1)}"
TRIES = "tries = rng.random((trials, n, attempts)) < rate[:, None, None]"
GROWTH = "growth = (inputs[-1] - first) / (len(inputs) - 1) if len(inputs) > 1 else 0"
TOKENS = "return n * first + growth * n * (n - 1) / 2"
BEST = "return min(policies, key=lambda t: (-policies[t].accuracy, policies[t].mean_cost, t))"
LOST = (
    "    return [t for t in run.transfers if not any(run.task in text for m in t.sent for text in texts(m))]"
)

WRONG = {
    "06.crossover": [
        [("    if p <= q:\n", "    if p < q:\n")],
        [("while p ** (n + 1) > q:", "while p ** (n + 1) >= q:")],
        "def longest_winning_chain(p, q):\n    return math.floor(math.log(q) / math.log(p))",
        [("    return n\n", "    return n + 1\n")],
        [("    if p == 1 or q == 0:\n        return math.inf", "    if p == 1:\n        return math.inf")],
        [("        return 0  #", "        return None  #")],
        "def longest_winning_chain(p, q):\n    if p <= q:\n        return 0\n    if p == 1 or q == 0:\n        return math.inf\n    return int(math.log(q, p))",
        [("    if p == 1 or q == 0:\n        return math.inf", "    if q == 0:\n        return math.inf")],
        [("while p ** (n + 1) > q:", "while p ** n > q:")],
        [("        return 0  #", "        return 1  #")],
    ],
    "06.best-cut": [
        [(TIES, "pieces = max(n for n, chance in chances.items() if chance == best)")],
        [(CHANCES, CHANCES.replace("** (n - 1)", "** n"))],
        [(CHANCES, CHANCES.replace("range(1, most + 1)", "range(1, most)"))],
        [(CHANCES, CHANCES.replace("(1 - fail / n) ** n", "(1 - fail) ** n"))],
        [("return pieces, best", "return best, pieces")],
        [("return pieces, best", "return pieces, round(best, 3)")],
        [(CHANCES, CHANCES.replace("range(1, most + 1)", "range(0, most + 1)"))],
        [("return pieces, best", "return pieces")],
        [(CHANCES, CHANCES.replace("(1 - fail / n) ** n", "(1 - fail / n)"))],
        [(CHANCES, CHANCES.replace("range(1, most + 1)", "range(2, most + 1)"))],
    ],
    "06.retries-correlated": [
        [
            (
                "rate = task_rates(p, correlation, trials, rng)",
                "rate = task_rates(p, correlation, trials * n, rng).reshape(trials, n)",
            ),
            ("rate[:, None, None]", "rate[:, :, None]"),
        ],
        [("tries.any(axis=2).all(axis=1)", "tries.all(axis=2).any(axis=1)")],
        [("rng = np.random.default_rng(seed)", "rng = np.random.default_rng()")],
        [("return Estimate(int(chains.sum()), trials)", "return chains.mean()")],
        [("rate = task_rates(p, correlation, trials, rng)", "rate = np.full(trials, p)")],
        [("tries.any(axis=2).all(axis=1)", "tries.all(axis=2).all(axis=1)")],
        [("return Estimate(int(chains.sum()), trials)", "return Estimate(int(chains.sum()), trials * n)")],
        [("tries.any(axis=2).all(axis=1)", "tries.any(axis=2).any(axis=1)")],
        [(TRIES, TRIES.replace("(trials, n, attempts)", "(trials, n, 1)"))],
        [
            (
                "rate = task_rates(p, correlation, trials, rng)",
                "rate = task_rates(p, correlation, trials * n * attempts, rng).reshape(trials, n, attempts)",
            ),
            ("rate[:, None, None]", "rate"),
        ],
    ],
    "07.react-tokens": [
        [(TOKENS, "return n * first")],
        [(GROWTH, "growth = (inputs[1] - first) if len(inputs) > 1 else 0")],
        [(TOKENS, "return n * first + growth * n * (n + 1) / 2")],
        [(GROWTH, "growth = (inputs[-1] - first) / len(inputs)")],
        [(TOKENS, "return n * sum(inputs) / len(inputs)")],
        [
            (TOKENS, "return n * first + growth * n * (n - 1) // 2"),
            ("/ (len(inputs) - 1)", "// (len(inputs) - 1)"),
        ],
        [(GROWTH, "growth = (inputs[-1] - first) / (len(inputs) - 1)")],
        [
            (
                "inputs = [turn.input_tokens for turn in run.turns]",
                "inputs = [turn.input_tokens + turn.output_tokens for turn in run.turns]",
            )
        ],
        [(TOKENS, "return n * first + growth * n * n / 2")],
        [(TOKENS, "return n * inputs[-1]")],
        [(TOKENS, "return sum(inputs) * n / len(inputs) + growth")],
    ],
    "07.router-share": [
        [
            (
                "return (target - counts.weak_accuracy) / gap",
                "return round((target - counts.weak_accuracy) / gap, 2)",
            )
        ],
        [("if target > counts.strong_accuracy:", "if target >= counts.strong_accuracy:")],
        [
            (
                "    return target - counts.weak_accuracy\n",
                "    return (target - counts.weak_accuracy) / (counts.strong_accuracy - counts.weak_accuracy)\n",
            )
        ],
        [("if target > counts.perfect_accuracy:", "if target > counts.strong_accuracy:")],
        [("return (target - counts.weak_accuracy) / gap", "return target - counts.weak_accuracy")],
        [
            (
                "return (target - counts.weak_accuracy) / gap",
                "return 100 * (target - counts.weak_accuracy) / gap",
            )
        ],
        [("            return None  # even", "            return 1.0  # even")],
        [('if router == "coin":', 'if router == "perfect":')],
        [("if target > counts.perfect_accuracy:", "if target >= counts.perfect_accuracy:")],
        [("return 0.0  # the weak", "return None  # the weak")],
    ],
    "07.shapes": [
        {"A": "plan-execute", "B": "planner+workers", "C": "plan-execute", "D": "react"},
        {"A": "react", "B": "react", "C": "plan-execute", "D": "react"},
        {"A": "react", "B": "plan-execute", "C": "plan-execute", "D": "react"},
        {"A": "react", "B": "planner+workers", "C": "react", "D": "react"},
        {"A": "react", "B": "planner+workers", "C": "plan-execute", "D": "plan-execute"},
        {"A": "react", "B": "planner+workers", "C": "plan-execute", "D": "planner+workers"},
        {"A": "planner+workers", "B": "planner+workers", "C": "planner+workers", "D": "planner+workers"},
        {"A": "react", "B": "react", "C": "react", "D": "react"},
        {"A": "chat", "B": "planner+workers", "C": "plan-execute", "D": "react"},
    ],
    "08.threshold": [
        [("range(1, largest + 2)", "range(1, largest + 1)")],
        [(BEST, "return min(policies, key=lambda t: (-policies[t].accuracy, t))")],
        [(BEST, "return min(policies, key=lambda t: (-policies[t].accuracy, policies[t].mean_cost, -t))")],
        [(BEST, "return min(policies, key=lambda t: (policies[t].mean_cost, -policies[t].accuracy, t))")],
        [(BEST, "return max(policies, key=lambda t: policies[t].accuracy)")],
        [("range(1, largest + 2)", "range(2, largest + 2)")],
        [
            (
                BEST,
                "return policies[min(policies, key=lambda t: (-policies[t].accuracy, policies[t].mean_cost, t))]",
            )
        ],
        [("range(1, largest + 2)", "range(0, largest + 2)")],
        [(BEST, "return max(policies, key=lambda t: (policies[t].accuracy, -policies[t].mean_cost, t))")],
    ],
    "08.handoff-audit": [
        [
            (
                'return [block.get("text", "") for block in content if block.get("type") == "text"]',
                'return [content[0].get("text", "")] if content else []',
            )
        ],
        [("for m in t.sent for", "for m in t.sent if m.get('role') == 'user' for")],
        [("run.task in text", "run.task.lower() in text.lower()")],
        [(LOST, LOST + "[:1]")],
        [
            (
                LOST,
                "    lost = {}\n    for t in run.transfers:\n        if not any(run.task in x for m in t.sent for x in texts(m)):\n            lost.setdefault(t.target, t)\n    return list(lost.values())",
            )
        ],
        [("run.task in text", "run.task[:30] in text")],
        [(LOST, "    return [t for t in run.transfers if run.task not in t.note]")],
        [("for m in t.sent for", "for m in t.sent[:1] for")],
        [("        return [block.get", "        return []\n        return [block.get")],
        [
            (
                'if block.get("type") == "text"]',
                'if isinstance(block.get("text", block.get("content", "")), str)] + [str(block.get("content", "")) for block in content]',
            )
        ],
        [
            (
                LOST,
                "    return [t.target for t in run.transfers if not any(run.task in text for m in t.sent for text in texts(m))]",
            )
        ],
        [("if not any(run.task in text", "if any(run.task in text")],
        [("for m in t.sent for", "for m in t.sent[-1:] for")],
    ],
}
RIGHT = {
    "06.crossover": [
        "def longest_winning_chain(p, q):\n    if p <= q:\n        return 0\n    if p >= 1 or q <= 0:\n        return math.inf\n    n, power = 0, p\n    while power > q:\n        n, power = n + 1, power * p\n    return n",
        [("return math.inf  #", "return float('inf')  #")],
    ],
    "06.best-cut": [
        [(TIES, "pieces = max(chances, key=chances.get)")],
        "def best_cut(fail, handoff, most):\n    best = None\n    for n in range(1, most + 1):\n        c = (1 - fail / n) ** n * (1 - handoff) ** (n - 1)\n        if best is None or c > best[1]:\n            best = (n, c)\n    return best",
    ],
    "06.retries-correlated": [
        "def simulate_retries(p, n, attempts, correlation, trials=100_000, seed=0):\n    np.random.seed(seed)\n    wins = 0\n    rates = task_rates(p, correlation, trials, np.random.default_rng(seed + 1))\n    tries = np.random.random((trials, n, attempts)) < rates[:, None, None]\n    wins = int(tries.any(axis=2).all(axis=1).sum())\n    return Estimate(wins, trials)",
        [(TRIES, "draws = rng.random((trials, n, attempts))\n    tries = draws < rate[:, None, None]")],
        [("chains = tries.any(axis=2).all(axis=1)", "chains = ~(~tries).all(axis=2).any(axis=1)")],
    ],
    "07.react-tokens": [
        [(GROWTH, "growth = sum(b - a for a, b in zip(inputs, inputs[1:])) / max(len(inputs) - 1, 1)")],
        [
            (
                "inputs = [turn.input_tokens for turn in run.turns]",
                "inputs = [c.usage.input_tokens for _, _, c in run.calls]",
            )
        ],
        [(TOKENS, "return sum(first + growth * k for k in range(n))")],
        [(GROWTH, "growth = 0 if len(inputs) == 1 else (inputs[-1] - inputs[0]) / (len(inputs) - 1)")],
    ],
    "07.router-share": [
        [
            (
                "    return target - counts.weak_accuracy\n",
                "    return (target * counts.total - counts.both - counts.only_weak) / counts.total\n",
            )
        ],
        [
            (
                "return (target - counts.weak_accuracy) / gap",
                "return (target - counts.weak_accuracy) / (counts.strong_accuracy - counts.weak_accuracy)",
            )
        ],
    ],
    "07.shapes": [
        {"A": "react", "B": "planner+workers", "C": "planner+workers", "D": "react"},
        {"D": "react", "C": "plan-execute", "B": "planner+workers", "A": "react"},
    ],
    "08.threshold": [
        [("range(1, largest + 2)", "range(1, largest + 5)")],
        [
            (
                BEST,
                "best = max(policies.values(), key=lambda r: r.accuracy).accuracy\n    return min((policies[t].mean_cost, t) for t in policies if policies[t].accuracy == best)[1]",
            )
        ],
    ],
    "08.handoff-audit": [
        [
            (
                '[block.get("text", "") for block in content if block.get("type") == "text"]',
                '[b["text"] for b in content if b.get("type") == "text" and "text" in b]',
            )
        ],
        "def lost_requests(run):\n    lost = []\n    for t in run.transfers:\n        seen = False\n        for m in t.sent:\n            c = m.get('content', '')\n            parts = [c] if isinstance(c, str) else [b.get('text', '') for b in c if b.get('type') == 'text']\n            seen = seen or any(run.task in p for p in parts)\n        if not seen:\n            lost.append(t)\n    return lost",
    ],
}


@pytest.mark.parametrize("exercise, kind, spec", battery(WRONG, RIGHT))
def test_a_wrong_answer_fails_and_a_right_one_passes(exercise, kind, spec, capsys):
    judge(exercise, kind, spec)
