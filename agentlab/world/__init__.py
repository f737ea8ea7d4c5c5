"""The offline task world: an invented archipelago, real tools, and questions with gold answers.

Read in this order: `data` (the Skerrow Isles: who and what is there), `tools`
(lookup, search and a safe calculator, and the specs a model sees), `tasks`
(the question grammar, seeded generators, gold answers and grading). Then, for notebook 09,
`injection` (planted notes and tools that act); and the simulated model's knowledge of this
world: `plans` and `solver` (the work a competent model does here), `mistakes` (the errors it
makes on purpose).
"""

from agentlab.world.data import ARCHIPELAGO, ENTITIES, KINDS, QUANTITIES, RELATIONS, Entity
from agentlab.world.tasks import (
    RESULT_TO_REPORT,
    Arithmetic,
    AttributeOf,
    Difference,
    Extreme,
    Lookup,
    Name,
    Phrase,
    Question,
    QuestionError,
    Task,
    Total,
    chain_task,
    check_answer,
    fanout_task,
    gold_answer,
    make_tasks,
    normalise,
    number_in,
    parse_question,
    render,
    sample_tasks,
    single_task,
    steps_needed,
)
from agentlab.world.tools import (
    FUNCTIONS,
    TOOLS,
    ToolError,
    calculate,
    describe,
    find_entity,
    lookup,
    search,
)

__all__ = [
    "ARCHIPELAGO",
    "ENTITIES",
    "FUNCTIONS",
    "KINDS",
    "QUANTITIES",
    "RELATIONS",
    "RESULT_TO_REPORT",
    "TOOLS",
    "Arithmetic",
    "AttributeOf",
    "Difference",
    "Entity",
    "Extreme",
    "Lookup",
    "Name",
    "Phrase",
    "Question",
    "QuestionError",
    "Task",
    "ToolError",
    "Total",
    "calculate",
    "chain_task",
    "check_answer",
    "describe",
    "fanout_task",
    "find_entity",
    "gold_answer",
    "lookup",
    "make_tasks",
    "normalise",
    "number_in",
    "parse_question",
    "render",
    "sample_tasks",
    "search",
    "single_task",
    "steps_needed",
]
