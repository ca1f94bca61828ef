// explain through the Node.js driver: cursor.explain() (default verbosity: allPlansExecution) and
// cursor.explain(verbosity), aggregate cursors, the explain option of distinct, deleteMany and
// findOneAndUpdate, and the explain command for count (the driver has no count explain), with the
// plan shapes mongos answers (SINGLE_SHARD over the primary shard's plan).
// Usage: NODE_PATH=<dir with the mongodb package> node explain.cjs mongodb://127.0.0.1:27017
const assert = require('node:assert/strict');
const { MongoClient } = require('mongodb');

const DB = 'clients_node_explain';

function stages(plan) {
  const out = [];
  for (let s = plan; s; s = s.inputStage) out.push(s.stage);
  return out;
}
function stage(plan, name) {
  for (let s = plan; s; s = s.inputStage) if (s.stage === name) return s;
  throw new Error(`no ${name} stage in ${JSON.stringify(plan)}`);
}

async function main() {
  const client = new MongoClient(process.argv[2] ?? 'mongodb://127.0.0.1:27017');
  try {
    const db = client.db(DB);
    await db.dropDatabase();
    const items = db.collection('items');
    await items.insertMany(Array.from({ length: 60 }, (_, i) => ({ _id: i, a: i % 10, b: i, c: i % 6 })));
    await items.createIndex({ a: 1 });
    await items.createIndex({ c: 1, b: -1 }, { name: 'c_b' });
    const config = client.db('config');
    const { primary } = await config.collection('databases').findOne({ _id: DB });
    const { host: shardHost } = await config.collection('shards').findOne({ _id: primary });

    const shardPlan = (explain) => {
      const top = explain.queryPlanner.winningPlan;
      assert.equal(top.stage, 'SINGLE_SHARD');
      assert.equal(top.shards.length, 1);
      const shard = top.shards[0];
      assert.equal(shard.shardName, primary);
      assert.equal(shard.connectionString, shardHost);
      assert.equal(shard.namespace, `${DB}.items`);
      assert.deepEqual(shard.rejectedPlans, []);
      return shard.winningPlan;
    };
    const execStats = (explain, nReturned, keys, docs) => {
      const stats = explain.executionStats;
      assert.deepEqual([stats.nReturned, stats.totalKeysExamined, stats.totalDocsExamined], [nReturned, keys, docs]);
      assert.equal(stats.executionStages.stage, 'SINGLE_SHARD');
      const shard = stats.executionStages.shards[0];
      assert.equal(shard.shardName, primary);
      assert.equal(shard.nReturned, nReturned);
      return shard.executionStages;
    };

    // cursor.explain(): equality on an indexed field, FETCH over IXSCAN a_1.
    let e = await items.find({ a: 3 }).explain();
    assert.deepEqual(e.queryPlanner.winningPlan.shards[0].parsedQuery, { a: { $eq: 3 } });
    let plan = shardPlan(e);
    assert.deepEqual(stages(plan), ['FETCH', 'IXSCAN']);
    const ix = stage(plan, 'IXSCAN');
    assert.equal(ix.indexName, 'a_1');
    assert.deepEqual(ix.keyPattern, { a: 1 });
    assert.deepEqual(ix.indexBounds, { a: ['[3, 3]'] });
    assert.equal(ix.direction, 'forward');
    const shardStages = execStats(e, 6, 6, 6);
    assert.equal(shardStages.inputStage.keysExamined, 6);
    assert.ok(Array.isArray(e.executionStats.allPlansExecution)); // default verbosity
    e = await items.find({ a: 3 }).explain('queryPlanner');
    assert.equal(e.executionStats, undefined);
    assert.equal(stage(shardPlan(e), 'IXSCAN').indexName, 'a_1');

    // No usable index: COLLSCAN.
    e = await items.find({ b: { $gte: 50 } }).explain('executionStats');
    plan = shardPlan(e);
    assert.deepEqual(stages(plan), ['COLLSCAN']);
    assert.deepEqual(plan.filter, { b: { $gte: 50 } });
    execStats(e, 10, 0, 60);
    e = await items.find({ a: 3 }, { hint: { $natural: 1 } }).explain('executionStats');
    assert.deepEqual(stages(shardPlan(e)), ['COLLSCAN']);
    execStats(e, 6, 0, 60);
    e = await items.find({ a: 3, c: 3 }).hint('c_b').explain('executionStats');
    assert.equal(stage(shardPlan(e), 'IXSCAN').indexName, 'c_b');
    execStats(e, 2, 10, 10);

    // Sort, limit, skip and projection stages.
    e = await items.find({ a: { $gte: 5 } }).sort({ b: -1 }).limit(3).explain('executionStats');
    plan = shardPlan(e);
    assert.deepEqual(stages(plan), ['SORT', 'FETCH', 'IXSCAN']);
    assert.deepEqual(plan.sortPattern, { b: -1 });
    assert.equal(plan.limitAmount, 3);
    assert.deepEqual(stage(plan, 'IXSCAN').indexBounds, { a: ['[5, inf.0]'] });
    execStats(e, 3, 30, 30);
    e = await items.find({ c: 2 }).sort({ b: -1 }).explain('executionStats');
    plan = shardPlan(e);
    assert.deepEqual(stages(plan), ['FETCH', 'IXSCAN']);
    assert.equal(stage(plan, 'IXSCAN').indexName, 'c_b');
    execStats(e, 10, 10, 10);
    e = await items.find({ a: 3 }).project({ b: 1, _id: 0 }).skip(2).explain('executionStats');
    assert.deepEqual(stages(shardPlan(e)), ['PROJECTION_SIMPLE', 'SKIP', 'FETCH', 'IXSCAN']);
    execStats(e, 4, 6, 6);

    // Aggregation cursors explain.
    e = await items.aggregate([{ $match: { a: 3 } }, { $group: { _id: '$a', n: { $sum: 1 } } }]).explain('executionStats');
    assert.equal(e.splitPipeline, null);
    assert.deepEqual(Object.keys(e.shards), [primary]);
    const shardAgg = e.shards[primary];
    assert.equal(shardAgg.host, shardHost);
    const cursor = shardAgg.stages[0].$cursor;
    assert.equal(stage(cursor.queryPlanner.winningPlan, 'IXSCAN').indexName, 'a_1');
    assert.equal(cursor.executionStats.nReturned, 6);
    assert.equal(cursor.executionStats.totalKeysExamined, 6);
    assert.deepEqual(shardAgg.stages[1].$group, { _id: '$a', n: { $sum: 1 } });
    assert.equal(shardAgg.stages[1].nReturned, 1);
    e = await items.aggregate([{ $match: { b: { $lt: 5 } } }]).explain('queryPlanner');
    assert.equal(e.shards[primary].queryPlanner.optimizedPipeline, true);
    assert.deepEqual(stages(e.shards[primary].queryPlanner.winningPlan), ['COLLSCAN']);

    // distinct with the explain option; count through the explain command.
    e = await items.distinct('b', { a: 3 }, { explain: 'executionStats' });
    assert.equal(stage(shardPlan(e), 'IXSCAN').indexName, 'a_1');
    assert.equal(e.executionStats.totalKeysExamined, 6);
    e = await db.command({ explain: { count: 'items', query: { a: 3 } }, verbosity: 'executionStats' });
    plan = shardPlan(e);
    assert.equal(plan.stage, 'COUNT');
    assert.equal(stage(plan, 'IXSCAN').indexName, 'a_1');
    assert.equal(e.executionStats.executionStages.shards[0].executionStages.nCounted, 6);
    e = await db.command({ explain: { count: 'items' }, verbosity: 'executionStats' });
    assert.deepEqual(stages(shardPlan(e)), ['RECORD_STORE_FAST_COUNT']);

    // Writes with the explain option: plans and would-be counts, nothing written.
    e = await items.deleteMany({ a: 3 }, { explain: 'executionStats' });
    plan = shardPlan(e);
    assert.ok(['DELETE', 'BATCHED_DELETE'].includes(plan.stage), plan.stage);
    assert.equal(stage(plan, 'IXSCAN').indexName, 'a_1');
    assert.equal(e.executionStats.executionStages.shards[0].executionStages.nWouldDelete, 6);
    // With includeResultMetadata the driver hands back the whole reply (the default: its `value`).
    e = await items.findOneAndUpdate({ b: 7 }, { $set: { z: 1 } }, { explain: 'executionStats', includeResultMetadata: true });
    plan = shardPlan(e);
    assert.deepEqual(stages(plan), ['UPDATE', 'COLLSCAN']);
    assert.equal(e.executionStats.executionStages.shards[0].executionStages.nWouldModify, 1);
    assert.equal(await items.countDocuments({}), 60);
    assert.equal(await items.countDocuments({ z: 1 }), 0);

    await db.dropDatabase();
    console.log('node explain: ok');
  } finally {
    await client.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
