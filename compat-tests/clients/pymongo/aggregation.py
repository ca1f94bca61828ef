"""Aggregation stages that reach other collections, through pymongo.

Usage: python aggregation.py mongodb://127.0.0.1:27017
"""

import sys

from pymongo import MongoClient
from pymongo.errors import OperationFailure


def main(uri: str) -> None:
    client = MongoClient(uri)
    db = client["clients_pymongo_agg"]
    client.drop_database(db.name)
    client.admin.command("shardCollection", f"{db.name}.employees", key={"_id": "hashed"})
    db.employees.insert_many([
        {"_id": 1, "name": "Dev"},
        {"_id": 2, "name": "Eliot", "boss": "Dev"},
        {"_id": 3, "name": "Ron", "boss": "Eliot"},
    ])
    chain = list(db.employees.aggregate([
        {"$match": {"name": "Ron"}},
        {"$graphLookup": {"from": "employees", "startWith": "$boss", "connectFromField": "boss",
                          "connectToField": "name", "as": "chain", "depthField": "depth"}},
    ]))
    assert sorted((c["name"], c["depth"]) for c in chain[0]["chain"]) == [("Dev", 1), ("Eliot", 0)], chain

    db.employees.aggregate([
        {"$project": {"name": 1, "level": {"$cond": [{"$ifNull": ["$boss", False]}, "staff", "head"]}}},
        {"$merge": {"into": "levels", "whenMatched": "replace"}},
    ])
    assert db.levels.count_documents({"level": "staff"}) == 2
    try:
        list(db.employees.aggregate([{"$out": "x"}, {"$match": {}}]))
        raise AssertionError("$out not last must fail")
    except OperationFailure as e:
        assert e.code == 40601, e
    print("aggregation.py ok")


if __name__ == "__main__":
    main(sys.argv[1])
