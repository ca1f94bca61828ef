"""Server and catalog commands through pymongo.

Usage: python admin.py mongodb://127.0.0.1:27017
"""

import sys

from pymongo import MongoClient


def main(uri: str) -> None:
    client = MongoClient(uri)
    info = client.server_info()
    assert info["version"].startswith("8.0") and info["versionArray"][:2] == [8, 0]
    status = client.admin.command("serverStatus")
    assert status["process"] == "mongos"
    assert client.admin.command("getParameter", 1, featureCompatibilityVersion=1)["featureCompatibilityVersion"]["version"] == "8.0"
    db = client["clients_pymongo_admin"]
    client.drop_database(db.name)
    db.create_collection("a")
    db.b.insert_many([{"x": i} for i in range(5)])
    assert sorted(db.list_collection_names()) == ["a", "b"]
    names = [c["name"] for c in db.list_collections(filter={"name": "b"})]
    assert names == ["b"]
    assert [i["name"] for i in db.b.list_indexes()] == ["_id_"]
    assert db.command("dbStats")["objects"] == 5
    assert db.command("collStats", "b")["count"] == 5
    db.b.rename("c")
    assert sorted(db.list_collection_names()) == ["a", "c"]
    dbs = client.admin.command("listDatabases", nameOnly=True, filter={"name": db.name})
    assert [d["name"] for d in dbs["databases"]] == [db.name]
    entry = client.config.databases.find_one({"_id": db.name})
    assert entry["primary"].startswith("shard") and entry["version"]["lastMod"] == 1
    client.drop_database(db.name)
    print("pymongo admin: ok")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "mongodb://127.0.0.1:27017")
