# The course's two commands:
#   make lab    create the environment if needed, open the course in JupyterLab
#   make test   create the environment if needed, run every test
# Other targets: env, bench, handouts, lock, clean.

PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.course-env-installed

.PHONY: lab test env bench lock clean handouts

env: $(STAMP)

# Rebuilt only when the lock or pyproject changes. torch is pinned to 2.13.0 in the
# lock: any other version makes pip download a multi-GB CUDA build. The lock holds
# every package, so it installs with --no-deps: exactly what it lists, nothing more.
# It leaves out rfc3987-syntax (and its lark), an optional extra of jsonschema that
# compiles grammars for 2-5 s on import, in every kernel that shows a plotly figure.
$(STAMP): requirements.lock pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --disable-pip-version-check -q --no-deps -r requirements.lock
	$(BIN)/python -m pip install --disable-pip-version-check -q --no-deps -e .
	@touch $(STAMP)

# JupyterLab refuses to run as root unless told; containers and some servers run as root.
ROOT_FLAG := $(if $(filter 0,$(shell id -u)),--allow-root)

lab: $(STAMP)
	$(BIN)/jupyter lab $(ROOT_FLAG) notebooks/00_welcome.ipynb

test: $(STAMP)
	$(BIN)/python -m pytest

bench: $(STAMP)
	$(BIN)/python -m benchmarks

# Every notebook executed and written as static HTML that works offline, with an index:
# handouts/index.html (plotly.js and MathJax shipped beside the pages, never a CDN).
handouts: $(STAMP)
	$(BIN)/python tools/handouts.py --out handouts

# Re-lock after changing the packages in pyproject.toml (exact versions of everything installed).
lock: $(STAMP)
	@{ echo "# The course environment, locked: exact versions of every package (made with pip freeze)."; \
	   echo "# Regenerate with 'make lock' after changing pyproject.toml; tests/test_environment.py checks it agrees."; \
	   $(BIN)/python -m pip freeze --exclude-editable | grep -v -E '^(mha-core|mha_core|rfc3987-syntax|lark)==' | sed 's/^torch==\([0-9.]*\)+cpu/torch==\1/'; } > requirements.lock

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis artifacts handouts
