"""Authentication through pymongo against docgrid --auth (root/example): both SCRAM
mechanisms, a wrong password (18), a read user refused a write (13), user management.

Usage: python auth.py 127.0.0.1:27017
"""

import sys

from pymongo import MongoClient
from pymongo.errors import OperationFailure


def main(host: str) -> None:
    root = MongoClient(f"mongodb://root:example@{host}/?authSource=admin")
    db = root["clients_pymongo_auth"]
    db.command("dropAllUsersFromDatabase")
    root.drop_database(db.name)
    db.command("createUser", "writer", pwd="w", roles=["readWrite"])
    db.command("createUser", "reader", pwd="r", roles=["read"])
    info = db.command("usersInfo", "writer")["users"][0]
    assert info["_id"] == "clients_pymongo_auth.writer" and sorted(info["mechanisms"]) == ["SCRAM-SHA-1", "SCRAM-SHA-256"], info
    for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-1"]:
        writer = MongoClient(host, username="writer", password="w", authSource=db.name, authMechanism=mechanism)
        writer[db.name].c.insert_one({"mechanism": mechanism})
        writer.close()
    reader = MongoClient(host, username="reader", password="r", authSource=db.name)
    assert reader[db.name].c.count_documents({}) == 2
    try:
        reader[db.name].c.insert_one({"x": 1})
        raise AssertionError("a read user could insert")
    except OperationFailure as e:
        assert e.code == 13, e.details
    wrong = MongoClient(host, username="reader", password="nope", authSource=db.name, serverSelectionTimeoutMS=3000)
    try:
        wrong[db.name].command("ping")
        raise AssertionError("a wrong password authenticated")
    except OperationFailure as e:
        assert e.code == 18, e.details
    anonymous = MongoClient(host)
    try:
        anonymous[db.name].c.find_one()
        raise AssertionError("an unauthenticated find ran")
    except OperationFailure as e:
        assert e.code == 13 and "requires authentication" in str(e), e.details
    db.command("dropUser", "reader")
    assert db.command("dropAllUsersFromDatabase")["n"] == 1
    root.drop_database(db.name)
    print("ok")


if __name__ == "__main__":
    main(sys.argv[1])
