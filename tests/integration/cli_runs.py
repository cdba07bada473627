"""Queries run as a user runs them: `streamjoin run` processes on a broker of the test's own (the
outage and kill -9 tests stop, restart and kill what they start, so the session's broker is left
alone). What they read back is public: the output topic (deduplicated as documented) and the
Delta table."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from streamjoin.kafka import admin
from streamjoin.kafka import embedded as broker
from streamjoin.kafka.records import REPLAY_HEADER, dedupe_replayed
from streamjoin.settings import BrokerKind, Settings
from tests.paths import REPO

RUN_TIMEOUT_S = 240.0


def own_broker(home: Path) -> Settings:
    """Settings of an embedded Apache Kafka under `home` (started by `start_broker`)."""
    return Settings(home=home, broker_kind=BrokerKind.KAFKA)


def start_broker(settings: Settings) -> str:
    return broker.start(settings, detached=False).bootstrap  # dies with the test process


def write_project(root: Path, sources: str, queries: dict[str, str]) -> Path:
    sql = root / "sql"
    sql.mkdir(parents=True, exist_ok=True)
    (sql / "sources.sql").write_text(sources)
    for name, text in queries.items():
        (sql / f"{name}.sql").write_text(text)
    return sql


def run_env(home: Path, bootstrap: str, timeout_s: float = 10.0) -> dict[str, str]:
    """A `streamjoin run` process's environment: its own state home (checkpoints, Delta root),
    the broker by address (a run never starts one of its own)."""
    return {**os.environ, "STREAMJOIN_HOME": str(home), "STREAMJOIN_KAFKA_BOOTSTRAP": bootstrap,
            "STREAMJOIN_KAFKA_TIMEOUT_S": f"{timeout_s:g}", "PYTHONPATH": str(REPO)}


@dataclass
class RunProcess:
    """A `streamjoin run` subprocess whose stdout and stderr lines are collected as they come,
    each with the monotonic time it arrived."""

    process: subprocess.Popen
    out: list[tuple[float, str]] = field(default_factory=list)
    err: list[tuple[float, str]] = field(default_factory=list)

    @classmethod
    def start(cls, sql: Path, query: str, env: dict, *extra: str, new_session: bool = False) -> RunProcess:
        """`new_session`: the process leads a process group of its own (its Spark JVM and Python
        workers in it), to be killed as a whole."""
        process = subprocess.Popen([sys.executable, "-m", "streamjoin", "run", str(sql), query, *extra],
                                   env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                   start_new_session=new_session)
        run = cls(process)
        for stream, lines in ((process.stdout, run.out), (process.stderr, run.err)):
            threading.Thread(target=_collect, args=(stream, lines), daemon=True).start()
        return run

    def wait_for(self, text: str, timeout_s: float = RUN_TIMEOUT_S, required: bool = True) -> float | None:
        """When a stdout line holding `text` came (fails if the process ends first); None after
        `timeout_s` without one when it is not `required`."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            for at, line in list(self.out):
                if text in line:
                    return at
            if self.process.poll() is not None and not any(text in line for _, line in self.out):
                time.sleep(0.2)  # the last lines may still be on their way
                if not any(text in line for _, line in self.out):
                    raise AssertionError(f"run ended ({self.process.returncode}) without {text!r}: {self.text()}")
            time.sleep(0.1)
        if required:
            raise AssertionError(f"no {text!r} within {timeout_s:.0f} s: {self.text()}")
        return None

    def finish(self, timeout_s: float = RUN_TIMEOUT_S) -> int:
        code = self.process.wait(timeout_s)
        time.sleep(0.2)  # the reader threads' last lines
        return code

    def stderr_lines(self) -> list[str]:
        return [line for _, line in self.err]

    def text(self) -> str:
        return "\n".join(["stdout:", *(line for _, line in self.out), "stderr:", *self.stderr_lines()])[-4000:]


def _collect(stream, lines: list) -> None:
    for line in stream:
        lines.append((time.monotonic(), line.rstrip("\n")))


def run_to_end(sql: Path, query: str, env: dict, *extra: str) -> RunProcess:
    run = RunProcess.start(sql, query, env, *extra)
    run.finish()
    return run


@dataclass(frozen=True)
class TopicRead:
    """An output topic read whole: its records, those the documented dedupe keeps, and whether
    every copy it dropped carried a replay id."""

    raw: int
    kept: list
    duplicates_without_id: int


def read_output(bootstrap: str, topic: str) -> TopicRead:
    records = sorted(admin.read_all(bootstrap, topic), key=lambda r: (r.partition, r.offset))
    kept = list(dedupe_replayed(records))
    kept_ids = {id(r) for r in kept}
    dropped = [r for r in records if id(r) not in kept_ids]
    return TopicRead(len(records), kept, sum(1 for r in dropped if r.header(REPLAY_HEADER) is None))


def delta_rows(path: Path) -> list[dict]:
    from deltalake import DeltaTable

    return DeltaTable(str(path)).to_pyarrow_table().to_pylist()
