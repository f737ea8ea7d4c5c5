"""One step of a plan as a row of fields in the live plan editor (agentlab.widgets.PlanEditor).

The fields are the step's id, role, instruction, the ids it depends on, its duration on the virtual
clock and its chance of success; `StepRow.step()` reads them back as a `Step` for the editor to
validate. A direct tool call and its arguments ride along unedited.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import ipywidgets as widgets

from agentlab.plan import Step

DEFAULT_SUCCESS = 0.95  # each step's chance of success until the learner says otherwise
COLUMNS = {"id": 60, "role": 110, "instruction": 330, "after": 90, "seconds": 75, "p(success)": 75}


@dataclass(eq=False)
class StepRow:
    """The fields of one step, and the row of widgets that shows them."""

    id: widgets.Text
    role: widgets.Dropdown
    instruction: widgets.Text
    depends_on: widgets.Text  # comma-separated step ids
    duration: widgets.BoundedFloatText
    success: widgets.BoundedFloatText
    remove: widgets.Button
    box: widgets.HBox
    tool: str | None = None  # a direct tool call and its arguments ride along, unedited
    args: Mapping | None = None

    @property
    def fields(self) -> list[widgets.ValueWidget]:
        return [self.id, self.role, self.instruction, self.depends_on, self.duration, self.success]

    def step(self) -> Step:
        """The step these fields describe (not yet validated: the Plan does that)."""
        ids = [d.strip() for d in self.depends_on.value.split(",") if d.strip()]
        return Step(
            self.id.value.strip(),
            self.role.value,
            self.instruction.value.strip(),
            depends_on=tuple(ids),
            tool=self.tool,
            args=dict(self.args or {}),
            duration=self.duration.value,
        )


def step_row(step: Step, roles: list[str], duration: float, success: float) -> StepRow:
    """A row of widgets holding `step`, with `duration` seconds and chance of `success`."""

    def sized(widget, column: str, css_class: str):
        widget.layout = widgets.Layout(width=f"{COLUMNS[column]}px")
        widget.add_class(css_class)  # a handle for the browser test
        return widget

    text = {"continuous_update": False}  # update when the learner presses Enter or leaves the field
    row = StepRow(
        id=sized(widgets.Text(step.id, **text), "id", "agentlab-id"),
        role=sized(widgets.Dropdown(options=roles, value=step.role), "role", "agentlab-role"),
        instruction=sized(widgets.Text(step.instruction, **text), "instruction", "agentlab-instruction"),
        depends_on=sized(widgets.Text(", ".join(step.depends_on), **text), "after", "agentlab-after"),
        duration=sized(
            widgets.BoundedFloatText(duration, min=0, max=1e6, step=0.5), "seconds", "agentlab-seconds"
        ),
        success=sized(widgets.BoundedFloatText(success, min=0, max=1, step=0.01), "p(success)", "agentlab-p"),
        remove=widgets.Button(icon="trash", tooltip="remove this step", layout=widgets.Layout(width="36px")),
        box=widgets.HBox(),
        tool=step.tool,
        args=step.args,
    )
    row.box.children = [*row.fields, row.remove]
    row.box.add_class("agentlab-step")
    return row
