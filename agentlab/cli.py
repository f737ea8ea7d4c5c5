"""The `agentlab` command: `agentlab demo` runs the pattern in a terminal,
`agentlab doctor` says whether this machine is ready for the course."""

from __future__ import annotations

import argparse
import importlib.metadata
import sys

from agentlab.llm import describe_backend
from agentlab.run import orchestrate

DEMO_TASKS = (
    ("a task worth decomposing", "Write a short report on why agents plan before they act."),
    ("a simple task (one agent is enough)", "Greet the class in one sentence."),
)

COURSE_PACKAGES = ("jupyterlab", "ipywidgets", "anthropic", "networkx", "matplotlib")


def demo() -> int:
    for title, task in DEMO_TASKS:
        print(f"=== {title} ===")
        print(orchestrate(task))
        print()
    return 0


def doctor() -> int:
    print(f"Python {sys.version.split()[0]}")
    missing = []
    for name in COURSE_PACKAGES:
        try:
            print(f"  {name:<11} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            print(f"  {name:<11} MISSING")
            missing.append(name)
    print(describe_backend())
    if missing:
        print(f"Not ready: install {', '.join(missing)} (run `make lab`, which sets everything up).")
        return 1
    print("Ready for the course.")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="agentlab", description=__doc__)
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("demo", help="run a decomposed task and a simple task, and print both")
    commands.add_parser("doctor", help="check the Python packages the course needs")
    args = parser.parse_args(argv)
    return {"demo": demo, "doctor": doctor}[args.command]()


if __name__ == "__main__":
    sys.exit(main())
