"""Notebook 01's exercise checks: each fails on the stub and on a plausible wrong answer, and passes
on the solution, taken from the solution notebook itself."""

from collections import Counter
from pathlib import Path

import notebook_code
import pytest

from agentlab.course.checks import CheckFailed, check
from agentlab.course.grading import verdict

notebook_code.skip_without_solutions()
ROOT = Path(__file__).resolve().parents[1]
NAME = "01_stub_planner_and_executors.ipynb"


def exercise_cell(marker: str) -> str:
    return notebook_code.exercise_cell(ROOT / "exercises" / NAME, marker)


@pytest.fixture(scope="module")
def solution():
    return notebook_code.run_cells(ROOT / "solutions" / NAME, answers=True)


@pytest.fixture(scope="module")
def exercise():
    return notebook_code.run_cells(ROOT / "exercises" / NAME, answers=False)


# --- 01.concerns ----------------------------------------------------------------------------------


def test_concerns_feedback_checks_the_form_and_the_grader_marks_the_model_answer_right(solution, capsys):
    check("01.concerns", solution["concerns"])
    out = capsys.readouterr().out  # a check of the form alone never says "passed"
    assert "The form is right; your instructor's grader marks the choices." in out and "passed" not in out
    assert verdict("01.concerns", solution["concerns"]).status == "passed"


def test_concerns_left_as_shipped_gets_its_verdict(exercise, capsys):
    with pytest.raises(NotImplementedError):
        exec(exercise_cell('check("01.concerns"'), dict(exercise))
    assert "not written yet" in capsys.readouterr().out  # the check ran: the `...` are still there


KEY = {
    "bottleneck": "c",
    "single point of failure": "a",
    "decomposition cost": "e",
    "swarms avoid": {"bottleneck", "single point of failure"},
    "swarms give up": "y",
}


@pytest.mark.parametrize(
    "change, failing",
    [
        # the two coordinator failures swapped, and swarms said to avoid everything
        (
            {
                "bottleneck": "a",
                "single point of failure": "c",
                "swarms avoid": {"bottleneck", "single point of failure", "decomposition cost"},
                "swarms give up": "x",
            },
            2,
        ),
        ({"swarms avoid": {"bottleneck"}}, 1),  # the symptoms right, a swarm avoids only the bottleneck
        ({"bottleneck": "e", "decomposition cost": "c"}, 1),  # the throughput and the cost concerns swapped
    ],
)
def test_concerns_the_grader_fails_a_near_miss_without_saying_which_item_is_wrong(change, failing, capsys):
    check("01.concerns", {**KEY, **change})  # well formed: the learner's own check cannot tell
    result = verdict("01.concerns", {**KEY, **change})
    assert result.status == "failed" and result.detail.startswith(f"{failing} of 5 cases failed")
    assert "of 3 right" not in result.detail and "bottleneck" not in result.detail


def test_concerns_feedback_catches_symptoms_written_out_instead_of_letters(capsys):
    notebook_code.caught(
        capsys,
        "01.concerns",
        {**KEY, "bottleneck": "queues at the planner"},
        "✗ each concern gets one of the five letters",
    )


# --- 01.sentinel ----------------------------------------------------------------------------------


def test_sentinel_passes_on_the_solution(solution, capsys):
    check("01.sentinel", solution["run_with_reroute"])
    assert "All 11 checks passed." in capsys.readouterr().out


def test_sentinel_stub_raises_not_implemented(exercise):
    with pytest.raises(NotImplementedError):
        check("01.sentinel", exercise["run_with_reroute"])


def only_exact_failed(plan, team, stand_in):
    """Reroutes only an answer that is exactly "FAILED"; "FAILED: reason" slips through."""
    outputs = {}
    for step in plan.topological_order():
        context = {dep: outputs[dep] for dep in step.depends_on}
        output = team[step.role](step, context)
        if output == "FAILED":
            output = team[stand_in[step.role]](step, context)
        outputs[step.id] = output
    return outputs


def reroutes_whole_role(plan, team, stand_in):
    """Once a role has failed, sends all its later steps to the stand-in, and never gives up."""
    outputs, broken = {}, set()
    for step in plan.topological_order():
        context = {dep: outputs[dep] for dep in step.depends_on}
        role = stand_in[step.role] if step.role in broken else step.role
        output = team[role](step, context)
        if "FAILED" in output:
            broken.add(step.role)
            output = team[stand_in.get(step.role, step.role)](step, context)
        outputs[step.id] = output
    return outputs


def test_sentinel_fails_when_only_a_bare_failed_is_noticed(capsys):
    with pytest.raises(CheckFailed):
        check("01.sentinel", only_exact_failed)
    failed = notebook_code.failed_cases(capsys)
    assert failed[0].startswith("✗ a coder that answers 'FAILED: ...' is asked first")
    assert any(line.startswith("✗ a stand-in that fails too stops the run") for line in failed)


def test_sentinel_fails_when_failed_anywhere_counts_and_nothing_ever_stops(capsys):
    with pytest.raises(CheckFailed):
        check("01.sentinel", reroutes_whole_role)
    failed = notebook_code.failed_cases(capsys)
    assert any(line.startswith("✗ an answer that only mentions FAILED later on") for line in failed)
    assert any(line.startswith("✗ a failed step whose role has no stand-in") for line in failed)


def sticky_reroute(plan, team, stand_in):
    """Right in every other way, but once a role has failed, every later step of that role goes
    straight to its stand-in."""
    outputs, broken = {}, set()
    for step in plan.topological_order():
        context = {dep: outputs[dep] for dep in step.depends_on}
        role = stand_in[step.role] if step.role in broken else step.role
        output = team[role](step, context)
        if output.startswith("FAILED"):
            if step.role not in stand_in:
                raise RuntimeError(f"step {step.id!r} failed and nobody stands in")
            broken.add(step.role)
            output = team[stand_in[step.role]](step, context)
            if output.startswith("FAILED"):
                raise RuntimeError(f"step {step.id!r} failed twice")
        outputs[step.id] = output
    return outputs


def swaps_the_team(plan, team, stand_in):
    """Reroutes by putting the stand-in in the failed role's place in the team dict it was given."""
    outputs = {}
    for step in plan.topological_order():
        context = {dep: outputs[dep] for dep in step.depends_on}
        output = team[step.role](step, context)
        if output.startswith("FAILED"):
            if step.role not in stand_in:
                raise RuntimeError(f"step {step.id!r} failed and nobody stands in")
            team[step.role] = team[stand_in[step.role]]
            output = team[step.role](step, context)
            if output.startswith("FAILED"):
                raise RuntimeError(f"step {step.id!r} failed twice")
        outputs[step.id] = output
    return outputs


def stand_in_without_inputs(plan, team, stand_in):
    """Hands the stand-in the step with no context, as if it started afresh."""
    outputs = {}
    for step in plan.topological_order():
        context = {dep: outputs[dep] for dep in step.depends_on}
        output = team[step.role](step, context)
        if output.startswith("FAILED"):
            if step.role not in stand_in:
                raise RuntimeError(f"step {step.id!r} failed and nobody stands in")
            output = team[stand_in[step.role]](step, {})
            if output.startswith("FAILED"):
                raise RuntimeError(f"step {step.id!r} failed twice")
        outputs[step.id] = output
    return outputs


@pytest.mark.parametrize(
    "wrong, lines",
    [
        (sticky_reroute, ["✗ a role's first step fails: its later steps still go to that role"]),
        (
            swaps_the_team,
            [
                "✗ a role's first step fails: its later steps still go to that role",
                "✗ the team and stand-in dicts you are handed are left as they were: after a run where",
            ],
        ),
        (stand_in_without_inputs, ["✗ the stand-in gets the same inputs the failed step had"]),
    ],
    ids=lambda x: getattr(x, "__name__", ""),
)
def test_sentinel_catches_a_reroute_that_outlives_its_step_or_loses_its_inputs(wrong, lines, capsys):
    notebook_code.caught(capsys, "01.sentinel", wrong, *lines)


# --- 01.hierarchy ---------------------------------------------------------------------------------


def test_hierarchy_passes_on_the_solution(solution, capsys):
    check("01.hierarchy", solution["run_hierarchy"])
    assert "All 12 checks passed." in capsys.readouterr().out


def test_hierarchy_stub_raises_not_implemented(exercise):
    with pytest.raises(NotImplementedError):
        check("01.hierarchy", exercise["run_hierarchy"])


def one_outputs_dict(task, manager, sub_planner, team, synthesize):
    """Runs every chunk into one outputs dict and collects the chunks' results at the end, when a
    later chunk's s1 has overwritten an earlier chunk's; and forgets to count the sub-planners."""
    calls, outputs, plans = Counter(), {}, []
    calls["manager"] += 1
    for chunk in manager(task):
        plans.append(sub_planner(chunk))
        for step in plans[-1].topological_order():
            outputs[step.id] = team[step.role](step, {d: outputs[d] for d in step.depends_on})
            calls["executor"] += 1
    calls["synthesizer"] += 1
    return synthesize(task, [outputs[p.final_step.id] for p in plans]), calls


def test_hierarchy_fails_on_a_shared_outputs_dict_and_uncounted_sub_planners(capsys):
    with pytest.raises(CheckFailed, match="6 of 12 checks failed"):
        check("01.hierarchy", one_outputs_dict)
    failed = notebook_code.failed_cases(capsys)
    assert failed[0].startswith("✗ chunks of 3+2 steps: the calls are counted by kind")
    assert any(
        line.startswith("✗ chunks of 4+1+3 steps: the top synthesizer gets each chunk's final output")
        for line in failed
    )


def hierarchy_with(forget_synthesizer=False, every_output=False, reverse=False):
    """run_hierarchy with one mistake: the top synthesis not counted, every output of a chunk
    handed up instead of its final one, or the chunks' results handed up in reverse order."""

    def run_hierarchy(task, manager, sub_planner, team, synthesize):
        calls, results = Counter(manager=1), []
        for chunk in manager(task):
            chunk_plan = sub_planner(chunk)
            calls["sub-planner"] += 1
            outputs = {}
            for step in chunk_plan.topological_order():
                outputs[step.id] = team[step.role](step, {d: outputs[d] for d in step.depends_on})
                calls["executor"] += 1
            results += list(outputs.values()) if every_output else [outputs[chunk_plan.final_step.id]]
        deliverable = synthesize(task, results[::-1] if reverse else results)
        calls["synthesizer"] += 0 if forget_synthesizer else 1
        return deliverable, calls

    return run_hierarchy


@pytest.mark.parametrize(
    "mistake, line",
    [
        ({"forget_synthesizer": True}, "✗ chunks of 3+2 steps: the calls are counted by kind"),
        ({"every_output": True}, "✗ chunks of 3+2 steps: the top synthesizer gets each chunk's final output"),
        ({"reverse": True}, "✗ chunks of 4+1+3 steps: the top synthesizer gets each chunk's final output"),
    ],
    ids=lambda x: next(iter(x)) if isinstance(x, dict) else "",
)
def test_hierarchy_catches_an_uncounted_synthesis_and_what_is_handed_up(mistake, line, capsys):
    notebook_code.caught(capsys, "01.hierarchy", hierarchy_with(**mistake), line)


# --- 01.when-hierarchy ----------------------------------------------------------------------------


def test_when_hierarchy_feedback_checks_the_form_and_the_grader_marks_the_model_answer(solution, capsys):
    check("01.when-hierarchy", solution["when"])
    out = capsys.readouterr().out
    assert "The form is right; your instructor's grader marks the choices." in out and "passed" not in out
    assert verdict("01.when-hierarchy", solution["when"]).status == "passed"


def test_when_hierarchy_left_as_shipped_gets_its_verdict(exercise, capsys):
    with pytest.raises(NotImplementedError):
        exec(exercise_cell('check("01.when-hierarchy"'), dict(exercise))
    assert "not written yet" in capsys.readouterr().out


def test_a_half_filled_answer_is_not_written_yet_and_tells_nothing(capsys):
    with pytest.raises(NotImplementedError):
        check("01.when-hierarchy", {"p": "flat", "q": ..., "r": "flat", "s": ...})
    out = capsys.readouterr().out
    assert "not written yet" in out and "✗" not in out and "✓" not in out


@pytest.mark.parametrize(
    "answer",
    [
        dict.fromkeys("pqrs", "hierarchy"),  # a hierarchy always better
        dict.fromkeys("pqrs", "flat"),  # never worth it
        {"p": "flat", "q": "hierarchy", "r": "hierarchy", "s": "flat"},
    ],
)
def test_when_hierarchy_the_grader_fails_wrong_choices_without_saying_how_many(answer):
    result = verdict("01.when-hierarchy", answer)
    assert (result.status, result.detail) == (
        "failed",
        "1 of 3 cases failed: the four situations: not all right",
    )


def test_when_hierarchy_feedback_catches_an_answer_that_is_not_flat_or_hierarchy(capsys):
    answer = {"p": False, "q": True, "r": False, "s": True}
    notebook_code.caught(capsys, "01.when-hierarchy", answer, "✗ every situation is answered with one of")


# --- 01.reconcile ---------------------------------------------------------------------------------


def test_reconcile_passes_on_the_solution(solution, capsys):
    check("01.reconcile", solution["majority"])
    assert "All 8 checks passed." in capsys.readouterr().out


def test_reconcile_stub_gets_its_verdict(exercise, capsys):
    with pytest.raises(NotImplementedError):
        check("01.reconcile", exercise["majority"])
    assert "not written yet" in capsys.readouterr().out


def test_the_lessons_rule_is_not_a_majority(capsys):
    from agentlab.synthesis import newest_wins

    notebook_code.caught(capsys, "01.reconcile", newest_wins, "✗ two older sources outvote one newer")


def first_worker_wins(findings):
    """Takes the first step's value for every claim and cites only it: a synthesizer that never reads on."""
    from agentlab.synthesis import Resolved

    seen = {}
    for step_id, found in findings.items():
        for f in found:
            seen.setdefault(f.claim, Resolved(f.claim, f.value, (step_id,), "first"))
    return list(seen.values())


def majority_citing_everyone(solution):
    """The right values, but every step cited, dissenters too: the citations no longer say who said it."""
    from dataclasses import replace

    def answer(findings):
        spoke = {}
        for step_id, found in findings.items():
            for f in found:
                spoke.setdefault(f.claim, []).append(step_id)
        return [replace(r, cited=tuple(spoke[r.claim])) for r in solution["majority"](findings)]

    return answer


def majority_never_open(solution):
    """Breaks a full tie by taking the first value instead of leaving the question open."""
    from dataclasses import replace

    def answer(findings):
        out = []
        for r in solution["majority"](findings):
            if r.value is None:
                first = next(f for s in r.cited for f in findings[s] if f.claim == r.claim)
                r = replace(r, value=first.value, cited=(r.cited[0],))
            out.append(r)
        return out

    return answer


def test_reconcile_catches_the_first_worker_winning(capsys):
    notebook_code.caught(capsys, "01.reconcile", first_worker_wins, "✗ the first worker is outvoted")


def test_reconcile_catches_citations_of_dissenters_and_a_tie_decided_by_order(solution, capsys):
    notebook_code.caught(capsys, "01.reconcile", majority_citing_everyone(solution), "✗ two older sources")
    notebook_code.caught(
        capsys, "01.reconcile", majority_never_open(solution), "✗ a tie in votes and in date stays open"
    )


# --- issue 21: wrong answers the checks missed ------------------------------------------------------


def reroute_with(colon=False, retry_first=False, generalist=False):
    """run_with_reroute with one mistake: only "FAILED:" (with its colon) noticed, the failed role
    asked once more before the stand-in, or the generalist asked whoever the stand-in map names."""

    def run(plan, team, stand_in):
        outputs = {}
        for step in plan.topological_order():
            context = {dep: outputs[dep] for dep in step.depends_on}
            output = team[step.role](step, context)
            failed = output.startswith("FAILED:") if colon else output.startswith("FAILED")
            if failed and retry_first:
                output = team[step.role](step, context)
                failed = output.startswith("FAILED")
            if failed:
                if step.role not in stand_in:
                    raise RuntimeError(f"step {step.id!r} failed and nobody stands in")
                output = team["generalist" if generalist else stand_in[step.role]](step, context)
                if output.startswith("FAILED"):
                    raise RuntimeError(f"step {step.id!r} failed twice")
            outputs[step.id] = output
        return outputs

    return run


@pytest.mark.parametrize(
    "mistake, line",
    [
        ({"colon": True}, "✗ a bare 'FAILED' from the last step of its role: that step is rerouted"),
        ({"retry_first": True}, "✗ a coder that answers 'FAILED: ...' is asked first, then its step goes"),
        ({"generalist": True}, "✗ a stand-in other than the generalist: the step goes to the role the map"),
    ],
    ids=lambda x: next(iter(x)),
)
def test_sentinel_catches_a_colon_required_a_retry_first_and_a_stand_in_hard_coded(mistake, line, capsys):
    notebook_code.caught(capsys, "01.sentinel", reroute_with(**mistake), line)


def hierarchy_mistaken(manager_twice=False, written_order=False, last_written=False):
    """run_hierarchy with one mistake: the top synthesis counted as a second manager call (the
    synthesizer is "the manager again"), a chunk's steps run in the order they are written, or the
    output of the step written last handed up as the chunk's result."""

    def run_hierarchy(task, manager, sub_planner, team, synthesize):
        calls, results = Counter(manager=1), []
        for chunk in manager(task):
            chunk_plan = sub_planner(chunk)
            calls["sub-planner"] += 1
            outputs = {}
            order = chunk_plan.steps if written_order else chunk_plan.topological_order()
            for step in order:
                outputs[step.id] = team[step.role](step, {d: outputs[d] for d in step.depends_on})
                calls["executor"] += 1
            final = chunk_plan.steps[-1] if last_written else chunk_plan.final_step
            results.append(outputs[final.id])
        deliverable = synthesize(task, results)
        calls["manager" if manager_twice else "synthesizer"] += 1
        return deliverable, calls

    return run_hierarchy


@pytest.mark.parametrize(
    "mistake, line",
    [
        ({"manager_twice": True}, "✗ chunks of 3+2 steps: the calls are counted by kind"),
        ({"written_order": True}, "✗ chunks of 2+3 steps, each summed up in a step written first: returns"),
        (
            {"last_written": True},
            "✗ chunks of 2+3 steps, each summed up in a step written first: the top synthesizer gets",
        ),
    ],
    ids=lambda x: next(iter(x)),
)
def test_hierarchy_catches_the_synthesis_billed_to_the_manager_and_steps_taken_as_written(
    mistake, line, capsys
):
    notebook_code.caught(capsys, "01.hierarchy", hierarchy_mistaken(**mistake), line)


def majority_mistaken(solution, oldest=False, open_cites_the_tied=False, sorted_claims=False):
    """majority with one mistake: a tie in votes broken by each value's oldest date, an open claim
    that cites only the steps of the tied values, or the claims returned in alphabetical order."""
    from agentlab.synthesis import Resolved

    def answer(findings):
        said = {}
        for step_id, found in findings.items():
            for f in found:
                said.setdefault(f.claim, []).append((step_id, f))
        resolved = []
        for claim in sorted(said) if sorted_claims else said:
            pairs = said[claim]
            votes = Counter(f.value for _, f in pairs)
            most = max(votes.values())
            pick = min if oldest else max
            dated = {v: pick(f.as_of for _, f in pairs if f.value == v) for v in votes if votes[v] == most}
            kept = [v for v in dated if dated[v] == max(dated.values())]
            if len(kept) > 1:
                spoke = [s for s, f in pairs if not open_cites_the_tied or f.value in kept]
                resolved.append(Resolved(claim, None, tuple(spoke), "a tie"))
                continue
            cited = tuple(s for s, f in pairs if f.value == kept[0])
            resolved.append(Resolved(claim, kept[0], cited, "most"))
        return resolved

    return answer


@pytest.mark.parametrize(
    "mistake, line",
    [
        ({"oldest": True}, "✗ a tie in votes, one value also said earlier: the newest wins"),
        ({"open_cites_the_tied": True}, "✗ a tie that stays open cites every step that spoke, the outvoted"),
        ({"sorted_claims": True}, "✗ 40 generated cases (3-5 workers, 3 claims)"),
    ],
    ids=lambda x: next(iter(x)),
)
def test_reconcile_catches_the_oldest_date_an_open_claim_citing_too_few_and_sorted_claims(
    solution, mistake, line, capsys
):
    notebook_code.caught(capsys, "01.reconcile", majority_mistaken(solution, **mistake), line)


# Right answers written differently still pass the cases added above.


def reroute_by_slicing(plan, team, stand_in):
    """Right, written another way: the sentinel spotted by slicing, the stand-in looked up with try."""
    outputs = {}
    for step in plan.topological_order():
        context = {dep: outputs[dep] for dep in step.depends_on}
        answer = team[step.role](step, context)
        if answer[:6] == "FAILED":
            try:
                backup = team[stand_in[step.role]]
            except KeyError:
                raise RuntimeError(f"nobody stands in for step {step.id!r}") from None
            answer = backup(step, context)
            if answer[:6] == "FAILED":
                raise RuntimeError(f"the stand-in failed step {step.id!r} too")
        outputs[step.id] = answer
    return outputs


def hierarchy_from_ready_steps(task, manager, sub_planner, team, synthesize):
    """Right, written another way: each chunk run by taking its ready steps, its result the output
    computed last (the final step always runs last)."""
    calls = Counter(manager=1)
    results = []
    for chunk in manager(task):
        chunk_plan = sub_planner(chunk)
        calls["sub-planner"] += 1
        outputs = {}
        while len(outputs) < len(chunk_plan):
            step = next(s for s in chunk_plan.ready(outputs) if s.id not in outputs)
            outputs[step.id] = team[step.role](step, {d: outputs[d] for d in step.depends_on})
            calls["executor"] += 1
        results.append(list(outputs.values())[-1])
    calls["synthesizer"] += 1
    return synthesize(task, results), calls


def majority_by_sorting(findings):
    """Right, written another way: each claim's values ranked by (votes, newest date) with sorted()."""
    from agentlab.synthesis import Resolved

    claims = {}
    for step_id, found in findings.items():
        for f in found:
            claims.setdefault(f.claim, []).append((step_id, f))
    out = []
    for claim, pairs in claims.items():
        rank = {}
        for _, f in pairs:
            votes, newest = rank.get(f.value, (0, 0))
            rank[f.value] = (votes + 1, max(newest, f.as_of))
        ranked = sorted(rank.items(), key=lambda item: item[1], reverse=True)
        if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
            out.append(Resolved(claim, None, tuple(s for s, _ in pairs), "open"))
        else:
            value = ranked[0][0]
            out.append(Resolved(claim, value, tuple(s for s, f in pairs if f.value == value), "kept"))
    return out


@pytest.mark.parametrize(
    "exercise, right",
    [
        ("01.sentinel", reroute_by_slicing),
        ("01.hierarchy", hierarchy_from_ready_steps),
        ("01.reconcile", majority_by_sorting),
    ],
    ids=lambda x: getattr(x, "__name__", x),
)
def test_right_answers_written_differently_still_pass(exercise, right, capsys):
    check(exercise, right)
    assert "✗" not in capsys.readouterr().out


# --- the grader's hidden cases: mistakes this notebook's own cases let through (issue 34) --------------
# Each wrong answer is the solution with one change; its own cases pass it, a hidden case catches it.


def test_hidden_case_catches_results_sorted_instead_of_the_managers_order():
    import graded

    wrong = graded.changed(
        "01", "run_hierarchy", ("synthesize(task, results)", "synthesize(task, sorted(results))")
    )
    assert graded.hidden_failures("01.hierarchy", wrong) == [
        "chunks named out of alphabetical order: the synthesizer gets their results in the manager's order"
    ]
    assert graded.graded("01.hierarchy", wrong).status == "failed"
