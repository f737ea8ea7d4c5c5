"""The course machinery, off the learner's path: nothing a lesson builds lives here.

- exercises: exercise notebooks built from their solutions, and checked for drift
- grading, gradebook: learners' notebooks run and graded from what their checks recorded, and
  the report, CSV and JSON an instructor gets; cells: a learner's notebook as the grader reads it
- checks: the automatic checks an exercise cell calls (`from agentlab.course.checks import
  check`), with each notebook's hidden cases in `checks/nbNN.py` and the plain data they compare
  in `checks/plain.py`
- forbidden: the helpers an exercise asks the learner not to call, trapped in the check and the
  grader alike
- cli: the `agentlab` command (demo, run, doctor, course build/check/grade/release/export)
- release: what goes to learners, with the README and Makefile in `learner/`; selfcheck: a
  learner's `make check`, their exercise notebooks run and each check's verdict shown
"""
