"""`load_project(..., on_error="collect")`: a broken file is listed with its positioned error
while every other file loads (a broken sources.sql breaks the queries of its folder only);
the default still raises the first error."""

import shutil
from dataclasses import dataclass

import pytest

from streamjoin.app.project import load_project
from streamjoin.dialect.errors import StreamJoinError
from tests.paths import REPO

UNWINDOWED = "CREATE STREAM broken AS\n  SELECT * FROM orders o JOIN payments p ON p.id = o.id;\n"


@dataclass(frozen=True)
class Case:
    name: str
    files: dict  # relative path -> text written over a copy of sql/
    broken: dict  # query name -> the start of its error
    still_loaded: set  # some queries that load anyway


CASES = [
    Case("one broken query", {"ksqldb/broken.sql": UNWINDOWED},
         {"broken": "ksqldb/broken.sql:2:"}, {"pageviews_enriched", "customer_orders"}),
    Case("not UTF-8", {"flink/latin1.sql": b"-- caf\xe9\nSELECT 1;"},
         {"latin1": "flink/latin1.sql:1:7: [encoding]"}, {"pageviews_enriched"}),
    Case("a broken sources.sql breaks its folder's queries only",
         {"lenses/sources.sql": "CREATE STREAM (;"},
         {"customer_orders": "lenses/sources.sql:1:"}, {"pageviews_enriched",
                                                         "orders_with_product_price"}),
    # issue 41: what would take Dagster's whole code location down breaks one file only
    Case("a file name Dagster cannot use", {"ksqldb/page views.sql": "SELECT * FROM pageviews;",
                                            "ksqldb/café.sql": "SELECT * FROM pageviews;"},
         {"page_views": "ksqldb/page views.sql:1:1: [query-name]", "caf_": "ksqldb/café.sql:1:1: [query-name]"},
         {"pageviews_enriched"}),
    Case("a second writer of an output topic",
         {"ksqldb/copy.sql": "-- dialect: ksqldb\nCREATE STREAM copy WITH (kafka_topic='PAGEVIEWS_ENRICHED') AS\n"
                             "  SELECT * FROM pageviews;\n"},
         {"pageviews_enriched": "ksqldb/pageviews_enriched.sql:4:1: [duplicate-output]"}, {"copy", "customer_orders"}),
    Case("two files of one name", {"lenses/pageviews_enriched.sql": "SELECT STREAM * FROM customer_orders_in;"},
         {"pageviews_enriched_2": "lenses/pageviews_enriched.sql:1:1: [duplicate-name]"}, {"customer_orders"}),
    Case("a broken file named like a query", {"ksqldb/customer-orders.sql": "SELECT * FROM nowhere;",
                                              "ksqldb/customer_orders.sql": "SELECT * FROM nowhere;"},
         {"customer_orders_2": "ksqldb/customer-orders.sql:1:1: [query-name]",
          "customer_orders_3": "ksqldb/customer_orders.sql:1:15: [unknown-relation]"}, {"customer_orders"}),
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_collect_keeps_the_good_files(tmp_path, case):
    root = tmp_path / "sql"
    shutil.copytree(REPO / "sql", root)
    for relative, text in case.files.items():
        path = root / relative
        path.write_bytes(text) if isinstance(text, bytes) else path.write_text(text)
    project = load_project(root, on_error="collect")
    found = {b.name: str(b.error).removeprefix(str(root) + "/") for b in project.broken}
    assert set(found) == set(case.broken)
    for name, start in case.broken.items():
        assert found[name].startswith(start), found[name]
    assert case.still_loaded <= {q.name for q in project.queries}
    with pytest.raises(StreamJoinError):
        load_project(root)  # the default raises
