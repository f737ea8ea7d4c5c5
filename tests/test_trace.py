"""The trace: events in order, readable as text and as an HTML table."""

import pytest

from agentlab.trace import Event, Trace


def sample() -> Trace:
    trace = Trace()
    trace.add(Event(0.0, "planned", "s1", "writer", (), "say hi"))
    trace.add(Event(0.0, "started", "s1", "writer", (), "say hi"))
    trace.add(Event(2.0, "finished", "s1", "writer", (), "hi <everyone> " + "x" * 100))
    return trace


def test_unknown_event_kind_is_rejected():
    with pytest.raises(ValueError, match="unknown event kind 'done'"):
        Event(0.0, "done", "s1", "writer")


def test_text_has_a_header_and_one_aligned_line_per_event_with_long_details_shortened():
    lines = sample().to_text(width=20).splitlines()
    assert len(lines) == 4
    assert lines[0].split() == ["t", "(s)", "event", "step", "role", "inputs", "detail"]
    assert lines[3].startswith("   2.0  finished  s1    writer     -")
    assert lines[3].endswith("…") and len(lines[3].split("-", 1)[1].strip()) == 20


def test_html_escapes_outputs_so_model_text_cannot_inject_markup():
    html = sample()._repr_html_()
    assert "&lt;everyone&gt;" in html and "<everyone>" not in html
    assert html.count("<tr>") == 4


def test_filters():
    trace = sample()
    assert [e.kind for e in trace.for_step("s1")] == ["planned", "started", "finished"]
    assert len(trace.of_kind("finished")) == 1 and len(trace) == 3
