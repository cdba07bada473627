"""Store pages a Python worker keeps between micro-batches, so a batch does not read again from
Spark's state server a page it holds as that page was last written.

Every write of a page is stamped with a token drawn for that save, and the runtime saved beside
the pages lists each page's token (0: never written, so empty). A page is taken from here only
when its token equals the one the loaded runtime lists, so the cache never answers with another
version than the checkpoint's:

    worker A, batch 1  table pages 0..31 written with token t1, kept here as (page, t1)
    worker B, batch 2  its own cache is empty: reads the pages and keeps them; a table update
                       rewrites page 5 with token t2
    worker A, batch 3  the runtime lists page 5 at t2, the others at t1: A reads page 5 alone
    a retried batch    its runtime lists the tokens of the last committed save; pages a failed
                       attempt wrote carry tokens drawn for that attempt, so they are read anew

Spark hands a task's batches to its workers in turns, so a cache of the last batch alone misses
every other batch; per-page tokens keep every page no one has changed since.

Pages are kept as the bytes written, and beside them (up to `MAX_OBJECT_BYTES` of those bytes)
as the decoded page itself, so a batch that reads a page its worker's last batch of the task
read and left unchanged does not unpickle it again (a stream-table join's table pages between
updates). A decoded page is lent, never shared: `take_objects` removes it, and only a save puts
a page back (`keep_objects`), one it read and did not change, under the token it was read at,
which it still equals: a store's values changed in place are always put back (the
`KeyValueStore` contract), and so written. A page a batch changed is kept as bytes alone, since
its objects may be shared with another page's, which a decoded page's never are. A batch that
fails before its save has taken its pages out, so what it changed in place never reaches
another batch: the next one reads the bytes. A worker keeps at most `MAX_BYTES` of bytes, the
oldest kept pages going first.
"""

from __future__ import annotations

import os
from collections import OrderedDict

MAX_BYTES = 64 << 20
MAX_OBJECT_BYTES = 16 << 20  # decoded pages, counted by their pickled size (they take ~5x that in memory)


def new_token() -> int:
    """A save's token: random, never 0 (the mark of a page never written)."""
    return int.from_bytes(os.urandom(8), "little") | 1


class PageCache:
    """Pages by (store id, page), each with the token of the write it is."""

    def __init__(self, max_bytes: int = MAX_BYTES, max_object_bytes: int = MAX_OBJECT_BYTES) -> None:
        self.max_bytes, self.max_object_bytes = max_bytes, max_object_bytes
        self.pages: OrderedDict[tuple[str, int], tuple[int, bytes]] = OrderedDict()
        self.size = 0
        self.objects: OrderedDict[tuple[str, int], tuple[int, dict, int]] = OrderedDict()
        self.object_size = 0

    def take_objects(self, store: str, group: int, token: int) -> tuple[dict, int] | None:
        """The decoded page as written with `token`, and its pickled size, no longer held here;
        None when not held (a page held at another token is dropped)."""
        found = self.objects.pop((store, group), None)
        if found is None:
            return None
        self.object_size -= found[2]
        return (found[1], found[2]) if found[0] == token else None

    def keep_objects(self, store: str, group: int, token: int, data: dict, size: int) -> None:
        """Hold the decoded page `data`, equal to the page written with `token` (`size` bytes)."""
        old = self.objects.pop((store, group), None)
        if old is not None:
            self.object_size -= old[2]
        if size > self.max_object_bytes:
            return
        self.objects[(store, group)] = (token, data, size)
        self.object_size += size
        while self.object_size > self.max_object_bytes:
            self.object_size -= self.objects.popitem(last=False)[1][2]

    def take(self, store: str, group: int, token: int) -> bytes | None:
        """The page as written with `token`; None when not held."""
        found = self.pages.get((store, group))
        return found[1] if found is not None and found[0] == token else None

    def keep(self, store: str, group: int, token: int, page: bytes) -> None:
        """Hold `page` as written with `token`, dropping the oldest pages past the bound."""
        old = self.pages.pop((store, group), None)
        if old is not None:
            self.size -= len(old[1])
        if len(page) > self.max_bytes:
            return
        self.pages[(store, group)] = (token, page)
        self.size += len(page)
        while self.size > self.max_bytes:
            _, (_, dropped) = self.pages.popitem(last=False)
            self.size -= len(dropped)

    def clear(self) -> None:
        self.pages.clear()
        self.objects.clear()
        self.size = self.object_size = 0


# One per worker process: the pages outlive the task that wrote them.
WORKER_PAGES = PageCache()
