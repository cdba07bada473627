"""A task's state in key groups: every operator store is kept as `KEY_GROUPS` pages (Flink's key
groups) in a map state, the rest of the runtime as one small pickled value.

Pickling a task's whole runtime in every micro-batch made a batch's state traffic follow the
state's size (a 1M-row table: ~120 MB per batch, however few rows changed). Here a store is
written as pages, each holding the keys whose stable hash falls in it; a batch loads a page the
first time it reads or writes one of its keys and writes back only the pages it changed (put or
delete: a value changed in place is put back, the `KeyValueStore` contract). No operator scans a
store (they only get/put/delete by key), so a batch touches the pages of its own keys and no others.

    batch 1  fresh runtime, plain InMemoryStores -> save: each store's non-empty pages written,
             the runtime pickled with each store replaced by its id (pickle's persistent ids)
    batch 2  runtime unpickled with a PagedStore per id, nothing loaded yet; records touch keys
             in pages 7 and 90 of one store -> those two pages read; page 90 had a put, so only
             it is written back at save

Pure Python (no Spark): `Pages` is the storage, a map state on Spark, a dict in tests.
"""

from __future__ import annotations

import io
import pickle
import uuid
import zlib
from typing import Any, Hashable, Iterator, Protocol

from pyspark import cloudpickle

from streamjoin.operators.base import InMemoryStore, KeyValueStore

# Each page read or write is one call to Spark's state server (~0.5 ms here): 4,096 pages keep a
# 1,000-update batch against a 1M-row FK join at ~4,000 small page calls (256 pages: every page).
KEY_GROUPS = 4096


def key_group(key: Hashable) -> int:
    """The page of a key, stable across processes (Python's own str hash is salted per process)."""
    return zlib.crc32(repr(key).encode()) % KEY_GROUPS


class Pages(Protocol):
    def load(self, store: str, group: int) -> dict:
        """The page's keys and values (empty when the page holds nothing)."""

    def save(self, store: str, group: int, data: dict) -> None:
        """Replace the page (an empty dict removes it)."""


class PagedStore(KeyValueStore):
    """A store whose pages are loaded on first use; `loaded` are the pages this batch touched,
    `changed` those it put to or deleted from."""

    def __init__(self, store_id: str, pages: Pages) -> None:
        self.store_id, self.pages = store_id, pages
        self.loaded: dict[int, dict] = {}
        self.changed: set[int] = set()

    def _page(self, group: int) -> dict:
        data = self.loaded.get(group)
        if data is None:
            data = self.loaded[group] = self.pages.load(self.store_id, group)
        return data

    def get(self, key: Hashable, default: Any = None) -> Any:
        return self._page(key_group(key)).get(key, default)

    def put(self, key: Hashable, value: Any) -> None:
        group = key_group(key)
        self._page(group)[key] = value
        self.changed.add(group)

    def delete(self, key: Hashable) -> None:
        group = key_group(key)
        self._page(group).pop(key, None)
        self.changed.add(group)

    def items(self) -> Iterator[tuple[Hashable, Any]]:
        return iter([item for group in range(KEY_GROUPS) for item in self._page(group).items()])

    def __len__(self) -> int:
        return sum(len(self._page(group)) for group in range(KEY_GROUPS))


def _pages_of(store: KeyValueStore) -> dict[int, dict]:
    """The pages to write: a paged store's changed ones, a fresh in-memory store's non-empty ones."""
    if isinstance(store, PagedStore):
        return {group: store.loaded[group] for group in store.changed}
    pages: dict[int, dict] = {}
    for key, value in store.items():
        pages.setdefault(key_group(key), {})[key] = value
    return pages


class _StatePickler(cloudpickle.Pickler):
    def __init__(self, file, pages: Pages) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self.pages = pages
        self.ids: dict[int, str] = {}  # id(store) -> store id, written once per save

    def persistent_id(self, obj: Any):
        if not isinstance(obj, (InMemoryStore, PagedStore)):
            return None
        store_id = self.ids.get(id(obj))
        if store_id is None:
            store_id = self.ids[id(obj)] = obj.store_id if isinstance(obj, PagedStore) else uuid.uuid4().hex
            for group, data in _pages_of(obj).items():
                self.pages.save(store_id, group, data)
        return ("store", store_id)


class _StateUnpickler(pickle.Unpickler):
    def __init__(self, file, pages: Pages) -> None:
        super().__init__(file)
        self.pages = pages
        self.stores: dict[str, PagedStore] = {}

    def persistent_load(self, pid: tuple[str, str]) -> PagedStore:
        _, store_id = pid
        return self.stores.setdefault(store_id, PagedStore(store_id, self.pages))


def save_runtime(runtime: Any, pages: Pages) -> bytes:
    """Write the stores' touched pages to `pages`; return the rest of the runtime, pickled."""
    buffer = io.BytesIO()
    _StatePickler(buffer, pages).dump(runtime)
    return buffer.getvalue()


def load_runtime(blob: bytes, pages: Pages) -> Any:
    return _StateUnpickler(io.BytesIO(blob), pages).load()


def encode_page(data: dict) -> bytes:
    return pickle.dumps(data, pickle.HIGHEST_PROTOCOL)


def decode_page(blob: bytes | None) -> dict:
    return {} if blob is None else pickle.loads(blob)
