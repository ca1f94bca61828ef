"""The foundation user story through pymongo with its default options.

Usage: python user_story.py mongodb://127.0.0.1:27017
"""

import sys

from pymongo import MongoClient
from pymongo.errors import DuplicateKeyError


def main(uri: str) -> None:
    client = MongoClient(uri)
    hello = client.admin.command("hello")
    assert hello["msg"] == "isdbgrid", hello
    db = client["clients_pymongo"]
    client.drop_database(db.name)

    users = db.users
    users.insert_one({"name": "ann", "age": 30})
    users.insert_many([{"name": "bob", "age": 25}, {"name": "cy", "age": 41}, {"name": "dee", "age": 25}])
    assert db.name in client.list_database_names()
    assert db.list_collection_names() == ["users"]

    bob = users.find_one({"name": "bob"}, {"_id": 0})
    assert bob == {"name": "bob", "age": 25}, bob
    assert [u["name"] for u in users.find({"age": {"$gt": 26}}).sort("age", 1)] == ["ann", "cy"]
    assert users.count_documents({"age": 25}) == 2
    assert users.estimated_document_count() == 4
    assert sorted(users.distinct("age")) == [25, 30, 41]

    result = users.update_one({"name": "ann"}, {"$set": {"age": 31}})
    assert (result.matched_count, result.modified_count) == (1, 1)
    result = users.update_one({"name": "eve"}, {"$set": {"age": 50}}, upsert=True)
    assert result.upserted_id is not None
    assert users.delete_many({"age": 25}).deleted_count == 2

    users.insert_one({"_id": 7})
    try:
        users.insert_one({"_id": 7})
        raise AssertionError("duplicate _id accepted")
    except DuplicateKeyError as err:
        assert err.code == 11000
        assert err.details["keyValue"] == {"_id": 7}

    many = db.many
    many.insert_many([{"i": i} for i in range(500)])
    assert len(list(many.find({}, batch_size=50))) == 500

    users.drop()
    assert "users" not in db.list_collection_names()
    client.drop_database(db.name)
    assert db.name not in client.list_database_names()
    print("pymongo user story: ok")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "mongodb://127.0.0.1:27017")
