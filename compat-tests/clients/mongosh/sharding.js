// Sharding administration through mongosh's sh helpers: enableSharding with a primary shard,
// shardCollection (range, compound, hashed), splitAt, splitFind, and sh.status() showing the
// shards, the sharded collections and their chunks.
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
print('sharding: ok');
