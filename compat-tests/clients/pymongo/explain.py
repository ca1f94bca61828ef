"""explain through pymongo: Cursor.explain() (the server's default verbosity,
allPlansExecution), and the explain command (pymongo's documented way for aggregate, count and
distinct), with the plan shapes mongos answers (SINGLE_SHARD over the primary shard's plan).

Usage: python explain.py mongodb://127.0.0.1:27017
"""

import sys

from bson.son import SON
from pymongo import ASCENDING, DESCENDING, MongoClient

DB = "clients_pymongo_explain"


def stages(plan):
    out = []
    while plan is not None:
        out.append(plan["stage"])
        plan = plan.get("inputStage")
    return out


def stage(plan, name):
    node = plan
    while node is not None:
        if node["stage"] == name:
            return node
        node = node.get("inputStage")
    raise AssertionError(f"no {name} stage in {plan}")


def main(uri: str) -> None:
    client = MongoClient(uri)
    db = client[DB]
    client.drop_database(DB)
    items = db.items
    items.insert_many([{"_id": i, "a": i % 10, "b": i, "c": i % 6} for i in range(60)])
    items.create_index("a")
    items.create_index([("c", ASCENDING), ("b", DESCENDING)], name="c_b")
    primary = client.config.databases.find_one({"_id": DB})["primary"]
    shard_host = client.config.shards.find_one({"_id": primary})["host"]

    def shard_plan(explain):
        top = explain["queryPlanner"]["winningPlan"]
        assert top["stage"] == "SINGLE_SHARD", top
        assert len(top["shards"]) == 1
        shard = top["shards"][0]
        assert shard["shardName"] == primary and shard["connectionString"] == shard_host, shard
        assert shard["namespace"] == f"{DB}.items"
        assert shard["rejectedPlans"] == []
        return shard["winningPlan"]

    def exec_stats(explain, n_returned, keys, docs):
        stats = explain["executionStats"]
        got = (stats["nReturned"], stats["totalKeysExamined"], stats["totalDocsExamined"])
        assert got == (n_returned, keys, docs), got
        assert stats["executionStages"]["stage"] == "SINGLE_SHARD"
        shard = stats["executionStages"]["shards"][0]
        assert shard["shardName"] == primary and shard["nReturned"] == n_returned
        return shard["executionStages"]

    # Cursor.explain(): equality on an indexed field, FETCH over IXSCAN a_1.
    e = items.find({"a": 3}).explain()
    assert e["queryPlanner"]["winningPlan"]["shards"][0]["parsedQuery"] == {"a": {"$eq": 3}}
    plan = shard_plan(e)
    assert stages(plan) == ["FETCH", "IXSCAN"], plan
    ix = stage(plan, "IXSCAN")
    assert ix["indexName"] == "a_1" and ix["keyPattern"] == {"a": 1}
    assert ix["indexBounds"] == {"a": ["[3, 3]"]} and ix["direction"] == "forward"
    shard_stages = exec_stats(e, 6, 6, 6)
    assert shard_stages["stage"] == "FETCH" and shard_stages["inputStage"]["keysExamined"] == 6
    # pymongo's explain() sends no verbosity: the default, allPlansExecution.
    assert isinstance(e["executionStats"]["allPlansExecution"], list)
    assert e["command"]["filter"] == {"a": 3}

    # No usable index: COLLSCAN with the filter.
    e = items.find({"b": {"$gte": 50}}).explain()
    plan = shard_plan(e)
    assert stages(plan) == ["COLLSCAN"] and plan["filter"] == {"b": {"$gte": 50}}, plan
    exec_stats(e, 10, 0, 60)
    e = items.find({"a": 3}).hint([("$natural", 1)]).explain()
    assert stages(shard_plan(e)) == ["COLLSCAN"]
    exec_stats(e, 6, 0, 60)
    e = items.find({"a": 3, "c": 3}).hint("c_b").explain()
    assert stage(shard_plan(e), "IXSCAN")["indexName"] == "c_b"
    exec_stats(e, 2, 10, 10)

    # Sort, limit, skip and projection stages.
    e = items.find({"a": {"$gte": 5}}).sort("b", -1).limit(3).explain()
    plan = shard_plan(e)
    assert stages(plan) == ["SORT", "FETCH", "IXSCAN"], stages(plan)
    assert plan["sortPattern"] == {"b": -1} and plan["limitAmount"] == 3
    assert stage(plan, "IXSCAN")["indexBounds"] == {"a": ["[5, inf.0]"]}
    exec_stats(e, 3, 30, 30)
    e = items.find({"c": 2}).sort("b", -1).explain()
    plan = shard_plan(e)
    assert stages(plan) == ["FETCH", "IXSCAN"] and stage(plan, "IXSCAN")["indexName"] == "c_b"
    exec_stats(e, 10, 10, 10)
    e = items.find({"a": 3}, {"b": 1, "_id": 0}).skip(2).explain()
    plan = shard_plan(e)
    assert stages(plan) == ["PROJECTION_SIMPLE", "SKIP", "FETCH", "IXSCAN"], stages(plan)
    exec_stats(e, 4, 6, 6)

    # The explain command with a verbosity.
    e = db.command("explain", SON([("find", "items"), ("filter", {"a": 3})]), verbosity="queryPlanner")
    assert "executionStats" not in e
    assert stage(shard_plan(e), "IXSCAN")["indexName"] == "a_1"

    # Aggregate explain: aggregate with explain: true, and the explain command.
    e = db.command("aggregate", "items", pipeline=[{"$match": {"a": 3}}, {"$group": {"_id": "$a", "n": {"$sum": 1}}}], explain=True)
    assert e["splitPipeline"] is None
    assert list(e["shards"]) == [primary]
    shard_agg = e["shards"][primary]
    assert shard_agg["host"] == shard_host
    cursor = shard_agg["stages"][0]["$cursor"]
    assert stage(cursor["queryPlanner"]["winningPlan"], "IXSCAN")["indexName"] == "a_1"
    assert shard_agg["stages"][1]["$group"] == {"_id": "$a", "n": {"$sum": 1}}
    e = db.command(
        "explain",
        SON([("aggregate", "items"), ("pipeline", [{"$match": {"a": 3}}, {"$group": {"_id": "$a"}}]), ("cursor", {})]),
        verbosity="executionStats",
    )
    cursor = e["shards"][primary]["stages"][0]["$cursor"]
    assert cursor["executionStats"]["nReturned"] == 6 and cursor["executionStats"]["totalKeysExamined"] == 6
    assert e["shards"][primary]["stages"][1]["nReturned"] == 1
    e = db.command("aggregate", "items", pipeline=[{"$match": {"b": {"$lt": 5}}}], explain=True)
    assert e["shards"][primary]["queryPlanner"]["optimizedPipeline"] is True
    assert stages(e["shards"][primary]["queryPlanner"]["winningPlan"]) == ["COLLSCAN"]

    # count and distinct explains.
    e = db.command("explain", SON([("count", "items"), ("query", {"a": 3})]), verbosity="executionStats")
    plan = shard_plan(e)
    assert stages(plan)[0] == "COUNT" and stage(plan, "IXSCAN")["indexName"] == "a_1"
    assert e["executionStats"]["executionStages"]["shards"][0]["executionStages"]["nCounted"] == 6
    e = db.command("explain", {"count": "items"}, verbosity="executionStats")
    assert stages(shard_plan(e)) == ["RECORD_STORE_FAST_COUNT"]
    e = db.command("explain", SON([("distinct", "items"), ("key", "b"), ("query", {"a": 3})]), verbosity="executionStats")
    assert stage(shard_plan(e), "IXSCAN")["indexName"] == "a_1"
    assert e["executionStats"]["totalKeysExamined"] == 6

    # A delete explained: nothing deleted.
    e = db.command("explain", SON([("delete", "items"), ("deletes", [{"q": {"a": 3}, "limit": 0}])]), verbosity="executionStats")
    plan = shard_plan(e)
    assert plan["stage"] in ("DELETE", "BATCHED_DELETE") and stage(plan, "IXSCAN")["indexName"] == "a_1"
    assert e["executionStats"]["executionStages"]["shards"][0]["executionStages"]["nWouldDelete"] == 6
    assert items.count_documents({}) == 60

    client.drop_database(DB)
    print("pymongo explain: ok")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "mongodb://127.0.0.1:27017")
