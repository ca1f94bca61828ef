// The foundation user story through mongosh: run as
//   mongosh --quiet mongodb://127.0.0.1:27017 --file user_story.js
const assert = require('assert');

const dbName = 'clients_mongosh';
const app = db.getSiblingDB(dbName);
app.dropDatabase();

app.users.insertOne({ name: 'ann', age: 30, tags: ['a'] });
app.users.insertMany([{ name: 'bob', age: 25 }, { name: 'cy', age: 41 }, { name: 'dee', age: 25 }]);
assert.ok(db.getMongo().getDBNames().includes(dbName), 'show dbs lists the new database');
assert.deepEqual(app.getCollectionNames(), ['users']);

const bob = app.users.findOne({ name: 'bob' }, { _id: 0 });
assert.deepEqual(bob, { name: 'bob', age: 25 });
assert.strictEqual(app.users.find({ age: { $gt: 26 } }).sort({ age: 1 }).toArray().length, 2);
assert.strictEqual(app.users.countDocuments({ age: 25 }), 2);
assert.strictEqual(app.users.estimatedDocumentCount(), 4);
assert.deepEqual(app.users.distinct('age').sort(), [25, 30, 41]);

const updated = app.users.updateOne({ name: 'ann' }, { $set: { age: 31 }, $inc: { visits: 1 } });
assert.strictEqual(updated.matchedCount, 1);
assert.strictEqual(updated.modifiedCount, 1);
assert.strictEqual(app.users.findOne({ name: 'ann' }).age, 31);

const deleted = app.users.deleteMany({ age: 25 });
assert.strictEqual(deleted.deletedCount, 2);
assert.strictEqual(app.users.countDocuments({}), 2);

const status = sh.status();
assert.ok(status, 'sh.status() answers');
const printed = JSON.stringify(status);
assert.ok(printed.includes('shard0'), 'sh.status() lists the shards');
assert.ok(printed.includes(dbName), 'sh.status() lists the databases');

assert.ok(app.users.drop());
assert.ok(!app.getCollectionNames().includes('users'));
app.things.insertOne({ x: 1 });
app.dropDatabase();
assert.ok(!db.getMongo().getDBNames().includes(dbName), 'dropDatabase removes it');
print('mongosh user story: ok');
