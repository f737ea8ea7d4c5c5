"""What `backend_slice` keeps of a notebook: small synthetic notebooks (one string a code cell),
then the course's own notebooks that reach a model."""

from __future__ import annotations

import pytest
from notebook_code import backend_slice, code_cells
from test_notebooks_claude import NOTEBOOKS, REACHES_A_MODEL, READS_THE_BACKEND, reaches_a_model


def kept(*cells: str) -> list[int]:
    return backend_slice(list(cells), READS_THE_BACKEND)


def test_cells_reading_what_a_model_call_left_are_kept_and_the_others_are_not():
    assert kept(
        "from agentlab.llm import make_llm, SimulatedLLM\nimport random",  # 0: needed for 1
        "llm = make_llm()",  # 1: reaches a model
        "sim = SimulatedLLM(seed=0)\nprint(sim.complete('hi'))",  # 2: the simulator only
        "answer = llm.complete('hi')",  # 3: reads llm
        "shown = answer.text.upper()",  # 4: reads what 3 derived from llm
        "print(random.random())",  # 5: nothing from a model
    ) == [0, 1, 3, 4]


def test_earlier_cells_a_kept_cell_needs_are_kept_through_names_imports_and_functions():
    assert kept(
        "import json",  # 0: needed by 2's function
        "def ask(llm, prompt):\n    return json.dumps(llm.complete(prompt).text)",  # 1
        "prompt = 'what is ' + str(2)",  # 2: bound here, read by 4
        "unused = [1, 2, 3]",  # 3
        "from agentlab.llm import make_llm\nprint(ask(make_llm(), prompt))",  # 4: reaches a model
    ) == [0, 1, 2, 4]
    assert kept(
        "reply = 'from an earlier cell'",  # 0: 1 binds its own reply before reading it
        "from agentlab.llm import make_llm\nreply = make_llm().complete('hi')\nprint(reply)",  # 1
    ) == [1]


def test_a_cell_that_changes_in_place_a_value_a_kept_cell_reads_is_kept():
    assert kept(
        "from agentlab import world\nfrom agentlab.llm import make_llm\nnotes = []\nsettings = {}",
        "notes.append('be brief')",  # 1: a method call on a value 4 reads
        "settings['model'] = 'large'",  # 2: an item assigned in a value 4 reads
        "print(world.sample_tasks()[0])",  # 3: a call on a module changes nothing
        "make_llm().complete(' '.join(notes) + str(settings) + world.ARCHIPELAGO)",  # 4
    ) == [0, 1, 2, 4]
    assert kept(
        "from agentlab.llm import make_llm\nitems = []",  # 0
        "def keep(x):\n    items.append(x)",  # 1: changes the global items when called
        "def mine(items):\n    items.append(0)\n    return items",  # 2: changes its own
        "keep(1)",  # 3: changes what 5 reads
        "mine([2])",  # 4
        "make_llm().complete(str(items))",  # 5
    ) == [0, 1, 3, 5]


def test_a_function_defined_before_the_model_reads_it_when_called():
    assert kept(
        "def ask(prompt):\n    return llm.complete(prompt)",  # 0: llm is read when ask is called
        "from agentlab.llm import make_llm\nllm = make_llm()",  # 1
        "reply = ask('hi')",  # 2: reaches the model through ask
        "shout = lambda text: llm.complete(text.upper())",  # 3: the same for a lambda
        "print(shout('hi'))",  # 4
    ) == [0, 1, 2, 3, 4]


def test_what_a_model_cell_binds_from_elsewhere_and_what_is_bound_again_carry_nothing():
    assert kept(
        "from agentlab.llm import make_llm\nfrom agentlab import world",  # 0
        "task = world.sample_tasks()[0]\nllm = t = make_llm()",  # 1: task does not come from llm
        "print(task.question)",  # 2
        "llm = 'a plain string'\nprint(llm)",  # 3: bound again, not from a model
        "print(llm.upper())",  # 4
        "for t in world.sample_tasks():\n    llm = len(t.question)\n    print(llm)",  # 5: its own t, llm
    ) == [0, 1]


def test_ipython_magics_and_shell_lines_are_read_as_the_calls_they_make():
    assert kept(
        "%matplotlib inline\nimport random",  # 0: a magic changes the shell that 2 runs in
        "x = random.random()",  # 1
        "!agentlab doctor",  # 2: the command line builds a model
        "print(x)",  # 3
    ) == [0, 2]
    # a magic's code is a string: once one may have read what a model left, keep it and all after
    assert kept(
        "import random\nfrom agentlab.llm import make_llm",  # 0
        "x = random.random()",  # 1: a magic that runs later may read any name
        "llm = make_llm()",  # 2
        "%time y = x + 1",  # 3
        "z = 2",  # 4
    ) == [0, 1, 2, 3, 4]
    # a cell magic is one statement: the model call in its third line still seeds the slice
    assert kept("import random", "%%time\nx = random.random()\nllm = make_llm()", "print(llm)") == [0, 1, 2]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=[p.stem for p in NOTEBOOKS])
def test_every_cell_of_a_course_notebook_that_reaches_a_model_is_in_its_slice(path):
    if not reaches_a_model(path):
        return
    cells = code_cells(path)
    reaching = [i for i, cell in enumerate(cells) if REACHES_A_MODEL.search(cell)]
    assert reaching and set(reaching) <= set(backend_slice(cells, READS_THE_BACKEND))
