# Two entry points (README): `make demo` runs the main job, `make test` the whole suite.
# Both build .venv/ first from pinned dependencies (constraints.txt); needs Python 3.11 + Java 17.
PYTHON ?= python3.11
VENV := .venv
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test ui bench venv browser postgres maven clean

$(STAMP): pyproject.toml constraints.txt
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) on PATH"; exit 1; }
	test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)
	$(VENV)/bin/pip install -q --disable-pip-version-check -c constraints.txt -e '.[test]'
	touch $(STAMP)

venv: $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/python -m jobs.demo

test: $(STAMP) browser postgres maven
	$(VENV)/bin/python -m pytest -q -rsx --durations=30  # -rsx: every skip and xfail with its reason; the slowest tests, to bring the suite within its 30 minutes

# The UI tests drive Debian's chromium (never a downloaded browser); as root, install it.
browser:
	@command -v chromium >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
	  echo "chromium is not installed: the browser tests will be skipped (apt-get install chromium)"

# The JDBC lookup join's integration test starts a PostgreSQL cluster of its own from Debian's
# server binaries; as root, install them (the test fails with one line naming the step if they are missing).
postgres:
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; } || \
	  echo "PostgreSQL is not installed (apt-get install postgresql, as root): the JDBC lookup join test will fail"

# Apicurio Registry (STREAMJOIN_REGISTRY_KIND=apicurio; tests/integration/test_apicurio_registry.py)
# is built from its Maven Central jars by Apache Maven: as root, install Debian's.
maven:
	@command -v mvn >/dev/null || { [ "$$(id -u)" = 0 ] && apt-get update -qq && \
	  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq maven >/dev/null; } || \
	  echo "Apache Maven is not installed (apt-get install maven, as root): the Apicurio Registry test will fail"

# How many Spark runs the Dagster queue lets go at once: one per 2 cores (they share the Spark
# Connect server `make ui` starts, local[*]).
SPARK_RUNS ?= $(shell n=$$(nproc 2>/dev/null || echo 2); echo $$(( n / 2 > 0 ? n / 2 : 1 )))

# The Dagster web UI on 127.0.0.1:3000 with the embedded broker and the sample data on its topics
# (stop with Ctrl-C); the instance (dagster.yaml) queues runs, SPARK_RUNS Spark runs at a time, on
# one shared Spark Connect server (a warm JVM: a run's own local session pays a cold one's start,
# ~10-25 s). Both keep running after Ctrl-C: `streamjoin spark stop`, `streamjoin broker stop`.
ui: $(STAMP)
	$(VENV)/bin/streamjoin broker start
	$(VENV)/bin/streamjoin spark start
	$(VENV)/bin/python -m jobs.samples
	mkdir -p .dagster_home && sed 's/{spark_runs}/$(SPARK_RUNS)/' dagster.yaml > .dagster_home/dagster.yaml
	# The pool's limit set before the daemon starts: the default limit only takes effect after
	# the first dequeue, which would launch every queued run at once (see dagster.yaml).
	DAGSTER_HOME=$(CURDIR)/.dagster_home $(VENV)/bin/dagster instance concurrency set spark $(SPARK_RUNS)
	STREAMJOIN_SPARK_REMOTE=$$($(VENV)/bin/streamjoin spark url) DAGSTER_HOME=$(CURDIR)/.dagster_home \
	  $(VENV)/bin/dagster dev -h 127.0.0.1 -p 3000 -w workspace.yaml

FLINK_VENV := .venv-flink
FLINK_STAMP := $(FLINK_VENV)/.installed-stamp

# The benches (bench/README.md): at most ~15 min each at their default sizes on 2 cores. PyFlink, the
# peer stream_joins.py runs in the same run, lives in its own .venv-flink (its pins clash with
# pyspark's), built from bench/constraints-flink.txt when missing: installed only for the bench.
bench: $(STAMP) $(FLINK_STAMP)
	$(VENV)/bin/python bench/io.py
	$(VENV)/bin/python bench/stream_joins.py
	$(VENV)/bin/python bench/latency.py
	$(VENV)/bin/python bench/table_joins.py
	$(VENV)/bin/python bench/floor.py

$(FLINK_STAMP): bench/constraints-flink.txt
	@command -v $(PYTHON) >/dev/null || { echo "need $(PYTHON) on PATH"; exit 1; }
	test -x $(FLINK_VENV)/bin/python || $(PYTHON) -m venv $(FLINK_VENV)
	$(FLINK_VENV)/bin/pip install -q --disable-pip-version-check -c bench/constraints-flink.txt apache-flink
	touch $(FLINK_STAMP)

.PHONY: flink-venv
flink-venv: $(FLINK_STAMP)

clean:
	rm -rf $(VENV) $(FLINK_VENV) var build *.egg-info
