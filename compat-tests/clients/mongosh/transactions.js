// Multi-document transactions through mongosh: an abort keeps nothing, a commit applies every
// write, and withTransaction runs transfers, on an unsharded and a sharded collection.
const assert = require('assert');
const app = db.getSiblingDB('clients_mongosh_txn');
app.dropDatabase();
sh.shardCollection('clients_mongosh_txn.sharded', { _id: 'hashed' });

for (const name of ['accounts', 'sharded']) {
  app[name].insertMany([{ _id: 'a', balance: 100 }, { _id: 'b', balance: 100 }]);
  const session = db.getMongo().startSession();
  const coll = session.getDatabase('clients_mongosh_txn')[name];

  session.startTransaction();
  coll.updateOne({ _id: 'a' }, { $inc: { balance: -10 } });
  coll.updateOne({ _id: 'b' }, { $inc: { balance: 10 } });
  assert.strictEqual(app[name].findOne({ _id: 'a' }).balance, 100, 'uncommitted writes are invisible');
  session.abortTransaction();
  assert.deepEqual(app[name].find().sort({ _id: 1 }).toArray(), [{ _id: 'a', balance: 100 }, { _id: 'b', balance: 100 }]);

  session.startTransaction();
  coll.updateOne({ _id: 'a' }, { $inc: { balance: -10 } });
  coll.updateOne({ _id: 'b' }, { $inc: { balance: 10 } });
  session.commitTransaction();
  assert.deepEqual(app[name].find().sort({ _id: 1 }).toArray(), [{ _id: 'a', balance: 90 }, { _id: 'b', balance: 110 }]);

  for (let i = 0; i < 3; i++) {
    session.withTransaction(() => {
      coll.updateOne({ _id: 'b' }, { $inc: { balance: -1 } });
      coll.updateOne({ _id: 'a' }, { $inc: { balance: 1 } });
    });
  }
  assert.deepEqual(app[name].find().sort({ _id: 1 }).toArray(), [{ _id: 'a', balance: 93 }, { _id: 'b', balance: 107 }]);
  session.endSession();
}
app.dropDatabase();
print('mongosh transactions: ok');
