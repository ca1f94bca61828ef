"""Bulk writes through pymongo: Collection.bulk_write (ordered and unordered) and the 8.0
client-level MongoClient.bulk_write (pymongo >= 4.9) across two databases.

Usage: python bulk_writes.py mongodb://127.0.0.1:27017
"""

import sys

from bson import ObjectId
from pymongo import DeleteMany, DeleteOne, InsertOne, MongoClient, ReplaceOne, UpdateMany, UpdateOne
from pymongo.errors import BulkWriteError, ClientBulkWriteException

DB = "clients_pymongo_bulk"
DB2 = "clients_pymongo_bulk2"


def contents(coll):
    return list(coll.find().sort("_id", 1))


def main(uri: str) -> None:
    client = MongoClient(uri)
    client.drop_database(DB)
    client.drop_database(DB2)
    items = client[DB].items
    logs = client[DB2].logs

    # Mixed operations, ordered (the default): counts and upserted ids.
    items.insert_many([{"_id": 1, "v": 1}, {"_id": 2, "v": 2}, {"_id": 3, "v": 3}])
    r = items.bulk_write(
        [
            InsertOne({"_id": 4, "v": 4}),
            UpdateOne({"_id": 1}, {"$set": {"v": 10}}),
            UpdateMany({"v": {"$lte": 3}}, {"$inc": {"v": 100}}),
            ReplaceOne({"_id": 3}, {"v": 33}),
            DeleteOne({"_id": 4}),
            UpdateOne({"_id": 5}, {"$set": {"v": 5}}, upsert=True),
            ReplaceOne({"_id": 6}, {"v": 6}, upsert=True),
            DeleteMany({"v": {"$gt": 100}}),
            UpdateOne({"_id": 1}, {"$set": {"v": 10}}),  # matched, not modified
            UpdateOne({"k": "seeded"}, {"$set": {"v": 7}}, upsert=True),
        ]
    )
    assert r.acknowledged
    got = (r.inserted_count, r.matched_count, r.modified_count, r.deleted_count, r.upserted_count)
    assert got == (1, 5, 4, 2, 3), got
    assert list(r.upserted_ids) == [5, 6, 9], r.upserted_ids
    assert r.upserted_ids[5] == 5 and r.upserted_ids[6] == 6 and isinstance(r.upserted_ids[9], ObjectId)
    seeded = r.upserted_ids[9]
    assert contents(items) == [
        {"_id": 1, "v": 10}, {"_id": 3, "v": 33}, {"_id": 5, "v": 5}, {"_id": 6, "v": 6}, {"_id": seeded, "k": "seeded", "v": 7},
    ], contents(items)

    # Ordered: the first error stops the batch; the error carries its operation's index.
    items.delete_many({})
    try:
        items.bulk_write([InsertOne({"_id": 10}), InsertOne({"_id": 10}), InsertOne({"_id": 11})])
        raise AssertionError("duplicate accepted")
    except BulkWriteError as err:
        errors = err.details["writeErrors"]
        assert [(e["index"], e["code"]) for e in errors] == [(1, 11000)], errors
        assert errors[0]["keyPattern"] == {"_id": 1} and errors[0]["keyValue"] == {"_id": 10}
        assert errors[0]["op"] == {"_id": 10}
        assert err.details["nInserted"] == 1
    assert contents(items) == [{"_id": 10}]

    # Unordered: every operation runs; each failure is reported with its index.
    try:
        items.bulk_write(
            [
                InsertOne({"_id": 20}),
                InsertOne({"_id": 10}),
                UpdateOne({"_id": 20}, {"$set": {"x": 1}}),
                UpdateOne({"_id": 20}, {"$set": {"_id": 99}}),
                InsertOne({"_id": 21}),
                UpdateOne({"_id": 21}, {"$inc": {"x": "a"}}),
                DeleteOne({"_id": 10}),
            ],
            ordered=False,
        )
        raise AssertionError("errors not reported")
    except BulkWriteError as err:
        d = err.details
        assert [(e["index"], e["code"]) for e in d["writeErrors"]] == [(1, 11000), (3, 66), (5, 14)], d["writeErrors"]
        got = (d["nInserted"], d["nMatched"], d["nModified"], d["nRemoved"], d["nUpserted"])
        assert got == (2, 1, 1, 1, 0), got
    assert contents(items) == [{"_id": 20, "x": 1}, {"_id": 21}]

    # Update options inside bulk operations: array_filters, sort (8.0), hint (a missing index is a
    # write error of its operation).
    items.delete_many({})
    items.insert_many([{"_id": 1, "g": 1, "a": [1, 6, 9]}, {"_id": 2, "g": 1, "a": [7]}, {"_id": 3, "g": 2, "a": [2]}])
    items.create_index("g")
    r = items.bulk_write(
        [
            UpdateMany({}, {"$set": {"a.$[big]": 0}}, array_filters=[{"big": {"$gt": 5}}]),
            UpdateOne({"g": 1}, {"$set": {"last": True}}, sort={"_id": -1}),
            DeleteOne({"g": 2}, hint=[("g", 1)]),
        ]
    )
    assert (r.matched_count, r.modified_count, r.deleted_count) == (4, 3, 1), r.bulk_api_result
    assert contents(items) == [{"_id": 1, "g": 1, "a": [1, 0, 0]}, {"_id": 2, "g": 1, "a": [0], "last": True}]
    try:
        items.bulk_write([UpdateOne({"g": 1}, {"$set": {"x": 1}}, hint="no_such_index"), InsertOne({"_id": 4})], ordered=False)
        raise AssertionError("unknown hint accepted")
    except BulkWriteError as err:
        assert [(e["index"], e["code"]) for e in err.details["writeErrors"]] == [(0, 2)], err.details
        assert err.details["nInserted"] == 1
    items.drop_indexes()

    # The 8.0 client-level bulk_write across two databases.
    items.delete_many({})
    items.insert_one({"_id": 1, "v": 1})
    r = client.bulk_write(
        [
            InsertOne({"_id": 2, "v": 2}, namespace=f"{DB}.items"),
            InsertOne({"_id": "a", "n": 1}, namespace=f"{DB2}.logs"),
            UpdateOne({"_id": "a"}, {"$inc": {"n": 1}}, namespace=f"{DB2}.logs"),
            UpdateMany({}, {"$set": {"seen": True}}, namespace=f"{DB}.items"),
            UpdateOne({"_id": "b"}, {"$set": {"n": 0}}, upsert=True, namespace=f"{DB2}.logs"),
            ReplaceOne({"_id": 1}, {"v": 100}, namespace=f"{DB}.items"),
            DeleteOne({"_id": 2}, namespace=f"{DB}.items"),
            DeleteMany({"n": 0}, namespace=f"{DB2}.logs"),
        ],
        verbose_results=True,
    )
    assert r.acknowledged and r.has_verbose_results
    got = (r.inserted_count, r.matched_count, r.modified_count, r.upserted_count, r.deleted_count)
    assert got == (2, 4, 4, 1, 2), got
    assert {i: res.inserted_id for i, res in r.insert_results.items()} == {0: 2, 1: "a"}
    assert sorted(r.update_results) == [2, 3, 4, 5]
    assert (r.update_results[3].matched_count, r.update_results[3].modified_count) == (2, 2)
    assert r.update_results[4].upserted_id == "b" and r.update_results[4].modified_count == 0
    assert {i: res.deleted_count for i, res in r.delete_results.items()} == {6: 1, 7: 1}
    assert contents(items) == [{"_id": 1, "v": 100}]
    assert contents(logs) == [{"_id": "a", "n": 2}]

    # Ordered: stops at the first error, even when later operations are for another database.
    try:
        client.bulk_write(
            [
                InsertOne({"_id": 3}, namespace=f"{DB}.items"),
                InsertOne({"_id": "c"}, namespace=f"{DB2}.logs"),
                InsertOne({"_id": 1}, namespace=f"{DB}.items"),
                InsertOne({"_id": "d"}, namespace=f"{DB2}.logs"),
            ],
            verbose_results=True,
        )
        raise AssertionError("duplicate accepted")
    except ClientBulkWriteException as err:
        assert [(e["idx"], e["code"]) for e in err.write_errors] == [(2, 11000)], err.write_errors
        assert err.write_errors[0]["keyValue"] == {"_id": 1}
        assert err.partial_result.inserted_count == 2
        assert sorted(err.partial_result.insert_results) == [0, 1]
    assert contents(items) == [{"_id": 1, "v": 100}, {"_id": 3}]
    assert contents(logs) == [{"_id": "a", "n": 2}, {"_id": "c"}]

    # Unordered: every operation runs; errors keep their positions across databases.
    try:
        client.bulk_write(
            [
                InsertOne({"_id": 4}, namespace=f"{DB}.items"),
                InsertOne({"_id": "a"}, namespace=f"{DB2}.logs"),
                InsertOne({"_id": 3}, namespace=f"{DB}.items"),
                UpdateOne({"_id": "c"}, {"$set": {"_id": "z"}}, namespace=f"{DB2}.logs"),
                InsertOne({"_id": "e"}, namespace=f"{DB2}.logs"),
            ],
            ordered=False,
            verbose_results=True,
        )
        raise AssertionError("errors not reported")
    except ClientBulkWriteException as err:
        assert [(e["idx"], e["code"]) for e in err.write_errors] == [(1, 11000), (2, 11000), (3, 66)], err.write_errors
        assert err.partial_result.inserted_count == 2
        assert sorted(err.partial_result.insert_results) == [0, 4]
    assert contents(items) == [{"_id": 1, "v": 100}, {"_id": 3}, {"_id": 4}]
    assert contents(logs) == [{"_id": "a", "n": 2}, {"_id": "c"}, {"_id": "e"}]

    # sort (8.0) on client-level UpdateOne and ReplaceOne.
    r = client.bulk_write(
        [
            UpdateOne({}, {"$set": {"top": True}}, sort={"_id": -1}, namespace=f"{DB}.items"),
            ReplaceOne({}, {"first": True}, sort={"_id": 1}, namespace=f"{DB}.items"),
        ]
    )
    assert (r.matched_count, r.modified_count) == (2, 2)
    assert contents(items) == [{"_id": 1, "first": True}, {"_id": 3}, {"_id": 4, "top": True}]

    client.drop_database(DB)
    client.drop_database(DB2)
    print("pymongo bulk writes: ok")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "mongodb://127.0.0.1:27017")
