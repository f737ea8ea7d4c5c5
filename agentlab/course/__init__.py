"""The course machinery, off the learner's path: nothing a lesson builds lives here.

- exercises: exercise notebooks built from their solutions, checked for drift, and graded
- checks: the automatic checks an exercise cell calls (`from agentlab.course.checks import
  check`), with each notebook's hidden cases in `checks/nbNN.py`
- cli: the `agentlab` command (demo, run, doctor, course build/check/grade)
"""
