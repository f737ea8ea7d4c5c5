"""The task world: its data, its tools (lookup, search, the safe calculator), the question
grammar, the task generators and the answer checker."""

import ast
import random
from pathlib import Path

import pytest

from agentlab import world
from agentlab.world import (
    ENTITIES,
    KINDS,
    QUANTITIES,
    RELATIONS,
    AttributeOf,
    Extreme,
    Lookup,
    Name,
    QuestionError,
    ToolError,
    Total,
    calculate,
    check_answer,
    gold_answer,
    lookup,
    parse_question,
    render,
    search,
)

# --- the data ------------------------------------------------------------------------------


def test_a_few_dozen_entities_of_six_kinds():
    assert 30 <= len(ENTITIES) <= 60
    assert {e.kind for e in ENTITIES.values()} == set(KINDS)


def test_every_relation_names_an_entity_of_the_right_kind_and_quantities_are_whole_numbers():
    for entity in ENTITIES.values():
        assert tuple(entity.attributes) == KINDS[entity.kind]
        for label, value in entity.attributes.items():
            if label in RELATIONS:
                assert ENTITIES[value].kind == RELATIONS[label], (entity.name, label)
            else:
                assert label in QUANTITIES and isinstance(value, int), (entity.name, label)


def test_quantities_differ_within_a_kind_so_a_comparison_has_one_winner():
    for kind, labels in KINDS.items():
        members = [e for e in ENTITIES.values() if e.kind == kind]
        for label in labels:
            if label in QUANTITIES:
                values = [e.attributes[label] for e in members]
                assert len(set(values)) == len(values), (kind, label)


def test_names_never_contain_the_words_the_grammar_splits_on():
    for name in ENTITIES:
        assert not any(word in f" {name} " for word in (" of ", " and ", " or ", ",", "(", " the "))


# --- lookup and search ----------------------------------------------------------------------


def test_lookup_reads_one_fact_as_text_forgiving_case_and_a_leading_the():
    assert lookup("Varra", "population") == "2140"
    assert lookup("the silver heron", "Captain") == "Cassian Reed"
    assert lookup("Tamsk", "main_export") == "Glasskelp"


def test_lookup_of_an_unknown_entity_suggests_the_closest_name():
    with pytest.raises(ToolError, match="no entity named 'Varr' in the Skerrow Isles; did you mean 'Varra'"):
        lookup("Varr", "population")
    with pytest.raises(ToolError, match="use search to find the right name"):
        lookup("Atlantis", "population")


def test_lookup_of_an_unknown_attribute_suggests_one_and_lists_them_all():
    with pytest.raises(ToolError) as error:
        lookup("Varra", "populaton")
    message = str(error.value)
    assert "Varra (an island) has no attribute 'populaton'; did you mean 'population'?" in message
    assert "its attributes: population, area, founding year, governor, capital, main export" in message


def test_search_finds_every_record_that_mentions_all_the_keywords():
    lines = search("Salt Guild").splitlines()
    named = {line.split(" (")[0] for line in lines}
    assert {"Salt Guild", "Odile Crane", "Maren Holt", "Anselm Dray"} <= named
    assert search("Salt Guild Saltmark").splitlines() == [world.describe(ENTITIES["Salt Guild"])]
    assert search("unicorn") == "no records mention 'unicorn'"
    with pytest.raises(ToolError, match="at least one keyword"):
        search("the of")


# --- the safe calculator ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "expression, result",
    [
        ("2140 + 3875", "6015"),
        ("7 / 2", "3.5"),
        ("10 / 4 * 2", "5"),
        ("-(3 - 5) ** 2", "-4"),
        ("17 // 5 + 17 % 5", "5"),
        ("max(3, 9, 4) - min(3, 9, 4)", "6"),
        ("round(2 / 3, 2) + abs(-1)", "1.67"),
        ("1 / 3", "0.3333"),
    ],
)
def test_calculate_does_arithmetic(expression, result):
    assert calculate(expression) == result


@pytest.mark.parametrize(
    "expression, problem",
    [
        ("__import__('os')", "calling '__import__' (only abs, max, min and round may be called)"),
        ("__import__('os').system('ls')", "attribute access ('.system') is not allowed"),
        ("().__class__", "attribute access ('.__class__') is not allowed"),
        ("(1).__class__.__bases__", "attribute access ('.__bases__') is not allowed"),
        ("'a'.join('b')", "attribute access ('.join') is not allowed"),
        ("9 ** 9 ** 9", "the exponent 387420489 is too large (limit 64)"),
        ("10 ** 100", "the exponent 100 is too large (limit 64)"),
        ("2 ** 63 * 2 ** 63", "a number in the calculation is too large"),
        ("x + 1", "the name 'x' is not allowed"),
        ("'ab' * 3", "only numbers are allowed, not 'ab'"),
        ("True + 1", "only numbers are allowed, not True"),
        ("[1, 2]", "List syntax is not allowed"),
        ("2,140 + 1", "write numbers without thousands separators"),
        ("lambda: 1", "Lambda syntax is not allowed"),
        ("1 < 2", "Compare syntax is not allowed"),
        ("1 / 0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("max(3)", "max() takes two or more numbers"),
        ("round(2.5, ndigits=1)", "no keyword arguments"),
        ("round(2.5, 1.5)", "round():"),
        ("1 +", "is not a valid arithmetic expression"),
        ("", "calculate needs an arithmetic expression"),
        ("1+" * 150 + "1", "the expression is too long"),
    ],
)
def test_calculate_refuses_anything_but_arithmetic_with_a_clear_error(expression, problem):
    with pytest.raises(ToolError) as error:
        calculate(expression)
    assert problem in str(error.value)


def test_calculate_never_uses_eval():
    import inspect

    from agentlab.world import tools

    source = inspect.getsource(tools)
    assert "eval(" not in source.replace("_evaluate(", "").replace('mode="eval"', "")


# --- the question grammar ---------------------------------------------------------------------


def test_questions_are_read_back_exactly_as_they_were_written():
    for task in world.make_tasks(50, seed=4):
        assert render(parse_question(task.question)) == task.question


def test_a_chain_is_nested_lookups_innermost_first():
    question = parse_question("What is the age of the governor of the home island of Jory Pike?")
    assert question == Lookup(
        AttributeOf("age", AttributeOf("governor", AttributeOf("home island", Name("Jory Pike"))))
    )


def test_a_question_is_found_inside_a_longer_instruction_and_items_may_carry_known_values():
    text = "Report the answer: Which has the lowest price: Bluetin (58), Emberpeat (15) or Saltwool (41)?"
    question = parse_question(text)
    assert question == Extreme(
        "price", (Name("Bluetin", "58"), Name("Emberpeat", "15"), Name("Saltwool", "41")), False
    )
    assert gold_answer(question) == "Emberpeat"
    assert parse_question("what is the total crew of Moth Queen and Tidewalker") == Total(
        "crew", (Name("Moth Queen"), Name("Tidewalker"))
    )


def test_every_fan_out_has_items_and_only_a_name_can_carry_a_known_value():
    difference = parse_question(
        "How much greater is the area of Brindle (127) than that of the capital of Tamsk?"
    )
    first, second = difference.items
    assert (first, second) == (difference.first, difference.second)
    assert first.value == "127" and second.value is None  # an "attribute of" phrase takes a lookup
    assert world.tasks.label(first) == "Brindle" and world.tasks.label(second) == "the capital of Tamsk"


@pytest.mark.parametrize("text", ["Tell me a joke.", "What is Varra?", "Which is best?"])
def test_text_outside_the_grammar_is_a_question_error_quoting_it(text):
    with pytest.raises(QuestionError) as error:
        parse_question(text)
    assert repr(text.rstrip(".")) in str(error.value) or repr(text) in str(error.value)


def test_gold_answers_come_from_the_records():
    assert gold_answer("What is the population of Varra?") == "2140"
    # Jory Pike -> home island Solace -> governor Jory Pike -> age 39
    assert gold_answer("What is the age of the governor of the home island of Jory Pike?") == "39"
    assert gold_answer("What is the total crew of Moth Queen and Tidewalker?") == str(17 + 33)
    assert gold_answer("How much greater is the area of Brindle than that of Tamsk?") == str(127 - 12)
    assert gold_answer("Which has the highest age: Wren Tally, Silas Orme or Jory Pike?") == "Silas Orme"
    assert gold_answer("What is 2140 + 3875?") == "6015"


# --- generated tasks ---------------------------------------------------------------------------


def test_tasks_are_the_same_for_the_same_seed_and_differ_for_another():
    assert world.make_tasks(20, seed=1) == world.make_tasks(20, seed=1)
    assert world.make_tasks(20, seed=1) != world.make_tasks(20, seed=2)


def test_the_mix_has_every_family_and_every_gold_answer_is_right():
    tasks = world.make_tasks(50, seed=0)
    assert {t.family for t in tasks} == {"single", "chain", "fanout"}
    assert {t.join for t in tasks if t.family == "fanout"} == set(world.tasks.JOINS)
    assert len({t.id for t in tasks}) == 50
    for task in tasks:
        assert gold_answer(task.question) == task.answer


@pytest.mark.parametrize("hops", [1, 2, 3, 5])
def test_a_chain_of_n_hops_has_n_lookups(hops):
    task = world.chain_task(random.Random(hops), hops)
    assert task.size == hops and task.question.count(" of ") == hops


@pytest.mark.parametrize("join", ["total", "highest", "lowest"])
def test_a_fan_out_of_width_k_looks_up_k_entities_of_one_kind(join):
    task = world.fanout_task(random.Random(0), 4, join)
    question = parse_question(task.question)
    assert task.size == 4 and len(question.items) == 4
    assert len({ENTITIES[item.text].kind for item in question.items}) == 1


def test_a_difference_is_positive():
    for seed in range(20):
        assert float(world.fanout_task(random.Random(seed), 2, "difference").answer) > 0


def test_generators_refuse_impossible_shapes():
    with pytest.raises(ValueError, match="at least one hop"):
        world.chain_task(random.Random(0), 0)
    with pytest.raises(ValueError, match="a difference joins exactly 2 lookups, not 3"):
        world.fanout_task(random.Random(0), 3, "difference")
    with pytest.raises(ValueError, match="join must be one of"):
        world.fanout_task(random.Random(0), 3, "product")
    with pytest.raises(ValueError, match="no kind of entity has 20 members"):
        world.fanout_task(random.Random(0), 20, "total")


# --- checking answers ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "given, gold, right",
    [
        ("2140", "2140", True),
        ("2,140.", "2140", True),
        ("The population is 2140.", "2140", True),
        ("2140 or 2141", "2140", False),
        ("2141", "2140", False),
        ("3.50", "3.5", True),
        ("salt guild", "Salt Guild", True),
        ("The Salt Guild.", "Salt Guild", True),
        ("It is led from the Salt Guild.", "Salt Guild", True),
        ("Salt Guild or Netmenders Guild", "Salt Guild", False),
        ("Varra", "Ostmere", False),
        ("", "Varra", False),
        (None, "Varra", False),
    ],
)
def test_check_answer_compares_normalised_answers(given, gold, right):
    assert check_answer(given, gold) is right


@pytest.mark.parametrize(
    "text, number",
    [("2,140.", 2140.0), ("The population is 2140.", 2140.0), ("-3.5", -3.5), ("2140 or 2141", None),
     ("about a thousand", None), ("1e3", None), (None, None)],
)
def test_a_number_is_read_one_way_the_way_a_task_judges_a_numeric_answer(text, number):
    from agentlab.world import number_in

    assert number_in(text) == number
    assert check_answer(text, "2140") is (number == 2140)


# --- the world stands alone ---------------------------------------------------------------------

PLANS_AND_RUNS = {"plan", "schedule", "agents", "planners", "run", "trace", "monitor", "recovery", "budget"}


def test_the_world_knows_nothing_of_plans_or_runs():
    """Data flows one way: plans and runs read the world, never the other way round."""
    for path in Path(world.__file__).parent.glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [f"{node.module}.{a.name}" for a in node.names]
            else:
                continue
            wrong = [n for n in names if n.startswith("agentlab.") and n.split(".")[1] in PLANS_AND_RUNS]
            assert not wrong, f"world/{path.name} imports {wrong}"
