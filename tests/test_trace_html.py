"""The trace as a notebook shows it: text reads from the left, times line up on the right."""

import re

from agentlab import orchestrate


def cells(html: str, tag: str) -> list[list[str]]:
    """The opening tag of every cell, row by row."""
    rows = re.findall(r"<tr>(.*?)</tr>", html, flags=re.S)  # a detail may span lines
    return [re.findall(rf"<{tag}\b[^>]*>", row) for row in rows if f"<{tag}" in row]


def test_text_columns_are_left_aligned_whatever_the_notebooks_stylesheet_says():
    # JupyterLab's stylesheet right-aligns every table cell; an instruction or an answer read from
    # the right is hard to read, so each text cell says how it is aligned.
    html = orchestrate("Write a short report on why agents plan before they act.").trace._repr_html_()
    [head] = cells(html, "th")
    body = cells(html, "td")
    assert len(head) == 6 and len(body) == 12 and all(len(row) == 6 for row in body)
    for row in [head, *body]:
        time, *text = row
        assert "text-align:right" in time
        assert all("text-align:left" in cell for cell in text)
