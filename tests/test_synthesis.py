"""Synthesis: two workers that disagree, a writer that concatenates, a synthesizer that reconciles
and cites (the stub world, deterministic)."""

import pytest

from agentlab.run import run_plan
from agentlab.synthesis import Finding, Resolved, newest_wins, parse, report, synthesis_plan, synthesis_team

THREE = ("census", "harbour register", "governor's letters")


def test_a_finding_survives_the_trip_through_text():
    f = Finding("population of Varra", "2140", "census", 1841)
    assert parse(f"notes\n{f}\n  {f}  \nnot a finding") == [f, f]


def test_the_concatenating_writer_leaves_the_contradiction_to_the_reader():
    run = run_plan(synthesis_plan(writer="writer"), synthesis_team())
    assert "population of Brindle = 5020" in run.deliverable
    assert "population of Brindle = 5460" in run.deliverable  # both figures, nothing decided


def test_the_synthesizer_keeps_one_value_per_claim_and_cites_its_steps():
    run = run_plan(synthesis_plan(), synthesis_team())
    lines = run.deliverable.splitlines()
    assert lines[0] == "REPORT (reconciled)"
    assert "population of Varra: 2140 [s1][s2]  (all sources agree)" in run.deliverable
    brindle = next(line for line in lines if "Brindle" in line)
    assert "5020 [s1]" in brindle and "5460 (harbour register, 1836)" in brindle  # newer wins, says why
    assert "[s2]" not in brindle


def test_two_sources_of_the_same_year_that_disagree_leave_the_question_open():
    run = run_plan(synthesis_plan(THREE), synthesis_team(THREE))
    capital = next(line for line in run.deliverable.splitlines() if "capital" in line)
    assert "OPEN QUESTION [s1][s2][s3]" in capital and "Greyhaven vs Port Ashby" in capital


def test_the_same_run_twice_gives_the_same_report():
    assert run_plan(synthesis_plan(), synthesis_team()).deliverable == run_plan(
        synthesis_plan(), synthesis_team()
    ).deliverable


@pytest.mark.parametrize(
    "findings, want",
    [
        ({"s1": [Finding("x", "1", "a", 1)], "s2": [Finding("x", "1", "b", 2)]}, ("1", ("s1", "s2"))),
        ({"s1": [Finding("x", "1", "a", 1)], "s2": [Finding("x", "2", "b", 2)]}, ("2", ("s2",))),
        ({"s1": [Finding("x", "1", "a", 2)], "s2": [Finding("x", "2", "b", 2)]}, (None, ("s1", "s2"))),
    ],
)
def test_newest_wins(findings, want):
    [resolved] = newest_wins(findings)
    assert (resolved.value, resolved.cited) == want


def test_a_report_shows_an_open_question_as_open():
    text = report([Resolved("x", None, ("s1", "s2"), "they disagree")])
    assert "x: OPEN QUESTION [s1][s2]  (they disagree)" in text
