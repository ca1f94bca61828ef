"""Indexes through pymongo: create_index/create_indexes with options, list_indexes and
index_information, duplicate keys, conflicting options, hint in find, drop_index by name and by
key, drop_indexes.

Usage: python indexes.py mongodb://127.0.0.1:27017
"""

import sys
from datetime import datetime, timezone

from pymongo import ASCENDING, DESCENDING, HASHED, IndexModel, MongoClient
from pymongo.errors import BulkWriteError, DuplicateKeyError, OperationFailure


def expect_error(code, fn, kind=OperationFailure):
    try:
        fn()
    except kind as err:
        assert err.code == code, (code, err.code, err.details)
        return err
    raise AssertionError(f"expected error {code}")


def main(uri: str) -> None:
    client = MongoClient(uri)
    db = client["clients_pymongo_indexes"]
    client.drop_database(db.name)
    items = db.items
    now = datetime.now(timezone.utc)
    items.insert_many(
        [
            {"_id": 1, "sku": "a", "cat": "tools", "price": 5, "qty": 20, "tag": "t1", "owner": "ann", "createdAt": now},
            {"_id": 2, "sku": "b", "cat": "tools", "price": 9, "qty": 3, "owner": "bob", "createdAt": now},
            {"_id": 3, "sku": "c", "cat": "garden", "price": 7, "qty": 50, "tag": "t2", "owner": "ann", "createdAt": now},
            {"_id": 4, "sku": "d", "cat": "tools", "price": 1, "qty": 11, "owner": "cy", "createdAt": now},
        ]
    )

    # create_index / create_indexes with options; MongoDB's default names unless given.
    assert items.create_index("sku", unique=True) == "sku_1"
    names = items.create_indexes(
        [
            IndexModel([("cat", ASCENDING), ("price", DESCENDING)], sparse=True),
            IndexModel("tag", sparse=True),
            IndexModel("qty", name="big_qty", partialFilterExpression={"qty": {"$gt": 10}}),
            IndexModel("createdAt", expireAfterSeconds=3600),
            IndexModel([("owner", HASHED)]),
            IndexModel("legacy", hidden=True, unique=True, sparse=True),
            IndexModel([("cat", ASCENDING), ("sku", ASCENDING)], name="by_cat_sku"),
        ]
    )
    assert names == ["cat_1_price_-1", "tag_1", "big_qty", "createdAt_1", "owner_hashed", "legacy_1", "by_cat_sku"], names
    # The same index again is a no-op.
    again = db.command("createIndexes", "items", indexes=[{"key": {"sku": 1}, "name": "sku_1", "unique": True}])
    assert again["numIndexesBefore"] == again["numIndexesAfter"], again
    assert again["note"] == "all indexes already exist", again
    # A unique hashed index is refused.
    expect_error(16764, lambda: items.create_index([("h", HASHED)], unique=True))

    # list_indexes / index_information: every specification, in creation order.
    specs = list(items.list_indexes())
    assert [s["name"] for s in specs] == [
        "_id_", "sku_1", "cat_1_price_-1", "tag_1", "big_qty", "createdAt_1", "owner_hashed", "legacy_1", "by_cat_sku",
    ], [s["name"] for s in specs]
    by_name = {s["name"]: s for s in specs}
    assert all(s["v"] == 2 for s in specs)
    assert list(by_name["_id_"]["key"].items()) == [("_id", 1)]
    assert by_name["sku_1"]["unique"] is True
    assert list(by_name["cat_1_price_-1"]["key"].items()) == [("cat", 1), ("price", -1)]
    assert by_name["cat_1_price_-1"]["sparse"] is True and by_name["tag_1"]["sparse"] is True
    assert by_name["big_qty"]["partialFilterExpression"] == {"qty": {"$gt": 10}}
    assert by_name["createdAt_1"]["expireAfterSeconds"] == 3600
    assert by_name["owner_hashed"]["key"] == {"owner": "hashed"}
    assert by_name["legacy_1"]["hidden"] is True and by_name["legacy_1"]["unique"] is True
    assert "unique" not in by_name["by_cat_sku"] and "sparse" not in by_name["by_cat_sku"]
    info = items.index_information()
    assert info["cat_1_price_-1"]["key"] == [("cat", 1), ("price", -1)], info["cat_1_price_-1"]
    assert info["owner_hashed"]["key"] == [("owner", "hashed")]
    assert info["big_qty"]["partialFilterExpression"] == {"qty": {"$gt": 10}}

    # Duplicate keys: code 11000 with keyPattern and keyValue in the error's details.
    err = expect_error(11000, lambda: items.insert_one({"_id": 10, "sku": "a"}), DuplicateKeyError)
    assert err.details["keyPattern"] == {"sku": 1} and err.details["keyValue"] == {"sku": "a"}, err.details
    assert 'index: sku_1 dup key: { sku: "a" }' in err.details["errmsg"], err.details
    try:
        items.insert_many([{"_id": 11, "sku": "e"}, {"_id": 12, "sku": "b"}, {"_id": 13, "sku": "f"}], ordered=False)
        raise AssertionError("duplicate accepted")
    except BulkWriteError as bwe:
        errors = bwe.details["writeErrors"]
        assert [(e["index"], e["code"]) for e in errors] == [(1, 11000)], errors
        assert errors[0]["keyPattern"] == {"sku": 1} and errors[0]["keyValue"] == {"sku": "b"}, errors
        assert bwe.details["nInserted"] == 2
    err = expect_error(11000, lambda: items.update_one({"_id": 2}, {"$set": {"sku": "c"}}), DuplicateKeyError)
    assert err.details["keyValue"] == {"sku": "c"}
    # A hidden unique index still enforces uniqueness.
    items.update_one({"_id": 1}, {"$set": {"legacy": "x"}})
    err = expect_error(11000, lambda: items.update_one({"_id": 2}, {"$set": {"legacy": "x"}}), DuplicateKeyError)
    assert err.details["keyPattern"] == {"legacy": 1}
    # Unique over existing duplicates fails and leaves no index behind.
    err = expect_error(11000, lambda: items.create_index("cat", unique=True))
    assert err.details["keyPattern"] == {"cat": 1}, err.details
    assert "cat_1" not in items.index_information()
    # unique + sparse: missing fields do not collide; unique + partial: outside the filter,
    # duplicates are allowed.
    assert items.create_index("code", unique=True, sparse=True) == "code_1"
    items.insert_many([{"_id": 20, "sku": "s20"}, {"_id": 21, "sku": "s21", "code": 7}])
    err = expect_error(11000, lambda: items.insert_one({"_id": 22, "sku": "s22", "code": 7}), DuplicateKeyError)
    assert err.details["keyValue"] == {"code": 7}
    assert items.create_index("email", unique=True, partialFilterExpression={"email": {"$type": "string"}}) == "email_1"
    items.insert_many([{"_id": 30, "sku": "s30", "email": None}, {"_id": 31, "sku": "s31", "email": None}, {"_id": 32, "sku": "s32", "email": "x@y"}])
    expect_error(11000, lambda: items.insert_one({"_id": 33, "sku": "s33", "email": "x@y"}), DuplicateKeyError)

    # Conflicting options: 85 (same name and key, other options; same key, other name), 86 (same
    # name, other key), 67 for invalid combinations.
    err = expect_error(85, lambda: items.create_index("sku", name="sku_1"))
    assert err.details["codeName"] == "IndexOptionsConflict"
    err = expect_error(86, lambda: items.create_index([("sku", DESCENDING)], name="sku_1"))
    assert err.details["codeName"] == "IndexKeySpecsConflict"
    expect_error(85, lambda: items.create_index("sku", unique=True, name="sku_again"))
    expect_error(67, lambda: items.create_index([("a", 1), ("b", 1)], expireAfterSeconds=10))
    expect_error(67, lambda: items.create_index("a", sparse=True, partialFilterExpression={"a": 1}))
    # Invalid specifications.
    def raw_index(spec):
        return db.command("createIndexes", "items", indexes=[spec])

    expect_error(197, lambda: raw_index({"key": {"a": 1}, "name": "a_1", "foo": 1}))
    expect_error(197, lambda: items.create_index("_id", expireAfterSeconds=10))
    expect_error(67, lambda: raw_index({"key": {"a": 0}, "name": "a_0"}))
    expect_error(67, lambda: raw_index({"key": {"a": "foo"}, "name": "a_foo"}))
    expect_error(67, lambda: raw_index({"key": {}, "name": "none"}))
    expect_error(14, lambda: raw_index({"key": {"a": 1}, "name": "a_1", "sparse": "yes"}))
    expect_error(2, lambda: raw_index({"key": {"q": 1}, "name": "*"}))
    expect_error(67, lambda: raw_index({"key": {"r": 1}, "name": "r_1", "partialFilterExpression": {"r": {"$regex": "x"}}}))
    expect_error(197, lambda: raw_index({"key": {"_id": 1}, "name": "_id_", "unique": True}))

    # hint in find: by name, by key pattern, $natural; the hinted index gives the order.
    def ids(cursor):
        return [d["_id"] for d in cursor]

    assert ids(items.find({"cat": "tools"}, {"_id": 1}).hint("cat_1_price_-1")) == [2, 1, 4]
    assert ids(items.find({"cat": "tools"}, {"_id": 1}).hint([("cat", 1), ("price", -1)])) == [2, 1, 4]
    assert ids(items.find({"cat": "tools"}, {"_id": 1}, hint="cat_1_price_-1")) == [2, 1, 4]
    assert ids(items.find({"_id": {"$lte": 4}}, {"_id": 1}).hint([("$natural", 1)])) == [1, 2, 3, 4]
    assert ids(items.find({"_id": {"$lte": 4}}, {"_id": 1}).hint([("$natural", -1)])) == [4, 3, 2, 1]
    assert ids(items.find({"owner": "ann"}, {"_id": 1}).hint("owner_hashed").sort("_id", 1)) == [1, 3]
    # A sparse index hinted: only the documents it holds.
    assert ids(items.find({}, {"_id": 1}).hint("tag_1")) == [1, 3]
    err = expect_error(2, lambda: list(items.find().hint("no_such_index")))
    assert "hint provided does not correspond to an existing index" in str(err)
    expect_error(2, lambda: list(items.find().hint([("nope", 1)])))
    expect_error(2, lambda: list(items.find({"legacy": "x"}).hint("legacy_1")))  # hidden

    # drop_index by name and by key (pymongo turns a key list into its default name; the
    # dropIndexes command also takes the key pattern itself), errors, drop_indexes ('*').
    items.drop_index("big_qty")
    items.drop_index([("cat", ASCENDING), ("price", DESCENDING)])
    items.create_index([("cat", ASCENDING), ("price", DESCENDING)])
    assert db.command("dropIndexes", "items", index={"cat": 1, "price": -1})["ok"] == 1
    expect_error(27, lambda: items.drop_index("big_qty"))
    expect_error(27, lambda: db.command("dropIndexes", "items", index={"zz": 1}))
    expect_error(72, lambda: items.drop_index("_id_"))
    names = list(items.index_information())
    assert "big_qty" not in names and "cat_1_price_-1" not in names and "sku_1" in names, names
    items.drop_indexes()
    assert list(items.index_information()) == ["_id_"]
    items.insert_one({"_id": 40, "sku": "a"})
    expect_error(26, lambda: db.command("listIndexes", "missing"))
    assert list(db.missing.list_indexes()) == []

    client.drop_database(db.name)
    print("pymongo indexes: ok")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "mongodb://127.0.0.1:27017")
