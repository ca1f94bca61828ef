// Bulk writes through the Node.js driver: collection.bulkWrite (ordered and unordered), the
// initializeOrderedBulkOp/initializeUnorderedBulkOp builders, and the 8.0 client-level
// MongoClient.bulkWrite (driver >= 6.10) across two databases.
// Usage: NODE_PATH=<dir with the mongodb package> node bulk_writes.cjs mongodb://127.0.0.1:27017
const assert = require('node:assert/strict');
const { MongoClient, ObjectId, MongoBulkWriteError, MongoClientBulkWriteError } = require('mongodb');

const DB = 'clients_node_bulk';
const DB2 = 'clients_node_bulk2';

async function expectError(promise) {
  let err = null;
  try { await promise; } catch (e) { err = e; }
  assert.ok(err, 'expected an error, got success');
  return err;
}

async function main() {
  const client = new MongoClient(process.argv[2] ?? 'mongodb://127.0.0.1:27017');
  try {
    await client.db(DB).dropDatabase();
    await client.db(DB2).dropDatabase();
    const items = client.db(DB).collection('items');
    const logs = client.db(DB2).collection('logs');
    const contents = (coll) => coll.find().sort({ _id: 1 }).toArray();

    // Mixed operations, ordered (the default): counts, inserted and upserted ids.
    await items.insertMany([{ _id: 1, v: 1 }, { _id: 2, v: 2 }, { _id: 3, v: 3 }]);
    let r = await items.bulkWrite([
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
    assert.equal(r.isOk(), true);
    assert.deepEqual(
      [r.insertedCount, r.matchedCount, r.modifiedCount, r.deletedCount, r.upsertedCount],
      [1, 5, 4, 2, 3],
    );
    assert.deepEqual(r.insertedIds, { 0: 4 });
    assert.deepEqual(Object.keys(r.upsertedIds), ['5', '6', '9']);
    assert.equal(r.upsertedIds[5], 5);
    assert.equal(r.upsertedIds[6], 6);
    assert.ok(r.upsertedIds[9] instanceof ObjectId);
    assert.deepEqual(await contents(items), [
      { _id: 1, v: 10 }, { _id: 3, v: 33 }, { _id: 5, v: 5 }, { _id: 6, v: 6 }, { _id: r.upsertedIds[9], k: 'seeded', v: 7 },
    ]);

    // Ordered: the first error stops the batch; the error carries its operation's index.
    await items.deleteMany({});
    let err = await expectError(items.bulkWrite([
      { insertOne: { document: { _id: 10 } } },
      { insertOne: { document: { _id: 10 } } },
      { insertOne: { document: { _id: 11 } } },
    ]));
    assert.ok(err instanceof MongoBulkWriteError);
    assert.equal(err.code, 11000);
    assert.deepEqual(err.writeErrors.map((w) => [w.index, w.code]), [[1, 11000]]);
    assert.ok(err.writeErrors[0].errmsg.includes('dup key: { _id: 10 }'));
    assert.equal(err.result.insertedCount, 1);
    assert.deepEqual(await contents(items), [{ _id: 10 }]);

    // Unordered: every operation runs; each failure is reported with its index.
    err = await expectError(items.bulkWrite([
      { insertOne: { document: { _id: 20 } } },
      { insertOne: { document: { _id: 10 } } },
      { updateOne: { filter: { _id: 20 }, update: { $set: { x: 1 } } } },
      { updateOne: { filter: { _id: 20 }, update: { $set: { _id: 99 } } } },
      { insertOne: { document: { _id: 21 } } },
      { updateOne: { filter: { _id: 21 }, update: { $inc: { x: 'a' } } } },
      { deleteOne: { filter: { _id: 10 } } },
    ], { ordered: false }));
    assert.deepEqual(err.writeErrors.map((w) => [w.index, w.code]).sort((a, b) => a[0] - b[0]), [[1, 11000], [3, 66], [5, 14]]);
    assert.deepEqual([err.result.insertedCount, err.result.matchedCount, err.result.modifiedCount, err.result.deletedCount], [2, 1, 1, 1]);
    assert.deepEqual(await contents(items), [{ _id: 20, x: 1 }, { _id: 21 }]);

    // Update options inside bulk operations: arrayFilters, sort (8.0), hint (a missing index is a
    // write error of its operation).
    await items.deleteMany({});
    await items.insertMany([{ _id: 1, g: 1, a: [1, 6, 9] }, { _id: 2, g: 1, a: [7] }, { _id: 3, g: 2, a: [2] }]);
    await items.createIndex({ g: 1 });
    r = await items.bulkWrite([
      { updateMany: { filter: {}, update: { $set: { 'a.$[big]': 0 } }, arrayFilters: [{ big: { $gt: 5 } }] } },
      { updateOne: { filter: { g: 1 }, update: { $set: { last: true } }, sort: { _id: -1 } } },
      { deleteOne: { filter: { g: 2 }, hint: { g: 1 } } },
    ]);
    assert.deepEqual([r.matchedCount, r.modifiedCount, r.deletedCount], [4, 3, 1]);
    assert.deepEqual(await contents(items), [{ _id: 1, g: 1, a: [1, 0, 0] }, { _id: 2, g: 1, a: [0], last: true }]);
    err = await expectError(items.bulkWrite([
      { updateOne: { filter: { g: 1 }, update: { $set: { x: 1 } }, hint: 'no_such_index' } },
      { insertOne: { document: { _id: 4 } } },
    ], { ordered: false }));
    assert.deepEqual(err.writeErrors.map((w) => [w.index, w.code]), [[0, 2]]);
    assert.equal(err.result.insertedCount, 1);
    await items.dropIndexes();

    // The builders.
    await items.deleteMany({});
    const ordered = items.initializeOrderedBulkOp();
    ordered.insert({ _id: 30, n: 1 });
    ordered.insert({ _id: 31, n: 1 });
    ordered.find({ _id: 30 }).updateOne({ $set: { n: 2 } });
    ordered.find({ n: { $gte: 1 } }).update({ $inc: { n: 10 } });
    ordered.find({ _id: 32 }).upsert().replaceOne({ n: 0 });
    ordered.find({ _id: 33 }).upsert().updateOne({ $set: { n: 5 } });
    ordered.find({ _id: 31 }).deleteOne();
    r = await ordered.execute();
    assert.deepEqual([r.insertedCount, r.matchedCount, r.modifiedCount, r.upsertedCount, r.deletedCount], [2, 3, 3, 2, 1]);
    assert.deepEqual(r.upsertedIds, { 4: 32, 5: 33 });
    assert.deepEqual(await contents(items), [{ _id: 30, n: 12 }, { _id: 32, n: 0 }, { _id: 33, n: 5 }]);
    const unordered = items.initializeUnorderedBulkOp();
    unordered.insert({ _id: 30 });
    unordered.insert({ _id: 40 });
    unordered.find({ _id: 40 }).update({ $set: { z: 1 } });
    unordered.find({ n: { $lt: 10 } }).delete();
    err = await expectError(unordered.execute());
    assert.deepEqual(err.writeErrors.map((w) => [w.index, w.code]), [[0, 11000]]);
    assert.equal(err.result.insertedCount, 1);
    assert.equal(err.result.deletedCount, 2);
    assert.deepEqual(await contents(items), [{ _id: 30, n: 12 }, { _id: 40, z: 1 }]);

    // The 8.0 client-level bulkWrite across two databases.
    await items.deleteMany({});
    await items.insertOne({ _id: 1, v: 1 });
    r = await client.bulkWrite([
      { name: 'insertOne', namespace: `${DB}.items`, document: { _id: 2, v: 2 } },
      { name: 'insertOne', namespace: `${DB2}.logs`, document: { _id: 'a', n: 1 } },
      { name: 'updateOne', namespace: `${DB2}.logs`, filter: { _id: 'a' }, update: { $inc: { n: 1 } } },
      { name: 'updateMany', namespace: `${DB}.items`, filter: {}, update: { $set: { seen: true } } },
      { name: 'updateOne', namespace: `${DB2}.logs`, filter: { _id: 'b' }, update: { $set: { n: 0 } }, upsert: true },
      { name: 'replaceOne', namespace: `${DB}.items`, filter: { _id: 1 }, replacement: { v: 100 } },
      { name: 'deleteOne', namespace: `${DB}.items`, filter: { _id: 2 } },
      { name: 'deleteMany', namespace: `${DB2}.logs`, filter: { n: 0 } },
    ], { verboseResults: true });
    assert.equal(r.acknowledged, true);
    assert.deepEqual([r.insertedCount, r.matchedCount, r.modifiedCount, r.upsertedCount, r.deletedCount], [2, 4, 4, 1, 2]);
    assert.deepEqual([...r.insertResults.entries()], [[0, { insertedId: 2 }], [1, { insertedId: 'a' }]]);
    assert.deepEqual([...r.updateResults.keys()], [2, 3, 4, 5]);
    assert.deepEqual(r.updateResults.get(3), { matchedCount: 2, modifiedCount: 2, didUpsert: false });
    assert.deepEqual(r.updateResults.get(4), { matchedCount: 1, modifiedCount: 0, didUpsert: true, upsertedId: 'b' });
    assert.deepEqual([...r.deleteResults.entries()], [[6, { deletedCount: 1 }], [7, { deletedCount: 1 }]]);
    assert.deepEqual(await contents(items), [{ _id: 1, v: 100 }]);
    assert.deepEqual(await contents(logs), [{ _id: 'a', n: 2 }]);

    // Ordered: stops at the first error, even when later operations are for another database.
    err = await expectError(client.bulkWrite([
      { name: 'insertOne', namespace: `${DB}.items`, document: { _id: 3 } },
      { name: 'insertOne', namespace: `${DB2}.logs`, document: { _id: 'c' } },
      { name: 'insertOne', namespace: `${DB}.items`, document: { _id: 1 } },
      { name: 'insertOne', namespace: `${DB2}.logs`, document: { _id: 'd' } },
    ], { verboseResults: true }));
    assert.ok(err instanceof MongoClientBulkWriteError);
    assert.deepEqual([...err.writeErrors.keys()], [2]);
    assert.equal(err.writeErrors.get(2).code, 11000);
    assert.equal(err.partialResult.insertedCount, 2);
    assert.deepEqual([...err.partialResult.insertResults.keys()], [0, 1]);
    assert.deepEqual(await contents(items), [{ _id: 1, v: 100 }, { _id: 3 }]);
    assert.deepEqual(await contents(logs), [{ _id: 'a', n: 2 }, { _id: 'c' }]);

    // Unordered: every operation runs; errors keep their positions across databases.
    err = await expectError(client.bulkWrite([
      { name: 'insertOne', namespace: `${DB}.items`, document: { _id: 4 } },
      { name: 'insertOne', namespace: `${DB2}.logs`, document: { _id: 'a' } },
      { name: 'insertOne', namespace: `${DB}.items`, document: { _id: 3 } },
      { name: 'updateOne', namespace: `${DB2}.logs`, filter: { _id: 'c' }, update: { $set: { _id: 'z' } } },
      { name: 'insertOne', namespace: `${DB2}.logs`, document: { _id: 'e' } },
    ], { ordered: false, verboseResults: true }));
    assert.deepEqual([...err.writeErrors.entries()].map(([i, w]) => [i, w.code]), [[1, 11000], [2, 11000], [3, 66]]);
    assert.equal(err.partialResult.insertedCount, 2);
    assert.deepEqual([...err.partialResult.insertResults.keys()], [0, 4]);
    assert.deepEqual(await contents(items), [{ _id: 1, v: 100 }, { _id: 3 }, { _id: 4 }]);
    assert.deepEqual(await contents(logs), [{ _id: 'a', n: 2 }, { _id: 'c' }, { _id: 'e' }]);

    // sort (8.0) on client-level updateOne and replaceOne.
    r = await client.bulkWrite([
      { name: 'updateOne', namespace: `${DB}.items`, filter: {}, update: { $set: { top: true } }, sort: { _id: -1 } },
      { name: 'replaceOne', namespace: `${DB}.items`, filter: {}, replacement: { first: true }, sort: { _id: 1 } },
    ]);
    assert.deepEqual([r.matchedCount, r.modifiedCount], [2, 2]);
    assert.deepEqual(await contents(items), [{ _id: 1, first: true }, { _id: 3 }, { _id: 4, top: true }]);

    await client.db(DB).dropDatabase();
    await client.db(DB2).dropDatabase();
    console.log('node bulk writes: ok');
  } finally {
    await client.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
