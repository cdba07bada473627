"""A task's state in key groups: every operator store is kept as pages (Flink's key groups) in a
map state, the rest of the runtime as one small pickled value beside them.

Pickling a task's whole runtime in every micro-batch made a batch's state traffic follow the
state's size (a 1M-row table: ~120 MB per batch, however few rows changed). Here a store is
written as pages, each holding the keys whose stable hash falls in it; a batch loads a page the
first time it reads or writes one of its keys and writes back only the pages it changed (put or
delete: a value changed in place is put back, the `KeyValueStore` contract). No operator scans a
store (they only get/put/delete by key), so a batch touches the pages of its own keys and no others.

    batch 1  fresh runtime, plain InMemoryStores -> save: each store's non-empty pages written,
             the runtime pickled with each store replaced by a reference: (id, page count,
             key count)
    batch 2  runtime unpickled with a PagedStore per id, nothing loaded yet; records touch keys
             in pages 7 and 90 of one store -> those two pages read; page 90 had a put, so only
             it is written back at save

A page's writes are stamped with a token per save, listed in the runtime (`page_cache`): a Python
worker keeps the pages it last saw and reads from Spark again only those whose token changed.

How many pages: each page read or write is one call to Spark's state server (~0.5 ms here), so a
store has about `KEYS_PER_PAGE` keys a page, in a power of two of pages up to `MAX_PAGES`. A store
that grows past twice that is split at save (page g's keys go to g and g + n), as a hash table
grows; a store never shrinks its page count. A batch touching most keys of a 100k-key store then
makes ~512 calls instead of 4,096; a 1M-row table keeps 4,096 pages, so a batch touching a few
of its keys reads few, small pages.

The pickled runtime starts with a line naming its layout (`STATE_FORMAT`); a checkpoint of
another layout is refused with `CheckpointIncompatible`, never half-read.

Pure Python (no Spark): `Pages` is the storage, a map state on Spark, a dict in tests.
"""

from __future__ import annotations

import io
import pickle
import uuid
import zlib
from array import array
from collections import ChainMap
from contextvars import ContextVar
from typing import Any, Hashable, Iterator, Protocol

from pyspark import cloudpickle

from streamjoin.operators.base import InMemoryStore, KeyValueStore
from streamjoin.runtime.contract import STATE_FORMAT
from streamjoin.spark.page_cache import WORKER_PAGES, PageCache, new_token

MAX_PAGES = 4096
KEYS_PER_PAGE = 256


def key_hash(key: Hashable) -> int:
    """Stable across processes (Python's own str hash is salted per process)."""
    return zlib.crc32(repr(key).encode())


def page_of(key: Hashable, page_count: int) -> int:
    """The page of `key` among a power of two of pages."""
    return key_hash(key) & (page_count - 1)


def page_count_for(keys: int) -> int:
    """The fewest pages, a power of two up to MAX_PAGES, that hold `keys` at KEYS_PER_PAGE a page."""
    count = 1
    while count < MAX_PAGES and keys > count * KEYS_PER_PAGE:
        count *= 2
    return count


class Pages(Protocol):
    def load(self, store: str, group: int) -> bytes | None:
        """The page as saved (`encode_page`); None when the page holds nothing."""

    def save(self, store: str, group: int, page: bytes | None) -> None:
        """Replace the page (None removes it)."""


class PagedStore(KeyValueStore):
    """A store whose pages are loaded on first use; `loaded` are the pages this batch touched,
    `changed` those it put to or deleted from; `size` counts its keys; `tokens` the token of each
    page's last write (0: never written)."""

    def __init__(self, store_id: str, pages: Pages, page_count: int, size: int, tokens: array,
                 cache: PageCache) -> None:
        self.store_id, self.pages, self.cache = store_id, pages, cache
        self.page_count, self.size, self.tokens = page_count, size, tokens
        self.loaded: dict[int, dict] = {}
        self.sizes: dict[int, int] = {}  # the pickled size of each loaded page
        self.changed: set[int] = set()

    def _page(self, group: int) -> dict:
        data = self.loaded.get(group)
        if data is None:
            data = self.loaded[group] = self._fetch(group)
        return data

    def _fetch(self, group: int) -> dict:
        token = self.tokens[group]
        if not token:
            return {}
        lent = self.cache.take_objects(self.store_id, group, token)
        if lent is not None:
            data, self.sizes[group] = lent
            return data
        page = self.cache.take(self.store_id, group, token)
        if page is None:
            page = self.pages.load(self.store_id, group)
            if page is not None:
                self.cache.keep(self.store_id, group, token, page)
        self.sizes[group] = 0 if page is None else len(page)
        return decode_page(page)

    def lend_unchanged(self) -> None:
        """At a save: each page read and not changed back to the cache, at the token it was read
        at. A page the batch changed is kept as bytes alone: its objects may be shared with
        another page's (a value stored under two keys), and a decoded page never is."""
        for group, data in self.loaded.items():
            if group not in self.changed and data and self.tokens[group]:
                self.cache.keep_objects(self.store_id, group, self.tokens[group], data, self.sizes[group])

    def get(self, key: Hashable, default: Any = None) -> Any:
        return self._page(page_of(key, self.page_count)).get(key, default)

    def put(self, key: Hashable, value: Any) -> None:
        group = page_of(key, self.page_count)
        page = self._page(group)
        if key not in page:
            self.size += 1
        page[key] = value
        self.changed.add(group)

    def delete(self, key: Hashable) -> None:
        group = page_of(key, self.page_count)
        if self._page(group).pop(key, _MISSING) is not _MISSING:
            self.size -= 1
        self.changed.add(group)

    def items(self) -> Iterator[tuple[Hashable, Any]]:
        return iter([item for group in range(self.page_count) for item in self._page(group).items()])

    def __len__(self) -> int:
        return self.size

    def pages_to_write(self) -> dict[int, dict]:
        """The changed pages; all of them, split, when the store has outgrown its page count."""
        if self.size <= 2 * KEYS_PER_PAGE * self.page_count or self.page_count >= MAX_PAGES:
            return {group: self.loaded[group] for group in self.changed}
        entries = self.items()
        self.page_count = page_count_for(self.size)
        split: dict[int, dict] = {group: {} for group in range(self.page_count)}  # empty ones are removed
        for key, value in entries:
            split[page_of(key, self.page_count)][key] = value
        self.loaded, self.changed, self.tokens = split, set(split), unwritten(self.page_count)
        return split


def unwritten(page_count: int) -> array:
    """The tokens of pages never written."""
    return array("Q", bytes(8 * page_count))


_MISSING = object()


def _store_pages(store: KeyValueStore) -> tuple[dict[int, dict], int, array]:
    """What to write of a store, its key count and its pages' tokens before this save: a paged
    store's changed pages, a fresh in-memory store's non-empty ones."""
    if isinstance(store, PagedStore):
        return store.pages_to_write(), store.size, store.tokens
    count = page_count_for(len(store))
    pages: dict[int, dict] = {}
    for key, value in store.items():
        pages.setdefault(page_of(key, count), {})[key] = value
    return pages, len(store), unwritten(count)


class _StatePickler(cloudpickle.Pickler):
    """Pickles a runtime with each store replaced by a reference to its pages, written as the
    store is met. The store types are found in the dispatch table, a lookup in C: a
    `persistent_id` hook would be a Python call for every object pickled (a window join's
    timers alone are ~1M objects at 1M records)."""

    def __init__(self, file, pages: Pages, cache: PageCache) -> None:
        self.pages, self.cache, self.token = pages, cache, new_token()
        # read by the C pickler when it is initialised, so set first
        self.dispatch_table = ChainMap({InMemoryStore: self._reduce_store, PagedStore: self._reduce_store},
                                       cloudpickle.Pickler.dispatch_table)
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)

    def _reduce_store(self, store: KeyValueStore) -> tuple:
        # once per store (the pickler's memo): a store shared by two operators stays one store
        store_id = store.store_id if isinstance(store, PagedStore) else uuid.uuid4().hex
        changed, size, tokens = _store_pages(store)
        if isinstance(store, PagedStore):
            store.lend_unchanged()
        for group, data in changed.items():
            page = encode_page(data) if data else None
            self.pages.save(store_id, group, page)
            tokens[group] = 0 if page is None else self.token  # an emptied page is never read again
            if page is not None:
                self.cache.keep(store_id, group, self.token, page)
        return _open_store, (store_id, len(tokens), size, tokens)


_opening: ContextVar[tuple[Pages, PageCache]] = ContextVar("pages of the runtime being loaded")


def _open_store(store_id: str, page_count: int, size: int, tokens: array) -> PagedStore:
    pages, cache = _opening.get()
    return PagedStore(store_id, pages, page_count, size, tokens, cache)


class CheckpointIncompatible(RuntimeError):
    """The checkpoint holds a task runtime in another layout than this streamjoin writes."""


_FORMAT_MARK = b"streamjoin state format "


def incompatible(found: str, where: str = "the checkpoint") -> CheckpointIncompatible:
    """The error for a checkpoint of format `found`, with the remedy."""
    return CheckpointIncompatible(
        f"{where} holds task state of format {found}; this streamjoin reads and writes format "
        f"{STATE_FORMAT}. Reset the query and backfill it (its outputs are recomputed from the input topics): "
        "its reset_<query> job in Dagster, or delete the query's folder in <STREAMJOIN_HOME>/checkpoints")


def save_runtime(runtime: Any, pages: Pages, cache: PageCache = WORKER_PAGES) -> bytes:
    """Write the stores' touched pages to `pages` (and keep them in `cache`); return the rest of
    the runtime, pickled, after a line naming its layout (`STATE_FORMAT`)."""
    buffer = io.BytesIO()
    buffer.write(b"%b%d\n" % (_FORMAT_MARK, STATE_FORMAT))
    _StatePickler(buffer, pages, cache).dump(runtime)
    return buffer.getvalue()


def load_runtime(blob: bytes, pages: Pages, cache: PageCache = WORKER_PAGES) -> Any:
    """The runtime `save_runtime` wrote, its stores reading `cache` or else `pages`;
    CheckpointIncompatible when it was written in another layout (a runtime saved before formats
    were named is format 1)."""
    found = 1
    if blob.startswith(_FORMAT_MARK):
        line, _, blob = blob.partition(b"\n")
        found = int(line[len(_FORMAT_MARK):])
    if found != STATE_FORMAT:
        raise incompatible(str(found))
    token = _opening.set((pages, cache))
    try:
        return pickle.loads(blob)
    finally:
        _opening.reset(token)


def encode_page(data: dict) -> bytes:
    return pickle.dumps(data, pickle.HIGHEST_PROTOCOL)


def decode_page(blob: bytes | None) -> dict:
    return {} if blob is None else pickle.loads(blob)
