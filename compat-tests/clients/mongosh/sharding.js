// Sharding administration through mongosh's sh helpers: enableSharding with a primary shard,
// shardCollection (range, compound, hashed), splitAt, splitFind, sh.status() showing the
// shards, the sharded collections and their chunks, getShardDistribution() of a hashed
// collection spread over the shards, sh.getShardedDataDistribution(), and explain of targeted
// and broadcast queries.
const assert = require('assert');

function expectError(code, fn) {
  let err = null;
  try { fn(); } catch (e) { err = e; }
  assert.ok(err, `expected error ${code}, got success`);
  assert.strictEqual(err.code, code, `expected error ${code}, got ${err.code}: ${err.message}`);
}

const dbName = 'clients_mongosh_sharding';
const app = db.getSiblingDB(dbName);
app.dropDatabase();
const shards = db.adminCommand({ listShards: 1 }).shards.map((s) => s._id);
assert.ok(shards.length >= 2, `two shards expected, got ${shards}`);

sh.enableSharding(dbName, shards[1]);
assert.strictEqual(db.getSiblingDB('config').databases.findOne({ _id: dbName }).primary, shards[1]);

assert.strictEqual(sh.shardCollection(`${dbName}.users`, { uid: 1 }).collectionsharded, `${dbName}.users`);
sh.shardCollection(`${dbName}.orders`, { region: 1, day: 1 });
sh.shardCollection(`${dbName}.sessions`, { token: 'hashed' });
expectError(23, () => sh.shardCollection(`${dbName}.users`, { other: 1 }));

app.users.insertMany([1, 2, 3, 4, 5, 6].map((uid) => ({ uid, name: `u${uid}` })));
sh.splitAt(`${dbName}.users`, { uid: 4 });
sh.splitFind(`${dbName}.users`, { uid: 2 });
const uuid = db.getSiblingDB('config').collections.findOne({ _id: `${dbName}.users` }).uuid;
const chunks = db.getSiblingDB('config').chunks.find({ uuid }).sort({ min: 1 }).toArray();
// Values built in the shell's realm are compared as JSON (assert's deep equality checks prototypes).
assert.strictEqual(JSON.stringify(chunks.slice(0, 2).map((c) => Number(c.max.uid))), '[2,4]');
assert.strictEqual(chunks[2].max.uid._bsontype, 'MaxKey');
assert.ok(chunks.every((c) => c.shard === shards[1]));
assert.strictEqual(app.users.countDocuments({}), 6);
assert.strictEqual(app.users.findOne({ uid: 5 }).name, 'u5');

const status = sh.status();
const text = JSON.stringify(status);
for (const expected of [shards[0], shards[1], `${dbName}.users`, `${dbName}.orders`, `${dbName}.sessions`]) {
  assert.ok(text.includes(expected), `sh.status() mentions ${expected}`);
}
const users = status.value.databases
  .find((d) => d.database._id === dbName).collections[`${dbName}.users`];
assert.strictEqual(JSON.stringify(users.shardKey), '{"uid":1}');
assert.strictEqual(users.chunks.length, 3);
assert.strictEqual(db.adminCommand({ balancerStatus: 1 }).mode, 'off');

// sh.moveChunk() and sh.moveRange() move documents between shards; reads and writes follow.
sh.moveChunk(`${dbName}.users`, { uid: 5 }, shards[0]);
const ownerOf = (uid) => db.getSiblingDB('config').chunks.find({ uuid }).toArray()
  .find((c) => (c.min.uid._bsontype === 'MinKey' || c.min.uid <= uid)
    && (c.max.uid._bsontype === 'MaxKey' || uid < c.max.uid)).shard;
assert.strictEqual(ownerOf(5), shards[0]);
assert.strictEqual(app.users.countDocuments({}), 6);
assert.strictEqual(app.users.findOne({ uid: 5 }).name, 'u5');
sh.moveRange(`${dbName}.users`, shards[0], { uid: 2 }, { uid: 4 });
assert.strictEqual(ownerOf(3), shards[0]);
assert.strictEqual(ownerOf(1), shards[1]);
app.users.updateOne({ uid: 3 }, { $set: { moved: true } });
assert.strictEqual(app.users.countDocuments({ moved: true }), 1);
assert.strictEqual(app.users.countDocuments({}), 6);

// The hashed collection was empty: one chunk per shard, and documents spread over both.
app.sessions.insertMany(Array.from({ length: 200 }, (_, i) => ({ token: `t${i}`, n: i })));
assert.strictEqual(app.sessions.countDocuments({}), 200);
assert.strictEqual(app.sessions.find({ n: { $gte: 150 } }).sort({ n: -1 }).limit(3).toArray()
  .map((d) => d.n).join(','), '199,198,197');
const distribution = app.sessions.getShardDistribution();
const perShard = Object.keys(distribution.value).filter((k) => k.startsWith('Shard '));
assert.strictEqual(perShard.length, 2, JSON.stringify(distribution));
assert.strictEqual(distribution.value.Totals.docs, 200);
assert.strictEqual(distribution.value.Totals.chunks, 2);
for (const key of perShard) {
  assert.ok(distribution.value[key].docs > 30, `${key}: ${JSON.stringify(distribution.value[key])}`);
}
// sh.getShardedDataDistribution(): per sharded collection, what each shard owns.
const dataDistribution = sh.getShardedDataDistribution().toArray();
const sessions = dataDistribution.find((d) => d.ns === `${dbName}.sessions`);
assert.ok(sessions, JSON.stringify(dataDistribution));
assert.strictEqual(sessions.shards.length, 2);
assert.strictEqual(sessions.shards.reduce((n, s) => n + s.numOwnedDocuments, 0), 200);
for (const shard of sessions.shards) {
  assert.strictEqual(shard.numOrphanedDocs, 0);
  assert.ok(shard.ownedSizeBytes > 0, JSON.stringify(shard));
}
const targeted = app.sessions.find({ token: 't7' }).explain();
assert.strictEqual(targeted.queryPlanner.winningPlan.stage, 'SINGLE_SHARD');
const broadcast = app.sessions.find({ n: 7 }).explain();
assert.strictEqual(broadcast.queryPlanner.winningPlan.stage, 'SHARD_MERGE');
assert.strictEqual(broadcast.queryPlanner.winningPlan.shards.length, 2);
// The metadata checks mongosh offers: nothing inconsistent, at every level.
for (const found of [
  sh.checkMetadataConsistency().toArray(),
  app.checkMetadataConsistency({ checkIndexes: true }).toArray(),
  app.sessions.checkMetadataConsistency().toArray(),
]) {
  assert.strictEqual(found.length, 0, JSON.stringify(found));
}
// DDL helpers through the config server's coordinators.
app.createCollection('ddl_tmp');
app.ddl_tmp.createIndex({ a: 1 });
app.ddl_tmp.createIndex({ b: 1 });
assert.strictEqual(app.ddl_tmp.dropIndex('b_1').ok, 1);
assert.deepStrictEqual(app.ddl_tmp.getIndexes().map((i) => i.name).sort().join(','), '_id_,a_1');
app.ddl_tmp.renameCollection('ddl_tmp2');
assert.deepStrictEqual(app.ddl_tmp2.getIndexes().map((i) => i.name).sort().join(','), '_id_,a_1');
assert.ok(app.getCollectionNames().includes('ddl_tmp2'));
assert.strictEqual(app.ddl_tmp2.drop(), true);
assert.ok(!app.getCollectionNames().includes('ddl_tmp2'));
// A sharded collection renamed keeps its documents, shard key and indexes.
sh.shardCollection(`${dbName}.ddl_sharded`, { _id: 'hashed' });
app.ddl_sharded.createIndex({ a: 1 });
app.ddl_sharded.insertMany([...Array(20).keys()].map((i) => ({ _id: i, a: i })));
assert.strictEqual(app.ddl_sharded.renameCollection('ddl_sharded2').ok, 1);
assert.strictEqual(app.ddl_sharded2.countDocuments({}), 20);
assert.strictEqual(app.ddl_sharded.countDocuments({}), 0);
assert.deepStrictEqual(app.ddl_sharded2.getIndexes().map((i) => i.name).sort().join(','), '_id_,_id_hashed,a_1');
const renamedEntry = db.getSiblingDB('config').collections.findOne({ _id: `${dbName}.ddl_sharded2` });
assert.strictEqual(JSON.stringify(renamedEntry.key), JSON.stringify({ _id: 'hashed' }));
assert.strictEqual(sh.checkMetadataConsistency().toArray().length, 0);
print('sharding: ok');
