// Multi-document transactions through the Node driver: an abort keeps nothing, a commit applies
// every write, withTransaction runs concurrent transfers (retrying transient conflicts) and money
// is conserved, on an unsharded and a sharded collection.
// Usage: NODE_PATH=<dir with the mongodb package> node transactions.cjs mongodb://127.0.0.1:27017
const assert = require('node:assert/strict');
const { MongoClient } = require('mongodb');

async function run(client, accounts) {
  await accounts.insertMany([0, 1, 2, 3].map((i) => ({ _id: i, balance: 100 })));
  const session = client.startSession();
  try {
    session.startTransaction();
    await accounts.updateOne({ _id: 0 }, { $inc: { balance: -10 } }, { session });
    await accounts.updateOne({ _id: 1 }, { $inc: { balance: 10 } }, { session });
    await session.abortTransaction();
    assert.equal((await accounts.findOne({ _id: 0 })).balance, 100, 'an abort keeps nothing');

    session.startTransaction();
    await accounts.updateOne({ _id: 0 }, { $inc: { balance: -10 } }, { session });
    await accounts.updateOne({ _id: 1 }, { $inc: { balance: 10 } }, { session });
    await session.commitTransaction();
    assert.equal((await accounts.findOne({ _id: 1 })).balance, 110, 'a commit applies');
  } finally {
    await session.endSession();
  }

  // Four clients transferring side by side.
  await Promise.all([0, 1, 2, 3].map(async (worker) => {
    const s = client.startSession();
    try {
      for (let i = 0; i < 5; i++) {
        await s.withTransaction(async () => {
          await accounts.updateOne({ _id: worker }, { $inc: { balance: -1 } }, { session: s });
          await accounts.updateOne({ _id: (worker + 1) % 4 }, { $inc: { balance: 1 } }, { session: s });
        });
      }
    } finally {
      await s.endSession();
    }
  }));
  const all = await accounts.find({}).toArray();
  assert.equal(all.reduce((sum, d) => sum + d.balance, 0), 400, JSON.stringify(all));
}

async function main() {
  const client = new MongoClient(process.argv[2] ?? 'mongodb://127.0.0.1:27017');
  try {
    const db = client.db('clients_node_txn');
    await db.dropDatabase();
    await run(client, db.collection('accounts'));
    await client.db('admin').command({ shardCollection: 'clients_node_txn.sharded', key: { _id: 'hashed' } });
    await run(client, db.collection('sharded'));
    await db.dropDatabase();
    console.log('node transactions: ok');
  } finally {
    await client.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
