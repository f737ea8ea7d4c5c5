# Two commands: `make lab` opens the course, `make test` runs the whole suite.
# Both create .venv on first use and reinstall only when pyproject.toml or this Makefile changes. `make lab`
# installs the kit and what a learner needs (with the small [trace] and [mcp] extras that notebooks
# 04 and 09 show); `make test` adds the test tools (pytest, nbval, ruff,
# Playwright, ...).

PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
PHOENIX_VENV := .venv-phoenix
PHOENIX_STAMP := $(PHOENIX_VENV)/.installed
# Notebooks checked by nbval: every course notebook, and the solutions once there are some.
NOTEBOOKS := notebooks $(wildcard solutions/*.ipynb)
LAB_ARGS ?=
# JupyterLab refuses to run as root (containers, CI) unless told it may.
ROOT_ARGS := $(if $(filter 0,$(shell id -u)),--allow-root)
# The lab opens on the start notebook, and so does the URL it prints.
START := notebooks/00_start_here.ipynb
# JupyterLab's settings overrides for this .venv: never ask a learner about Jupyter news.
LAB_SETTINGS := $(VENV)/share/jupyter/lab/settings/overrides.json

# Python keeps each module it compiles in __pycache__ (inside .venv and agentlab/, both ignored by
# git). A shell that sets PYTHONDONTWRITEBYTECODE would have every kernel, server and test process
# compile anthropic, matplotlib, dask... from source again, seconds each time; the recipes here
# let Python keep what it compiled.
unexport PYTHONDONTWRITEBYTECODE

.PHONY: lab test test-phoenix setup setup-test setup-phoenix lint notebooks clean

setup: $(STAMP)

# What each venv installs: the kit and the extras a learner's notebooks use; then the test tools.
LAB_KIT  := -e '.[trace,mcp]'
TEST_KIT := -e '.[test,trace,mcp,nbgrader]'

# Installs go through uv, itself a package from PyPI: from a warm cache it sets up the test
# environment in about 15 s where pip takes two to three minutes. Where uv cannot be had, pip does
# the same install, only slower.
install = if $(BIN)/python -m uv --version >/dev/null 2>&1; \
	then $(BIN)/python -m uv pip install --quiet --python $(1) $(2); \
	else $(1) -m pip install --quiet $(2); fi

# rfc3987-syntax comes in through jupyter-events' jsonschema[format-nongpl]. When present, every
# `import jsonschema` imports it, and it builds a Lark grammar there: 1.8 s in each kernel, server
# and test process that validates a plan or reads a notebook. jsonschema treats it as optional (it
# only checks the "iri" string format, which nothing here uses), so the venvs go without it.
drop_slow_extras = if $(BIN)/python -m uv --version >/dev/null 2>&1; \
	then $(BIN)/python -m uv pip uninstall --quiet --python $(1) rfc3987-syntax; \
	else $(1) -m pip uninstall --quiet --yes rfc3987-syntax; fi

# The kit was installed as the distribution `agentlab` before it took the name `agentlab-course`
# (`agentlab` on PyPI is another project): a .venv made before the rename drops the old record
# first, so the two never share the `agentlab` command.
$(STAMP): pyproject.toml Makefile
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet uv || echo "uv is not available: installing with pip"
	if $(BIN)/python -m pip show --quiet agentlab >/dev/null 2>&1; then $(BIN)/python -m pip uninstall --quiet --yes agentlab; fi
	$(call install,$(BIN)/python,$(LAB_KIT))
	$(call drop_slow_extras,$(BIN)/python)
	mkdir -p $(VENV)/etc/ipython  # every kernel of this venv draws each inline figure once (agentlab/kernel.py)
	echo 'c.InteractiveShellApp.extensions.append("agentlab.kernel")' > $(VENV)/etc/ipython/ipython_kernel_config.py
	touch $(STAMP)

setup-test: $(TEST_STAMP)

$(TEST_STAMP): $(STAMP)
	$(call install,$(BIN)/python,$(TEST_KIT))
	$(call drop_slow_extras,$(BIN)/python)
	touch $(TEST_STAMP)

# Arize Phoenix, the tracing UI the OpenTelemetry export is tested against, lives in a venv of its
# own: it requires anthropic<2, the kit anthropic>=2. A class runs it the same way (see docs/teaching.md).
# It is large (about 850 MB, minutes to install), so `make test` skips its two tests when it is absent
# and `make test-phoenix` builds it and runs them; CI (.ci/run) runs both.
setup-phoenix: $(PHOENIX_STAMP)

$(PHOENIX_STAMP): | $(STAMP)
	test -x $(PHOENIX_VENV)/bin/python || $(PYTHON) -m venv $(PHOENIX_VENV)
	$(call install,$(PHOENIX_VENV)/bin/python,'arize-phoenix>=12')
	touch $(PHOENIX_STAMP)

$(LAB_SETTINGS): Makefile | $(STAMP)
	mkdir -p $(@D)
	echo '{"@jupyterlab/apputils-extension:notification": {"fetchNews": "false", "checkForUpdates": false}}' > $@

# The kit's commands (`agentlab doctor`, `agentlab run`, ...) are on the PATH of the lab's
# terminals: .venv/bin comes first, and a terminal is a plain shell, not a login shell that would
# reset the PATH.
lab: setup $(LAB_SETTINGS)
	PATH="$(CURDIR)/$(BIN):$$PATH" VIRTUAL_ENV="$(CURDIR)/$(VENV)" $(BIN)/jupyter lab --ServerApp.root_dir=. \
		--LabApp.default_url=/lab/tree/$(START) --ServerApp.terminado_settings=shell_command="$${SHELL:-/bin/sh}" \
		$(ROOT_ARGS) $(LAB_ARGS)

# The tests always run on the simulated backend, whatever keys this shell holds. They run in
# parallel, one process more than there are cores (`make test JOBS=1` for one at a time): a worker
# waits for its kernel, server or browser about a tenth of the time (vmstat on 2 cores: 10% idle
# with two workers, 2-3% with three), and the third fills those gaps. Each file stays on one
# process (--dist loadfile), so a notebook's cells run in order in one kernel; the longest files
# start first (conftest.py says which), not the files with most tests. pytest's exit code
# is make's: a failed test fails `make test`, and so does finding no tests at all (exit 5).
JOBS ?= $(shell $(PYTHON) -c "import os; print(len(getattr(os, 'sched_getaffinity', lambda _: range(os.cpu_count() or 1))(0)) + 1)")
test: setup-test lint
	AGENTLAB_BACKEND=simulated ANTHROPIC_API_KEY= $(BIN)/python -m pytest -n $(JOBS) --dist loadfile --no-loadscope-reorder \
		tests --nbval --nbval-current-env $(NOTEBOOKS)

# The OpenTelemetry export against a real Arize Phoenix (its own venv, built on first use).
test-phoenix: setup-test setup-phoenix
	AGENTLAB_BACKEND=simulated ANTHROPIC_API_KEY= $(BIN)/python -m pytest tests/test_interop_phoenix.py

lint: setup-test
	$(BIN)/ruff check agentlab tests

# Re-run course notebooks in place, storing fresh outputs (then review the diff).
# All of them by default; one with `make notebooks NB=notebooks/03_llm_planner.ipynb`.
# Widget state is not stored: JupyterLab would rewrite it on save ("max": 1.0 -> 1), and a widget
# cell shows its text form ("run this cell to show the editor") until it is run.
NB ?= notebooks/*.ipynb $(wildcard solutions/*.ipynb)
notebooks: setup
	AGENTLAB_BACKEND=simulated ANTHROPIC_API_KEY= $(BIN)/jupyter nbconvert --to notebook --execute --inplace \
		--ExecutePreprocessor.record_timing=False --ExecutePreprocessor.store_widget_state=False \
		--ClearMetadataPreprocessor.enabled=True \
		--ClearMetadataPreprocessor.clear_notebook_metadata=False \
		--ClearMetadataPreprocessor.preserve_cell_metadata_mask=tags $(NB)

clean:
	rm -rf $(VENV) $(PHOENIX_VENV)
