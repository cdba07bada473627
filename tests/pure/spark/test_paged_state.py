"""Key-group paged state (streamjoin/spark/paged_state.py) without Spark: pages in a dict.

A table-table join runs batch by batch, its runtime saved and loaded between batches as the Spark
adapter does; results equal one uninterrupted run, and a batch touching one key reads and writes
one page per store, however large the state.
"""

from __future__ import annotations


import pytest

from streamjoin.operators.base import END_OF_TIME, JoinType, Record, Side
from streamjoin.operators.regular import InputKind, RegularJoin, RegularJoinConfig
from streamjoin.operators.stream_stream import StreamStreamJoin, StreamStreamJoinConfig
from streamjoin.operators.table_table import TableTableJoin, TableTableJoinConfig
from streamjoin.operators.window_tvf_join import WindowTvfJoin, WindowTvfJoinConfig
from streamjoin.runtime.contract import STATE_FORMAT
from streamjoin.spark.page_cache import PageCache
from streamjoin.spark.paged_state import (
    KEYS_PER_PAGE,
    CheckpointIncompatible,
    MAX_PAGES,
    PagedStore,
    key_hash,
    load_runtime,
    decode_page,
    page_count_for,
    save_runtime,
)


class DictPages:
    def __init__(self) -> None:
        self.data: dict[tuple[str, int], bytes] = {}
        self.reads = self.writes = 0

    def load(self, store: str, group: int) -> bytes | None:
        self.reads += 1
        return self.data.get((store, group))

    def save(self, store: str, group: int, page: bytes | None) -> None:
        self.writes += 1
        if page is None:
            self.data.pop((store, group), None)
        else:
            self.data[(store, group)] = page


def updates(n: int, keys: int) -> list[Record]:
    return [Record(Side(i % 2), f"k{i % keys}", {"v": i}, 1000 + i) for i in range(n)]


def new_join() -> TableTableJoin:
    return TableTableJoin(TableTableJoinConfig(join_type=JoinType.FULL))


# Operators that change stored values in place (matched flags, association counts) and put
# them back: the pages must carry those changes from batch to batch.
OPERATORS = {
    "table-table FULL": new_join,
    "stream-stream LEFT": lambda: StreamStreamJoin(StreamStreamJoinConfig(
        before=40, after=40, join_type=JoinType.LEFT, grace=10)),
    "regular LEFT upsert": lambda: RegularJoin(RegularJoinConfig(
        JoinType.LEFT, InputKind.UPSERT, InputKind.UPSERT, state_ttl_ms=2_000)),
}


def assert_lent_pages_equal_their_bytes(cache: PageCache) -> None:
    """Every decoded page a worker holds equals the page written with its token (held as bytes)."""
    for (store, group), (token, data, _) in cache.objects.items():
        assert decode_page(cache.take(store, group, token)) == data


@pytest.mark.parametrize("name", OPERATORS)
def test_batches_through_pages_equal_one_uninterrupted_run(name):
    new_operator = OPERATORS[name]
    records = updates(3000, 500) + [Record(Side.LEFT, f"k{k}", None, 9000 + k) for k in range(0, 500, 7)]
    whole = new_operator().process_all(records)
    pages, blob, batched = DictPages(), None, []
    for start in range(0, len(records), 250):
        operator = new_operator() if blob is None else load_runtime(blob, pages)
        batched += operator.process_all(records[start:start + 250])
        blob = save_runtime(operator, pages)
    assert batched == whole and len(whole) > 1000


def test_a_batch_reads_and_writes_only_the_pages_of_its_keys():
    pages, join = DictPages(), new_join()
    join.process_all(updates(20_000, 5_000))
    blob = save_runtime(join, pages)
    # The first save writes every non-empty page of both stores (even keys left, odd keys right),
    # 2,500 keys each: 16 pages of ~156 keys.
    assert pages.writes == sum(len({key_hash(f"k{k}") & 15 for k in range(side, 5_000, 2)}) for side in (0, 1)) == 32
    assert len(blob) < 20_000  # the runtime without its stores (the join's state is in the pages)

    pages.reads = pages.writes = 0
    join = load_runtime(blob, pages, PageCache())  # another worker: no page in memory
    assert isinstance(join.tables[0], PagedStore) and not join.tables[0].loaded
    out = join.process_all([Record(Side.RIGHT, "k42", {"v": -1}, 50_000)])
    # k42 had only left rows (even i: 42, 5042, 10042, 15042); the right row joins the latest
    assert [(c.left, c.right) for c in out] == [({"v": 15_042}, {"v": -1})]
    save_runtime(join, pages)
    # one key: its page of each store read (the probe looks at the left store); only the right
    # store's page changed, so only it is written back
    assert (pages.reads, pages.writes) == (2, 1)
    assert {group for _, group in pages.data} >= {key_hash("k42") & 15}


def in_turns(new_operator, batches: list[list[Record]]) -> tuple[list, int]:
    """The batches alternating between two workers' page caches, as Spark
    hands a task's batches to its workers; every third batch is first run on a copy of the state
    and thrown away (a failed attempt: its pages and tokens written, its commit lost), then run
    again from the last commit. After every save, each page a worker lends equals the bytes of
    its token. Returns the outputs and the most pages a worker held lent."""
    pages, workers, blob, batched, lent = DictPages(), (PageCache(), PageCache()), None, [], 0
    for n, batch in enumerate(batches):
        worker = workers[n % 2]
        if n % 3 == 2:
            attempt = DictPages()
            attempt.data = dict(pages.data)
            load_runtime(blob, attempt, worker).process_all(batch)  # changes values in place, then fails
            save_runtime(load_runtime(blob, attempt, worker), attempt, worker)
        operator = new_operator() if blob is None else load_runtime(blob, pages, worker)
        batched += operator.process_all(batch)
        blob = save_runtime(operator, pages, worker)
        assert_lent_pages_equal_their_bytes(worker)
        lent = max(lent, len(worker.objects))
    return batched, lent


@pytest.mark.parametrize("name", OPERATORS)
def test_workers_taking_batches_in_turns_and_retried_batches_equal_one_uninterrupted_run(name):
    records = updates(3000, 500) + [Record(Side.LEFT, f"k{k}", None, 9000 + k) for k in range(0, 500, 7)]
    batched, _ = in_turns(OPERATORS[name], [records[start:start + 250] for start in range(0, len(records), 250)])
    assert batched == OPERATORS[name]().process_all(records) and len(batched) > 1000


@pytest.mark.parametrize("name", ["table-table FULL"])  # the others keep a few keys: one page a store
def test_small_batches_over_many_pages_lend_the_pages_they_only_read(name):
    # 5,000 keys (16 pages a store from the first batch on), then 20 records a batch: a batch
    # reads pages it does not change (the other side's pages its records probe), which its
    # worker lends to its next batch there.
    records = updates(22_000, 5_000)
    batched, lent = in_turns(OPERATORS[name], [records[:20_000]] + [records[start:start + 20]
                                                                    for start in range(20_000, 22_000, 20)])
    assert batched == OPERATORS[name]().process_all(records) and lent > 0


def test_a_worker_reads_again_only_the_pages_written_since_it_kept_them():
    # worker A saves 16 pages of each store; worker B reads k42's two pages and rewrites the
    # right store's; worker A then reads that one page, and every other page from memory.
    pages, (a, b) = DictPages(), (PageCache(), PageCache())
    join = new_join()
    join.process_all(updates(20_000, 5_000))
    blob = save_runtime(join, pages, a)
    pages.reads = 0
    join = load_runtime(blob, pages, a)
    assert join.process_all([Record(Side.RIGHT, "k7", {"v": -1}, 50_000)])
    assert pages.reads == 0  # its own pages: none read
    join = load_runtime(blob, pages, b)
    join.process_all([Record(Side.RIGHT, "k42", {"v": -1}, 50_000)])
    blob = save_runtime(join, pages, b)
    assert pages.reads == 2
    join = load_runtime(blob, pages, a)
    out = join.process_all([Record(Side.LEFT, "k42", {"v": -2}, 50_001)] +
                           [Record(Side.LEFT, f"k{k}", {"v": -3}, 50_002) for k in range(1, 5_000, 50)])
    assert pages.reads == 3  # the right page B rewrote
    assert ({"v": -2}, {"v": -1}) in [(c.left, c.right) for c in out]


def test_a_worker_lends_its_next_batch_the_pages_read_and_a_failed_batch_loses_them():
    # batch 1 saves 16 pages a store; batch 2 on worker A reads k7's page, changes nothing and
    # saves: A lends that page. Batch 3 on A finds it decoded (the same objects), changes a row
    # in place, then fails before its save; batch 4 on A reads the page's bytes again, so batch
    # 3's change is not there.
    pages, worker = DictPages(), PageCache()
    join = new_join()
    join.process_all(updates(20_000, 5_000))
    blob = save_runtime(join, pages, worker)
    assert len(pages.data) == 32 and not worker.objects  # pages a batch wrote are kept as bytes alone
    reader = load_runtime(blob, pages, worker)
    stored = reader.tables[1].get("k7")  # odd keys are right rows: (row, ts)
    blob = save_runtime(reader, pages, worker)
    assert list(worker.objects) == [(reader.tables[1].store_id, key_hash("k7") & 15)]
    failed = load_runtime(blob, pages, worker)
    lent = failed.tables[1].get("k7")
    assert lent is stored and lent[0] == {"v": 15_007} and not worker.objects  # taken out, not decoded
    lent[0]["v"] = "changed in place by a batch that then fails"
    again = load_runtime(blob, pages, worker)
    assert again.tables[1].get("k7")[0] == {"v": 15_007} and pages.reads == 0  # from the kept bytes


def test_the_page_cache_keeps_its_bound_dropping_the_oldest_pages():
    cache = PageCache(max_bytes=10)
    cache.keep("s", 0, 1, b"aaaa")
    cache.keep("s", 1, 1, b"bbbb")
    cache.keep("s", 2, 1, b"cccc")  # 12 bytes: page 0 goes
    assert (cache.take("s", 0, 1), cache.take("s", 1, 1), cache.take("s", 2, 1)) == (None, b"bbbb", b"cccc")
    assert cache.take("s", 1, 2) is None  # another write's token
    cache.keep("s", 1, 2, b"b2")
    assert (cache.size, cache.take("s", 1, 2)) == (6, b"b2")
    cache.keep("s", 3, 1, b"x" * 11)  # larger than the bound: not kept
    assert (cache.size, cache.take("s", 3, 1)) == (6, None)


def test_a_store_shared_by_two_operators_stays_one_store():
    pages, join = DictPages(), new_join()
    pair = (join, join.tables[0])
    join.process_all(updates(10, 5))
    loaded_join, loaded_store = load_runtime(save_runtime(pair, pages), pages)
    assert loaded_join.tables[0] is loaded_store
    assert loaded_store.get("k0") is not None


def test_window_join_through_pages_equals_one_uninterrupted_run():
    # Rows of 7 keys on both sides, windows of 100 ms, watermarks 150 ms behind: each batch of
    # 250 rows closes windows whose rows came in earlier batches (and pages).
    def new_window_join():  # windows of 100 ms; the rows' window end from their time
        end = lambda row: (row["v"] // 100 + 1) * 100  # noqa: E731
        return WindowTvfJoin(WindowTvfJoinConfig(end, end, JoinType.FULL))

    records = [Record(Side(i % 2), f"k{i % 7}", {"v": i}, i) for i in range(3000)]

    def run(operator, batch):
        out = []
        for record in batch:
            out += operator.process(record) + operator.advance_watermark(record.side, record.ts - 150)
        return out

    whole_join = new_window_join()
    whole = run(whole_join, records) + whole_join.advance_to(END_OF_TIME)
    pages, blob, batched = DictPages(), None, []
    for start in range(0, len(records), 250):
        operator = new_window_join() if blob is None else load_runtime(blob, pages)
        batched += run(operator, records[start:start + 250])
        blob = save_runtime(operator, pages)
    batched += load_runtime(blob, pages).advance_to(END_OF_TIME)
    assert batched == whole and len(whole) > 5_000


@pytest.mark.parametrize("keys, pages", [(0, 1), (1, 1), (KEYS_PER_PAGE, 1), (KEYS_PER_PAGE + 1, 2),
                                         (100_000, 512), (1_000_000, MAX_PAGES), (10**8, MAX_PAGES)])
def test_page_count_follows_the_key_count(keys, pages):
    assert page_count_for(keys) == pages


def test_a_growing_store_is_split_and_keeps_its_rows():
    # batch n adds keys [0, 400·n): the store starts at 2 pages and is split as it passes twice
    # KEYS_PER_PAGE a page; results equal one uninterrupted run.
    records = [Record(Side(i % 2), f"k{i // 2}", {"v": i}, i) for i in range(16_000)]
    whole = new_join().process_all(records)
    pages, blob, batched, counts = DictPages(), None, [], []
    for start in range(0, len(records), 800):
        join = new_join() if blob is None else load_runtime(blob, pages)
        batched += join.process_all(records[start:start + 800])
        blob = save_runtime(join, pages)
        store = load_runtime(blob, pages).tables[0]
        counts.append((store.size, store.page_count))
    assert batched == whole
    assert counts[0] == (400, 2) and counts[-1] == (8_000, 32)
    assert all(size <= 2 * KEYS_PER_PAGE * count for size, count in counts)
    assert len(list(load_runtime(blob, pages).tables[0].items())) == 8_000


def test_a_runtime_of_another_state_format_is_refused_with_the_remedy():
    pages, join = DictPages(), new_join()
    join.process_all(updates(10, 5))
    blob = save_runtime(join, pages)
    assert blob.startswith(b"streamjoin state format %d\n" % STATE_FORMAT)
    assert load_runtime(blob, pages).tables[0].get("k0") is not None
    # what saves wrote before formats were named: the bare pickle (format 1); and a later format
    bare = blob.partition(b"\n")[2]
    newer = b"streamjoin state format %d\n" % (STATE_FORMAT + 1) + bare
    for older_or_newer, format_ in ((bare, 1), (newer, STATE_FORMAT + 1)):
        with pytest.raises(CheckpointIncompatible, match=f"format {format_}; .* Reset the query and backfill"):
            load_runtime(older_or_newer, pages)
