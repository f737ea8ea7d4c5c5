"""A plan with several ends: the kit delivers one of them and says so, never silently.

Code 32.3.1 (the textbook, section 32.3) delivers whichever subtask is listed last. The kit's
`Plan.final_step` is the last step in topological order, which is as arbitrary when two steps end
the plan: the other's output reaches nobody. The kit keeps that rule (plans a model writes may
have loose ends) and names it: `Plan.ends` lists the steps no step waits for, and a run's text and
the plan editor's verdict say which ends are not delivered.
"""

import pytest

from agentlab import STUB_TEAM, Plan, Step, orchestrate, run_plan
from agentlab.dag import sinks
from agentlab.trace import loose_ends


def two_ends() -> Plan:
    """A report whose critic nobody reads: s3 and s4 both end the plan."""
    return Plan(
        [
            Step("s1", "researcher", "find facts"),
            Step("s2", "coder", "write code"),
            Step("s3", "critic", "check facts", depends_on=("s1",)),
            Step("s4", "writer", "write it up", depends_on=("s1", "s2")),
        ]
    )


def test_ends_are_the_steps_nothing_waits_for_in_topological_order():
    plan = two_ends()
    assert [s.id for s in plan.ends] == ["s3", "s4"]
    assert plan.final_step is plan.ends[-1]
    assert sinks(plan.steps) == ["s3", "s4"]


def test_a_plan_with_one_end_has_no_loose_end():
    plan = orchestrate("Write a short report.").plan
    assert [s.id for s in plan.ends] == ["s4"] and loose_ends(plan) == ""


def test_written_order_does_not_decide_the_ends_order_does():
    backwards = Plan(list(reversed(two_ends().steps)))
    assert [s.id for s in backwards.ends] == ["s4", "s3"]  # s4 is written first, so it is ready first
    assert backwards.final_step.id == "s3"


@pytest.mark.parametrize(
    ("steps", "said"),
    [
        (two_ends().steps, "steps s3 and s4 both end the plan"),
        ([Step(i, "researcher", "look") for i in "abc"], "steps a, b and c all end"),
    ],
)
def test_the_loose_end_sentence_names_every_end_and_the_one_delivered(steps, said):
    plan = Plan(steps)
    note = loose_ends(plan)
    last = plan.final_step.id
    assert said in note and f"only {last}'s output is delivered" in note
    assert "\n" not in note


def test_a_run_of_a_plan_with_two_ends_names_them_in_its_text_and_html():
    run = run_plan(two_ends(), STUB_TEAM)
    assert run.deliverable == run.outputs["s4"]
    text, html = str(run), run._repr_html_()
    assert text.endswith(loose_ends(run.plan)) and "s3 and s4 both end the plan" in text
    assert "s3 and s4 both end the plan" in html


def test_a_run_with_one_end_is_shown_as_before():
    run = orchestrate("Write a short report.")
    assert str(run).endswith(f"Deliverable: {run.deliverable}")
    assert "end the plan" not in run._repr_html_()


def test_the_plan_editor_names_a_loose_end_and_drops_the_note_once_it_is_joined():
    import html
    import re

    from agentlab.widgets import PlanEditor

    def shown(widget) -> str:
        return html.unescape(re.sub(r"<[^>]+>", "", widget.value))

    editor = PlanEditor(workers=2)
    assert shown(editor.message).strip() == "✓ valid plan"
    writer = next(r for r in editor.rows if r.id.value == "s4")
    writer.depends_on.value = "s1, s2"  # the writer no longer reads the critic: s3 is a loose end
    assert editor.error == "" and loose_ends(editor.plan) in shown(editor.message)
    assert "s3 and s4 both end the plan" in shown(editor.message)
    writer.depends_on.value = "s1, s2, s3"
    assert shown(editor.message).strip() == "✓ valid plan"
