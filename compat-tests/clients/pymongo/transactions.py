"""Multi-document transactions through pymongo: commit applies, abort discards, with_transaction
runs transfers (retrying what the server labels TransientTransactionError), a write conflict
between two transactions answers WriteConflict labelled TransientTransactionError, and money is
conserved across an unsharded and a sharded collection.

Usage: python transactions.py mongodb://127.0.0.1:27017
"""

import sys

from pymongo import MongoClient
from pymongo.errors import OperationFailure


def balances(coll):
    return {d["_id"]: d["balance"] for d in coll.find()}


def run(client, coll):
    coll.insert_many([{"_id": i, "balance": 100} for i in range(4)])

    with client.start_session() as session:
        # An abort keeps nothing.
        session.start_transaction()
        coll.update_one({"_id": 0}, {"$inc": {"balance": -10}}, session=session)
        coll.update_one({"_id": 1}, {"$inc": {"balance": 10}}, session=session)
        assert coll.find_one({"_id": 0})["balance"] == 100, "uncommitted writes are invisible"
        session.abort_transaction()
        assert balances(coll) == {0: 100, 1: 100, 2: 100, 3: 100}

        # A commit applies both writes.
        session.start_transaction()
        coll.update_one({"_id": 0}, {"$inc": {"balance": -10}}, session=session)
        coll.update_one({"_id": 1}, {"$inc": {"balance": 10}}, session=session)
        assert coll.find_one({"_id": 1}, session=session)["balance"] == 110, "reads its own write"
        session.commit_transaction()
        assert balances(coll) == {0: 90, 1: 110, 2: 100, 3: 100}

        # with_transaction: transfers around the accounts.
        def transfer(s, frm, to):
            coll.update_one({"_id": frm}, {"$inc": {"balance": -5}}, session=s)
            coll.update_one({"_id": to}, {"$inc": {"balance": 5}}, session=s)

        for i in range(8):
            session.with_transaction(lambda s: transfer(s, i % 4, (i + 1) % 4))
        assert sum(balances(coll).values()) == 400, balances(coll)

    # Two transactions writing one document: the second writer conflicts.
    with client.start_session() as first, client.start_session() as second:
        first.start_transaction()
        second.start_transaction()
        coll.update_one({"_id": 2}, {"$inc": {"balance": 1}}, session=first)
        try:
            coll.update_one({"_id": 2}, {"$inc": {"balance": 1}}, session=second)
            raise AssertionError("the second writer did not conflict")
        except OperationFailure as err:
            assert err.code == 112, err.details
            assert err.has_error_label("TransientTransactionError"), err.details
        second.abort_transaction()
        first.commit_transaction()
    assert sum(balances(coll).values()) == 401, balances(coll)


def main(uri: str) -> None:
    client = MongoClient(uri)
    db = client["clients_pymongo_txn"]
    client.drop_database(db.name)
    run(client, db.accounts)
    client.admin.command("shardCollection", f"{db.name}.sharded", key={"_id": "hashed"})
    run(client, db.sharded)
    client.drop_database(db.name)
    print("pymongo transactions: ok")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "mongodb://127.0.0.1:27017")
