"""Batch figures (streamjoin/spark/batch_figures.py) without Spark: what a query's batch writer
leaves beside the checkpoint, folded into the run's report the way `StreamingRun` folds it —
whichever process wrote it (a Spark Connect server's Python worker writes them there too).

Timeline of the run below (two tasks):

    batch 0: task 0 reads 3 (stream time 100), task 1 reads 2 (stream time 40); 4 out
    fold     -> input 5, output 4, watermark 40 (the task furthest behind)
    batch 1: task 1 reads 1 (stream time 90), a null key; the table refuses 1 result (a dead
             letter the task counts); 0 out; the driver took one figures row a task
    batch 1 again (Spark replays a failed batch): the same file, rewritten
    fold     -> input 6, output 4, watermark 90, dead letters 1, dropped 1
    fold     -> nothing new
"""

from __future__ import annotations

import pickle

from streamjoin.runtime.report import RunReport
from streamjoin.spark.batch_figures import BatchFigures


def task(number: int, stream_time: int | None, **counts: int) -> dict:
    return {"task": number, "stream_time": stream_time, "counts": counts, "seconds": {"operators": 0.5}}


def batch(tasks: list[dict], output_rows: int, rejected_by_table: int = 0, delta_version: int | None = None) -> dict:
    return {"tasks": tasks, "rejected_by_table": rejected_by_table, "delta_version": delta_version,
            "output_rows": output_rows, "driver_rows": len(tasks),
            "seconds": {"driver.collect": 1.0, "driver.produce": 0.25}}


def test_batches_fold_into_the_report_once_each_in_batch_order(tmp_path):
    figures = BatchFigures(tmp_path / "checkpoint")
    figures.clear()
    writer = pickle.loads(pickle.dumps(figures))  # the batch writer runs wherever Spark runs it
    report = RunReport(query="q")

    writer.write(0, batch([task(0, 100, input_records=3), task(1, 40, input_records=2)], output_rows=4,
                          delta_version=7))
    assert figures.fold_into(report) == 1
    assert (report.input_rows, report.output_rows, report.watermark_ms, report.batches) == (5, 4, 40, 1)
    assert report.delta_version == 7

    refused = task(1, 90, input_records=1, null_key=1, dead_letters=1)
    writer.write(1, batch([refused], output_rows=0, rejected_by_table=1))
    writer.write(1, batch([refused], output_rows=0, rejected_by_table=1))
    assert figures.fold_into(report) == 1
    assert (report.input_rows, report.output_rows, report.watermark_ms) == (6, 4, 90)
    assert (report.dead_letters, report.dropped_records, report.batches) == (1, 1, 2)
    assert report.delta_version == 7  # a batch that wrote no Delta version keeps the last one
    assert report.extra == {"input_records": 6, "null_key": 1, "dead_letters": 1}
    assert report.driver_rows == 3
    assert report.seconds == {"task.operators": 1.5, "driver.collect": 2.0, "driver.produce": 0.5}
    assert report.batch_duration_ms == 1250

    assert figures.fold_into(report) == 0
    assert report.input_rows == 6


def test_a_new_run_does_not_report_what_an_earlier_run_left(tmp_path):
    checkpoint = tmp_path / "checkpoint"
    earlier = BatchFigures(checkpoint)
    earlier.clear()
    earlier.write(3, batch([task(0, 10, input_records=9)], output_rows=9))  # the run died before folding

    figures = BatchFigures(checkpoint)
    figures.clear()
    report = RunReport(query="q")
    assert figures.fold_into(report) == 0
    assert report.input_rows == 0
