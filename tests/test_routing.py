"""Routing: the difficulty signal, the simulator's weak model slipping more on harder requests,
the RouteLLM reference counts, random and perfect routers, and a router that really routes."""

import math
import random

from agentlab import world
from agentlab.llm.simulated import PROFILES, TYPICAL_STEPS, SimulatedLLM


def test_steps_needed_counts_lookups_and_the_join():
    assert world.steps_needed("What is the population of Varra?") == 1
    assert world.steps_needed("What is the age of the governor of the home island of Jory Pike?") == 3
    assert world.steps_needed("What is the total crew of Silver Heron, Moth Queen and Tidewalker?") == 4
    assert world.steps_needed("How much greater is the area of Brindle than that of Tamsk?") == 3
    assert world.steps_needed("What is 2140 + 3875?") == 1


def test_values_already_known_and_results_to_report_need_no_lookup():
    assert (
        world.steps_needed("Which has the highest price: Amberfish (3), Bluetin (5) or Emberpeat (2)?") == 1
    )
    report = f"Report the answer: What is the age of Varra? {world.RESULT_TO_REPORT} 41."
    assert world.steps_needed(report) == 0
    assert world.steps_needed("Say hello to the class.") == 0


def test_the_small_model_slips_more_the_more_steps_a_request_needs():
    small, large = PROFILES["sim-small"], PROFILES["sim-large"]
    assert [large.errs_times(s) for s in (0, 1, 3, 6)] == [1.0, 1.0, 1.0, 1.0]
    assert [small.errs_times(s) for s in (0, 1, TYPICAL_STEPS, 6)] == [1.0, 1.0, 3.0, 6.0]


def test_on_one_step_requests_both_models_slip_equally_often_and_on_long_ones_the_small_far_more():
    def slips(model, questions):
        llm = SimulatedLLM(seed=3, error_rate=0.1, model=model)
        tools = [world.TOOLS["lookup"], world.TOOLS["calculate"]]
        for q in questions:
            llm.complete(system="Answer.", messages=[{"role": "user", "content": q}], tools=tools)
        return len(llm.injected)

    rng = random.Random(0)
    easy = [world.single_task(rng).question for _ in range(400)]
    hard = [world.chain_task(rng, 6).question for _ in range(400)]
    margin = 3 * math.sqrt(0.1 * 0.9 * 400)
    assert abs(slips("sim-small", easy) - slips("sim-large", easy)) < 2 * margin
    assert slips("sim-small", hard) > 4 * slips("sim-large", hard)
