// explain through mongosh: cursor.explain(verbosity), db.coll.explain().aggregate/count/distinct
// and writes, with the plan shapes mongos answers (SINGLE_SHARD over the primary shard's plan).
const assert = require('assert');
const app = db.getSiblingDB('clients_mongosh_explain');
app.dropDatabase();

function eq(actual, expected, message) {
  assert.strictEqual(EJSON.stringify(actual, { relaxed: false }), EJSON.stringify(expected, { relaxed: false }), message);
}

app.items.insertMany(Array.from({ length: 60 }, (_, i) => ({ _id: i, a: i % 10, b: i, c: i % 6 })));
app.items.createIndex({ a: 1 });
app.items.createIndex({ c: 1, b: -1 }, { name: 'c_b' });
const primary = db.getSiblingDB('config').databases.findOne({ _id: app.getName() }).primary;
const shardHost = db.getSiblingDB('config').shards.findOne({ _id: primary }).host;

// The mongos wrapper: one shard, the database's primary; returns that shard's winning plan.
function shardPlan(explain) {
  const top = explain.queryPlanner.winningPlan;
  assert.strictEqual(top.stage, 'SINGLE_SHARD');
  assert.strictEqual(top.shards.length, 1);
  const shard = top.shards[0];
  assert.strictEqual(shard.shardName, primary);
  assert.strictEqual(shard.connectionString, shardHost);
  assert.strictEqual(shard.namespace, 'clients_mongosh_explain.items');
  eq(shard.rejectedPlans, []);
  return shard.winningPlan;
}
// Stage names from the root down (inputStage chain).
function stages(plan) {
  const out = [];
  for (let s = plan; s; s = s.inputStage) out.push(s.stage);
  return out;
}
function stage(plan, name) {
  for (let s = plan; s; s = s.inputStage) if (s.stage === name) return s;
  throw new Error(`no ${name} stage in ${EJSON.stringify(plan)}`);
}
function execStats(explain, nReturned, keys, docs) {
  const stats = explain.executionStats;
  assert.strictEqual(stats.nReturned, nReturned, 'nReturned');
  assert.strictEqual(stats.totalKeysExamined, keys, 'totalKeysExamined');
  assert.strictEqual(stats.totalDocsExamined, docs, 'totalDocsExamined');
  assert.strictEqual(stats.executionStages.stage, 'SINGLE_SHARD');
  assert.strictEqual(stats.executionStages.shards.length, 1);
  assert.strictEqual(stats.executionStages.shards[0].shardName, primary);
  assert.strictEqual(stats.executionStages.shards[0].nReturned, nReturned);
  return stats.executionStages.shards[0].executionStages;
}

// An equality on an indexed field: FETCH over IXSCAN a_1 with point bounds.
let e = app.items.find({ a: 3 }).explain('executionStats');
eq(e.queryPlanner.winningPlan.shards[0].parsedQuery, { a: { $eq: 3 } });
let plan = shardPlan(e);
eq(stages(plan), ['FETCH', 'IXSCAN']);
let ix = stage(plan, 'IXSCAN');
assert.strictEqual(ix.indexName, 'a_1');
eq(ix.keyPattern, { a: 1 });
eq(ix.indexBounds, { a: ['[3, 3]'] });
assert.strictEqual(ix.direction, 'forward');
assert.strictEqual(ix.isUnique, false);
let shardStages = execStats(e, 6, 6, 6);
assert.strictEqual(shardStages.stage, 'FETCH');
assert.strictEqual(shardStages.docsExamined, 6);
assert.strictEqual(shardStages.inputStage.keysExamined, 6);
eq(e.command.filter, { a: 3 });
assert.strictEqual(e.ok, 1);

// No usable index: COLLSCAN with the filter; every document examined, no keys.
e = app.items.find({ b: { $gte: 50 } }).explain('executionStats');
plan = shardPlan(e);
eq(stages(plan), ['COLLSCAN']);
eq(plan.filter, { b: { $gte: 50 } });
assert.strictEqual(plan.direction, 'forward');
execStats(e, 10, 0, 60);
// A $natural hint forces the collection scan.
e = app.items.find({ a: 3 }).hint({ $natural: 1 }).explain('executionStats');
eq(stages(shardPlan(e)), ['COLLSCAN']);
execStats(e, 6, 0, 60);
// A name hint picks the index.
e = app.items.find({ a: 3, c: 3 }).hint('c_b').explain('executionStats');
assert.strictEqual(stage(shardPlan(e), 'IXSCAN').indexName, 'c_b');
execStats(e, 2, 10, 10);

// Blocking sort with a limit over an index range.
e = app.items.find({ a: { $gte: 5 } }).sort({ b: -1 }).limit(3).explain('executionStats');
plan = shardPlan(e);
eq(stages(plan), ['SORT', 'FETCH', 'IXSCAN']);
eq(plan.sortPattern, { b: -1 });
assert.strictEqual(plan.limitAmount, 3);
eq(stage(plan, 'IXSCAN').indexBounds, { a: ['[5, inf.0]'] });
execStats(e, 3, 30, 30);
// A sort the index provides (after an equality prefix): no SORT stage.
e = app.items.find({ c: 2 }).sort({ b: -1 }).explain('executionStats');
plan = shardPlan(e);
eq(stages(plan), ['FETCH', 'IXSCAN']);
assert.strictEqual(stage(plan, 'IXSCAN').indexName, 'c_b');
execStats(e, 10, 10, 10);
// Projection and skip, queryPlanner verbosity: no executionStats.
e = app.items.find({ a: 3 }, { b: 1, _id: 0 }).skip(2).explain('queryPlanner');
eq(stages(shardPlan(e)), ['PROJECTION_SIMPLE', 'SKIP', 'FETCH', 'IXSCAN']);
assert.strictEqual(stage(shardPlan(e), 'SKIP').skipAmount, 2);
assert.strictEqual(e.executionStats, undefined);
// mongosh's default verbosity is queryPlanner; allPlansExecution adds the (empty) other plans.
assert.strictEqual(app.items.find({ a: 3 }).explain().executionStats, undefined);
e = app.items.find({ a: 3 }).explain('allPlansExecution');
assert.ok(Array.isArray(e.executionStats.allPlansExecution));
assert.strictEqual(e.executionStats.nReturned, 6);
// A collection that does not exist: EOF on the primary shard; a database that does not exist:
// EOF on mongos.
e = app.missing.find({ a: 1 }).explain('executionStats');
assert.strictEqual(e.queryPlanner.winningPlan.shards[0].namespace, 'clients_mongosh_explain.missing');
eq(stages(e.queryPlanner.winningPlan.shards[0].winningPlan), ['EOF']);
assert.strictEqual(e.executionStats.nReturned, 0);
e = db.getSiblingDB('clients_mongosh_explain_none').items.find({ a: 1 }).explain('executionStats');
assert.strictEqual(e.queryPlanner.winningPlan.stage, 'EOF');

// Aggregate: the shard's pipeline under shards.<primary>, $cursor first.
e = app.items.explain('executionStats').aggregate([{ $match: { a: 3 } }, { $group: { _id: '$a', n: { $sum: 1 } } }]);
assert.strictEqual(e.splitPipeline, null);
eq(Object.keys(e.shards), [primary]);
const shardAgg = e.shards[primary];
assert.strictEqual(shardAgg.host, shardHost);
const cursorStage = shardAgg.stages[0].$cursor;
assert.strictEqual(stage(cursorStage.queryPlanner.winningPlan, 'IXSCAN').indexName, 'a_1');
assert.strictEqual(cursorStage.executionStats.nReturned, 6);
assert.strictEqual(cursorStage.executionStats.totalKeysExamined, 6);
eq(shardAgg.stages[1].$group, { _id: '$a', n: { $sum: 1 } });
assert.strictEqual(shardAgg.stages[1].nReturned, 1);
// A lone $match is answered with the find plan.
e = app.items.explain('queryPlanner').aggregate([{ $match: { b: { $lt: 5 } } }]);
assert.strictEqual(e.shards[primary].queryPlanner.optimizedPipeline, true);
eq(stages(e.shards[primary].queryPlanner.winningPlan), ['COLLSCAN']);
// aggregate(..., {explain: true}) also explains.
e = app.items.aggregate([{ $match: { a: 4 } }], { explain: true });
assert.strictEqual(stage(e.shards[primary].queryPlanner.winningPlan, 'IXSCAN').indexName, 'a_1');

// count and distinct explains.
e = app.items.explain('executionStats').count({ a: 3 });
plan = shardPlan(e);
eq(stages(plan).slice(0, 1), ['COUNT']);
assert.strictEqual(stage(plan, 'IXSCAN').indexName, 'a_1');
assert.strictEqual(e.executionStats.executionStages.shards[0].executionStages.nCounted, 6);
assert.strictEqual(e.executionStats.totalKeysExamined, 6);
e = app.items.explain('executionStats').count();
eq(stages(shardPlan(e)), ['RECORD_STORE_FAST_COUNT']);
e = app.items.explain('executionStats').distinct('b', { a: 3 });
assert.strictEqual(stage(shardPlan(e), 'IXSCAN').indexName, 'a_1');
assert.strictEqual(e.executionStats.totalKeysExamined, 6);
e = app.items.explain('executionStats').distinct('b', { c: { $gt: 100 } });
assert.strictEqual(stage(shardPlan(e), 'IXSCAN').indexName, 'c_b');
assert.strictEqual(e.executionStats.nReturned, 0);

// Writes explained: plans and would-be counts, nothing written.
e = app.items.explain('executionStats').remove({ a: 3 });
plan = shardPlan(e);
assert.ok(['DELETE', 'BATCHED_DELETE'].includes(plan.stage), plan.stage);
assert.strictEqual(stage(plan, 'IXSCAN').indexName, 'a_1');
assert.strictEqual(e.executionStats.executionStages.shards[0].executionStages.nWouldDelete, 6);
e = app.items.explain('executionStats').findOneAndUpdate({ b: 7 }, { $set: { z: 1 } });
plan = shardPlan(e);
eq(stages(plan), ['UPDATE', 'COLLSCAN']);
const update = e.executionStats.executionStages.shards[0].executionStages;
assert.strictEqual(update.nMatched, 1);
assert.strictEqual(update.nWouldModify, 1);
assert.strictEqual(update.inputStage.docsExamined, 8); // stops at the first match
assert.strictEqual(app.items.countDocuments({}), 60);
assert.strictEqual(app.items.countDocuments({ z: 1 }), 0);

app.dropDatabase();
print('mongosh explain: ok');
