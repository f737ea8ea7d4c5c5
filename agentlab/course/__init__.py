"""The course machinery, off the learner's path: nothing a lesson builds lives here.

- exercises: exercise notebooks built from their solutions, and checked for drift
- grading, gradebook: learners' notebooks run and graded from what their checks recorded, and
  the report, CSV and JSON an instructor gets
- checks: the automatic checks an exercise cell calls (`from agentlab.course.checks import
  check`), with each notebook's hidden cases in `checks/nbNN.py`
- cli: the `agentlab` command (demo, run, doctor, course build/check/grade)
"""
