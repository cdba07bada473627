"""The registry formats against the project's schema registry (the session's `schema_registry`):
the registry's API as clients use it, AVRO / PROTOBUF / JSON_SR keys and values both ways
(windowed keys too), schema inference when a declaration lists no columns, schema ids, and a
record that does not fit its schema going to the dead letters with where it was read and why.
No broker and no Spark: the codecs and the task runtime run in this process."""

from __future__ import annotations

import base64
import json
import urllib.error
import urllib.request
import uuid
from decimal import Decimal

import pytest

from streamjoin.app.compiling import compile_program
from streamjoin.plan import plan_program
from streamjoin.plan.catalog import Catalog
from streamjoin.runtime.contract import InputRow, Rejected
from streamjoin.serde.formats import SerdeSpec, decode, encode_key, encode_value
from streamjoin.serde.registry_codecs import Registry, new_client
from streamjoin.serde.values import DecodeError

pytestmark = pytest.mark.integration
ROW = {"NAME": "n", "PRICE": 1.5, "TAGS": ["a", "b"], "ADDRESS": {"CITY": "c", "ZIP": 9}}
COLUMNS = {"ID": "BIGINT", "NAME": "STRING", "PRICE": "DOUBLE", "TAGS": "ARRAY<STRING>",
           "ADDRESS": "STRUCT<CITY STRING, ZIP INT>"}


def _topic() -> str:
    return f"t{uuid.uuid4().hex[:8]}"


def _call(registry: Registry, method: str, path: str, body: dict | None = None, auth: str | None = None):
    request = urllib.request.Request(f"{registry.url}/{path}", method=method,
                                     data=None if body is None else json.dumps(body).encode())
    if auth:
        request.add_header("Authorization", "Basic " + base64.b64encode(auth.encode()).decode())
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


@pytest.mark.parametrize("fmt", ["AVRO", "PROTOBUF", "JSON_SR"])
def test_keys_and_values_round_trip_with_the_schema_the_subject_gets(schema_registry, fmt):
    topic = _topic()
    spec = SerdeSpec.of(COLUMNS, key=["ID"], key_format=fmt, value_format=fmt, topic=topic)
    key, value = encode_key(spec, (7,)), encode_value(spec, ROW)
    assert key[:1] == value[:1] == b"\x00"  # the registry's framing: magic byte, then the schema id
    assert decode(spec, key, value, 0) == ((7,), ROW, 0)
    subjects = _call(schema_registry, "GET", "subjects")
    assert {f"{topic}-key", f"{topic}-value"} <= set(subjects)


# proto3 has no NULL: a NULL DECIMAL (a string field) is written as "" wherever it is, and read back
# as NULL, nested or not (a NULL MAP value is left out when written: formats.md).
NESTED_DECIMALS = [
    ("DECIMAL(4, 2)", None, None),
    ("STRUCT<A DECIMAL(4, 2), B STRING>", {"A": None, "B": "x"}, {"A": None, "B": "x"}),
    ("STRUCT<S STRUCT<A DECIMAL(4, 2)>>", {"S": {"A": None}}, {"S": {"A": None}}),
    ("ARRAY<DECIMAL(4, 2)>", [Decimal("1.50"), None], [Decimal("1.50"), None]),
    ("ARRAY<STRUCT<A DECIMAL(4, 2)>>", [{"A": None}, {"A": Decimal("0.25")}], [{"A": None}, {"A": Decimal("0.25")}]),
    ("MAP<STRING, STRUCT<A DECIMAL(4, 2)>>", {"k": {"A": None}}, {"k": {"A": None}}),
]


@pytest.mark.parametrize("column, written, read", NESTED_DECIMALS, ids=[c for c, _, _ in NESTED_DECIMALS])
def test_a_null_protobuf_decimal_reads_back_as_null_nested_or_not(schema_registry, column, written, read):
    spec = SerdeSpec.of({"ID": "INT", "D": column, "N": "INT"}, key=["ID"], value_format="PROTOBUF", topic=_topic())
    assert decode(spec, None, encode_value(spec, {"D": written, "N": 1}), 0).value == {"D": read, "N": 1}


def test_an_unwrapped_protobuf_struct_reads_its_null_decimal_as_null(schema_registry):
    # WRAP_SINGLE_VALUE=false: the message is the STRUCT itself, not a record holding it
    spec = SerdeSpec.of({"ID": "INT", "S": "STRUCT<A DECIMAL(4, 2), B STRING>"}, key=["ID"], value_format="PROTOBUF",
                        topic=_topic(), wrap_single_value=False)
    assert decode(spec, None, encode_value(spec, {"S": {"A": None, "B": "x"}}), 0).value == {"S": {"A": None, "B": "x"}}


def test_a_protobuf_field_of_another_shape_than_declared_is_a_decode_error(schema_registry):
    topic = _topic()
    written = SerdeSpec.of({"ID": "INT", "D": "STRING", "N": "INT"}, key=["ID"], value_format="PROTOBUF", topic=topic)
    read = SerdeSpec.of({"ID": "INT", "D": "ARRAY<DECIMAL(4, 2)>", "N": "INT"}, key=["ID"], value_format="PROTOBUF",
                        topic=topic)
    with pytest.raises(DecodeError, match="D"):  # not the string's characters read as decimals
        decode(read, None, encode_value(written, {"D": "15", "N": 1}), 0)


@pytest.mark.parametrize("window, bounds", [("TIME", (1000, 6000)), ("SESSION", (1000, 3000))])
def test_a_windowed_key_keeps_its_bounds_after_the_registry_framing(schema_registry, window, bounds):
    spec = SerdeSpec.of({"ID": "INT", "V": "BIGINT"}, key=["ID"], key_format="AVRO", value_format="JSON",
                        topic=_topic(), window=window, window_size_ms=5000 if window == "TIME" else None)
    assert decode(spec, encode_key(spec, (3, *bounds)), None, 0).key == (3, *bounds)


def test_a_declaration_without_columns_takes_them_from_the_registry(schema_registry):
    topic = _topic()
    schema = json.dumps({"type": "record", "name": "r", "fields": [{"name": "NAME", "type": "string"},
                                                                   {"name": "AMOUNT", "type": "long"}]})
    _call(schema_registry, "POST", f"subjects/{topic}-value/versions", {"schema": schema})
    program = plan_program(f"CREATE STREAM s WITH (kafka_topic='{topic}', value_format='AVRO');", Catalog(), "ksqldb")
    source = program.catalog.get("S")
    assert [(n, str(t)) for n, t in source.columns.items()] == [("NAME", "STRING"), ("AMOUNT", "BIGINT")]


def test_a_schema_id_names_the_schema_and_import_mode_keeps_the_id(schema_registry):
    topic, sid = _topic(), 900000 + int(uuid.uuid4().hex[:4], 16)
    _call(schema_registry, "PUT", f"mode/{topic}-value", {"mode": "IMPORT"})
    answer = _call(schema_registry, "POST", f"subjects/{topic}-value/versions",
                   {"schema": '{"type":"object","properties":{"VAL":{"type":"string"}}}', "schemaType": "JSON",
                    "id": sid})
    assert answer == {"id": sid}
    program = plan_program(f"CREATE STREAM s WITH (kafka_topic='{topic}', value_format='JSON_SR', "
                           f"value_schema_id={sid});", Catalog(), "ksqldb")
    assert list(program.catalog.get("S").columns) == ["VAL"]
    assert new_client(schema_registry).get_schema(sid).schema_type == "JSON"


def test_a_registry_with_basic_auth_refuses_a_request_without_it(streamjoin_home):
    from streamjoin import services

    port = services.free_port()
    process = services.launch([__import__("sys").executable, "-m", "streamjoin.registry.server", "--port",
                               str(port), "--basic-auth", "user:secret"], streamjoin_home / "auth-registry.log", False)
    try:
        registry = Registry(f"http://127.0.0.1:{port}", "user:secret")
        services.await_ready(process, lambda: _answers(registry), "registry", port, streamjoin_home / "x.log",
                             b"streamjoin.registry.server", 20.0, 0.05)
        with pytest.raises(urllib.error.HTTPError, match="401"):
            _call(registry, "GET", "subjects")
        spec = SerdeSpec.of({"ID": "BIGINT", "V": "STRING"}, key=["ID"], value_format="AVRO", topic=_topic(),
                            registry=registry)
        assert decode(spec, None, encode_value(spec, {"V": "x"}), 0).value == {"V": "x"}
    finally:
        services.terminate(process.pid, b"streamjoin.registry.server")


def _answers(registry: Registry) -> bool:
    try:
        _call(registry, "GET", "subjects", auth=registry.auth)
        return True
    except (urllib.error.URLError, OSError):
        return False


@pytest.mark.parametrize("fmt, data", [("AVRO", b"not framed"), ("AVRO", b"\x00\x7f\xff\xff\xf0\x02"),
                                       ("PROTOBUF", b"\x00\x00\x00\x00"), ("JSON_SR", b"{\"broken\"")])
def test_bytes_that_do_not_fit_are_a_decode_error_with_the_reason(schema_registry, fmt, data):
    spec = SerdeSpec.of(COLUMNS, key=["ID"], value_format=fmt, topic=_topic())
    encode_value(spec, ROW)  # the subject has a schema
    with pytest.raises(DecodeError, match=f"not {fmt} of the registry's schema"):
        decode(spec, None, data, 0)


def test_a_record_that_does_not_fit_its_schema_is_a_dead_letter_naming_where_it_was_read(schema_registry):
    topic = _topic()
    program = plan_program(f"CREATE STREAM s (id BIGINT KEY, v STRING) WITH (kafka_topic='{topic}', "
                           "value_format='AVRO');\nCREATE STREAM out AS SELECT * FROM s;", Catalog(), "ksqldb")
    query = compile_program(program)[-1]
    runtime = query.factory(0)
    outputs = runtime.process(InputRow(topic, 0, 41, 0, None, b"\x00\x00\x00\x00\x63garbage"))
    rejected = [o for o in outputs if isinstance(o, Rejected)]
    assert rejected and rejected[0].reason.startswith(f"{topic}[0]@41: value: not AVRO of the registry's schema")


def test_the_registry_command_starts_reports_and_stops_the_projects_registry(tmp_path):
    import os
    import subprocess
    import sys

    env = {**os.environ, "STREAMJOIN_HOME": str(tmp_path)}
    env.pop("STREAMJOIN_SCHEMA_REGISTRY_URL", None)

    def cli(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "streamjoin", "registry", *args], env=env, capture_output=True,
                              text=True, timeout=60)
    started = cli("start")
    assert started.returncode == 0 and "schema registry running: http://127.0.0.1:" in started.stdout
    try:
        status = cli("status")
        assert status.returncode == 0 and "(answering)" in status.stdout
    finally:
        assert "schema registry stopped" in cli("stop").stdout
    assert cli("status").returncode == 1
