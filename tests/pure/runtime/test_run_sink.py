"""What the fast paths share (`streamjoin.runtime.run_sink`), on each of them: a run whose
results cannot be encoded a column at a time goes one by one, as the record path sends them; and a
runtime checkpointed between two runs takes its fast path again, with the same results."""

from __future__ import annotations

import pickle
import random
from dataclasses import dataclass
from typing import Callable

import pytest
from pyspark import cloudpickle  # how the Spark adapter checkpoints a runtime (compiled closures)

from streamjoin.runtime import run_sink
from tests.pure.runtime import test_lookup, test_upserts, test_within


@dataclass(frozen=True)
class Path:
    name: str
    case: test_lookup.Case  # a query whose results are written a column at a time
    inputs: Callable  # (case, runtime, rng, count) -> rows
    state: Callable  # runtime -> what its join holds


PATHS = [
    Path("stream-table", test_lookup.CASES[0], test_lookup.changelog, test_lookup.state),
    Path("stream-stream", test_within.CASES[1], test_within.inputs, test_within.state),
    Path("table-table", test_upserts.CASES[1], test_upserts.updates, test_upserts.state),  # tombstones too
]


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_a_run_whose_columns_cannot_be_encoded_goes_one_by_one_with_the_same_results(path: Path, monkeypatch):
    def refuse(spec, columns):
        raise ValueError("refused")  # as a writer refuses a value it cannot encode
    monkeypatch.setattr(run_sink, "encode_value_columns", refuse)
    reference, in_runs, _ = test_lookup.runtimes(path.case)
    assert in_runs.fast_paths[path.case.stream].plain
    rows = path.inputs(path.case, reference, random.Random(5), 400)
    assert list(in_runs.process_all(rows)) == [(row, reference.process_record(row)) for row in rows]
    assert path.state(in_runs) == path.state(reference)


@pytest.mark.parametrize("path", PATHS, ids=lambda p: p.name)
def test_a_runtime_checkpointed_and_restored_takes_the_fast_path_again(path: Path):
    reference, fast, _ = test_lookup.runtimes(path.case)
    rows = path.inputs(path.case, reference, random.Random(9), 300)
    expected = [(row, reference.process_record(row)) for row in rows]
    first = list(fast.process_all(rows[:150]))
    restored = pickle.loads(cloudpickle.dumps(fast))
    assert "fast_paths" not in restored.__dict__  # derived from the pipeline, never checkpointed
    assert first + list(restored.process_all(rows[150:])) == expected
    assert restored.fast_paths
    assert path.state(restored) == path.state(reference)
