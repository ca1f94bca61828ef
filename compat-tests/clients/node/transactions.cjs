// Multi-document transactions are refused, clearly and without side effects, through the Node
// driver: each statement answers NotImplemented (238), nothing is written, abortTransaction is
// harmless and withTransaction gives up at once (no retry loop).
// Usage: NODE_PATH=<dir with the mongodb package> node transactions.cjs mongodb://127.0.0.1:27017
const assert = require('node:assert/strict');
const { MongoClient } = require('mongodb');

function refused(e) {
  assert.equal(e.code, 238, e.message);
  assert.equal(e.codeName, 'NotImplemented');
  assert.match(e.message, /transactions are not supported/);
  assert.ok(!e.hasErrorLabel('TransientTransactionError'));
  return true;
}

async function main() {
  const client = new MongoClient(process.argv[2] ?? 'mongodb://127.0.0.1:27017');
  try {
    const db = client.db('clients_node_txn');
    await db.dropDatabase();
    const accounts = db.collection('accounts');
    await accounts.insertMany([{ _id: 'a', balance: 100 }, { _id: 'b', balance: 100 }]);

    const session = client.startSession();
    try {
      for (let i = 0; i < 5; i++) {
        session.startTransaction();
        await assert.rejects(accounts.updateOne({ _id: 'a' }, { $inc: { balance: -10 } }, { session }), refused);
        await session.abortTransaction();
      }
      let calls = 0;
      await assert.rejects(
        session.withTransaction(async () => {
          calls++;
          await accounts.updateOne({ _id: 'a' }, { $inc: { balance: -10 } }, { session });
          await accounts.updateOne({ _id: 'b' }, { $inc: { balance: 10 } }, { session });
        }),
        refused,
      );
      assert.equal(calls, 1);
    } finally {
      await session.endSession();
    }

    const balances = await accounts.find({}).sort({ _id: 1 }).toArray();
    assert.deepEqual(balances, [{ _id: 'a', balance: 100 }, { _id: 'b', balance: 100 }]);
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
