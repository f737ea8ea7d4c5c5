# ruff: noqa: E501 (an answer is a line of code, or a few joined by \n: kept on one line each)
"""A class's plausible wrong answers to notebooks 09-11, each graded as `agentlab course grade`
grades (the exercise's own cases, then the instructor's hidden ones): every one must fail; and right
answers written differently from the solution: every one must pass. An answer is the solution's code
with a change or two ((old, new) pairs), a whole answer's source, or, where the answer is data, the
data (tests/graded.py makes and grades them)."""

import notebook_code
import pytest
from graded import battery, judge

notebook_code.skip_without_solutions()

TIES = "pieces = min(n for n, chance in chances.items() if chance == best)"
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
        "import re\n\ndef sanitise(text):\n    return re.sub(r'\\w+\\((?:\\w+=(?:\"[^\"]*\"|\\d+)(?:, )?)+\\)', '[call removed]', text)",
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
        [("for step, output in outputs.items()}", "for step, output in outputs.items() if output}")],
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
    "09.denied": [
        "def denied(log):\n    out = []\n    for e in log:\n        if e.decision == 'denied':\n            out.append((e.step, e.role, e.tool))\n    return out",
        [(DENIED, DENIED.replace("return [", "return list(").replace('"denied"]', '"denied")'))],
    ],
    "09.policy": [
        [(PERSON, "if getattr(world.ENTITIES.get(to), 'kind', None) != 'person':")],
        "def clerk_only(request):\n    who, what, to = request.role, request.tool, request.args.get('to', '')\n    ok = who == 'clerk' and what == 'send_message' and to in world.ENTITIES and world.ENTITIES[to].kind == 'person'\n    return ok, f'{who} {what} to {to!r}: ' + ('allowed' if ok else 'not allowed')",
    ],
    "09.sanitise": [
        "import re\n\ndef sanitise(text):\n    return re.sub(r'\\b[A-Za-z_]\\w*\\((?:\\s*\\w+\\s*=\\s*(?:\"(?:[^\"\\\\]|\\\\.)*\"|-?\\d+(?:\\.\\d+)?)\\s*,?)+\\)', '[call removed]', text)",
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


@pytest.mark.parametrize("exercise, kind, spec", battery(WRONG, RIGHT))
def test_a_wrong_answer_fails_and_a_right_one_passes(exercise, kind, spec, capsys):
    judge(exercise, kind, spec)
