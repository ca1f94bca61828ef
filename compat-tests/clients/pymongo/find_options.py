"""find's options through pymongo: sort/skip/limit/batch_size across getMore (counted with a
command listener), projection, hint, min/max, return_key, show_record_id, max_time_ms (and
MaxTimeMSExpired when the cluster runs with --enable-test-commands), allow_disk_use, large sorts.

Usage: python find_options.py mongodb://127.0.0.1:27017
"""

import sys

from bson import Int64
from pymongo import ASCENDING, DESCENDING, MongoClient, monitoring
from pymongo.errors import ExecutionTimeout, OperationFailure

DB = "clients_pymongo_find_options"


class Recorder(monitoring.CommandListener):
    def __init__(self):
        self.events = []

    def started(self, event):
        self.events.append(("started", event.command_name, event.command))

    def succeeded(self, event):
        self.events.append(("succeeded", event.command_name, event.reply))

    def failed(self, event):
        self.events.append(("failed", event.command_name, None))

    def names(self):
        return [name for kind, name, _ in self.events if kind == "started"]


def expect_error(code, fn):
    try:
        fn()
    except OperationFailure as err:
        assert err.code == code, (code, err.code, err.details)
        return err
    raise AssertionError(f"expected error {code}")


def ids(docs):
    return [d["_id"] for d in docs]


def main(uri: str) -> None:
    recorder = Recorder()
    client = MongoClient(uri, event_listeners=[recorder])
    db = client[DB]
    client.drop_database(DB)
    items = db.items
    items.insert_many(
        [{"_id": i, "a": i % 10, "b": i, "tags": [i % 3, 10 + i % 4], "sub": {"x": i, "y": -i}} for i in range(300)]
    )
    items.create_index([("a", ASCENDING), ("b", DESCENDING)])

    # sort/skip/limit with a small batch size: one find, getMores until the limit, every document
    # once and in order, the server closing the cursor (no killCursors).
    recorder.events.clear()
    docs = list(items.find({}, {"_id": 1}).sort("b", -1).skip(10).limit(150).batch_size(20))
    assert ids(docs) == [289 - i for i in range(150)]
    assert recorder.names() == ["find"] + ["getMore"] * 7, recorder.names()
    replies = [reply for kind, _, reply in recorder.events if kind == "succeeded"]
    assert len(replies[0]["cursor"]["firstBatch"]) == 20
    assert [len(r["cursor"]["nextBatch"]) for r in replies[1:]] == [20] * 6 + [10]
    assert replies[-1]["cursor"]["id"] == 0
    # batch_size through the find keyword; a negative limit is a single batch (no getMore).
    recorder.events.clear()
    assert len(list(items.find({"a": 1}, batch_size=7))) == 30
    assert recorder.names() == ["find"] + ["getMore"] * 4, recorder.names()
    recorder.events.clear()
    assert ids(items.find({}, {"_id": 1}).sort("b", 1).limit(-3)) == [0, 1, 2]
    assert recorder.names() == ["find"]
    assert ids(items.find().sort("b", 1).skip(298)) == [298, 299]
    assert list(items.find().skip(400)) == []

    # Projection: inclusion, exclusion, dotted paths, $slice, $elemMatch.
    assert list(items.find({"_id": 7}, {"a": 1, "_id": 0})) == [{"a": 7}]
    assert list(items.find({"_id": 7}, {"tags": 0, "sub": 0})) == [{"_id": 7, "a": 7, "b": 7}]
    assert list(items.find({"_id": 7}, ["a"])) == [{"_id": 7, "a": 7}]
    assert list(items.find({"_id": 7}, {"sub.y": 1})) == [{"_id": 7, "sub": {"y": -7}}]
    assert list(items.find({"_id": 7}, {"tags": {"$slice": -1}, "a": 1})) == [{"_id": 7, "a": 7, "tags": [13]}]
    assert list(items.find({"_id": 7}, {"tags": {"$elemMatch": {"$gte": 10}}})) == [{"_id": 7, "tags": [13]}]

    # hint: the index's order without a sort.
    assert ids(items.find({"a": 3, "b": {"$lt": 40}}).hint([("a", 1), ("b", -1)])) == [33, 23, 13, 3]
    assert ids(items.find({"a": 3, "b": {"$lt": 40}}, hint="a_1_b_-1")) == [33, 23, 13, 3]
    expect_error(2, lambda: list(items.find().hint("missing_1")))
    # $natural: -1 scans newest first.
    assert ids(items.find({"_id": {"$lt": 5}}).sort("$natural", -1)) == [4, 3, 2, 1, 0]
    assert ids(items.find({"_id": {"$lt": 5}}).hint([("$natural", -1)])) == [4, 3, 2, 1, 0]

    # min/max with a hint: [min, max) in the index's order.
    small = db.small
    small.insert_many([{"_id": i, "a": i % 10, "b": i} for i in range(30)])
    small.create_index([("a", ASCENDING), ("b", DESCENDING)])
    hint = [("a", 1), ("b", -1)]
    assert ids(small.find().min([("a", 2), ("b", 12)]).max([("a", 4), ("b", 100)]).hint(hint)) == [12, 2, 23, 13, 3]
    assert ids(small.find({"b": {"$lt": 15}}, max={"a": 1, "b": 100}, hint="a_1_b_-1")) == [10, 0]
    # (pymongo refuses min/max without a hint itself; the server's answer through the command)
    expect_error(51173, lambda: db.command("find", "small", min={"a": 1, "b": 1}))
    expect_error(51174, lambda: list(small.find().min([("a", 1)]).hint(hint)))
    expect_error(51175, lambda: list(small.find().min([("a", 5), ("b", 1)]).max([("a", 4), ("b", 1)]).hint(hint)))

    # return_key: the index key the document was found by; {} for a collection scan.
    assert list(small.find({"a": 7}, return_key=True).sort("b", -1)) == [{"a": 7, "b": 27}, {"a": 7, "b": 17}, {"a": 7, "b": 7}]
    assert list(small.find({"b": {"$lt": 2}}, return_key=True)) == [{}, {}]
    # show_record_id: $recordId, an int64, distinct per document.
    with_ids = list(small.find({"b": {"$lt": 5}}, show_record_id=True))
    assert len(with_ids) == 5
    for d in with_ids:
        assert isinstance(d["$recordId"], Int64), d
        assert list(d) == ["_id", "a", "b", "$recordId"], d
    assert len({d["$recordId"] for d in with_ids}) == 5

    # max_time_ms: a generous limit succeeds; bad values are BadValue.
    assert len(list(items.find({"a": 1}).max_time_ms(10000))) == 30
    assert len(list(items.find({"a": 1}, max_time_ms=10000))) == 30
    expect_error(2, lambda: list(items.find().max_time_ms(-1)))
    # MaxTimeMSExpired (50, ExecutionTimeout) through the maxTimeAlwaysTimeOut fail point, only
    # with test commands.
    try:
        client.admin.command("configureFailPoint", "maxTimeAlwaysTimeOut", mode={"times": 1})
        fail_point = True
    except OperationFailure as err:
        assert err.code == 59, err.details  # CommandNotFound without --enable-test-commands
        fail_point = False
    if fail_point:
        try:
            list(items.find({"a": 1}).max_time_ms(10000))
            raise AssertionError("the fail point did not fire")
        except ExecutionTimeout as err:
            assert err.code == 50 and err.details["codeName"] == "MaxTimeMSExpired", err.details
        assert len(list(items.find({"a": 1}).max_time_ms(10000))) == 30  # used up
        client.admin.command("configureFailPoint", "maxTimeAlwaysTimeOut", mode="off")
    else:
        print("note: configureFailPoint is not available (no --enable-test-commands): MaxTimeMSExpired not checked")

    # allow_disk_use (True and False) on sorts that fit in memory.
    for allow in (True, False):
        docs = items.find({"a": 2}, {"_id": 1}).sort("sub.y", 1).allow_disk_use(allow).limit(3)
        assert ids(docs) == [292, 282, 272]

    # A large blocking sort (no index) read through several batches, and its top-k form.
    n = 10000
    pad = "p" * 200
    for start in range(0, n, 5000):
        db.big.insert_many([{"_id": i, "k": (i * 7919) % n, "pad": pad} for i in range(start, start + 5000)])
    recorder.events.clear()
    keys = [d["k"] for d in db.big.find({}, {"k": 1}).sort("k", -1).allow_disk_use(True).batch_size(1000)]
    assert keys == list(range(n - 1, -1, -1))
    assert recorder.names().count("getMore") in (9, 10), recorder.names()  # batches of 1,000
    assert list(db.big.find({}, {"_id": 0, "k": 1}).sort("k", 1).skip(100).limit(3)) == [{"k": 100}, {"k": 101}, {"k": 102}]

    client.drop_database(DB)
    print("pymongo find options: ok")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "mongodb://127.0.0.1:27017")
