"""The four flavours as classes of typed switches, like sqlglot's dialect classes: each switch
says what a flavour does where ksqlDB, Flink SQL, Lenses and SQLstream s-Server disagree. The
base class holds the standard-SQL answer; a flavour overrides what it does differently. Code
reads switches, never flavour names; `flavour(name)` resolves a name at the API boundary.
Where a `SET 'streamjoin.<option>'` exists, the switch is only its default."""

from __future__ import annotations

from enum import Enum

from sqlglot.dialects.dialect import Dialect

from streamjoin.dialect.dialect import FlinkDialect, LensesDialect, StreamJoin
from streamjoin.dialect.errors import StreamJoinError


class JoinModel(Enum):
    """How a JOIN becomes a join operator."""

    KEYED = "keyed"  # Kafka Streams: the inputs' kinds (stream/table) pick the join, joined on keys
    RELATIONAL = "relational"  # regular, interval, temporal or window join, from the condition and time attributes
    WINDOWED = "windowed"  # every stream input is bounded by its OVER window; tables are snapshots


class OutputKey(Enum):
    """What the output record's key is."""

    NONE = "none"  # no key: every projected column is in the value
    PROJECTED_COLUMN = "projected_column"  # the projected column equal to the key moves to the key
    KEY_PSEUDO_COLUMN = "key_pseudo_column"  # `_key` = the result key; the value keeps every column
    # The projected columns of the result's upsert key (plan/upsert_keys.py; none when it is not
    # projected); the value keeps every column. A deletion is a tombstone of that key.
    UPSERT_KEY = "upsert_key"


class Flavour:
    """A flavour's switches. Every name here is a behaviour; values are the standard-SQL ones."""

    name: str = ""
    dialect: Dialect = StreamJoin()  # the sqlglot dialect that parses and prints the flavour
    # -- names
    upper_case_identifiers: bool = False  # unquoted names are reported in upper case
    expression_column_prefix: str = "EXPR$"  # an unnamed projected expression n is <prefix>n
    star_prefixes_alias: bool = False  # SELECT * over a join names columns <ALIAS>_<COLUMN>
    star_skips_key_column: bool = False  # SELECT * leaves out the `_key` pseudo-column
    star_skips_proctime: bool = False  # SELECT * leaves out a PROCTIME() column
    # a name the SELECT list already holds gets the lowest number from 0 that makes it unique
    # appended (ID, ID0, ID1: s-Server's validator), instead of the duplicate-column error
    numbers_repeated_output_names: bool = False
    # SELECT * over a join that ends in PARTITION BY also lists each input's pseudo-columns
    # (<ALIAS>_ROWTIME, ...): ksqlDB re-keys the join's internal row, which carries copies of them
    partitioned_join_star_lists_pseudo_columns: bool = False
    output_key: OutputKey = OutputKey.NONE
    shared_names_prefix_alias: bool = False  # a join's column whose name several inputs have is <ALIAS>_<COLUMN>
    generated_names_count_unnamed: bool = False  # <prefix>n counts unnamed expressions (else n = position)
    synthetic_join_key: bool = False  # FULL OUTER and expression joins are keyed by a synthetic ROWKEY column
    # a persistent join query must project its key (option key_must_be_projected): ksqlDB 0.15+
    # insists; its documentation's examples leave the key out, which `false` accepts (the key
    # is then named after the join criteria)
    join_key_must_be_projected: bool = False
    reserved_column_names: tuple[str, ...] = ()  # pseudo-column names no output column may take
    # per-record columns every relation has without declaring them, with their types
    pseudo_columns: tuple[tuple[str, str], ...] = (("ROWTIME", "TIMESTAMP(3)"),)
    rowtime_is_output_time: bool = False  # unqualified ROWTIME: the later input's; projected, the record ts
    window_columns: tuple[str, ...] = ()  # BIGINT pseudo-columns of a windowed key's bounds (start, end)
    upper_case_sink_topic: bool = False  # a CREATE ... AS SELECT writes to its name upper-cased
    create_kind_must_match: bool = False  # CREATE STREAM|TABLE must name the kind the query yields
    ddl_kind_from_key: bool = False  # DDL: no key = append-only stream, key + watermark = versioned
    table_requires_primary_key: bool = False  # CREATE TABLE must name its PRIMARY KEY (tables join on keys)
    format_property_covers_key: bool = False  # WITH (FORMAT=...) sets the key format too (else value only)
    # AVRO, PROTOBUF, JSON_SR, PROTOBUF_NOSR name the schema-registry formats (ksqlDB's names, which
    # Lenses' AVRO and PROTOBUF mean too); else only 'avro-confluent' does (Flink's 'avro' has no registry)
    registry_format_names: bool = False
    joins_kafka_values: bool = True  # False: a join of a source whose value is in the KAFKA format is refused
    insert_matches_target_columns: bool = False  # INSERT INTO writes exactly the target's columns, by name
    # INSERT INTO t STORE [KEY AS f] [VALUE AS f] SELECT ...: the formats the result is written in
    # (Lenses' storage format names: STRING, INT, LONG, DOUBLE, BYTES, JSON, AVRO, PROTOBUF)
    store_as_clause: bool = False
    # a persistent query's sink takes the formats of the first source in its FROM unless it names
    # its own (else the default KAFKA key and JSON value)
    sink_formats_from_source: bool = False
    # The format of a source key of several columns when none is declared (the default KAFKA
    # format holds one column; None: such a key must declare its format).
    multi_column_key_format: str | None = None
    # DDL columns may read the record's headers: `HEADERS` (all of them, in order) and
    # `HEADER('k')` (the bytes of the last header named k)
    header_columns: bool = False
    # -- relations (standard SQL that not every flavour reads)
    derived_tables: bool = False  # a subquery in FROM / JOIN is a relation (`FROM (SELECT ...) t`)
    create_view: bool = False  # CREATE [TEMPORARY] VIEW v AS query: a named query later statements read
    subquery_joins: bool = False  # WHERE [NOT] IN / [NOT] EXISTS (subquery): a semi / anti join
    window_table_functions: bool = False  # FROM TABLE(TUMBLE|HOP|CUMULATE(...)): windowed rows
    # CREATE FUNCTION f AS history.createTemporalTableFunction(time, key), read by LATERAL TABLE (f(t))
    temporal_table_functions: bool = False
    # a declaration's 'connector', 'topic', 'scan.startup.*' and 'properties.*' options are read
    # and checked (plan.connectors)
    connector_options: bool = False
    group_window_functions: bool = False  # GROUP BY TUMBLE|HOP(time, ...) with TUMBLE_START/_END/_ROWTIME
    join_hints: bool = False  # SELECT /*+ STATE_TTL(...), BROADCAST(...) ... */ (else hints are rejected)
    # -- joins
    join_model: JoinModel = JoinModel.RELATIONAL
    implicit_key_join: bool = False  # a JOIN without ON joins the inputs' keys
    # SELECT STREAM|TABLE reads each source the query names directly as a stream or a table,
    # whatever its declaration says (Lenses: the query, not the topic, decides)
    select_kind_reads_sources: bool = False
    on_sides_single_table: bool = False  # ON: `=` with one table each side, or one-table predicates, ANDed
    equi_join_conditions_only: bool = False  # ON: key equalities only (option allow_non_equi_predicates)
    single_key_equality: bool = False  # one key equality per join (option allow_multi_column_keys)
    table_right_join_stream: bool = False  # table RIGHT JOIN stream is accepted (as stream LEFT JOIN table)
    table_joins_on_primary_key: bool = False  # a table is joined on its key; else a foreign-key join
    foreign_key_join_needs_source_table: bool = False  # a foreign-key join's left input is a declared table
    # a deleted or unmatched left row of a foreign-key join is a tombstone even without a result row
    # to delete (Kafka Streams does; option fk_redundant_tombstones); ksqlDB's documentation shows
    # none (`false`), since a tombstone for a key never written changes nothing
    foreign_key_tombstone_without_result: bool = False
    repartitions_tables: bool = False  # a table not keyed by its join expressions is re-keyed
    repartitions_to_match_partitions: bool = False  # the input with fewer partitions is repartitioned
    join_key_formats_must_match: bool = False  # a keyed join's inputs' keys must be in one format (Lenses)
    zero_grace_by_default: bool = False  # a WITHIN without GRACE closes once stream time passes it
    eager_outer_without_grace: bool = False  # no GRACE: unmatched outer rows at once (option eager_outer)
    reemit_on_late_table_row: bool = False  # a late table row re-emits LEFT stream-table rows (option reemit_on_table_update)
    # stream-stream late records as Kafka Streams treats them (option window_store_retention):
    # each side's window store keeps records for before + after + grace by that side's own
    # stream time, and a late record still joins what the other store holds (an unmatched outer
    # one is emitted at once); ksqlDB's documentation discards a record later than window end +
    # grace (`false`; conformance ksqldb.stream_stream.late_record_discarded)
    stream_join_store_retention: bool = False
    # -- clauses
    having_filters_groups: bool = True  # HAVING filters a GROUP BY's groups (else the clause is rejected)
    # -- expressions
    comparisons_need_matching_types: bool = False  # `x > '100'` with a numeric x is an error, not a coercion
    concat_skips_nulls: bool = False  # CONCAT treats a NULL argument as '' (else the result is NULL)
    zero_based_substring: bool = False  # SUBSTR(s, start[, end]): zero-based, `end` exclusive
    double_quoted_strings: bool = False  # an unresolvable "name" is a string literal
    cast_failure_is_null: bool = False  # a CAST that cannot convert a value yields NULL (else an error)
    sum_starts_at_zero: bool = False  # SUM over no non-NULL value is 0 (else NULL, standard SQL)


class Ksqldb(Flavour):
    """ksqlDB: Kafka Streams joins on keys, with its strict key rules and output key naming."""

    name = "ksqldb"
    upper_case_identifiers = True
    expression_column_prefix = "KSQL_COL_"
    star_prefixes_alias = True
    partitioned_join_star_lists_pseudo_columns = True
    output_key = OutputKey.PROJECTED_COLUMN
    shared_names_prefix_alias = True
    generated_names_count_unnamed = True
    synthetic_join_key = True
    reserved_column_names = ("ROWTIME", "ROWPARTITION", "ROWOFFSET", "WINDOWSTART", "WINDOWEND")
    pseudo_columns = (("ROWTIME", "BIGINT"), ("ROWPARTITION", "INT"), ("ROWOFFSET", "BIGINT"))
    window_columns = ("WINDOWSTART", "WINDOWEND")
    upper_case_sink_topic = True
    create_kind_must_match = True
    table_requires_primary_key = True
    format_property_covers_key = True
    registry_format_names = True
    joins_kafka_values = False  # ksqlDB's KAFKA value format does not support JOIN
    insert_matches_target_columns = True
    sink_formats_from_source = True
    header_columns = True
    join_model = JoinModel.KEYED
    equi_join_conditions_only = True
    single_key_equality = True
    table_joins_on_primary_key = True
    foreign_key_join_needs_source_table = True
    # where ksqlDB's engine and its documentation disagree, the engine (the documented behaviour
    # is one SET away: docs/semantics.md, "Coming from ksqlDB")
    join_key_must_be_projected = True
    foreign_key_tombstone_without_result = True
    stream_join_store_retention = True
    eager_outer_without_grace = True  # legacy: no GRACE keeps 24 h of lateness, outer rows at once
    concat_skips_nulls = True
    cast_failure_is_null = True  # its documented CAST: NULL when the value does not convert
    sum_starts_at_zero = True  # its SUM starts from 0 and skips NULLs (a LEFT JOIN's missing side sums to 0)
    comparisons_need_matching_types = True


class Flink(Flavour):
    """Flink SQL: dynamic tables, joins chosen from the condition and time attributes."""

    name = "flink"
    dialect = FlinkDialect()
    output_key = OutputKey.UPSERT_KEY
    multi_column_key_format = "JSON"  # what Flink's upsert connectors use for a composite key
    star_skips_proctime = True
    ddl_kind_from_key = True
    derived_tables = True
    create_view = True
    subquery_joins = True
    window_table_functions = True
    temporal_table_functions = True
    connector_options = True
    group_window_functions = True
    join_hints = True


class Lenses(Flavour):
    """Lenses SQL processors: Kafka Streams joins that re-key any input, `_key` as the key."""

    name = "lenses"
    dialect = LensesDialect()
    star_skips_key_column = True
    output_key = OutputKey.KEY_PSEUDO_COLUMN
    table_requires_primary_key = True
    join_model = JoinModel.KEYED
    implicit_key_join = True
    select_kind_reads_sources = True
    on_sides_single_table = True
    table_right_join_stream = True
    repartitions_tables = True
    repartitions_to_match_partitions = True
    join_key_formats_must_match = True  # "the key facet for both sources has to share the same initial format"
    store_as_clause = True
    registry_format_names = True  # its AVRO and PROTOBUF are a schema registry's (Confluent's wire format)
    zero_grace_by_default = True  # its sliding windows have no grace
    having_filters_groups = False  # its aggregations are SELECT ... [WINDOW BY ...] GROUP BY, no HAVING
    reemit_on_late_table_row = True
    zero_based_substring = True  # Java's String.substring
    double_quoted_strings = True  # `substr(name, 1) = "J"`


class SqlStream(Flavour):
    """SQLstream s-Server: streams joined within OVER windows, upper-case names."""

    name = "sqlstream"
    upper_case_identifiers = True
    numbers_repeated_output_names = True
    rowtime_is_output_time = True
    join_model = JoinModel.WINDOWED


FLAVOURS: dict[str, Flavour] = {f.name: f for f in (Ksqldb(), Flink(), Lenses(), SqlStream())}


def flavour(name: str | Flavour) -> Flavour:
    """The flavour called `name` (a Flavour is returned as is); unknown names are rejected."""
    if isinstance(name, Flavour):
        return name
    if name not in FLAVOURS:
        raise StreamJoinError(f"unknown dialect {name!r}; choose one of {', '.join(FLAVOURS)}", "dialect")
    return FLAVOURS[name]
