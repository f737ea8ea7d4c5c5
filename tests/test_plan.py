"""The plan model: what a valid plan is, what every kind of malformed plan says, JSON and order."""

import json
import math
import random
import re
import subprocess
import sys

import jsonschema
import networkx as nx
import pytest

from agentlab.dag import above
from agentlab.plan import (
    Plan,
    PlanError,
    Step,
    fill_in,
    in_order,
    plan_json,
    references,
    remaining,
    renamed,
    resolve,
)


def report_plan() -> Plan:
    return Plan(
        [
            Step("s1", "researcher", "find facts"),
            Step("s2", "coder", "write code"),
            Step("s3", "critic", "check facts", depends_on=("s1",)),
            Step("s4", "writer", "write it up", depends_on=("s1", "s2", "s3")),
        ]
    )


# --- every PlanError case names the problem and the step --------------------------


@pytest.mark.parametrize(
    "steps, message",
    [
        ([], "the plan is empty"),
        ([Step("a", "writer", "x"), Step("a", "coder", "y")], "duplicate step id 'a'"),
        ([Step("a", "writer", "x", depends_on=("ghost",))], "step 'a' depends on unknown step 'ghost'"),
        ([Step("a", "writer", "x", depends_on=("a",))], "step 'a' depends on itself"),
        (
            [Step("a", "writer", "x", depends_on=("b",)), Step("b", "writer", "y", depends_on=("a",))],
            "cycle",
        ),
        ([Step("", "writer", "x")], "step id must be a non-empty string"),
        ([Step(7, "writer", "x")], "step id must be a non-empty string, got 7"),
        ([Step("a", "", "x")], "step 'a': 'role' must be a non-empty string"),
        ([Step("a", "writer", None)], "step 'a': 'instruction' must be a non-empty string"),
        ([Step("a", "writer", "x", depends_on="b")], r"must be a list of step ids, like \['b'\]"),
        ([Step("a", "writer", "x", depends_on=(1,))], r"list of step ids \(strings\), got \(1,\)"),
        ([Step("a", "writer", "x", duration=-1)], "step 'a': 'duration' must be a number >= 0"),
        ([Step("a", "writer", "x", duration="fast")], "step 'a': 'duration' must be a number"),
        ([Step("a", "writer", "x", duration=True)], "step 'a': 'duration' must be a number >= 0, got True"),
        ([Step("a", "writer", "x", duration=float("nan"))], "step 'a': 'duration' must be .*, got nan"),
        ([Step("a", "writer", "x", duration=float("inf"))], "step 'a': 'duration' must be .*, got inf"),
        ([Step("a", "writer", "x", tool=3)], "step 'a': 'tool' must be a string"),
        ([Step("a", "writer", "x"), Step("b", "writer", "y", depends_on=("a", "a"))], "step 'b' lists"),
    ],
)
def test_malformed_plans_raise_plan_error_naming_the_problem(steps, message):
    with pytest.raises(PlanError, match=message):
        Plan(steps)


def test_cycle_message_names_every_step_on_the_cycle_in_order():
    steps = [
        Step("start", "writer", "x"),
        Step("a", "writer", "x", depends_on=("start", "c")),
        Step("b", "writer", "x", depends_on=("a",)),
        Step("c", "writer", "x", depends_on=("b",)),
    ]
    with pytest.raises(PlanError) as err:
        Plan(steps)
    message = str(err.value)
    cycle = message.split(": ", 1)[1].split(" -> ")
    assert cycle[0] == cycle[-1], message  # the cycle closes on itself
    assert sorted(cycle[:-1]) == ["a", "b", "c"], message  # 'start' is not on it
    for u, v in zip(cycle, cycle[1:], strict=False):  # each arrow is a real dependency edge
        assert u in {s.id: s for s in steps}[v].depends_on, message


def test_unknown_role_is_rejected_only_when_roles_are_given():
    steps = [Step("s1", "poet", "write a sonnet")]
    assert len(Plan(steps)) == 1
    with pytest.raises(
        PlanError, match=r"step 's1' has unknown role 'poet'; known roles: \['coder', 'writer'\]"
    ):
        Plan(steps, roles={"writer", "coder"})


def test_plan_error_is_a_value_error_so_generic_handlers_catch_it():
    assert issubclass(PlanError, ValueError)


def test_depends_on_given_as_a_list_is_accepted():
    plan = Plan([Step("a", "writer", "x"), Step("b", "writer", "y", depends_on=["a"])])
    assert plan["b"].depends_on == ("a",)


# --- JSON ---------------------------------------------------------------------------


def test_json_round_trip_keeps_every_field():
    plan = Plan(
        [
            Step("s1", "researcher", "look it up", tool="lookup", args={"entity": "Orla", "attr": "pop"}),
            Step("s2", "writer", "answer", depends_on=("s1",), duration=2.5),
        ]
    )
    again = Plan.from_json(plan.to_json())
    assert again == plan
    assert again.to_json() == plan.to_json()


def test_json_round_trip_keeps_the_args_of_a_step_without_a_tool():
    """The schema allows them, so the parser keeps them, and so must the JSON (a checkpoint, a replan)."""
    plan = Plan([Step("s1", "writer", "x", args={"tone": "dry"})])
    assert Plan.from_json(plan.to_json()) == plan
    assert "args" not in Plan([Step("s1", "writer", "x")]).to_dict()["steps"][0]


def test_to_json_leaves_out_empty_optional_fields():
    data = json.loads(Plan([Step("s1", "writer", "hi")]).to_json())
    assert data == {"steps": [{"id": "s1", "role": "writer", "instruction": "hi", "depends_on": []}]}


@pytest.mark.parametrize(
    "text, message",
    [
        ("{not json", "the plan is not valid JSON: .* at line 1, column 2"),
        ("", "the plan is not valid JSON"),
        ("[1, 2]", "a plan must be a JSON object with a 'steps' list, got list"),
        ("{}", "a plan needs a 'steps' list"),
        ('{"steps": {}}', "'steps' must be a list, got dict"),
        ('{"steps": [], "notes": 1}', r"unexpected: \['notes'\]"),
        ('{"steps": []}', "the plan is empty"),
        ('{"steps": ["s1"]}', "step #1 must be a JSON object, got str"),
        ('{"steps": [{"id": "s1", "role": "writer"}]}', "step 's1' is missing 'instruction'"),
        ('{"steps": [{"role": "writer", "instruction": "x"}]}', "step #1 is missing 'id'"),
        (
            '{"steps": [{"id": "s1", "role": "writer", "instruction": "x", "deps": []}]}',
            r"step 's1' has unknown field\(s\) \['deps'\]",
        ),
        (
            '{"steps": [{"id": "s1", "role": "writer", "instruction": "x", "depends_on": "s0"}]}',
            "step 's1': 'depends_on' must be a list of step ids, got str",
        ),
        (
            '{"steps": [{"id": "s1", "role": "writer", "instruction": "x", "depends_on": [], "args": [1]}]}',
            "step 's1': 'args' must be an object, got list",
        ),
    ],
)
def test_malformed_json_raises_plan_error_never_a_bare_key_or_decode_error(text, message):
    with pytest.raises(PlanError, match=message):
        Plan.from_json(text)


def test_from_json_rejects_non_text():
    with pytest.raises(PlanError, match="^the plan must be JSON text, got dict$"):
        Plan.from_json({"steps": []})


def test_json_schema_is_a_valid_schema_that_accepts_what_we_write():
    schema = Plan.json_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.validate(report_plan().to_dict(), schema)
    with_tool = Plan([Step("s1", "researcher", "x", tool="lookup", args={"a": 1}, duration=1.0)])
    jsonschema.validate(with_tool.to_dict(), schema)


@pytest.mark.parametrize(
    "data",
    [
        {"steps": []},
        {},
        {"steps": [{"id": "s1", "role": "writer"}]},
        {"steps": [{"id": "s1", "role": "writer", "instruction": "x", "depends_on": [], "extra": 1}]},
        {"steps": [{"id": "s1", "role": "writer", "instruction": "x", "depends_on": "s0"}]},
    ],
)
def test_schema_and_parser_agree_on_shape_errors(data):
    """What the schema rejects, the parser rejects too: a model held to one is held to the other."""
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, Plan.json_schema())
    with pytest.raises(PlanError):
        Plan.from_dict(data)


def test_schema_lists_the_allowed_roles_when_given():
    schema = Plan.json_schema(roles={"writer", "coder"})
    assert schema["properties"]["steps"]["items"]["properties"]["role"]["enum"] == ["coder", "writer"]
    bad = {"steps": [{"id": "s1", "role": "poet", "instruction": "x", "depends_on": []}]}
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


# --- order and graph ------------------------------------------------------------------


def test_topological_order_puts_every_step_after_its_dependencies():
    plan = Plan(
        [
            Step("write", "writer", "x", depends_on=("check", "code")),
            Step("check", "critic", "x", depends_on=("facts",)),
            Step("facts", "researcher", "x"),
            Step("code", "coder", "x"),
        ]
    )
    order = [s.id for s in plan.topological_order()]
    assert order == ["facts", "check", "code", "write"]  # ties keep the written order
    for step in plan:
        assert all(order.index(d) < order.index(step.id) for d in step.depends_on)


def test_ready_lists_the_steps_whose_dependencies_are_done():
    plan = report_plan()
    assert [s.id for s in plan.ready([])] == ["s1", "s2"]
    assert [s.id for s in plan.ready(["s1"])] == ["s2", "s3"]
    assert [s.id for s in plan.ready(["s1", "s2", "s3"])] == ["s4"]
    assert plan.ready(["s1", "s2", "s3", "s4"]) == []


def test_ready_rejects_unknown_done_ids():
    with pytest.raises(PlanError, match=r"unknown step\(s\): \['s9'\]"):
        report_plan().ready(["s9"])


def test_final_step_and_dependants():
    plan = report_plan()
    assert plan.final_step.id == "s4"
    assert [s.id for s in plan.dependants("s1")] == ["s3", "s4"]
    assert plan.dependants("s4") == []


def test_networkx_export_has_an_edge_from_each_dependency_to_its_dependant():
    g = report_plan().to_networkx()
    assert isinstance(g, nx.DiGraph)
    assert set(g.edges) == {("s1", "s3"), ("s1", "s4"), ("s2", "s4"), ("s3", "s4")}
    assert g.nodes["s3"]["role"] == "critic"
    assert nx.is_directed_acyclic_graph(g)


def test_lookup_by_id_and_a_clear_key_error():
    plan = report_plan()
    assert plan["s2"].role == "coder"
    with pytest.raises(KeyError, match="no step with id 'nope'"):
        plan["nope"]


def test_str_shows_each_step_and_what_it_waits_for():
    text = str(report_plan())
    assert text.splitlines()[0] == "Plan with 4 step(s):"
    assert "s3   critic     check facts  (after s1)" in text


def test_str_keeps_columns_aligned_for_long_ids_and_roles():
    plan = Plan([Step("s1", "writer", "DRAFT"), Step("r1_s2", "fact_checker", "VERIFY", depends_on=("s1",))])
    first, second = str(plan).splitlines()[1:]
    assert first.index("DRAFT") == second.index("VERIFY") == 2 + len("r1_s2 ") + len("fact_checker ")


def test_a_model_that_writes_nan_or_infinity_for_a_duration_gets_a_plan_error():
    """Python's json reads NaN and Infinity; a NaN duration would never end on the virtual clock."""
    for written in ("NaN", "Infinity", "-Infinity"):
        step = (
            '{"id": "s1", "role": "writer", "instruction": "x", "depends_on": [], "duration": '
            + written
            + "}"
        )
        with pytest.raises(PlanError, match=f"the plan holds {written}, which JSON does not allow"):
            Plan.from_json('{"steps": [' + step + "]}")
        with pytest.raises(PlanError, match="step 's1': 'duration' must be a number >= 0"):
            Plan.from_dict({"steps": [{**STEP, "duration": float(written)}]})


# --- the $id language -----------------------------------------------------------------------


def test_references_resolve_and_fill_in_walk_text_mappings_and_lists_alike():
    args = {"expression": "$s1 + $s2", "more": ["x $s3", {"deep": "$s1"}], "n": 3}
    assert references(args) == {"s1", "s2", "s3"}
    assert references("costs $5, not $s9") == {"s9"}  # an id starts with a letter
    context = {"s1": "2", "s2": "", "s3": "three"}
    assert resolve(args, context) == {"expression": "2 + ", "more": ["x three", {"deep": "2"}], "n": 3}
    assert fill_in("$s1 and $s4", context) == "2 and $s4"  # lenient: an unknown reference stays
    strict = r"step 's5' refers to \$s4, which is not one of its inputs \(s1, s2, s3\)"
    with pytest.raises(ValueError, match=strict):  # strict: an unknown reference is an error
        resolve("$s1 and $s4", context, "s5")
    with pytest.raises(ValueError, match=r"step '\?' refers to \$s1, which is not one of its inputs \(none"):
        resolve("$s1", {})


def test_renamed_prefixes_every_id_and_every_reference_and_remaining_drops_done_steps():
    plan = Plan(
        [
            Step("s1", "researcher", "look up $x"),  # $x names no step of this plan: it stays
            Step("s2", "analyst", "add $s1", ("s1",), tool="calculate", args={"expression": ["$s1 + 1"]}),
        ]
    )
    first, second = renamed(plan, "r1_")
    assert (first.id, first.instruction) == ("r1_s1", "look up $x")
    assert (second.instruction, second.depends_on, second.args) == (
        "add $r1_s1",
        ("r1_s1",),
        {"expression": ["$r1_s1 + 1"]},
    )
    left = remaining(plan, {"s1"})
    assert left.ids == ["s2"] and left["s2"].depends_on == () and left["s2"].instruction == "add $s1"
    assert remaining(plan, {"s1", "s2"}) is None


# --- nothing a caller or a model sends escapes as anything but a PlanError ---------------------

STEP = {"id": "s1", "role": "writer", "instruction": "x", "depends_on": []}


def plan_text(**fields) -> str:
    return json.dumps({"steps": [{**STEP, **fields}]})


@pytest.mark.parametrize(
    "steps, message",
    [
        ([STEP], r"step #1 must be a Step, got dict: for dicts use Plan.from_dict\(\{'steps': \[...\]\}\)"),
        ([Step("s1", "writer", "x"), "s2"], "step #2 must be a Step, got str"),
        ("s1 s2", "a plan is built from a list of Steps, got str"),
        (None, "a plan is built from a list of Steps, got NoneType"),
        ({"steps": [STEP]}, r"got dict: for a plan's JSON form use Plan.from_dict"),
    ],
)
def test_a_plan_built_from_something_other_than_steps_says_what_it_got(steps, message):
    with pytest.raises(PlanError, match=message):
        Plan(steps)


def test_roles_given_as_one_string_are_refused_not_split_into_letters():
    with pytest.raises(
        PlanError, match=r"roles must be a collection of names, not one string: roles=\['writer'\]"
    ):
        Plan([Step("s1", "writer", "x")], roles="writer")
    with pytest.raises(PlanError, match="roles must be names .strings., got 1"):
        Plan([Step("s1", "writer", "x")], roles=["writer", 1])
    with pytest.raises(PlanError, match="roles must be a collection of names, got 3"):
        Plan.from_dict({"steps": [STEP]}, roles=3)
    with pytest.raises(PlanError, match="not one string"):
        Plan.json_schema(roles="writer")
    assert Plan([Step("s1", "writer", "x")], roles={"writer": object()}).roles == {"writer"}  # a team


@pytest.mark.parametrize(
    "steps, message",
    [
        (
            [Step("s1", "writer", "x"), Step("", "writer", "y")],
            r"^step #2: a step id must be a non-empty string, got ''$",
        ),
        (
            [Step("s1", "writer", "x"), Step("  ", "writer", "y")],
            r"^step #2: a step id must be .*, got '  '$",
        ),
        ([Step("s1", "writer", "x"), Step("s2", "w", "y"), Step(None, "w", "z")], r"^step #3: .*, got None$"),
    ],
)
def test_a_bad_or_blank_id_is_named_by_the_steps_position(steps, message):
    with pytest.raises(PlanError, match=message):
        Plan(steps)
    with pytest.raises(PlanError, match=message):
        Plan.from_dict({"steps": [{**s.to_dict(), "id": s.id} for s in steps]})


@pytest.mark.parametrize(
    "text, message",
    [
        ("[" * 100_000 + "]" * 100_000, "the plan is nested more than 20 levels deep"),
        (
            plan_text(args={"a": json.loads("[" * 30 + "]" * 30)}),
            "the plan is nested more than 20 levels deep",
        ),
        (
            plan_text(duration=0).replace('"duration": 0', '"duration": ' + "9" * 5000),
            "an integer of 5000 digits",
        ),
        (
            plan_text(duration=0).replace('"duration": 0', '"duration": 1' + "0" * 400),
            "an integer of 401 digits",
        ),
        (plan_text(duration=0).replace('"duration": 0', '"duration": 1e400'), r"holds 1e400: too large"),
        (plan_text(args={"n": 0}).replace('"n": 0', '"n": NaN'), "holds NaN, which JSON does not allow"),
        (
            plan_text(args={"n": 0}).replace('"n": 0', '"n": -Infinity'),
            "holds -Infinity, which JSON does not",
        ),
        (plan_text(instruction="\ud800 x"), r"holds text with a lone surrogate \('\\ud800'\)"),
        (b'{"steps": [{"id": "s\xff1"}]}', r"the plan is not UTF-8 text: byte 20 \(0xff\) is invalid"),
        (b"\xff\xfe{", r"the plan is not UTF-8 text: byte 0 \(0xff\)"),
    ],
    ids=[
        "deep",
        "deep args",
        "5000 digits",
        "401 digits",
        "1e400",
        "NaN",
        "-Infinity",
        "surrogate",
        "bytes",
        "utf-16",
    ],
)
def test_json_that_python_chokes_on_is_a_plan_error(text, message):
    """Before: RecursionError, ValueError, UnicodeDecodeError, or a plan accepted that broke later
    (a 401-digit duration raised OverflowError inside the run; NaN in args went out as invalid JSON)."""
    with pytest.raises(PlanError, match=message):
        Plan.from_json(text)
    with pytest.raises(PlanError, match=message):
        plan_json(text)


def test_keys_of_any_type_give_a_plan_error_not_a_type_error():
    with pytest.raises(PlanError, match=r"unexpected: \['notes', 1\]"):
        Plan.from_dict({"steps": [STEP], 1: "x", "notes": 2})
    with pytest.raises(PlanError, match=r"step 's1' has unknown field\(s\) \[2.5, None\]"):
        Plan.from_dict({"steps": [{**STEP, None: 1, 2.5: 2}]})
    with pytest.raises(PlanError, match="step 's1': 'args' has a name that is not a string: 1"):
        Plan([Step("s1", "writer", "x", tool="lookup", args={1: "x"})])


@pytest.mark.parametrize(
    "value, message",
    [
        (math.nan, "holds nan, which JSON does not allow: numbers must be finite"),
        ([1, -math.inf], "holds -inf, which JSON does not allow"),
        ({"n": 10**400}, "holds an integer of more than 308 digits"),
    ],
)
def test_args_that_could_not_be_written_as_json_are_refused(value, message):
    """Before, they were accepted, and `to_json` wrote NaN: JSON that `from_json` (or a resume) refused."""
    with pytest.raises(PlanError, match=f"step 's1': 'args' {message}"):
        Plan.from_dict({"steps": [{**STEP, "tool": "calculate", "args": {"x": value}}]})


def test_a_step_whose_args_hold_themselves_is_refused_not_a_recursion_error():
    loop: dict = {}
    loop["again"] = loop
    with pytest.raises(PlanError, match="step 's1': 'args' is nested more than 20 levels deep"):
        Plan([Step("s1", "writer", "x", tool="lookup", args={"x": loop})])


def test_a_long_bad_value_is_cut_short_in_the_message():
    """A PlanError goes back to the model in a re-ask: it must not carry a megabyte of reply."""
    huge = "x" * 1_000_000
    for make in (
        lambda: Plan.from_dict({"steps": [{**STEP, "role": huge}]}, roles=["writer"]),
        lambda: Plan([Step("s1", "writer", " " * 1_000_000)]),
        lambda: Plan([Step("s1", "writer", "x", depends_on=[1] * 100_000)]),
        lambda: Plan.from_dict({"steps": [{**STEP, "id": huge, "extra": 1}]}),
        lambda: Plan.from_dict({"steps": [{**STEP, huge: 1}]}),
        lambda: Plan([Step("s1", "writer", "x", duration=huge)]),
        lambda: Plan([Step(huge, "writer", "x", depends_on=[huge])]),
    ):
        with pytest.raises(PlanError) as error:
            make()
        assert len(str(error.value)) < 400, str(error.value)[:400]


# --- the JSON form follows the schema: an optional field is left out, never null ----------------


@pytest.mark.parametrize(
    "step, message",
    [
        (
            {k: v for k, v in STEP.items() if k != "depends_on"},
            r"step 's1' is missing 'depends_on' \(\[\] for",
        ),
        ({**STEP, "tool": None}, "step 's1': 'tool' is null; leave it out"),
        ({**STEP, "args": None}, "step 's1': 'args' is null; leave it out"),
        ({**STEP, "duration": None}, "step 's1': 'duration' is null; leave it out"),
    ],
)
def test_a_missing_depends_on_or_a_null_field_is_refused_by_the_schema_and_the_parser_alike(step, message):
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"steps": [step]}, Plan.json_schema())
    with pytest.raises(PlanError, match=message):
        Plan.from_dict({"steps": [step]})


def test_what_the_schema_accepts_with_optional_fields_the_parser_accepts():
    full = {**STEP, "tool": "lookup", "args": {"entity": "Varra"}, "duration": 2}
    for step in (STEP, full, {**STEP, "tool": "lookup"}, {**STEP, "args": {}}):
        jsonschema.validate({"steps": [step]}, Plan.json_schema())
        read = Plan.from_dict({"steps": [step]})["s1"]
        assert (read.tool, dict(read.args), read.duration) == (
            step.get("tool"),
            step.get("args", {}),
            step.get("duration"),
        )


# --- plan_json: the one reader of a plan's JSON in a model's reply --------------------------------

PLAN_TEXT = json.dumps({"steps": [STEP]}, indent=2)


@pytest.mark.parametrize(
    "reply",
    [
        PLAN_TEXT,
        f"  \n{PLAN_TEXT}\n\n",
        f"```json\n{PLAN_TEXT}\n```",
        f"```JSON\n{PLAN_TEXT}```",
        f"```\n{PLAN_TEXT}\n```",
        f"Here is the plan:\n\n```json\n{PLAN_TEXT}\n```\nIt has one step.",
        PLAN_TEXT.encode(),
    ],
    ids=[
        "whole",
        "spaces",
        "json fence",
        "fence closed on the last line",
        "bare fence",
        "fence in prose",
        "bytes",
    ],
)
def test_plan_json_reads_the_whole_reply_or_its_one_fenced_block(reply):
    assert plan_json(reply) == {"steps": [STEP]}
    assert Plan.from_dict(plan_json(reply)) == Plan([Step("s1", "writer", "x")])


@pytest.mark.parametrize(
    "reply, message",
    [
        (
            f"Here is the plan:\n{PLAN_TEXT}\nThanks.",
            "the plan is not valid JSON: Expecting value at line 1, column 1",
        ),
        (f"```json\n{PLAN_TEXT}\n```\n```json\n{PLAN_TEXT}\n```", "the reply holds 2 fenced blocks"),
        (f"```json\n{PLAN_TEXT}", "the reply opens a ``` fence that never closes: send one plan, whole"),
        (
            "```json\n{'steps': []}\n```",
            "the plan in the reply's fenced block is not valid JSON: Expecting property",
        ),
        ('```json\n{"n": NaN}\n```', "holds NaN"),
        ("", "the plan is not valid JSON: Expecting value at line 1, column 1"),
        ({"steps": []}, "the plan must be JSON text, got dict"),
    ],
)
def test_plan_json_refuses_anything_else_with_a_plan_error(reply, message):
    with pytest.raises(PlanError, match=re.escape(message)):
        plan_json(reply)


def test_from_json_reads_the_plans_own_json_form_only():
    """`Plan.from_json` is the inverse of `to_json`; a model's reply goes through `plan_json`."""
    with pytest.raises(PlanError, match="the plan is not valid JSON"):
        Plan.from_json(f"```json\n{PLAN_TEXT}\n```")


def test_kahns_order_is_networkx_order_with_ties_to_the_step_written_first():
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(1, 12)
        ids = [f"s{i}" for i in rng.sample(range(50), n)]
        steps = [
            Step(i, "worker", "do", depends_on=tuple(rng.sample(ids[:k], rng.randint(0, min(3, k)))))
            for k, i in enumerate(ids)
        ]
        rng.shuffle(steps)  # written order is not dependency order
        position = {s.id: i for i, s in enumerate(steps)}
        graph = nx.DiGraph()
        graph.add_nodes_from(s.id for s in steps)
        graph.add_edges_from((d, s.id) for s in steps for d in s.depends_on)
        assert in_order(steps) == list(nx.lexicographical_topological_sort(graph, position.get))
        plan = Plan(steps)
        for s in steps:
            below = nx.descendants(graph, s.id)
            assert [d.id for d in plan.dependants(s.id)] == [i for i in plan.ids if i in below]
            assert above(steps, s.id) == nx.ancestors(graph, s.id)


def test_a_cycle_leaves_its_steps_out_of_kahns_order():
    a, b = Step("a", "w", "x", depends_on=("c",)), Step("b", "w", "x")
    assert in_order([a, b, Step("c", "w", "x", depends_on=("a",))]) == ["b"]


def test_importing_the_kit_leaves_networkx_for_when_a_graph_is_drawn():
    # networkx costs 0.4 s in every kernel, sandbox and Dask worker that imports agentlab
    # (notebook 06's experiments and explorer draw no graph: they do without it too)
    code = "import sys, agentlab.plan, agentlab.run, agentlab.widgets; print('networkx' in sys.modules)"
    shown = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert shown.stdout.strip() == "False"


def test_the_graph_algorithms_know_nothing_of_the_plan_type_so_plan_and_dag_form_no_import_circle():
    import ast
    from dataclasses import dataclass

    import agentlab.dag as dag

    tree = ast.parse(open(dag.__file__).read())
    imported = [node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)]
    imported += [a.name for node in ast.walk(tree) if isinstance(node, ast.Import) for a in node.names]
    assert not [m for m in imported if m.startswith("agentlab")], imported  # not even for type hints

    @dataclass
    class Node:  # any object with an id and its dependencies is a step to the graph algorithms
        id: str
        depends_on: tuple = ()

    nodes = [Node("a"), Node("b", ("a",)), Node("c", ("b",))]
    assert dag.in_order(nodes) == ["a", "b", "c"] and dag.below(nodes, "a") == {"b", "c"}
    assert dag.above(nodes, "c") == {"a", "b"} and dag.cycle(nodes) == []
