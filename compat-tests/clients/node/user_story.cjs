// The foundation user story through the Node.js driver with its default options.
// Usage: NODE_PATH=<dir with the mongodb package> node user_story_node.cjs mongodb://127.0.0.1:27017
const assert = require('node:assert/strict');
const { MongoClient } = require('mongodb');

async function main() {
  const uri = process.argv[2] ?? 'mongodb://127.0.0.1:27017';
  const client = new MongoClient(uri);
  try {
    await client.connect();
    const hello = await client.db('admin').command({ hello: 1 });
    assert.equal(hello.msg, 'isdbgrid');
    const db = client.db('clients_node');
    await db.dropDatabase();
    const users = db.collection('users');
    await users.insertOne({ name: 'ann', age: 30 });
    await users.insertMany([{ name: 'bob', age: 25 }, { name: 'cy', age: 41 }, { name: 'dee', age: 25 }]);
    const { databases } = await client.db('admin').admin().listDatabases();
    assert.ok(databases.some((d) => d.name === 'clients_node'));
    assert.deepEqual((await db.listCollections().toArray()).map((c) => c.name), ['users']);

    assert.deepEqual(await users.findOne({ name: 'bob' }, { projection: { _id: 0 } }), { name: 'bob', age: 25 });
    const older = await users.find({ age: { $gt: 26 } }).sort({ age: 1 }).toArray();
    assert.deepEqual(older.map((u) => u.name), ['ann', 'cy']);
    assert.equal(await users.countDocuments({ age: 25 }), 2);
    assert.equal(await users.estimatedDocumentCount(), 4);
    assert.deepEqual((await users.distinct('age')).sort(), [25, 30, 41]);

    const updated = await users.updateOne({ name: 'ann' }, { $set: { age: 31 } });
    assert.equal(updated.modifiedCount, 1);
    const after = await users.findOneAndUpdate({ name: 'cy' }, { $inc: { age: 1 } }, { returnDocument: 'after' });
    assert.equal(after.age, 42);
    assert.equal((await users.deleteMany({ age: 25 })).deletedCount, 2);

    await users.insertOne({ _id: 7 });
    await assert.rejects(users.insertOne({ _id: 7 }), (err) => err.code === 11000);

    assert.ok(await users.drop());
    await db.dropDatabase();
    const after2 = await client.db('admin').admin().listDatabases();
    assert.ok(!after2.databases.some((d) => d.name === 'clients_node'));
    console.log('node driver user story: ok');
  } finally {
    await client.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
