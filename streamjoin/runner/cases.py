"""The conformance case format (../shared/conformance/README.md) as dataclasses.

Optional fields keep "absent" apart from null: `ExpectedRecord.has_key` is False when the case
does not assert the key, while `has_key and key is None` asserts a null key.
"""

from __future__ import annotations

import base64
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

_REQUIRED = ("id", "dialect", "sql")


@dataclass(frozen=True)
class InputRecord:
    """One input record in arrival order: to a source (by name) or straight to a topic."""

    source: str | None
    topic: str | None
    ts: int | None
    key: Any
    value: Any
    headers: tuple[dict, ...] | None = None
    window: dict | None = None

    @property
    def window_bounds(self) -> tuple[int, int] | None:
        return (self.window["start"], self.window["end"]) if self.window else None

    @property
    def header_pairs(self) -> tuple[tuple[str, bytes | None], ...]:
        """The record's headers as produced: (key, bytes), in order."""
        return header_pairs(self.headers)

    @classmethod
    def from_json(cls, data: dict) -> "InputRecord":
        if "source" not in data and "topic" not in data:
            raise ValueError("an input needs 'source' or 'topic'")
        headers = data.get("headers")
        header_pairs(headers)  # checked now: a bad one names the case, not a failed run
        return cls(data.get("source"), data.get("topic"), data.get("ts"), data.get("key"), data.get("value"),
                   tuple(headers) if headers is not None else None, data.get("window"))


def header_pairs(headers: Iterable[dict] | None) -> tuple[tuple[str, bytes | None], ...]:
    """`[{key, value}]` with base64 values (null: a header without a value) as (key, bytes)."""
    pairs = []
    for i, header in enumerate(headers or ()):
        if not isinstance(header, dict) or not isinstance(header.get("key"), str):
            # a malformed case, reported as every case problem is
            raise ValueError(f"header {i}: expected {{key, value (base64)}}, got {header!r}")  # noqa: TRY004
        value = header.get("value")
        try:
            pairs.append((header["key"], None if value is None else base64.b64decode(value, validate=True)))
        except (ValueError, TypeError):
            raise ValueError(f"header {header['key']!r}: value {value!r} is not base64") from None
    return tuple(pairs)


@dataclass(frozen=True)
class ExpectedRecord:
    """One expected output record; has_* flags say which fields the case asserts."""

    value: Any
    ts: int | None = None
    key: Any = None
    topic: str | None = None
    headers: tuple[dict, ...] | None = None
    window: dict | None = None
    has_ts: bool = False
    has_key: bool = False
    has_topic: bool = False
    has_headers: bool = False

    @property
    def header_pairs(self) -> tuple[tuple[str, bytes | None], ...]:
        return header_pairs(self.headers)

    @classmethod
    def from_json(cls, data: dict) -> "ExpectedRecord":
        headers = data.get("headers")
        header_pairs(headers)
        return cls(data.get("value"), data.get("ts"), data.get("key"), data.get("topic"),
                   tuple(headers) if headers is not None else None, data.get("window"),
                   "ts" in data, "key" in data, "topic" in data, "headers" in data)


@dataclass(frozen=True)
class ExpectError:
    """`contains`: substrings of the message, or with `match` "names" the identifiers the error
    must name: each as a whole name (not inside a longer one), in the error's own text."""

    contains: tuple[str, ...] = ()
    stage: str = "statement"
    match: str = "substrings"

    def missing(self, error: BaseException) -> list[str]:
        """What `error` lacks of `contains`, case-insensitively. Names are looked for in the
        error's reason only: a snippet that echoes the statement names everything it contains."""
        if self.match == "names":
            reason = getattr(error, "reason", None) or str(error)
            return [name for name in self.contains if not _names(reason, name)]
        message = str(error).lower()
        return [s for s in self.contains if s.lower() not in message]


def _names(text: str, name: str) -> bool:
    return re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", text, re.IGNORECASE) is not None


@dataclass(frozen=True)
class Case:
    id: str
    dialect: str
    sql: str
    section: str = ""
    sources: tuple[dict, ...] = ()
    ddl: tuple[str, ...] = ()
    setup: tuple[str, ...] = ()
    settings: dict = field(default_factory=dict)
    inputs: tuple[InputRecord, ...] = ()
    expected: tuple[ExpectedRecord, ...] = ()
    compare: str = "ordered"
    expect_error: ExpectError | None = None
    expected_partitioning: str | None = None
    expected_schema: dict | None = None
    notes: str = ""
    file: str | None = None
    # How records are encoded on each topic, schemas registered before `setup`, and what sources
    # must look like afterwards (../shared/conformance/README.md; runner.registry_cases)
    formats: dict | None = None
    registry: tuple[dict, ...] = ()
    expected_sources: tuple[dict, ...] = ()

    @property
    def needs_registry(self) -> bool:
        return bool(self.registry) or bool((self.formats or {}).get("schema_registry"))

    @classmethod
    def from_json(cls, data: dict, file: str | None = None) -> "Case":
        missing = [k for k in _REQUIRED if k not in data]
        if missing:
            raise ValueError(f"case {data.get('id', '?')}: missing field(s) {', '.join(missing)}")
        error = data.get("expect_error")
        setup = data.get("setup") or ()
        try:
            inputs = tuple(InputRecord.from_json(r) for r in data.get("inputs") or ())
            expected = tuple(ExpectedRecord.from_json(r) for r in data.get("expected") or ())
        except ValueError as bad:
            raise ValueError(f"case {data['id']}: {bad}") from None
        return cls(
            id=data["id"], dialect=data["dialect"], sql=data["sql"], section=data.get("section", ""),
            sources=tuple(data.get("sources") or ()), ddl=tuple(data.get("ddl") or ()),
            setup=(setup,) if isinstance(setup, str) else tuple(setup),
            settings=dict(data.get("settings") or {}),
            inputs=inputs, expected=expected,
            compare=data.get("compare", "ordered"),
            expect_error=None if error is None else ExpectError(tuple(error.get("contains") or ()),
                                                                  error.get("stage", "statement"),
                                                                  error.get("match", "substrings")),
            expected_partitioning=data.get("expected_partitioning"),
            expected_schema=data.get("expected_schema"), notes=data.get("notes", ""), file=file,
            formats=data.get("formats"), registry=tuple(data.get("registry") or ()),
            expected_sources=tuple(data.get("expected_sources") or ()),
        )


def load_cases(paths: Iterable[str | Path]) -> list[Case]:
    """Every case of the given JSON files and of the *.json files in the given directories."""
    cases: list[Case] = []
    for path in map(Path, paths):
        files = sorted(path.glob("*.json")) if path.is_dir() else [path]
        for file in files:
            document = json.loads(file.read_text())
            entries = document.get("cases", []) if isinstance(document, dict) else document
            cases += [Case.from_json(entry, str(file)) for entry in entries]
    return cases
