"""The Python workers of the session's stateful steps fork from streamjoin's daemon, so they group
transformWithStateInPandas's input a column at a time (`grouped_rows`), and each group still gets
exactly its own rows."""

from __future__ import annotations

import json


def test_stateful_workers_group_their_rows_column_wise(spark, tmp_path):
    import pandas as pd
    from pyspark.sql.streaming.stateful_processor import StatefulProcessor

    class Reporting(StatefulProcessor):  # defined here, so it travels by value
        def init(self, handle) -> None:
            pass

        def handleInputRows(self, key, rows, timerValues):
            from pyspark.sql.pandas.serializers import TransformWithStateInPandasSerializer

            frame = pd.concat(list(rows))
            yield pd.DataFrame({"k": [int(key[0])], "rows": [len(frame)], "ids": [int(frame["id"].sum())],
                                "grouping": [TransformWithStateInPandasSerializer.load_stream.__module__]})

        def close(self) -> None:
            pass

    (tmp_path / "in").mkdir()
    # five keys of 6,000 rows each
    (tmp_path / "in" / "rows.json").write_text("".join(json.dumps({"k": i % 5, "id": i}) + "\n" for i in range(30_000)))
    got = []
    rows = spark.readStream.schema("k long, id long").json(str(tmp_path / "in"))
    query = (rows.groupBy("k").transformWithStateInPandas(Reporting(), "k long, rows long, ids long, grouping string",
                                                          "Append", "None")
             .writeStream.option("checkpointLocation", str(tmp_path / "checkpoint"))
             .foreachBatch(lambda batch, _: got.extend(batch.collect())).trigger(availableNow=True).start())
    query.awaitTermination()
    assert sorted((r.k, r.rows, r.ids, r.grouping) for r in got) == [
        (k, 6_000, sum(range(k, 30_000, 5)), "streamjoin.spark.grouped_rows") for k in range(5)]
