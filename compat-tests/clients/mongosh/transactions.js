// Multi-document transactions are refused, clearly and without side effects, through mongosh:
// each statement answers NotImplemented (238), nothing is written, and an abort is harmless.
const assert = require('assert');
const app = db.getSiblingDB('clients_mongosh_txn');
app.dropDatabase();
app.accounts.insertMany([{ _id: 'a', balance: 100 }, { _id: 'b', balance: 100 }]);

const session = db.getMongo().startSession();
const accounts = session.getDatabase('clients_mongosh_txn').accounts;
for (let i = 0; i < 3; i++) {
  session.startTransaction();
  let err = null;
  try { accounts.updateOne({ _id: 'a' }, { $inc: { balance: -10 } }); } catch (e) { err = e; }
  assert.ok(err, 'a transaction statement was accepted');
  assert.strictEqual(err.code, 238);
  assert.strictEqual(err.codeName, 'NotImplemented');
  assert.ok(err.message.includes('transactions are not supported'), err.message);
  session.abortTransaction();
}
session.endSession();

assert.deepEqual(app.accounts.find().sort({ _id: 1 }).toArray(), [{ _id: 'a', balance: 100 }, { _id: 'b', balance: 100 }]);
app.dropDatabase();
print('mongosh transactions: ok');
