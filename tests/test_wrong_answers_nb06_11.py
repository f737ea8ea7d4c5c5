# ruff: noqa: E501 (an answer is a line of code, or a few joined by \n: kept on one line each)
"""A class's plausible wrong answers to notebooks 06-11, each graded as `agentlab course grade` grades
(the exercise's own cases, then the instructor's hidden ones): every one must fail; and right answers
written differently from the solution: every one must pass. An answer is the solution's code with a
change or two ((old, new) pairs), a whole answer's source, or, where the answer is data, the data.
07.pick is left out (being rewritten), as is 04.message-key (its own helper's work)."""

import notebook_code
import pytest
from graded import first_failure, graded, made, memorised

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
DENIED = 'return [(entry.step, entry.role, entry.tool) for entry in log if entry.decision == "denied"]'
PERSON = 'if to not in world.ENTITIES or world.ENTITIES[to].kind != "person":'
CUT = 'text = text.replace(call_text(tool, args), "[call removed]")'
CLEAN = "clean_outputs = {step: sanitise(output) for step, output in outputs.items()}"
REPLAN = "return planner.replan(task, plan, clean_outputs, sanitise(failure))"
ROUNDS = "rounds = math.ceil(tasks / workers)"
SPEEDUP = "return tasks * seconds / (rounds * (seconds + overhead))"
QUERY = 'row = db.execute("SELECT people FROM census WHERE island = ?", (step.instruction,)).fetchone()'
HOUR = "hour = 2 * p.input if p.cache_write_1h is None else p.cache_write_1h"
PROMPT = "prompt = u.input_tokens + u.cache_read_tokens + u.cache_write_tokens + u.cache_write_1h_tokens"
START = "start = max([written[step.id], *(end[d] for d in step.depends_on)])"

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
    "09.denied": [
        [('entry.decision == "denied"', 'entry.decision != "allowed"')],
        [
            (
                DENIED,
                'return [(entry.role, entry.step, entry.tool) for entry in log if entry.decision == "denied"]',
            )
        ],
        [
            (
                DENIED,
                'return [[entry.step, entry.role, entry.tool] for entry in log if entry.decision == "denied"]',
            )
        ],
        [
            (
                DENIED,
                'return sorted((entry.step, entry.role, entry.tool) for entry in log if entry.decision == "denied")',
            )
        ],
        [('entry.decision == "denied"', 'entry.decision == "denied" or entry.outcome == "error"')],
        [
            (
                DENIED,
                'return list({(entry.step, entry.role, entry.tool) for entry in log if entry.decision == "denied"})',
            )
        ],
        [(DENIED, DENIED + "[:1]")],
        [(DENIED, DENIED + "[::-1]")],
        [
            (
                DENIED,
                'return [(entry.step, entry.role, entry.args.get("to", entry.tool)) for entry in log if entry.decision == "denied"]',
            )
        ],
        [
            (
                DENIED,
                'return [(entry.step, entry.role, entry.tool) for entry in log if entry.outcome == "not run"][:0] or [("s2", "researcher", "send_message")]',
            )
        ],
    ],
    "09.policy": [
        [(PERSON, 'if to not in ("Hesper Lusk", "Anselm Dray"):')],
        [('    if request.role != "clerk":\n        return False', "    if False:\n        return False")],
        [
            (
                '    if request.tool != "send_message":\n        return False',
                "    if False:\n        return False",
            )
        ],
        [(PERSON, "if to not in world.ENTITIES:")],
        [('return True, f"a message from the clerk to {to}"', "return True, ''")],
        [('    if request.role != "clerk":', "    if True:")],
        [(PERSON, "if to == ATTACKER:")],
        [('if request.role != "clerk":', 'if request.role == "researcher":')],
        [('if request.tool != "send_message":', 'if request.tool == "delete_record":')],
        [(PERSON, 'if to not in world.ENTITIES or world.ENTITIES[to].kind not in ("person", "guild"):')],
    ],
    "09.sanitise": [
        "import ast, re\n\ndef sanitise(text):\n    for m in re.finditer(r'\\b([A-Za-z_]\\w*)\\(([^()]*)\\)', text):\n        try:\n            call = ast.parse(f'_({m.group(2)})', mode='eval').body\n        except SyntaxError:\n            continue\n        if call.keywords and not call.args:\n            text = text.replace(m.group(0), '[call removed]')\n    return text",
        [
            (
                "for tool, args in find_injections(text):",
                "for tool, args in find_injections(text):\n        if tool != 'send_message':\n            continue",
            )
        ],
        "def sanitise(text):\n    return without_injections(text)",
        [("find_injections(text):", "find_injections(text)[:1]:")],
        [(CUT, CUT.replace("[call removed]", "[removed]"))],
        "import re\n\ndef sanitise(text):\n    return re.sub(r'\\w+\\(.*?\\)', '[call removed]', text)",
        [("    return text\n", "    return text.strip()\n")],
        [(CUT, CUT.replace('"[call removed]"', '""'))],
        "import re\n\ndef sanitise(text):\n    return re.sub(r'\\w+\\([^)]*=[^)]*\\)', '[call removed]', text)",
        "import re\n\ndef sanitise(text):\n    return re.sub(r'\\w+\\(\\w+=\".*\"\\)', '[call removed]', text)",
    ],
    "09.safe-replan": [
        [(REPLAN, "planner.replan(task, plan, outputs, failure)  # to compare\n    " + REPLAN)],
        [(REPLAN, "return planner.replan(task, plan, clean_outputs, failure)")],
        [(REPLAN, "return planner.replan(task, plan, outputs, sanitise(failure))")],
        [
            (
                CLEAN,
                "for step in outputs:\n        outputs[step] = sanitise(outputs[step])\n    clean_outputs = outputs",
            )
        ],
        [(CLEAN, "clean_outputs = {s: o for s, o in outputs.items() if not find_injections(o)}")],
        [(REPLAN, 'return planner.replan(task, plan, clean_outputs, "")')],
        [(CLEAN, "clean_outputs = {s: without_injections(o) for s, o in outputs.items()}")],
        [(REPLAN, "return planner.replan(task, plan, clean_outputs, without_injections(failure))")],
        [
            (
                CLEAN,
                "clean_outputs = dict(outputs)\n    first = next(iter(outputs), None)\n    if first:\n        clean_outputs[first] = sanitise(outputs[first])",
            )
        ],
        [(REPLAN, "return planner.replan(task, None, clean_outputs, sanitise(failure))")],
    ],
    "10.speedup": [
        [(ROUNDS, "rounds = tasks / workers")],
        [(ROUNDS, "rounds = tasks // workers")],
        [(SPEEDUP, "return tasks * seconds / (rounds * seconds + overhead)")],
        [(SPEEDUP, "return tasks * seconds / (rounds * seconds)")],
        [(SPEEDUP, "return (rounds * (seconds + overhead)) / (tasks * seconds)")],
        "def speedup(tasks, workers, seconds, overhead):\n    return min(workers, tasks) * seconds / (seconds + overhead)",
        [(SPEEDUP, "return tasks * (seconds + overhead) / (rounds * (seconds + overhead))")],
        [(SPEEDUP, "return round(" + SPEEDUP.removeprefix("return ") + ", 2)")],
        [(ROUNDS, ROUNDS + " + 1")],
        [(SPEEDUP, "return workers * seconds / (seconds + overhead)")],
    ],
    "10.break-even": [
        [("rounds = math.ceil(tasks / workers)", "rounds = tasks / workers")],
        [("        return None\n", "        return math.inf\n")],
        [("if tasks <= rounds:", "if tasks < rounds:")],
        "def break_even(tasks, workers, overhead):\n    return None if workers == 1 else overhead / (workers - 1)",
        "def break_even(tasks, workers, overhead):\n    return None if workers == 1 else overhead * workers / (tasks - workers)",
        [("if tasks <= rounds:", "if workers == 1:")],
        [("return rounds * overhead / (tasks - rounds)", "return (tasks - rounds) / (rounds * overhead)")],
        [
            (
                "return rounds * overhead / (tasks - rounds)",
                "return round(rounds * overhead / (tasks - rounds), 2)",
            )
        ],
        [("rounds = math.ceil(tasks / workers)", "rounds = tasks // workers")],
        [("return rounds * overhead / (tasks - rounds)", "return overhead / (tasks - rounds)")],
    ],
    "10.travel": [
        [
            (
                "    def ask_the_census(step, context):\n        with closing(sqlite3.connect(path)) as db:",
                "    db = sqlite3.connect(path, check_same_thread=False)\n\n    def ask_the_census(step, context):\n        if True:",
            )
        ],
        [('        return row[0] if row else "unknown"', "        return row[0] if row else None")],
        [("(step.instruction,)", "(step.id,)")],
        [('return Agent("clerk",', 'return Agent("researcher",')],
        [
            (
                "    def ask_the_census(step, context):\n",
                "    with closing(sqlite3.connect(path)) as db:\n        table = dict(db.execute('SELECT island, people FROM census'))\n\n    def ask_the_census(step, context):\n        return table.get(step.instruction, 'unknown')\n",
            )
        ],
        [('        return row[0] if row else "unknown"', "        return str(row) if row else 'unknown'")],
        [('        return row[0] if row else "unknown"', '        return row[0] if row else ""')],
        [(QUERY, 'row = db.execute("SELECT people FROM census").fetchone()')],
        [
            (
                "    def ask_the_census(step, context):\n",
                "    lock = __import__('threading').Lock()\n\n    def ask_the_census(step, context):\n        assert lock\n",
            )
        ],
        [("    return Agent(", "    return ask_the_census\n    return Agent(")],
    ],
    "11.cache-bill": [
        [("prompt > p.long_above", "prompt >= p.long_above")],
        [(HOUR, "hour = p.input if p.cache_write_1h is None else p.cache_write_1h")],
        [(PROMPT, "prompt = u.input_tokens")],
        [
            ("        total += dollars\n", "        total += dollars\n    if False:\n        pass\n"),
            (
                "if p.long_above is not None and prompt > p.long_above:",
                "if p.long_above is not None and sum(c.usage.input_tokens for c in calls) > p.long_above:",
            ),
        ],
        [("            + u.cache_read_tokens * p.cache_read\n", "")],
        [("u.cache_write_tokens * p.cache_write", "u.cache_write_tokens * p.input")],
        [(") / 1_000_000", ") / 1_000")],
        [
            (
                "dollars *= p.long_factor",
                "dollars += u.input_tokens * p.input * (p.long_factor - 1) / 1_000_000",
            )
        ],
        [(PROMPT, PROMPT + " + u.output_tokens")],
        [("p, u = prices[call.model], call.usage", "p, u = prices[calls[0].model], call.usage")],
        [(HOUR, "hour = p.cache_write")],
    ],
    "11.first-step": [
        [(START, "start = max([0.0, *(end[d] for d in step.depends_on)])")],
        [(START, "start = written[step.id] + max([0.0, *(end[d] for d in step.depends_on)])")],
        [("return max(end.values())", "return end[plan.steps[-1].id]")],
        [(START, "start = max([max(written.values()), *(end[d] for d in step.depends_on)])")],
        "def streamed_finish(plan, durations, written):\n    return max(written.values()) + sum(durations.values())",
        [(START, "start = max([written[step.id], *(written[d] for d in step.depends_on)])")],
        [("return max(end.values())", "return min(end.values())")],
        [(START, "start = max([written[step.id], *(end[d] for d in step.depends_on[:1])])")],
        "def streamed_finish(plan, durations, written):\n    return max(written[s] + durations[s] for s in written)",
        [
            (
                START,
                "start = max(written[step.id], max((end[d] for d in step.depends_on), default=0.0)) + 0.0 * len(end)",
            ),
            (
                "end[step.id] = start + durations[step.id]",
                "end[step.id] = start + durations[step.id]\n        durations[step.id] = 0.0",
            ),
        ],
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
    "09.denied": [
        "def denied(log):\n    out = []\n    for e in log:\n        if e.decision == 'denied':\n            out.append((e.step, e.role, e.tool))\n    return out",
        [(DENIED, DENIED.replace("return [", "return list(").replace('"denied"]', '"denied")'))],
    ],
    "09.policy": [
        [(PERSON, "if getattr(world.ENTITIES.get(to), 'kind', None) != 'person':")],
        "def clerk_only(request):\n    who, what, to = request.role, request.tool, request.args.get('to', '')\n    ok = who == 'clerk' and what == 'send_message' and to in world.ENTITIES and world.ENTITIES[to].kind == 'person'\n    return ok, f'{who} {what} to {to!r}: ' + ('allowed' if ok else 'not allowed')",
    ],
    "09.sanitise": [
        [(CUT, 'text = "[call removed]".join(text.split(call_text(tool, args)))')],
        "def sanitise(text):\n    for call in {call_text(t, a) for t, a in find_injections(text)}:\n        text = text.replace(call, '[call removed]')\n    return text",
    ],
    "09.safe-replan": [
        "def safe_replan(planner, task, plan, outputs, failure):\n    return planner.replan(task, plan, {k: sanitise(v) for k, v in dict(outputs).items()}, sanitise(failure))",
        [
            (
                CLEAN,
                "clean_outputs = {}\n    for step in outputs:\n        clean_outputs[step] = sanitise(outputs[step])",
            )
        ],
    ],
    "10.speedup": [
        [(ROUNDS, "rounds = -(-tasks // workers)")],
        [(SPEEDUP, "return (tasks * seconds) / (rounds * seconds + rounds * overhead)")],
    ],
    "10.break-even": [
        [(ROUNDS, "rounds = (tasks + workers - 1) // workers")],
        [("if tasks <= rounds:", "if workers == 1 or tasks == 1:")],
    ],
    "10.travel": [
        [('WHERE island = ?", (step.instruction,))', "WHERE island = :name\", {'name': step.instruction})")],
        [
            (
                "        with closing(sqlite3.connect(path)) as db:",
                "        db = sqlite3.connect(path)\n        try:",
            ),
            (
                "        return row[0] if row else",
                "        finally:\n            db.close()\n        return row[0] if row else",
            ),
        ],
    ],
    "11.cache-bill": [
        [(PROMPT, "prompt = u.prompt_tokens")],
        "def bill(calls, prices):\n    return sum(price_one(c, prices[c.model]) for c in calls)\n\ndef price_one(c, p):\n    u = c.usage\n    h = p.cache_write_1h if p.cache_write_1h is not None else 2 * p.input\n    d = (u.input_tokens * p.input + u.output_tokens * p.output + u.cache_read_tokens * p.cache_read + u.cache_write_tokens * p.cache_write + u.cache_write_1h_tokens * h) / 1e6\n    long = p.long_above is not None and u.input_tokens + u.cache_read_tokens + u.cache_write_tokens + u.cache_write_1h_tokens > p.long_above\n    return d * p.long_factor if long else d",
    ],
    "11.first-step": [
        [
            (
                START,
                "start = written[step.id]\n        for d in step.depends_on:\n            start = max(start, end[d])",
            )
        ],
        "def streamed_finish(plan, durations, written):\n    end = {}\n    for s in plan.topological_order():\n        end[s.id] = max([written[s.id]] + [end[d] for d in s.depends_on]) + durations[s.id]\n    return max(end.values())",
    ],
}


def _cases():
    for exercise in WRONG:
        yield pytest.param(exercise, "right", None, id=f"{exercise}-the-solution")
        if callable(made(exercise, None)):  # the visible cases' answers copied out of the shipped checks
            yield pytest.param(exercise, "wrong", "memorised", id=f"{exercise}-memorised")
    for kind, table in (("wrong", WRONG), ("right", RIGHT)):
        for exercise, specs in table.items():
            for n, spec in enumerate(specs, 1):
                yield pytest.param(exercise, kind, spec, id=f"{exercise}-{kind}-{n}")


@pytest.mark.parametrize("exercise, kind, spec", list(_cases()))
def test_a_wrong_answer_fails_and_a_right_one_passes(exercise, kind, spec, capsys):
    answer = memorised(exercise) if spec == "memorised" else made(exercise, spec)
    if kind == "wrong":
        assert first_failure(exercise, answer) is not None, f"{exercise}: a wrong answer passed"
    else:
        result = graded(exercise, answer)
        assert result.status == "passed", f"{exercise}: a right answer {result.status}: {result.detail}"
