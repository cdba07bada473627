"""All brokers gone under a running continuous query (issue 41 item 5, issue 35 item 3), between
two batches or in the middle of one (its tasks reading and writing): the run
ends with one line naming the bootstrap servers, within the configured timeout, and nothing else
on the terminal (no librdkafka log, no Spark or Python traceback); a restart while they are still
down says the same within the timeout; when they are back (Apache Kafka, its log kept on disk,
at its address) the query resumes from its checkpoint: every record once in the Delta table and,
after the documented dedupe, in the output topic. The restart sensor's backoff between such
restarts is tested in tests/platform/test_sensors.py."""

from __future__ import annotations

import json
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import pytest

from streamjoin.kafka import admin
from streamjoin.kafka import embedded as broker
from tests.integration.cli_runs import (RunProcess, delta_rows, own_broker, read_output, run_env, run_to_end,
                                        start_broker, write_project)
from tests.integration.outage import QUERY, SLACK_S, SOURCES, TIMEOUT_S, clicks, the_one_line

pytestmark = pytest.mark.integration

@dataclass(frozen=True)
class Case:
    """`first_batch`: records in the topic before the run starts; the brokers go away when
    `gone_when` says (its first batch ended; or its first batch planned, checkpoint offsets
    written, its tasks reading and writing), and `how`: stopped (its connections closed), or
    frozen (SIGSTOP: connections open and silent, as when its host or the network is gone; no
    client error comes, only silence)."""

    name: str
    first_batch: int
    gone_when: Literal["between batches", "mid-batch"]
    how: Literal["stopped", "frozen"]


CASES = [Case("between batches, stopped", 100, "between batches", "stopped"),
         Case("mid-batch, frozen", 200_000, "mid-batch", "frozen")]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_brokers_gone_under_a_running_query(tmp_path, case):
    settings = own_broker(tmp_path / "broker")
    try:
        bootstrap = start_broker(settings)
        sql = write_project(tmp_path, SOURCES, {"pages": QUERY})
        admin.create_topics(bootstrap, {"clicks": 2})
        clicks(bootstrap, 0, case.first_batch)
        env = run_env(tmp_path / "run", bootstrap, TIMEOUT_S)
        running = RunProcess.start(sql, "pages", env, "--mode", "continuous")
        if case.gone_when == "between batches":
            at = running.wait_for(f"input_rows={case.first_batch}")
            progress = next(text for when, text in running.out if when == at)
            assert float(progress.rsplit("rows_per_second=", 1)[1]) > 0, progress  # a continuous run's rate
        else:
            wait_for_file(tmp_path / "run" / "checkpoints" / "pages", "*/offsets/0", running)

        pid = broker.status(settings).pid
        broker.stop(settings) if case.how == "stopped" else os.kill(pid, signal.SIGSTOP)
        gone = time.monotonic()
        assert running.finish(TIMEOUT_S + SLACK_S + 30) == 1, running.text()
        line = the_one_line(running, bootstrap)
        said_after = running.err[0][0] - gone
        assert said_after <= TIMEOUT_S + SLACK_S, f"said {said_after:.1f} s after the brokers went away"
        if case.gone_when == "mid-batch":
            assert not [text for _, text in running.out if "input_rows=" in text], running.text()

        started = time.monotonic()
        restart = run_to_end(sql, "pages", env)
        restart_said = restart.err[0][0] - started
        assert restart.process.returncode == 1 and restart_said <= TIMEOUT_S + SLACK_S, restart.text()
        the_one_line(restart, bootstrap)

        if case.how == "stopped":
            assert start_broker(settings) == bootstrap  # back at its address, its log on disk
        else:
            os.kill(pid, signal.SIGCONT)
        clicks(bootstrap, case.first_batch, 50)
        resumed = run_to_end(sql, "pages", env)
        assert resumed.process.returncode == 0, resumed.text()
        read_again = 50 if case.gone_when == "between batches" else case.first_batch + 50
        assert f"input_rows={read_again} " in resumed.out[-1][1], resumed.text()
        output = read_output(bootstrap, "PAGES")  # ksqlDB names the stream, and its topic, in capitals
        pages = sorted(json.loads(r.value)["PAGE"] for r in output.kept)
        table = sorted(row["PAGE"] for row in delta_rows(tmp_path / "run" / "delta" / "pages"))
        expected = sorted(f"p{i}" for i in range(case.first_batch + 50))
        assert (pages, table, output.duplicates_without_id) == (expected, expected, 0)
        print(f"outage {case.name}: '{line}' {said_after:.1f} s after the brokers went away (timeout "
              f"{TIMEOUT_S:g} s); a restart while down said it after {restart_said:.1f} s; resumed: {len(pages)} "
              f"results read of {len(expected)} inputs ({output.raw} raw), Delta {len(table)} rows, 0 lost")
    finally:
        state = broker.status(settings)
        if state is not None:
            os.kill(state.pid, signal.SIGCONT)
        broker.stop(settings)


def wait_for_file(root: Path, pattern: str, run: RunProcess, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not list(root.glob(pattern)):
        assert time.monotonic() < deadline and run.process.poll() is None, run.text()
        time.sleep(0.05)
