"""The project's own schema registry: the part of the Confluent Schema Registry REST API that
Kafka clients and ksqlDB-style engines use, over HTTP, with schemas kept in a JSON file.

Why its own: neither registry the design named runs here from a package registry. Apicurio
Registry's jars on Maven Central are the application before Quarkus builds it (no runnable
`-runner` jar or `quarkus-app` layout is published), and Karapace is not on PyPI. This server
speaks the same API, so the engine's client (confluent-kafka's) talks to it exactly as to
Confluent's registry, Apicurio's `ccompat` API or Karapace in production.

Subjects hold versions of schemas; a schema (text, type, references) has one global id, shared
by every subject that registers the same schema. `IMPORT` mode (per subject or global) lets a
registration name its id. A permanent subject delete frees ids no subject uses any more.
`format=serialized` answers a PROTOBUF schema as a base64 FileDescriptorProto.

Run: `python -m streamjoin.registry.server --port N --store FILE [--basic-auth user:password]`.
"""

from __future__ import annotations

import argparse
import base64
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, unquote, urlparse

from streamjoin.serde.protoschema import ProtoSchemaError
from streamjoin.serde.registry_schemas import SchemaError, proto_file

CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


class RegistryError(Exception):
    def __init__(self, status: int, code: int, message: str) -> None:
        super().__init__(message)
        self.status, self.code = status, code


class Store:
    """Schemas by id and subjects' versions, saved to `path` after every change."""

    def __init__(self, path: Path | None) -> None:
        self.path, self.lock = path, threading.Lock()
        data = json.loads(path.read_text()) if path is not None and path.exists() else {}
        self.schemas: dict[int, dict] = {int(k): v for k, v in data.get("schemas", {}).items()}
        self.subjects: dict[str, list[int]] = data.get("subjects", {})  # subject -> id per version
        self.modes: dict[str, str] = data.get("modes", {})  # "" = global
        self.next_id = max(self.schemas, default=0) + 1

    def save(self) -> None:
        if self.path is not None:
            data = {"schemas": self.schemas, "subjects": self.subjects, "modes": self.modes}
            temporary = self.path.with_suffix(".tmp")
            temporary.write_text(json.dumps(data))
            temporary.replace(self.path)

    def register(self, subject: str, body: dict) -> int:
        schema = {"schema": body["schema"], "schemaType": body.get("schemaType") or "AVRO",
                  "references": body.get("references") or []}
        _check(schema)
        with self.lock:
            wanted = body.get("id")
            if wanted is not None and self.modes.get(subject, self.modes.get("", "READWRITE")) != "IMPORT":
                raise RegistryError(422, 42205, f"subject {subject} is not in IMPORT mode: a schema id cannot be given")
            found = self._find(schema) if wanted is None else None
            sid = found if found is not None else self._new_id(schema, wanted)
            versions = self.subjects.setdefault(subject, [])
            if sid not in versions:
                versions.append(sid)
            self.save()
            return sid

    def _find(self, schema: dict) -> int | None:
        return next((i for i, s in self.schemas.items() if same(s, schema)), None)

    def _new_id(self, schema: dict, wanted: int | None) -> int:
        sid = int(wanted) if wanted is not None else self.next_id
        if sid in self.schemas and self.schemas[sid] != schema:
            raise RegistryError(422, 42207, f"schema id {sid} is taken by another schema")
        self.schemas[sid] = schema
        self.next_id = max(self.next_id, sid + 1)
        return sid

    def version(self, subject: str, version: str) -> tuple[int, int]:
        """(version number, schema id)."""
        versions = self.subjects.get(subject)
        if not versions:
            raise RegistryError(404, 40401, f"subject {subject!r} not found")
        number = len(versions) if version in ("latest", "-1") else int(version)
        if not 1 <= number <= len(versions):
            raise RegistryError(404, 40402, f"version {version} of subject {subject!r} not found")
        return number, versions[number - 1]

    def delete(self, subject: str) -> list[int]:
        with self.lock:
            versions = self.subjects.pop(subject, None)
            if versions is None:
                raise RegistryError(404, 40401, f"subject {subject!r} not found")
            used = {i for ids in self.subjects.values() for i in ids}
            for sid in set(versions) - used:
                self.schemas.pop(sid, None)
            self.modes.pop(subject, None)
            self.save()
            return list(range(1, len(versions) + 1))


def canonical(schema: dict) -> tuple:
    """A schema's identity: the same schema written differently (a .proto's text or its base64
    descriptor, JSON with other spacing) is one schema, as a lookup by schema expects."""
    text = schema["schema"]
    try:
        if schema["schemaType"] == "PROTOBUF":
            file = proto_file(text)
            file.ClearField("name")
            return "PROTOBUF", file.SerializeToString(deterministic=True)
        return schema["schemaType"], json.dumps(json.loads(text), sort_keys=True)
    except (SchemaError, ValueError):
        return schema["schemaType"], text


def same(a: dict, b: dict) -> bool:
    return a == b or (a["references"] == b["references"] and canonical(a) == canonical(b))


def _check(schema: dict) -> None:
    """Refuse a schema its type cannot read (the error a registry gives for an invalid schema)."""
    try:
        if schema["schemaType"] == "PROTOBUF":
            proto_file(schema["schema"])
        else:
            json.loads(schema["schema"])
    except (ProtoSchemaError, SchemaError, ValueError, IndexError) as error:
        raise RegistryError(422, 42201, f"invalid {schema['schemaType']} schema: {error}") from None


def shown(schema: dict, serialized: bool) -> dict:
    """A schema as the API returns it (no schemaType for AVRO, as Confluent's registry)."""
    text = schema["schema"]
    if serialized and schema["schemaType"] == "PROTOBUF":
        text = base64.b64encode(proto_file(text).SerializeToString()).decode("ascii")
    out: dict[str, Any] = {"schema": text}
    if schema["schemaType"] != "AVRO":
        out["schemaType"] = schema["schemaType"]
    if schema["references"]:
        out["references"] = schema["references"]
    return out


def route(store: Store, method: str, path: str, query: dict[str, list[str]], body: dict) -> Any:
    """The answer to one request, or RegistryError."""
    parts = [unquote(p) for p in path.strip("/").split("/") if p]
    serialized = query.get("format", [""])[0] == "serialized"
    if not parts:
        return {}
    head = parts[0]
    if head == "schemas" and len(parts) >= 3 and parts[1] == "ids":
        schema = store.schemas.get(int(parts[2]))
        if schema is None:
            raise RegistryError(404, 40403, f"schema id {parts[2]} not found")
        if len(parts) == 4 and parts[3] == "versions":
            return [{"subject": s, "version": ids.index(int(parts[2])) + 1}
                    for s, ids in store.subjects.items() if int(parts[2]) in ids]
        return shown(schema, serialized)
    if head in ("mode", "config"):
        return _settings(store, head, parts[1] if len(parts) > 1 else "", method, body)
    if head == "subjects":
        return _subjects(store, method, parts[1:], body, serialized)
    raise RegistryError(404, 404, f"no such resource: {path}")


def _settings(store: Store, kind: str, subject: str, method: str, body: dict) -> dict:
    if kind == "config":  # compatibility is not checked: every level reads NONE
        return {"compatibility": body.get("compatibility", "NONE"), "compatibilityLevel": "NONE"}
    if method == "PUT":
        with store.lock:
            store.modes[subject] = body["mode"]
            store.save()
    return {"mode": store.modes.get(subject, store.modes.get("", "READWRITE"))}


def _subjects(store: Store, method: str, parts: list[str], body: dict, serialized: bool) -> Any:
    if not parts:
        return sorted(store.subjects)
    subject = parts[0]
    if len(parts) == 1 and method == "DELETE":
        return store.delete(subject)
    if len(parts) == 1 and method == "POST":  # is this schema registered under the subject?
        wanted = {"schema": body["schema"], "schemaType": body.get("schemaType") or "AVRO",
                  "references": body.get("references") or []}
        for number, sid in enumerate(store.subjects.get(subject, []), start=1):
            if same(store.schemas[sid], wanted):
                return {"subject": subject, "id": sid, "version": number, **shown(store.schemas[sid], False)}
        raise RegistryError(404, 40403, f"schema not found under subject {subject!r}")
    if len(parts) == 2 and parts[1] == "versions":
        if method == "POST":
            return {"id": store.register(subject, body)}
        store.version(subject, "latest")
        return list(range(1, len(store.subjects[subject]) + 1))
    if len(parts) >= 3 and parts[1] == "versions":
        number, sid = store.version(subject, parts[2])
        if len(parts) == 4 and parts[3] == "schema":
            return json.loads(store.schemas[sid]["schema"])
        return {"subject": subject, "version": number, "id": sid, **shown(store.schemas[sid], serialized)}
    raise RegistryError(404, 404, f"no such resource: /subjects/{'/'.join(parts)}")


def handler(store: Store, auth: str | None) -> type[BaseHTTPRequestHandler]:
    expected = "Basic " + base64.b64encode(auth.encode()).decode() if auth else None

    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            url = urlparse(self.path)
            try:
                if expected is not None and self.headers.get("Authorization") != expected:
                    raise RegistryError(401, 401, "unauthorized")
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}") if length else {}
                status, answer = 200, route(store, self.command, url.path, parse_qs(url.query), body)
            except RegistryError as error:
                status, answer = error.status, {"error_code": error.code, "message": str(error)}
            except (KeyError, ValueError, TypeError) as error:
                status, answer = 422, {"error_code": 422, "message": f"bad request: {error}"}
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("Content-Type", CONTENT_TYPE)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PUT = do_DELETE = _answer

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            pass  # one line per request would flood the log

    return Handler


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="streamjoin-registry")
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--store", type=Path, default=None, help="the JSON file schemas are kept in")
    parser.add_argument("--basic-auth", default=None, help="user:password every request must give")
    args = parser.parse_args(argv)
    if args.basic_auth is not None and not re.fullmatch(r"[^:]+:.*", args.basic_auth):
        parser.error("--basic-auth is user:password")
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler(Store(args.store), args.basic_auth))
    print(f"schema registry listening on 127.0.0.1:{args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
