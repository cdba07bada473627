"""Cases with a schema registry (`formats.schema_registry`, `registry`, `expected_sources`; see
../shared/conformance/README.md): the schemas a case registers before `setup`, under its own
subjects (`<prefix><topic>-key|value`), the planner reading inferred columns from them, the
subjects deleted afterwards (an id a case names is free again for the next), and the case's
post-conditions on its sources' formats, windows and columns."""

from __future__ import annotations

import base64
import json
import threading
import urllib.error
import urllib.request
from contextlib import contextmanager
from typing import Iterator

from streamjoin.dialect.types import SqlType
from streamjoin.plan import inference
from streamjoin.runner.cases import Case
from streamjoin.serde.registry_codecs import Registry, schema_reader


class CaseRegistry:
    """One registry shared by the cases of a run. Cases that name schema ids hold `_fixed_ids`
    while they run: two cases may give one id to different schemas."""

    def __init__(self, registry: Registry) -> None:
        self.registry = registry
        self._fixed_ids = threading.Lock()

    def _call(self, method: str, path: str, body: dict | None = None) -> object:
        request = urllib.request.Request(f"{self.registry.url.rstrip('/')}/{path.lstrip('/')}", method=method,
                                         data=None if body is None else json.dumps(body).encode(),
                                         headers={"Content-Type": "application/vnd.schemaregistry.v1+json"})
        if self.registry.auth:
            request.add_header("Authorization", "Basic " + base64.b64encode(self.registry.auth.encode()).decode())
        try:
            with urllib.request.urlopen(request, timeout=30) as answer:
                return json.loads(answer.read() or b"null")
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")[:300]
            raise RuntimeError(f"schema registry {method} {path}: HTTP {error.code} {detail}") from None

    @contextmanager
    def case(self, case: Case, prefix: str) -> Iterator[None]:
        """Within: the case's schemas registered, the planner reading from its subjects."""
        fixed = any("id" in entry for entry in case.registry)
        if fixed:
            self._fixed_ids.acquire()
        try:
            self._delete(self._subjects(case, prefix))  # a run that erred may have left them
            for entry in case.registry:
                self._register(prefix + entry["subject"], entry)
            with inference.using(schema_reader(self.registry, prefix)):
                yield
        finally:
            try:
                self._delete(self._subjects(case, prefix) | self._prefixed(prefix))
            finally:
                if fixed:
                    self._fixed_ids.release()

    def _register(self, subject: str, entry: dict) -> None:
        body = {"schema": entry["schema"], "schemaType": entry.get("schema_type") or "AVRO"}
        if "id" in entry:
            self._call("PUT", f"mode/{subject}", {"mode": "IMPORT"})
            body["id"] = entry["id"]
        self._call("POST", f"subjects/{subject}/versions", body)

    def _subjects(self, case: Case, prefix: str) -> set[str]:
        topics = list(((case.formats or {}).get("topics") or {}))
        return ({f"{prefix}{t}-{side}" for t in topics for side in ("key", "value")}
                | {prefix + e["subject"] for e in case.registry})

    def _prefixed(self, prefix: str) -> set[str]:
        if not prefix:
            return set()
        return {s for s in self._call("GET", "subjects") or [] if s.startswith(prefix)}

    def _delete(self, subjects: set[str]) -> None:
        for subject in subjects:
            try:
                self._call("DELETE", f"subjects/{subject}?permanent=true")
            except RuntimeError as error:
                if "HTTP 404" not in str(error):
                    raise


def source_problems(case: Case, planned) -> list[str]:
    """How the case's sources differ from its `expected_sources` (formats, window, columns)."""
    problems = []
    for expected in case.expected_sources:
        name = expected["name"]
        query = next((q for q in planned.queries if q.sink.topic == planned.prefix + _topic(case, name)), None)
        if query is None:
            continue  # a declared source: its formats are the declaration's own
        serde = query.sink_serde
        for field, actual in (("key_format", serde.key_format), ("value_format", serde.value_format)):
            want = expected.get(field)
            if want is not None and want.upper() != actual.upper() and not (want == "NONE" and not serde.key_columns):
                problems.append(f"{name}: {field} {actual}, expected {want}")
        if expected.get("window") and (serde.window is None or not _same_window(expected["window"], serde.window)):
            problems.append(f"{name}: window {serde.window}, expected {expected['window']}")
        if "columns" in expected:
            got = [(n.upper(), str(t), True) for n, t in serde.key_columns[:len(serde.key_columns)]] + \
                  [(n.upper(), str(t), False) for n, t in serde.value_columns]
            want = [(c["name"].upper(), str(SqlType.parse(c["type"])), bool(c.get("key"))) for c in expected["columns"]]
            if got != want:
                problems.append(f"{name}: columns {got}, expected {want}")
    return problems


def _topic(case: Case, name: str) -> str:
    topics = (case.formats or {}).get("topics") or {}
    return next((t for t, entry in topics.items() if str(entry.get("source", "")).upper() == name.upper()), name)


def _same_window(expected: str, kind: str) -> bool:
    return kind.upper() == expected.upper() or (kind.upper() == "TIME" and expected.upper() in ("TUMBLING", "HOPPING"))
