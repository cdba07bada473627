# Two entry points (README): `make demo` runs the main job, `make test` the whole suite.
# Both build .venv/ first from pinned dependencies (constraints.txt); needs Python 3.11 + Java 17.
PYTHON ?= python3.11
VENV := .venv
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test ui bench venv clean

$(STAMP): pyproject.toml constraints.txt
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) on PATH"; exit 1; }
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -c constraints.txt -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/streamjoin demo

test: $(STAMP)
	$(VENV)/bin/python -m pytest -q -rs

bench: $(STAMP)
	$(VENV)/bin/python bench/io.py

clean:
	rm -rf $(VENV) var build *.egg-info
