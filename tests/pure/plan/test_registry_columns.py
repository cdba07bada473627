"""ksqlDB declarations in the registry formats, without a registry: the format names each flavour
knows, the default formats a SET names, and joins of KAFKA values refused where ksqlDB refuses
them (streamjoin.plan.registry_columns). Inference itself needs a registry:
tests/integration/test_registry_formats.py."""

from __future__ import annotations

import pytest

from streamjoin.dialect import StreamJoinError
from streamjoin.plan import plan_program
from streamjoin.plan.catalog import Catalog

KAFKA_VALUES = ("CREATE STREAM L (ID BIGINT KEY, NAME STRING) WITH (kafka_topic='l', value_format='KAFKA');\n"
                "CREATE STREAM R (ID BIGINT KEY, NAME STRING) WITH (kafka_topic='r', value_format='KAFKA');\n")


def test_a_join_of_kafka_values_is_refused_naming_the_sources():
    with pytest.raises(StreamJoinError) as error:
        plan_program(KAFKA_VALUES + "CREATE STREAM O WITH (value_format='DELIMITED') AS SELECT * FROM L "
                     "JOIN R WITHIN 1 SECOND ON L.ID = R.ID;", Catalog(), "ksqldb")
    assert error.value.rule == "format" and "L, R use the KAFKA value format" in str(error.value)


@pytest.mark.parametrize("setting", ["SET 'ksql.persistence.default.format.key'='DELIMITED';\n", ""])
def test_the_default_key_format_is_the_one_a_set_names(setting):
    program = plan_program(setting + "CREATE STREAM S (ID INT KEY, V STRING) WITH (kafka_topic='s', "
                           "value_format='JSON');", Catalog(), "ksqldb")
    assert program.catalog.get("S").key_format == ("DELIMITED" if setting else "KAFKA")


@pytest.mark.parametrize("dialect, sql, fmt", [
    ("ksqldb", "CREATE STREAM S (ID INT KEY, V STRING) WITH (kafka_topic='s', value_format='PROTOBUF_NOSR');",
     "PROTOBUF_NOSR"),
    ("flink", "CREATE TABLE s (v STRING) WITH ('connector' = 'kafka', 'topic' = 's', 'format' = 'avro-confluent', "
              "'avro-confluent.url' = 'http://registry:8081');", "AVRO"),
])
def test_each_flavour_names_the_registry_formats_its_own_way(dialect, sql, fmt):
    source = next(iter(plan_program(sql, Catalog(), dialect).catalog))
    assert source.value_format == fmt
    assert source.schemas.registry_url == ("http://registry:8081" if dialect == "flink" else None)


def test_a_schema_id_is_a_whole_number():
    with pytest.raises(StreamJoinError, match="VALUE_SCHEMA_ID is a schema id"):
        plan_program("CREATE STREAM S (ID INT KEY, V STRING) WITH (kafka_topic='s', value_format='AVRO', "
                     "value_schema_id='x');", Catalog(), "ksqldb")


@pytest.mark.parametrize("select, named", [("K, DATA AS DATA_1", "DATA_2"),
                                           ("K, DATA AS DATA_1, DATA AS DATA_2, DATA AS DATA_3", "DATA_3")])
def test_insert_into_writes_exactly_the_targets_columns(select, named):
    sql = ("CREATE STREAM S (K STRING KEY, DATA STRING) WITH (kafka_topic='s', value_format='JSON');\n"
           "CREATE STREAM OUT AS SELECT K, DATA AS DATA_1, DATA AS DATA_2 FROM S;\n"
           f"INSERT INTO OUT SELECT {select} FROM S;")
    with pytest.raises(StreamJoinError, match=f"INSERT INTO OUT writes the columns .*{named}"):
        plan_program(sql, Catalog(), "ksqldb")
