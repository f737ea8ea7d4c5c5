# Two commands: `make lab` opens the course, `make test` runs the whole suite.
# Both create .venv on first use and reinstall only when pyproject.toml changes.

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
# Notebooks checked by nbval: every course notebook, and the solutions once there are some.
NOTEBOOKS := notebooks $(wildcard solutions/*.ipynb)
LAB_ARGS ?=
# JupyterLab refuses to run as root (containers, CI) unless told it may.
ROOT_ARGS := $(if $(filter 0,$(shell id -u)),--allow-root)

.PHONY: lab test setup lint notebooks clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

lab: setup
	$(BIN)/jupyter lab --ServerApp.root_dir=. notebooks/00_start_here.ipynb $(ROOT_ARGS) $(LAB_ARGS)

# The tests always run on the simulated backend, whatever keys this shell holds.
test: setup lint
	AGENTLAB_BACKEND=simulated ANTHROPIC_API_KEY= $(BIN)/python -m pytest tests --nbval --nbval-current-env $(NOTEBOOKS)

lint: setup
	$(BIN)/ruff check agentlab tests

# Re-run course notebooks in place, storing fresh outputs (then review the diff).
# All of them by default; one with `make notebooks NB=notebooks/03_llm_planner.ipynb`.
NB ?= notebooks/*.ipynb $(wildcard solutions/*.ipynb)
notebooks: setup
	AGENTLAB_BACKEND=simulated ANTHROPIC_API_KEY= $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.record_timing=False --ClearMetadataPreprocessor.enabled=True \
		--ClearMetadataPreprocessor.clear_notebook_metadata=False \
		--ClearMetadataPreprocessor.preserve_cell_metadata_mask=tags $(NB)

clean:
	rm -rf $(VENV)
