// Server and catalog commands through the Node.js driver.
// Usage: NODE_PATH=<dir with the mongodb package> node admin.cjs mongodb://127.0.0.1:27017
const assert = require('node:assert/strict');
const { MongoClient } = require('mongodb');

async function main() {
  const client = new MongoClient(process.argv[2] ?? 'mongodb://127.0.0.1:27017');
  try {
    const admin = client.db('admin');
    const info = await admin.command({ buildInfo: 1 });
    assert.ok(info.version.startsWith('8.0'));
    assert.equal((await admin.command({ serverStatus: 1 })).process, 'mongos');
    const db = client.db('clients_node_admin');
    await db.dropDatabase();
    await db.createCollection('a');
    await db.collection('b').insertMany([{ x: 1 }, { x: 2 }, { x: 3 }]);
    assert.deepEqual((await db.listCollections({}, { nameOnly: true }).toArray()).map((c) => c.name).sort(), ['a', 'b']);
    assert.deepEqual((await db.collection('b').indexes()).map((i) => i.name), ['_id_']);
    assert.equal((await db.command({ dbStats: 1 })).objects, 3);
    await db.collection('b').rename('c');
    assert.deepEqual((await db.listCollections().toArray()).map((c) => c.name).sort(), ['a', 'c']);
    const entry = await client.db('config').collection('databases').findOne({ _id: 'clients_node_admin' });
    assert.ok(entry.primary.startsWith('shard'));
    await db.dropDatabase();
    console.log('node admin: ok');
  } finally {
    await client.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
