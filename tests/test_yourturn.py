"""A lesson's "your turn" cell: the self-check says in a line or two whether the learner's lines work,
never a traceback into the kit, and `agentlab progress` reads what it printed."""

import json

from agentlab.progress import DONE, TO_DO, TRIED, items
from agentlab.yourturn import NOT_WRITTEN, not_written, your_turn


def test_each_outcome_is_one_or_two_lines_and_the_lesson_goes_on(capsys):
    assert your_turn("02.mine", lambda: "", "the plan") is True
    assert capsys.readouterr().out.splitlines() == ["Checking 02.mine:", "The check passed."]
    assert your_turn("02.mine", not_written, "the plan") is False
    assert capsys.readouterr().out.splitlines() == ["Checking 02.mine:", f"  {NOT_WRITTEN}"]
    assert your_turn("02.mine", lambda: "the makespan is 7 s, not 6 s", "step s3's duration") is False
    said = capsys.readouterr().out.splitlines()[1]
    assert said == "  ✗ the makespan is 7 s, not 6 s. Look at: step s3's duration"

    def broken():
        raise KeyError("s9\nsecond line")

    assert your_turn("02.mine", broken, "the ids you used") is False
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2 and out[1].startswith("  ✗ your lines raised KeyError: 's9")


def test_progress_reads_a_lessons_your_turn_cells(tmp_path, capsys):
    cells = []
    for cell_id, test in (("03.done", lambda: ""), ("03.tried", lambda: "wrong"), ("03.todo", not_written)):
        your_turn(cell_id, test, "here")
        shown = capsys.readouterr().out
        cells.append({"cell_type": "code", "metadata": {}, "execution_count": 1,
                      "source": f'works = your_turn("{cell_id}", test, "here")',
                      "outputs": [{"output_type": "stream", "name": "stdout", "text": shown}]})
    (tmp_path / "notebooks").mkdir()
    (tmp_path / "notebooks" / "03_x.ipynb").write_text(json.dumps({"cells": cells, "metadata": {}}))
    found = {i.id: (i.kind, i.status) for i in items(tmp_path)}
    assert found == {"03.done": ("lesson cell", DONE), "03.tried": ("lesson cell", TRIED),
                     "03.todo": ("lesson cell", TO_DO)}
