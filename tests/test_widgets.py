"""The live plan editor, driven without a kernel: set field values, click buttons, read what it shows.

The default plan is the stub planner's report: s1 researcher (3 s), s2 coder (2 s),
s3 critic (1 s, after s1), s4 writer (2 s, after all three).
"""

import html
import re

import matplotlib.pyplot as plt
import pytest

from agentlab.agents import STUB_TEAM
from agentlab.plan import Plan, PlanError, Step
from agentlab.run import run_plan
from agentlab.schedule import makespan, step_durations, virtual_schedule
from agentlab.widgets import PlanEditor

PNG = b"\x89PNG"


def text(widget) -> str:
    """What an HTML widget shows, as plain text."""
    return html.unescape(re.sub(r"<[^>]+>", "", widget.value))


def row(editor: PlanEditor, step_id: str):
    return next(r for r in editor.rows if r.id.value == step_id)


@pytest.fixture
def editor():
    return PlanEditor(workers=2)


def test_a_new_editor_shows_the_plan_its_critical_path_makespan_and_success(editor):
    assert [s.id for s in editor.plan] == ["s1", "s2", "s3", "s4"]
    assert editor.error == ""
    assert len(editor.rows) == 4
    shown = text(editor.summary)
    assert "critical path s1 → s3 → s4: 6 s" in shown
    assert "makespan on 2 workers: 6 s (one worker: 8 s)" in shown
    assert f"predicted success {0.95**4:.1%}" in shown
    assert bytes(editor.dag.value).startswith(PNG)
    assert editor.last_run is None
    assert "Click Run" in text(editor.run_status)


def test_editing_an_instruction_changes_the_plan(editor):
    row(editor, "s2").instruction.value = "Write the loop in five lines."
    assert editor.plan["s2"].instruction == "Write the loop in five lines."


def test_a_longer_step_moves_the_critical_path_and_redraws_the_dag(editor):
    before = editor.dag.value
    row(editor, "s2").duration.value = 10
    assert editor.plan["s2"].duration == 10
    assert "critical path s2 → s4: 12 s" in text(editor.summary)
    assert "one worker: 16 s" in text(editor.summary)
    assert editor.dag.value != before


def test_a_riskier_step_lowers_the_predicted_success(editor):
    row(editor, "s1").success.value = 0.5
    assert f"predicted success {0.5 * 0.95**3:.1%}" in text(editor.summary)


def test_a_cycle_is_named_and_the_last_valid_plan_stays(editor):
    valid, summary, dag = editor.plan, editor.summary.value, editor.dag.value
    row(editor, "s1").depends_on.value = "s4"
    assert "cycle" in editor.error
    assert "s1" in editor.error and "s4" in editor.error
    assert editor.error in text(editor.message)
    assert "Traceback" not in editor.message.value
    assert editor.plan == valid
    assert editor.dag.value == dag  # the picture is still the last valid plan...
    assert "not a valid plan" in text(editor.summary).lower()  # ...and the figures say they are gone

    row(editor, "s1").depends_on.value = ""  # fixing it brings the editor back
    assert editor.error == ""
    assert "valid plan" in text(editor.message)
    assert editor.summary.value == summary


def test_a_missing_dependency_is_named_and_the_last_valid_plan_stays(editor):
    valid = editor.plan
    row(editor, "s3").depends_on.value = "s1, s9"
    assert editor.error == "step 's3' depends on unknown step 's9'"
    assert editor.error in text(editor.message)
    assert editor.plan == valid


def test_a_duplicate_id_is_named(editor):
    row(editor, "s2").id.value = "s1"
    assert editor.error == "duplicate step id 's1': every step needs its own id"


def test_adding_a_step_adds_a_row_and_a_parallel_branch(editor):
    editor.add_button.click()
    assert [r.id.value for r in editor.rows] == ["s1", "s2", "s3", "s4", "s5"]
    assert editor.plan["s5"].depends_on == ()
    role = editor.plan["s5"].role
    assert f"one worker: {8 + STUB_TEAM[role].seconds:g} s" in text(editor.summary)
    assert "makespan on 2 workers: 6 s" in text(editor.summary)  # the new branch runs beside the others

    row(editor, "s5").depends_on.value = "s4"  # now at the end of the chain, it lengthens the critical path
    assert f"critical path s1 → s3 → s4 → s5: {6 + STUB_TEAM[role].seconds:g} s" in text(editor.summary)


def test_removing_a_step_that_others_need_shows_who_needs_it(editor):
    valid = editor.plan
    row(editor, "s1").remove.click()
    assert [r.id.value for r in editor.rows] == ["s2", "s3", "s4"]
    assert editor.error == "step 's3' depends on unknown step 's1'"
    assert editor.plan == valid

    row(editor, "s3").depends_on.value = ""
    row(editor, "s4").depends_on.value = "s2, s3"
    assert editor.error == ""
    assert editor.plan.ids == ["s2", "s3", "s4"]


def test_removing_every_step_says_the_plan_is_empty(editor):
    for step_id in ["s1", "s2", "s3", "s4"]:
        editor.remove_step(step_id)
    assert "the plan is empty" in editor.error
    assert len(editor.plan) == 4
    with pytest.raises(KeyError, match="no step with id 's9'"):
        editor.remove_step("s9")


def test_the_makespan_follows_the_schedule_as_workers_change():
    plan = Plan(
        [Step(f"f{i}", "researcher", f"fact {i}", duration=float(i)) for i in range(1, 6)]
        + [Step("w", "writer", "join", depends_on=tuple(f"f{i}" for i in range(1, 6)), duration=1.0)]
    )
    editor = PlanEditor(plan, workers=1)
    durations = step_durations(plan, STUB_TEAM)
    spans = []
    for k in range(1, 7):
        editor.workers.value = k
        spans.append(makespan(virtual_schedule(plan, durations, k)))
        assert f"makespan on {k} worker{'s' if k > 1 else ''}: {spans[-1]:g} s" in text(editor.summary)
    assert spans[0] == sum(durations.values())  # one worker does everything in turn
    assert spans[-1] == plan.critical_path(durations)[1]  # enough workers: only the longest chain counts
    assert spans == sorted(spans, reverse=True) and spans[0] > spans[-1]


def test_run_draws_the_timeline_of_a_real_run_on_the_chosen_workers(editor):
    editor.run_button.click()
    run = editor.last_run
    assert run is not None and run.status == "done" and run.workers == 2
    assert run.outputs == run_plan(editor.plan).outputs  # the same outputs as a one-worker run
    assert run.elapsed == makespan(virtual_schedule(editor.plan, step_durations(editor.plan, STUB_TEAM), 2))
    assert bytes(editor.timeline.value).startswith(PNG)
    assert editor.timeline.layout.display != "none"
    assert run.summary() in text(editor.run_status)

    editor.workers.value = 1  # the timeline on screen no longer matches: it goes until the next Run
    assert editor.timeline.layout.display == "none"
    assert "Click Run" in text(editor.run_status)
    editor.run_button.click()
    assert editor.last_run.workers == 1
    assert editor.last_run.elapsed == 8
    assert editor.last_run.summary() in text(editor.run_status)


def test_an_invalid_plan_on_screen_says_so_and_run_runs_nothing(editor):
    row(editor, "s1").depends_on.value = "s4"  # a cycle
    editor.workers.value = 1  # a summary for 2 workers would now be wrong twice over
    shown = text(editor.summary)
    assert "makespan" not in shown and "2 workers" not in shown
    assert "not a valid plan" in shown.lower()
    editor.run_button.click()
    assert editor.last_run is None  # nothing ran: not the last valid plan either
    assert "Not run: the plan on screen is not valid" in text(editor.run_status)
    assert editor.run_button.disabled
    assert editor.run() is None

    row(editor, "s1").depends_on.value = ""  # fixed: Run works again, on 1 worker
    assert not editor.run_button.disabled
    editor.run_button.click()
    assert editor.last_run.workers == 1 and editor.last_run.status == "done"


def test_an_invalid_plan_hides_the_timeline_of_an_earlier_run(editor):
    editor.run_button.click()
    row(editor, "s3").depends_on.value = "nowhere"
    assert editor.timeline.layout.display == "none"
    assert "not valid" in text(editor.run_status)


def test_the_editor_leaks_no_figures(editor):
    before = plt.get_fignums()
    row(editor, "s2").duration.value = 4
    editor.run_button.click()
    assert plt.get_fignums() == before


def test_bad_arguments_are_refused_clearly():
    with pytest.raises(PlanError, match="unknown role 'poet'"):
        PlanEditor(Plan([Step("s1", "poet", "write a poem")]))
    with pytest.raises(ValueError, match="workers must be a whole number >= 1, got 0"):
        PlanEditor(workers=0)


def test_in_a_notebook_it_shows_as_a_widget_with_a_short_text_form(editor):
    bundle = editor._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/plain"] == "PlanEditor: 4 steps (run this cell to show the editor)"


def shows_what_it_acts_on(editor: PlanEditor) -> None:
    """The state shown and the state acted on are one: Run is enabled exactly when a click would
    run, the status says why not when it would not, and a timeline shows only the plan on screen."""
    blocked = editor._blocked()
    assert editor.run_button.disabled == bool(blocked)
    assert (blocked in editor.run_status.value) if blocked else "Not run" not in editor.run_status.value
    assert ("valid plan" in text(editor.message)) == (not editor.error)
    if editor.timeline.layout.display != "none":
        run = editor.last_run
        assert run.plan == editor.plan and run.workers == editor.workers.value and not blocked


def test_a_plan_broken_after_a_run_and_typed_back_runs_again(editor):
    """It showed "valid plan" beside "Not run: the plan on screen is not valid", Run disabled."""
    editor.run_button.click()
    before = editor.last_run
    row(editor, "s3").depends_on.value = "nowhere"
    shows_what_it_acts_on(editor)
    row(editor, "s3").depends_on.value = "s1"  # the old value, typed back
    shows_what_it_acts_on(editor)
    assert not editor.run_button.disabled and "Not run" not in text(editor.run_status)
    assert editor.timeline.layout.display != "none"  # the earlier run is of this very plan again
    editor.run_button.click()
    assert editor.last_run is not before and editor.last_run.status == "done"


def test_every_edit_leaves_the_status_and_the_button_in_agreement(editor):
    s3 = row(editor, "s3")
    edits = [
        lambda: editor.run_button.click(),
        lambda: setattr(s3.depends_on, "value", "s3"),  # a cycle
        lambda: setattr(editor.workers, "value", 3),
        lambda: setattr(s3.depends_on, "value", "s1"),
        lambda: editor.run_button.click(),
        lambda: setattr(editor.workers, "value", 2),
        lambda: setattr(editor.workers, "value", 3),
        lambda: setattr(s3.id, "value", "s1"),  # a duplicate id
        lambda: setattr(s3.id, "value", "s3"),
        lambda: editor.add_step(),
        lambda: editor.remove_step("s5"),
    ]
    for edit in edits:
        edit()
        shows_what_it_acts_on(editor)
