# Two entry points (README): `make demo` runs the main job, `make test` the whole suite.
# Both build .venv/ first from pinned dependencies (constraints.txt); needs Python 3.11 + Java 17.
PYTHON ?= python3.11
VENV := .venv
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test ui bench venv browser clean

$(STAMP): pyproject.toml constraints.txt
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) on PATH"; exit 1; }
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -c constraints.txt -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/python -m jobs.demo

test: $(STAMP) browser
	$(VENV)/bin/python -m pytest -q -rs

# The UI tests drive Debian's chromium (never a downloaded browser); as root, install it.
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	  echo "chromium is not installed: the browser tests will be skipped (apt-get install chromium)"

# The Dagster web UI on 127.0.0.1:3000 with the embedded broker (stop with Ctrl-C).
ui: $(STAMP)
	$(VENV)/bin/streamjoin broker start
	mkdir -p .dagster_home && DAGSTER_HOME=$(CURDIR)/.dagster_home $(VENV)/bin/dagster dev -h 127.0.0.1 -p 3000 -w workspace.yaml

bench: $(STAMP)
	$(VENV)/bin/python bench/io.py
	$(VENV)/bin/python bench/stream_joins.py
	$(VENV)/bin/python bench/table_joins.py

clean:
	rm -rf $(VENV) var build *.egg-info
