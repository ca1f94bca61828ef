// Cursors, batches and MongoDB's errors through mongosh.
const assert = require('assert');
const app = db.getSiblingDB('clients_mongosh_cursors');
app.dropDatabase();

app.items.insertMany(Array.from({ length: 250 }, (_, i) => ({ _id: i, even: i % 2 === 0 })));
const cursor = app.items.find({}).batchSize(20);
let seen = 0;
while (cursor.hasNext()) {
  cursor.next();
  seen++;
}
assert.strictEqual(seen, 250);
assert.strictEqual(app.items.find({ even: true }).limit(7).toArray().length, 7);
assert.strictEqual(app.items.find().skip(240).toArray().length, 10);
assert.deepEqual(app.items.find({}, { _id: 1 }).sort({ _id: -1 }).limit(2).toArray(), [{ _id: 249 }, { _id: 248 }]);

// Errors carry MongoDB's codes and names.
let err = null;
try { app.items.insertOne({ _id: 1 }); } catch (e) { err = e; }
assert.strictEqual(err.code, 11000);
assert.ok(err.message.includes('E11000 duplicate key error'));
err = null;
try { app.runCommand({ noSuchCommand: 1 }); } catch (e) { err = e; }
assert.strictEqual(err.code, 59);
assert.strictEqual(err.codeName, 'CommandNotFound');
err = null;
try { app.items.updateOne({ _id: 2 }, { $set: { _id: 3 } }); } catch (e) { err = e; }
assert.strictEqual(err.code, 66);
err = null;
try { app.items.find({ $foo: 1 }).toArray(); } catch (e) { err = e; }
assert.strictEqual(err.code, 2);
app.dropDatabase();
print('mongosh cursors and errors: ok');
