"""Multi-document transactions are refused, clearly and without side effects, through pymongo.

docgrid has no transactions yet: every statement of one answers NotImplemented (238), nothing is
written, abort_transaction is harmless and with_transaction gives up at once (no retry loop).

Usage: python transactions.py mongodb://127.0.0.1:27017
"""

import sys

from pymongo import MongoClient
from pymongo.errors import OperationFailure


def refused(err: OperationFailure) -> None:
    assert err.code == 238, (err.code, err.details)
    assert err.details["codeName"] == "NotImplemented", err.details
    assert "transactions are not supported" in str(err), str(err)
    assert not err.has_error_label("TransientTransactionError"), err.details


def main(uri: str) -> None:
    client = MongoClient(uri)
    db = client["clients_pymongo_txn"]
    client.drop_database(db.name)
    accounts = db.accounts
    accounts.insert_many([{"_id": "a", "balance": 100}, {"_id": "b", "balance": 100}])

    # A transfer loop that aborts: no money appears or disappears.
    with client.start_session() as session:
        for _ in range(5):
            session.start_transaction()
            try:
                accounts.update_one({"_id": "a"}, {"$inc": {"balance": -10}}, session=session)
                raise AssertionError("a transaction statement was accepted")
            except OperationFailure as err:
                refused(err)
            session.abort_transaction()

        calls = []

        def transfer(s):
            calls.append(1)
            accounts.update_one({"_id": "a"}, {"$inc": {"balance": -10}}, session=s)
            accounts.update_one({"_id": "b"}, {"$inc": {"balance": 10}}, session=s)

        try:
            session.with_transaction(transfer)
            raise AssertionError("with_transaction succeeded")
        except OperationFailure as err:
            refused(err)
        assert len(calls) == 1, calls

    balances = {d["_id"]: d["balance"] for d in accounts.find()}
    assert balances == {"a": 100, "b": 100}, balances
    client.drop_database(db.name)
    print("pymongo transactions: ok")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "mongodb://127.0.0.1:27017")
