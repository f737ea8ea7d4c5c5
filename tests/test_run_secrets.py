"""No key in what a run shows or saves: a server that echoes the credential in an error message
puts it into the failure, and from there it must not reach the reason, the printed run, the HTML
view, a retry's note or the checkpoint file."""

import pytest

from agentlab.agents import Agent, Work
from agentlab.llm.base import REDACTED, ModelError
from agentlab.plan import Plan, PlanError, Step
from agentlab.recovery import Replan, Retry
from agentlab.run import orchestrate, run_plan

KEY = "sk-ant-api03-" + "Zq8_xW2-" * 12 + "AA"  # shaped like a real key, and not one


def shown(run, path=None):
    """Everything a learner sees or keeps of a run."""
    texts = [run.reason, run.summary(), str(run), run._repr_html_(), repr(run.failures)]
    return texts + ([path.read_text()] if path is not None else [])


@pytest.mark.parametrize("kind", [RuntimeError, ModelError])  # a tool's or a library's error, or the kit's
def test_a_step_failing_with_a_key_in_its_error_leaves_no_key_in_the_run_or_its_checkpoint(kind, tmp_path):
    def echoes(step, context):
        raise kind(f"the server at http://127.0.0.1:8080 answered 401: invalid x-api-key {KEY}")

    path = tmp_path / "run.json"
    run = run_plan(Plan([Step("s1", "a", "go")]), {"a": Agent("a", echoes)}, "t", checkpoint=path)
    assert run.status == "failed"
    assert run.reason == (
        f"step 's1' (a) failed: {kind.__name__}: the server at http://127.0.0.1:8080 answered 401: "
        f"invalid x-api-key {REDACTED}"
    )
    for text in shown(run, path):
        assert "sk-ant-" not in text and KEY[20:40] not in text


def test_a_retry_does_not_hand_the_key_to_the_model_in_its_note():
    seen = []

    def flaky(step, context):
        seen.append(step.instruction)
        if len(seen) == 1:
            raise RuntimeError(f"proxy said: bad credentials {KEY}")
        return "fine"

    run = run_plan(Plan([Step("s1", "a", "go")]), {"a": Agent("a", flaky)}, "t", recovery=[Retry(1)])
    assert run.status == "done" and len(seen) == 2
    assert REDACTED in seen[1] and "sk-ant-" not in seen[1]


@pytest.mark.parametrize("where", ["planning", "replanning", "output"])
def test_a_key_from_a_planner_or_in_an_output_is_not_shown_or_saved(where, tmp_path):
    path = tmp_path / "run.json"

    class Planner:
        def __call__(self, task):
            if where == "planning":  # e.g. a reply that quoted the key did not parse
                raise PlanError(f"the reply is not a plan: {KEY}")
            return Plan([Step("s1", "a", "go")])

        def replan(self, task, plan, outputs, failure):
            raise PlanError(f"the reply is not a plan: {KEY}")

    def act(step, context):
        if where == "replanning":
            raise RuntimeError("the step failed")
        return Work(f"here is what the server sent: {KEY}")

    team = {"a": Agent("a", act)}
    options = {"recovery": [Replan()]} if where == "replanning" else {}
    run = orchestrate("t", Planner(), team, checkpoint=path, **options)
    assert run.status == ("done" if where == "output" else "failed")
    for text in shown(run, path if path.exists() else None):
        assert "sk-ant-" not in text and KEY[20:40] not in text
