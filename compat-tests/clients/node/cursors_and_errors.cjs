// Cursors, batches and MongoDB's errors through the Node.js driver.
// Usage: NODE_PATH=<dir with the mongodb package> node cursors_and_errors.cjs mongodb://127.0.0.1:27017
const assert = require('node:assert/strict');
const { MongoClient } = require('mongodb');

async function main() {
  const client = new MongoClient(process.argv[2] ?? 'mongodb://127.0.0.1:27017');
  try {
    const db = client.db('clients_node_cursors');
    await db.dropDatabase();
    const items = db.collection('items');
    await items.insertMany(Array.from({ length: 250 }, (_, i) => ({ _id: i, even: i % 2 === 0 })));
    let seen = 0;
    for await (const _doc of items.find({}, { batchSize: 20 })) {
      seen++;
    }
    assert.equal(seen, 250);
    assert.equal((await items.find({ even: true }).limit(7).toArray()).length, 7);
    assert.deepEqual(await items.find({}, { projection: { _id: 1 } }).sort({ _id: -1 }).limit(2).toArray(), [{ _id: 249 }, { _id: 248 }]);
    const early = items.find({}, { batchSize: 5 });
    await early.next();
    await early.close();

    await assert.rejects(items.insertOne({ _id: 1 }), (e) => e.code === 11000 && e.keyPattern?._id === 1);
    await assert.rejects(db.command({ noSuchCommand: 1 }), (e) => e.code === 59 && e.codeName === 'CommandNotFound');
    await assert.rejects(items.updateOne({ _id: 2 }, { $set: { _id: 3 } }), (e) => e.code === 66);
    await assert.rejects(items.find({ $foo: 1 }).toArray(), (e) => e.code === 2);
    await db.dropDatabase();
    console.log('node cursors and errors: ok');
  } finally {
    await client.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
