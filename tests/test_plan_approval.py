"""Approving the plan itself (notebook 03): a planner's plan is shown in the live editor before
anything runs; the learner edits it or approves it as it is; Run runs exactly what was approved.
Driven without a kernel, as a learner's edits and clicks would drive it."""

import html
import re

import pytest

from agentlab import world
from agentlab.agents import world_team
from agentlab.llm.simulated import SimulatedLLM
from agentlab.planners import LLMPlanner
from agentlab.widgets import PlanEditor


def text(widget) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", widget.value))


@pytest.fixture
def proposed():
    """The simulated planner's plan for a fan-out task, and its team."""
    llm = SimulatedLLM(seed=0)
    team = world_team(llm)
    task = next(t for t in world.make_tasks(30, seed=0) if t.family == "fanout")
    return LLMPlanner(llm, team)(task.question), team


def test_nothing_runs_before_the_plan_is_approved(proposed):
    plan, team = proposed
    editor = PlanEditor(plan, team, workers=2, approval=True)
    assert editor.approved is None
    assert editor.run_button.disabled
    assert "nobody has approved it yet" in text(editor.run_status)
    editor.run_button.click()
    assert editor.last_run is None


def test_an_approved_plan_runs_exactly_as_shown_tool_steps_and_all(proposed):
    plan, team = proposed
    assert any(step.tool for step in plan)  # the LLM's direct tool calls survive the editor
    editor = PlanEditor(plan, team, workers=2, approval=True)
    assert [(s.id, s.role, s.instruction, s.depends_on, s.tool, dict(s.args)) for s in editor.plan] == [
        (s.id, s.role, s.instruction, s.depends_on, s.tool, dict(s.args)) for s in plan
    ]
    editor.approve_button.click()
    assert editor.approved == editor.plan
    assert "Approved" in text(editor.run_status) and not editor.run_button.disabled
    editor.run_button.click()
    assert editor.last_run is not None and editor.last_run.status == "done"
    assert editor.last_run.plan == editor.approved


def test_an_edit_withdraws_the_approval_until_the_edited_plan_is_approved(proposed):
    plan, team = proposed
    editor = PlanEditor(plan, team, workers=2, approval=True)
    editor.approve_button.click()
    last = editor.rows[-1]
    last.instruction.value = "Give the total alone, as a number."
    assert editor.approved != editor.plan
    assert "edited after approval" in text(editor.run_status)
    editor.run_button.click()
    assert editor.last_run is None  # neither the old approval nor the unapproved edit runs

    editor.approve_button.click()
    editor.run_button.click()
    assert editor.last_run.plan == editor.approved
    assert editor.last_run.plan[last.id.value].instruction == "Give the total alone, as a number."


def test_an_invalid_plan_cannot_be_approved(proposed):
    plan, team = proposed
    editor = PlanEditor(plan, team, workers=2, approval=True)
    editor.rows[0].depends_on.value = editor.rows[-1].id.value  # a cycle
    editor.approve_button.click()
    assert editor.approved is None
    editor.run_button.click()
    assert editor.last_run is None


def test_typing_the_approved_text_back_does_not_approve_it_again_nor_do_the_workers(proposed):
    """An edit withdraws the approval; only a click on Approve gives it back (it used to come back
    when the workers changed, and "edited after approval" stayed when the text was typed back)."""
    plan, team = proposed
    editor = PlanEditor(plan, team, workers=2, approval=True)
    editor.approve_button.click()
    last = editor.rows[-1]
    approved_text = last.instruction.value
    last.instruction.value = "Give the total alone, as a number."
    last.instruction.value = approved_text
    assert editor.approved is None and editor.run_button.disabled
    assert "edited after approval" in text(editor.run_status)
    editor.workers.value = 3
    assert editor.approved is None and editor.run_button.disabled
    assert "edited after approval" in text(editor.run_status)
    editor.approve_button.click()
    assert editor.approved == editor.plan and not editor.run_button.disabled


def test_a_plan_can_be_rejected_with_a_reason_kept_in_the_record(proposed):
    plan, team = proposed
    editor = PlanEditor(plan, team, workers=2, approval=True)
    editor.reject_button.click()  # no reason: refused, and it says so
    assert "say why" in text(editor.run_status) and not editor.decisions
    editor.reason.value = "it looks up one island twice"
    editor.reject_button.click()
    assert editor.approved is None and editor.run_button.disabled
    assert "Rejected: it looks up one island twice" in text(editor.run_status)
    decision = editor.decisions[-1]
    assert (decision.action, decision.plan, decision.reason) == ("rejected", editor.plan,
                                                                 "it looks up one island twice")
    editor.run_button.click()
    assert editor.last_run is None
    editor.approve_button.click()  # a person may change their mind: the record keeps both
    editor.run_button.click()
    assert [d.action for d in editor.decisions] == ["rejected", "approved"]
    assert editor.last_run.plan == editor.decisions[-1].plan
    (approved,) = editor.last_run.trace.of_kind("approved")  # the run's own record: its first event
    assert editor.last_run.trace.events[0] == approved
    assert approved.detail == "rejected: it looks up one island twice; approved"


def test_approve_on_an_invalid_plan_says_why_it_is_refused(proposed):
    plan, team = proposed
    editor = PlanEditor(plan, team, workers=2, approval=True)
    editor.approve_button.click()
    editor.rows[0].depends_on.value = editor.rows[-1].id.value  # a cycle
    editor.approve_button.click()
    assert editor.approved is None
    said = text(editor.run_status)
    assert "Not approved: the plan on screen is not valid" in said and editor.error in said
    assert [d.action for d in editor.decisions] == ["approved", "refused"]


def test_after_run_all_the_lessons_editor_still_waits_for_the_learner():
    """Notebook 03's text says Run does nothing until Approve: no later cell approves or runs the
    editor it shows."""
    from pathlib import Path

    import nbformat

    nb = nbformat.read(Path(__file__).resolve().parents[1] / "notebooks" / "03_llm_planner.ipynb", 4)
    code = [c.source for c in nb.cells if c.cell_type == "code"]
    shown = next(i for i, source in enumerate(code) if source.rstrip().endswith("\nreview"))
    later = "\n".join(code[shown + 1:])
    assert "review.approve(" not in later and "review.run(" not in later and "review.reject(" not in later
