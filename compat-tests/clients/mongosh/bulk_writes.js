// Bulk writes through mongosh: collection bulkWrite (ordered and unordered), the
// initializeOrderedBulkOp/initializeUnorderedBulkOp builders, and the 8.0 client-level
// Mongo.bulkWrite across two databases.
const assert = require('assert');
const app = db.getSiblingDB('clients_mongosh_bulk');
const other = db.getSiblingDB('clients_mongosh_bulk2');
app.dropDatabase();
other.dropDatabase();

function eq(actual, expected, message) {
  assert.strictEqual(EJSON.stringify(actual, { relaxed: false }), EJSON.stringify(expected, { relaxed: false }), message);
}
function expectError(fn) {
  let err = null;
  try { fn(); } catch (e) { err = e; }
  assert.ok(err, 'expected an error, got success');
  return err;
}
function contents(coll) {
  return coll.find().sort({ _id: 1 }).toArray();
}

// Mixed operations, ordered (the default): counts, inserted and upserted ids.
app.items.insertMany([{ _id: 1, v: 1 }, { _id: 2, v: 2 }, { _id: 3, v: 3 }]);
let r = app.items.bulkWrite([
  { insertOne: { document: { _id: 4, v: 4 } } },
  { updateOne: { filter: { _id: 1 }, update: { $set: { v: 10 } } } },
  { updateMany: { filter: { v: { $lte: 3 } }, update: { $inc: { v: 100 } } } },
  { replaceOne: { filter: { _id: 3 }, replacement: { v: 33 } } },
  { deleteOne: { filter: { _id: 4 } } },
  { updateOne: { filter: { _id: 5 }, update: { $set: { v: 5 } }, upsert: true } },
  { replaceOne: { filter: { _id: 6 }, replacement: { v: 6 }, upsert: true } },
  { deleteMany: { filter: { v: { $gt: 100 } } } },
  { updateOne: { filter: { _id: 1 }, update: { $set: { v: 10 } } } }, // matched, not modified
  { updateOne: { filter: { k: 'seeded' }, update: { $set: { v: 7 } }, upsert: true } },
]);
assert.strictEqual(r.acknowledged, true);
assert.strictEqual(r.insertedCount, 1);
assert.strictEqual(r.matchedCount, 5);
assert.strictEqual(r.modifiedCount, 4);
assert.strictEqual(r.deletedCount, 2);
assert.strictEqual(r.upsertedCount, 3);
eq(r.insertedIds, { 0: 4 });
eq(Object.keys(r.upsertedIds), ['5', '6', '9']);
assert.strictEqual(r.upsertedIds[5], 5);
assert.strictEqual(r.upsertedIds[6], 6);
assert.ok(r.upsertedIds[9] instanceof ObjectId);
eq(contents(app.items), [{ _id: 1, v: 10 }, { _id: 3, v: 33 }, { _id: 5, v: 5 }, { _id: 6, v: 6 }, { _id: r.upsertedIds[9], k: 'seeded', v: 7 }]);

// Ordered: the first error stops the batch; the error carries its operation's index.
app.items.deleteMany({});
let err = expectError(() => app.items.bulkWrite([
  { insertOne: { document: { _id: 10 } } },
  { insertOne: { document: { _id: 10 } } },
  { insertOne: { document: { _id: 11 } } },
]));
assert.strictEqual(err.code, 11000);
eq(err.writeErrors.map((w) => [w.index, w.code]), [[1, 11000]]);
assert.ok(err.writeErrors[0].errmsg.includes('dup key: { _id: 10 }'));
assert.strictEqual(err.result.insertedCount, 1);
eq(contents(app.items), [{ _id: 10 }]);

// Unordered: every operation runs; each failure is reported with its index.
err = expectError(() => app.items.bulkWrite([
  { insertOne: { document: { _id: 20 } } },
  { insertOne: { document: { _id: 10 } } },
  { updateOne: { filter: { _id: 20 }, update: { $set: { x: 1 } } } },
  { updateOne: { filter: { _id: 20 }, update: { $set: { _id: 99 } } } },
  { insertOne: { document: { _id: 21 } } },
  { updateOne: { filter: { _id: 21 }, update: { $inc: { x: 'a' } } } },
  { deleteOne: { filter: { _id: 10 } } },
], { ordered: false }));
eq(err.writeErrors.map((w) => [w.index, w.code]), [[1, 11000], [3, 66], [5, 14]]);
assert.strictEqual(err.result.insertedCount, 2);
assert.strictEqual(err.result.matchedCount, 1);
assert.strictEqual(err.result.modifiedCount, 1);
assert.strictEqual(err.result.deletedCount, 1);
eq(contents(app.items), [{ _id: 20, x: 1 }, { _id: 21 }]);

// Update options inside bulk operations: arrayFilters, sort (8.0), hint (a missing index is a
// write error of its operation).
app.items.deleteMany({});
app.items.insertMany([{ _id: 1, g: 1, a: [1, 6, 9] }, { _id: 2, g: 1, a: [7] }, { _id: 3, g: 2, a: [2] }]);
app.items.createIndex({ g: 1 });
r = app.items.bulkWrite([
  { updateMany: { filter: {}, update: { $set: { 'a.$[big]': 0 } }, arrayFilters: [{ big: { $gt: 5 } }] } },
  { updateOne: { filter: { g: 1 }, update: { $set: { last: true } }, sort: { _id: -1 } } },
  { deleteOne: { filter: { g: 2 }, hint: { g: 1 } } },
]);
eq([r.matchedCount, r.modifiedCount, r.deletedCount], [4, 3, 1]);
eq(contents(app.items), [{ _id: 1, g: 1, a: [1, 0, 0] }, { _id: 2, g: 1, a: [0], last: true }]);
err = expectError(() => app.items.bulkWrite([
  { updateOne: { filter: { g: 1 }, update: { $set: { x: 1 } }, hint: 'no_such_index' } },
  { insertOne: { document: { _id: 4 } } },
], { ordered: false }));
eq(err.writeErrors.map((w) => [w.index, w.code]), [[0, 2]]);
assert.strictEqual(err.result.insertedCount, 1);
app.items.dropIndexes();

// The builders.
app.items.deleteMany({});
const ordered = app.items.initializeOrderedBulkOp();
ordered.insert({ _id: 30, n: 1 });
ordered.insert({ _id: 31, n: 1 });
ordered.find({ _id: 30 }).updateOne({ $set: { n: 2 } });
ordered.find({ n: { $gte: 1 } }).update({ $inc: { n: 10 } });
ordered.find({ _id: 32 }).upsert().replaceOne({ n: 0 });
ordered.find({ _id: 33 }).upsert().updateOne({ $set: { n: 5 } });
ordered.find({ _id: 31 }).deleteOne();
r = ordered.execute();
assert.strictEqual(r.insertedCount, 2);
assert.strictEqual(r.matchedCount, 3);
assert.strictEqual(r.modifiedCount, 3);
assert.strictEqual(r.upsertedCount, 2);
assert.strictEqual(r.deletedCount, 1);
eq(r.upsertedIds, { 4: 32, 5: 33 });
eq(contents(app.items), [{ _id: 30, n: 12 }, { _id: 32, n: 0 }, { _id: 33, n: 5 }]);
const unordered = app.items.initializeUnorderedBulkOp();
unordered.insert({ _id: 30 });
unordered.insert({ _id: 40 });
unordered.find({ _id: 40 }).update({ $set: { z: 1 } });
unordered.find({ n: { $lt: 10 } }).delete();
err = expectError(() => unordered.execute());
eq(err.writeErrors.map((w) => [w.index, w.code]), [[0, 11000]]);
assert.strictEqual(err.result.insertedCount, 1);
assert.strictEqual(err.result.deletedCount, 2);
eq(contents(app.items), [{ _id: 30, n: 12 }, { _id: 40, z: 1 }]);

// The 8.0 client-level bulkWrite across two databases.
app.items.deleteMany({});
app.items.insertOne({ _id: 1, v: 1 });
const mongo = db.getMongo();
r = mongo.bulkWrite([
  { name: 'insertOne', namespace: 'clients_mongosh_bulk.items', document: { _id: 2, v: 2 } },
  { name: 'insertOne', namespace: 'clients_mongosh_bulk2.logs', document: { _id: 'a', n: 1 } },
  { name: 'updateOne', namespace: 'clients_mongosh_bulk2.logs', filter: { _id: 'a' }, update: { $inc: { n: 1 } } },
  { name: 'updateMany', namespace: 'clients_mongosh_bulk.items', filter: {}, update: { $set: { seen: true } } },
  { name: 'updateOne', namespace: 'clients_mongosh_bulk2.logs', filter: { _id: 'b' }, update: { $set: { n: 0 } }, upsert: true },
  { name: 'replaceOne', namespace: 'clients_mongosh_bulk.items', filter: { _id: 1 }, replacement: { v: 100 } },
  { name: 'deleteOne', namespace: 'clients_mongosh_bulk.items', filter: { _id: 2 } },
  { name: 'deleteMany', namespace: 'clients_mongosh_bulk2.logs', filter: { n: 0 } },
], { verboseResults: true });
assert.strictEqual(r.acknowledged, true);
assert.strictEqual(r.insertedCount, 2);
assert.strictEqual(r.matchedCount, 4);
assert.strictEqual(r.modifiedCount, 4);
assert.strictEqual(r.upsertedCount, 1);
assert.strictEqual(r.deletedCount, 2);
eq([...r.insertResults.entries()], [[0, { insertedId: 2 }], [1, { insertedId: 'a' }]]);
eq([...r.updateResults.keys()], [2, 3, 4, 5]);
eq(r.updateResults.get(3), { matchedCount: 2, modifiedCount: 2, didUpsert: false });
eq(r.updateResults.get(4), { matchedCount: 1, modifiedCount: 0, didUpsert: true, upsertedId: 'b' });
eq([...r.deleteResults.entries()], [[6, { deletedCount: 1 }], [7, { deletedCount: 1 }]]);
eq(contents(app.items), [{ _id: 1, v: 100 }]);
eq(contents(other.logs), [{ _id: 'a', n: 2 }]);
// Ordered: stops at the first error, even when later operations are for another database.
err = expectError(() => mongo.bulkWrite([
  { name: 'insertOne', namespace: 'clients_mongosh_bulk.items', document: { _id: 3 } },
  { name: 'insertOne', namespace: 'clients_mongosh_bulk2.logs', document: { _id: 'c' } },
  { name: 'insertOne', namespace: 'clients_mongosh_bulk.items', document: { _id: 1 } },
  { name: 'insertOne', namespace: 'clients_mongosh_bulk2.logs', document: { _id: 'd' } },
]));
eq([...err.writeErrors.keys()], [2]);
assert.strictEqual(err.writeErrors.get(2).code, 11000);
assert.strictEqual(err.partialResult.insertedCount, 2);
eq(contents(app.items), [{ _id: 1, v: 100 }, { _id: 3 }]);
eq(contents(other.logs), [{ _id: 'a', n: 2 }, { _id: 'c' }]);
// Unordered: every operation runs; errors keep their positions across databases.
err = expectError(() => mongo.bulkWrite([
  { name: 'insertOne', namespace: 'clients_mongosh_bulk.items', document: { _id: 4 } },
  { name: 'insertOne', namespace: 'clients_mongosh_bulk2.logs', document: { _id: 'a' } },
  { name: 'insertOne', namespace: 'clients_mongosh_bulk.items', document: { _id: 3 } },
  { name: 'updateOne', namespace: 'clients_mongosh_bulk2.logs', filter: { _id: 'c' }, update: { $set: { _id: 'z' } } },
  { name: 'insertOne', namespace: 'clients_mongosh_bulk2.logs', document: { _id: 'e' } },
], { ordered: false }));
eq([...err.writeErrors.entries()].map(([i, w]) => [i, w.code]), [[1, 11000], [2, 11000], [3, 66]]);
assert.strictEqual(err.partialResult.insertedCount, 2);
eq(contents(app.items), [{ _id: 1, v: 100 }, { _id: 3 }, { _id: 4 }]);
eq(contents(other.logs), [{ _id: 'a', n: 2 }, { _id: 'c' }, { _id: 'e' }]);

// sort (8.0) on client-level updateOne and replaceOne.
r = mongo.bulkWrite([
  { name: 'updateOne', namespace: 'clients_mongosh_bulk.items', filter: {}, update: { $set: { top: true } }, sort: { _id: -1 } },
  { name: 'replaceOne', namespace: 'clients_mongosh_bulk.items', filter: {}, replacement: { first: true }, sort: { _id: 1 } },
]);
eq([r.matchedCount, r.modifiedCount], [2, 2]);
eq(contents(app.items), [{ _id: 1, first: true }, { _id: 3 }, { _id: 4, top: true }]);

app.dropDatabase();
other.dropDatabase();
print('mongosh bulk writes: ok');
