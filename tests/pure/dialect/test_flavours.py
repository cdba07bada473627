"""The flavour classes: every switch's value per flavour, the registry and name lookup, and that
the expression options and the planner read the switches."""

from __future__ import annotations

import pytest

from streamjoin.dialect import FLAVOURS, FlinkDialect, LensesDialect, StreamJoin, StreamJoinError, dialect_for, parse
from streamjoin.dialect.flavours import Flavour, Flink, JoinModel, Ksqldb, Lenses, OutputKey, SqlStream, flavour
from streamjoin.expr.compile import ExprOptions
from streamjoin.plan import plan_program
from streamjoin.runtime.compiled import expr_options

ORDER = ("ksqldb", "flink", "lenses", "sqlstream")
K = OutputKey
# switch -> its value in ksqldb, flink, lenses, sqlstream
SWITCHES = {
    "upper_case_identifiers": (True, False, False, True),
    "expression_column_prefix": ("KSQL_COL_", "EXPR$", "EXPR$", "EXPR$"),
    "star_prefixes_alias": (True, False, False, False),
    "star_skips_key_column": (False, False, True, False),
    "star_skips_proctime": (False, True, False, False),
    "numbers_repeated_output_names": (False, False, False, True),
    "partitioned_join_star_lists_pseudo_columns": (True, False, False, False),
    "output_key": (K.PROJECTED_COLUMN, K.UPSERT_KEY, K.KEY_PSEUDO_COLUMN, K.NONE),
    "shared_names_prefix_alias": (True, False, False, False),
    "generated_names_count_unnamed": (True, False, False, False),
    "synthetic_join_key": (True, False, False, False),
    "join_key_must_be_projected": (True, False, False, False),
    "reserved_column_names": (("ROWTIME", "ROWPARTITION", "ROWOFFSET", "WINDOWSTART", "WINDOWEND"), (), (), ()),
    "rowtime_is_output_time": (False, False, False, True),
    "window_columns": (("WINDOWSTART", "WINDOWEND"), (), (), ()),
    "pseudo_columns": ((("ROWTIME", "BIGINT"), ("ROWPARTITION", "INT"), ("ROWOFFSET", "BIGINT")),) + ((("ROWTIME", "TIMESTAMP(3)"),),) * 3,
    "upper_case_sink_topic": (True, False, False, False),
    "create_kind_must_match": (True, False, False, False),
    "ddl_kind_from_key": (False, True, False, False),
    "table_requires_primary_key": (True, False, True, False),
    "format_property_covers_key": (True, False, False, False),
    "registry_format_names": (True, False, True, False),
    "joins_kafka_values": (False, True, True, True),
    "insert_matches_target_columns": (True, False, False, False),
    "store_as_clause": (False, False, True, False),
    "join_key_formats_must_match": (False, False, True, False),
    "sink_formats_from_source": (True, False, False, False),
    "multi_column_key_format": (None, "JSON", None, None),
    "header_columns": (True, False, False, False),
    "derived_tables": (False, True, False, False),
    "create_view": (False, True, False, False),
    "subquery_joins": (False, True, False, False),
    "window_table_functions": (False, True, False, False),
    "temporal_table_functions": (False, True, False, False),
    "connector_options": (False, True, False, False),
    "group_window_functions": (False, True, False, False),
    "join_hints": (False, True, False, False),
    "join_model": (JoinModel.KEYED, JoinModel.RELATIONAL, JoinModel.KEYED, JoinModel.WINDOWED),
    "implicit_key_join": (False, False, True, False),
    "select_kind_reads_sources": (False, False, True, False),
    "on_sides_single_table": (False, False, True, False),
    "equi_join_conditions_only": (True, False, False, False),
    "single_key_equality": (True, False, False, False),
    "table_right_join_stream": (False, False, True, False),
    "table_joins_on_primary_key": (True, False, False, False),
    "foreign_key_join_needs_source_table": (True, False, False, False),
    "foreign_key_tombstone_without_result": (True, False, False, False),
    "repartitions_tables": (False, False, True, False),
    "repartitions_to_match_partitions": (False, False, True, False),
    "zero_grace_by_default": (False, False, True, False),
    "eager_outer_without_grace": (True, False, False, False),
    "reemit_on_late_table_row": (False, False, True, False),
    "stream_join_store_retention": (True, False, False, False),
    "concat_skips_nulls": (True, False, False, False),
    "having_filters_groups": (True, True, False, True),
    "comparisons_need_matching_types": (True, False, False, False),
    "zero_based_substring": (False, False, True, False),
    "double_quoted_strings": (False, False, True, False),
    "cast_failure_is_null": (True, False, False, False),
    "sum_starts_at_zero": (True, False, False, False),
}


def test_registry_holds_one_instance_per_flavour_class():
    assert tuple(FLAVOURS) == ORDER
    assert [type(f) for f in FLAVOURS.values()] == [Ksqldb, Flink, Lenses, SqlStream]
    assert all(f.name == name and flavour(name) is f for name, f in FLAVOURS.items())


def test_every_switch_is_tested():
    declared = {name for name in vars(Flavour) if not name.startswith("_")} - {"name", "dialect"}
    assert declared == set(SWITCHES)


@pytest.mark.parametrize("switch", SWITCHES)
def test_switch_values(switch):
    assert tuple(getattr(FLAVOURS[name], switch) for name in ORDER) == SWITCHES[switch]


def test_parsing_dialects():
    assert isinstance(dialect_for("lenses"), LensesDialect)
    assert isinstance(dialect_for("flink"), FlinkDialect)  # back-quoted identifiers
    assert all(type(dialect_for(name)) is StreamJoin for name in ("ksqldb", "sqlstream"))
    assert dialect_for(Lenses()) is Lenses.dialect


@pytest.mark.parametrize("call", [
    lambda: flavour("ksql"), lambda: dialect_for("ksql"), lambda: parse("SELECT 1", "ksql"),
    lambda: plan_program("SELECT 1", None, "ksql"), lambda: expr_options("ksql"),
])
def test_unknown_name_is_rejected_with_rule_dialect(call):
    with pytest.raises(StreamJoinError) as caught:
        call()
    assert caught.value.rule == "dialect"
    assert "unknown dialect 'ksql'; choose one of ksqldb, flink, lenses, sqlstream" in str(caught.value)


def test_a_flavour_object_passes_through():
    lenses = FLAVOURS["lenses"]
    assert flavour(lenses) is lenses
    assert plan_program("", None, lenses).flavour is lenses


@pytest.mark.parametrize("name", ORDER)
def test_expression_options_come_from_the_switches(name):
    f = FLAVOURS[name]
    options = expr_options(name)
    assert options == ExprOptions.of(f)
    assert (options.concat_skips_nulls, options.zero_based_substring, options.double_quoted_strings,
            options.cast_failure_is_null, options.sum_starts_at_zero) == \
        (f.concat_skips_nulls, f.zero_based_substring, f.double_quoted_strings, f.cast_failure_is_null,
         f.sum_starts_at_zero)


def test_default_expression_options_are_ksqldb():
    assert ExprOptions() == ExprOptions.of(Ksqldb())


def test_planner_reads_switches_not_names():
    """A custom flavour: Flink with ksqlDB's names gets ksqlDB's naming and sink topic."""

    class ShoutingFlink(Flink):
        name = "shouting-flink"
        upper_case_identifiers = True
        upper_case_sink_topic = True

    program = plan_program("CREATE TABLE t (id INT, v INT) WITH ('topic'='t');\n"
                           "CREATE STREAM out AS SELECT id, v + 1 FROM t;", None, ShoutingFlink())
    [query] = program.queries
    assert (query.value_columns, query.sink.topic, program.catalog.get("t").kind) == (("ID", "EXPR$1"), "OUT", "stream")
