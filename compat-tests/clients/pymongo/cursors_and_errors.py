"""Cursors, batches and MongoDB's errors through pymongo.

Usage: python cursors_and_errors.py mongodb://127.0.0.1:27017
"""

import sys

from bson import Int64
from pymongo import MongoClient
from pymongo.errors import DuplicateKeyError, OperationFailure, WriteError


def expect_error(code, fn):
    try:
        fn()
    except OperationFailure as err:
        assert err.code == code, (err.code, err.details)
        return err
    raise AssertionError(f"expected error {code}")


def main(uri: str) -> None:
    client = MongoClient(uri)
    db = client["clients_pymongo_cursors"]
    client.drop_database(db.name)
    items = db.items
    items.insert_many([{"_id": i, "even": i % 2 == 0} for i in range(250)])
    assert sum(1 for _ in items.find({}, batch_size=20)) == 250
    assert len(list(items.find({"even": True}).limit(7))) == 7
    assert len(list(items.find().skip(240))) == 10
    assert list(items.find({}, {"_id": 1}).sort("_id", -1).limit(2)) == [{"_id": 249}, {"_id": 248}]
    cursor = items.find({}, batch_size=5)
    next(cursor)
    cursor.close()

    try:
        items.insert_one({"_id": 1})
        raise AssertionError("duplicate accepted")
    except DuplicateKeyError as err:
        assert err.code == 11000 and err.details["keyPattern"] == {"_id": 1}
    err = expect_error(59, lambda: db.command("noSuchCommand"))
    assert err.details["codeName"] == "CommandNotFound"
    try:
        items.update_one({"_id": 2}, {"$set": {"_id": 3}})
        raise AssertionError("immutable _id changed")
    except WriteError as err:
        assert err.code == 66
    expect_error(2, lambda: list(items.find({"$foo": 1})))
    expect_error(43, lambda: db.command("getMore", Int64(12345), collection="items"))
    expect_error(14, lambda: db.command("getMore", 12345, collection="items"))
    client.drop_database(db.name)
    print("pymongo cursors and errors: ok")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "mongodb://127.0.0.1:27017")
