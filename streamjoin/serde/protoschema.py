"""Protobuf schemas without protoc: `.proto` text (the proto3 subset schema registries hold:
messages, nested messages, scalar, `repeated` and `map<,>` fields, enums) parsed into a
FileDescriptorProto, a schema built from SQL columns (ksqlDB's PROTOBUF and PROTOBUF_NOSR
layout: one field per column in order, numbered from 1), and message classes made from either
with the protobuf runtime. Used by the registry codecs (`serde.registry_codecs`) and by the
project's registry (`streamjoin.registry.server`, which answers `format=serialized`)."""

from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence

from google.protobuf import descriptor_pb2, descriptor_pool
from google.protobuf.message_factory import GetMessageClass

from streamjoin.dialect.types import SqlType

F = descriptor_pb2.FieldDescriptorProto
SCALARS = {"double": F.TYPE_DOUBLE, "float": F.TYPE_FLOAT, "int64": F.TYPE_INT64, "uint64": F.TYPE_UINT64,
           "int32": F.TYPE_INT32, "uint32": F.TYPE_UINT32, "fixed64": F.TYPE_FIXED64, "fixed32": F.TYPE_FIXED32,
           "bool": F.TYPE_BOOL, "string": F.TYPE_STRING, "bytes": F.TYPE_BYTES, "sint32": F.TYPE_SINT32,
           "sint64": F.TYPE_SINT64, "sfixed32": F.TYPE_SFIXED32, "sfixed64": F.TYPE_SFIXED64}
_SQL_SCALARS = {"BOOLEAN": "bool", "INT": "int32", "BIGINT": "int64", "DOUBLE": "double", "STRING": "string",
                "BYTES": "bytes", "FLOAT": "float", "DECIMAL": "string", "TIMESTAMP": "int64", "DATE": "int32",
                "TIME": "int32"}
_TOKEN = re.compile(r'\s*(//[^\n]*|/\*.*?\*/|"[^"]*"|[A-Za-z_][\w.]*|-?\d+|[{}=;<>,\[\]()])', re.S)
FILE_NAME = "schema.proto"


class ProtoSchemaError(ValueError):
    """A `.proto` text outside the subset read here, or a type a column cannot have."""


def _tokens(text: str) -> list[str]:
    tokens, at = [], 0
    text = text.rstrip()
    while at < len(text):
        match = _TOKEN.match(text, at)
        if match is None:
            raise ProtoSchemaError(f"unexpected text in .proto at {at}: {text[at:at + 20]!r}")
        at = match.end()
        if not match.group(1).startswith(("//", "/*")):
            tokens.append(match.group(1))
    return tokens


def parse_proto(text: str) -> descriptor_pb2.FileDescriptorProto:
    """The FileDescriptorProto of a `.proto` text (proto3 subset; see the module doc)."""
    tokens = _tokens(text)
    file = descriptor_pb2.FileDescriptorProto(name=FILE_NAME, syntax="proto3")
    at = 0
    while at < len(tokens):
        word = tokens[at]
        if word in ("syntax", "package", "import", "option"):
            end = tokens.index(";", at)
            if word == "package":
                file.package = tokens[at + 1]
            at = end + 1
        elif word == "message":
            at = _message(tokens, at + 1, file.message_type.add())
        elif word == "enum":
            at = _enum(tokens, at + 1, file.enum_type.add())
        else:
            raise ProtoSchemaError(f"unexpected {word!r} in .proto")
    _resolve(file)
    return file


def _message(tokens: list[str], at: int, message: descriptor_pb2.DescriptorProto) -> int:
    message.name = tokens[at]
    at += 2  # name {
    while tokens[at] != "}":
        word = tokens[at]
        if word == "message":
            at = _message(tokens, at + 1, message.nested_type.add())
        elif word == "enum":
            at = _enum(tokens, at + 1, message.enum_type.add())
        elif word in ("option", "reserved"):
            at = tokens.index(";", at) + 1
        else:
            at = _field(tokens, at, message)
    return at + 1


def _enum(tokens: list[str], at: int, enum: descriptor_pb2.EnumDescriptorProto) -> int:
    enum.name = tokens[at]
    at += 2
    while tokens[at] != "}":
        if tokens[at] == "option":
            at = tokens.index(";", at) + 1
            continue
        enum.value.add(name=tokens[at], number=int(tokens[at + 2]))
        at = tokens.index(";", at) + 1
    return at + 1


def _field(tokens: list[str], at: int, message: descriptor_pb2.DescriptorProto) -> int:
    label = F.LABEL_OPTIONAL
    if tokens[at] in ("repeated", "optional"):
        label = F.LABEL_REPEATED if tokens[at] == "repeated" else F.LABEL_OPTIONAL
        at += 1
    if tokens[at] == "map":  # map<K, V> name = n;  -> a repeated nested XEntry message
        key_type, value_type, name, number = tokens[at + 2], tokens[at + 4], tokens[at + 6], int(tokens[at + 8])
        entry = message.nested_type.add(name=_entry_name(name))
        entry.options.map_entry = True
        _typed(entry.field.add(name="key", number=1, label=F.LABEL_OPTIONAL), key_type)
        _typed(entry.field.add(name="value", number=2, label=F.LABEL_OPTIONAL), value_type)
        message.field.add(name=name, number=number, label=F.LABEL_REPEATED, type=F.TYPE_MESSAGE,
                          type_name=entry.name)
    else:
        kind, name, number = tokens[at], tokens[at + 1], int(tokens[at + 3])
        _typed(message.field.add(name=name, number=number, label=label), kind)
    return tokens.index(";", at) + 1


def _entry_name(field: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in field.split("_")) + "Entry"


def _typed(field: descriptor_pb2.FieldDescriptorProto, kind: str) -> None:
    if kind in SCALARS:
        field.type = SCALARS[kind]
    else:
        field.type_name = kind  # a message or enum: resolved once every name is known (_resolve)


def _resolve(file: descriptor_pb2.FileDescriptorProto) -> None:
    """Relative type names made absolute (`.pkg.Outer.Inner`), with their kind (message or enum)."""
    prefix = f".{file.package}" if file.package else ""
    kinds: dict[str, int] = {}

    def collect(scope: str, messages, enums) -> None:
        for enum in enums:
            kinds[f"{scope}.{enum.name}"] = F.TYPE_ENUM
        for message in messages:
            kinds[f"{scope}.{message.name}"] = F.TYPE_MESSAGE
            collect(f"{scope}.{message.name}", message.nested_type, message.enum_type)
    collect(prefix, file.message_type, file.enum_type)

    def fix(scope: str, messages) -> None:
        for message in messages:
            inner = f"{scope}.{message.name}"
            for field in message.field:
                if field.type_name and not field.type_name.startswith("."):
                    field.type_name = _lookup(kinds, inner, field.type_name)
                    field.type = kinds[field.type_name]
            fix(inner, message.nested_type)
    fix(prefix, file.message_type)


def _lookup(kinds: dict[str, int], scope: str, name: str) -> str:
    while True:
        candidate = f"{scope}.{name}"
        if candidate in kinds:
            return candidate
        if not scope:
            raise ProtoSchemaError(f"unknown protobuf type {name!r}")
        scope = scope.rsplit(".", 1)[0] if "." in scope else ""


def columns_proto(name: str, columns: Sequence[tuple[str, SqlType]]) -> str:
    """The `.proto` text of a message `name` with one field per column, numbered from 1 (nested
    STRUCTs as nested messages named after their column)."""
    lines = ['syntax = "proto3";', ""]
    lines += _message_text(name, columns, "")
    return "\n".join(lines) + "\n"


def _message_text(name: str, columns: Sequence[tuple[str, SqlType]], indent: str) -> list[str]:
    lines, nested = [f"{indent}message {name} {{"], []
    for number, (column, kind) in enumerate(columns, start=1):
        lines.append(f"{indent}  {_field_text(column, kind, nested, indent + '  ')} {column} = {number};")
    return lines[:1] + nested + lines[1:] + [f"{indent}}}"]


def _field_text(column: str, kind: SqlType, nested: list[str], indent: str) -> str:
    if kind.name == "ARRAY":
        return "repeated " + _type_text(column, kind.elements[0], nested, indent)
    if kind.name == "MAP":
        return f"map<{_type_text(column, kind.elements[0], nested, indent)}, " \
               f"{_type_text(column, kind.elements[1], nested, indent)}>"
    return _type_text(column, kind, nested, indent)


def _type_text(column: str, kind: SqlType, nested: list[str], indent: str) -> str:
    if kind.name == "STRUCT":
        name = column[:1].upper() + column[1:] + "Struct"
        nested += _message_text(name, kind.fields, indent)
        return name
    scalar = _SQL_SCALARS.get(kind.name)
    if scalar is None:
        raise ProtoSchemaError(f"column {column} of type {kind} has no protobuf field type")
    return scalar


@lru_cache(maxsize=256)
def message_class(proto_text: str, full_name: str | None = None):
    """The message class of `full_name` (default: the first message) in a `.proto` text."""
    return file_message_class(parse_proto(proto_text).SerializeToString(), full_name)


@lru_cache(maxsize=256)
def file_message_class(serialized_file: bytes, full_name: str | None = None):
    """The message class of `full_name` (default: the first message) in a serialized
    FileDescriptorProto; each file in a pool of its own (names of different schemas may clash)."""
    file = descriptor_pb2.FileDescriptorProto.FromString(serialized_file)
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file)
    described = pool.FindFileByName(file.name)
    if full_name is None:
        return GetMessageClass(next(iter(described.message_types_by_name.values())))
    qualified = f"{file.package}.{full_name}" if file.package and not full_name.startswith(file.package) else full_name
    return GetMessageClass(pool.FindMessageTypeByName(qualified))
