// find's options through mongosh: sort/skip/limit/batchSize across getMore, projection, hint,
// min/max, returnKey, showRecordId, maxTimeMS (and MaxTimeMSExpired when the cluster runs with
// --enable-test-commands), allowDiskUse, large sorts.
const assert = require('assert');
const app = db.getSiblingDB('clients_mongosh_find_options');
app.dropDatabase();

function eq(actual, expected, message) {
  assert.strictEqual(EJSON.stringify(actual, { relaxed: false }), EJSON.stringify(expected, { relaxed: false }), message);
}
function expectError(code, fn) {
  let err = null;
  try { fn(); } catch (e) { err = e; }
  assert.ok(err, `expected error ${code}, got success`);
  assert.strictEqual(err.code, code, `expected error ${code}, got ${err.code}: ${err.message}`);
  return err;
}
const ids = (docs) => docs.map((d) => d._id);
const range = (from, to) => Array.from({ length: to - from }, (_, i) => from + i);

app.items.insertMany(range(0, 300).map((i) => ({ _id: i, a: i % 10, b: i, tags: [i % 3, 10 + (i % 4)], sub: { x: i, y: -i } })));
app.items.createIndex({ a: 1, b: -1 });

// sort/skip/limit with a small batchSize: the cursor goes through getMore and sees every document
// once, in order.
let cursor = app.items.find({}, { _id: 1 }).sort({ b: -1 }).skip(10).limit(150).batchSize(20);
const seen = [cursor.next()._id];
assert.strictEqual(cursor.objsLeftInBatch(), 19);
while (cursor.hasNext()) seen.push(cursor.next()._id);
eq(seen, range(0, 150).map((i) => 289 - i));
// The same through the commands: a first batch of 20, getMores of 20, then cursor id 0.
let reply = app.runCommand({ find: 'items', sort: { b: 1 }, skip: 5, limit: 50, batchSize: 20, projection: { _id: 1 } });
eq(ids(reply.cursor.firstBatch), range(5, 25));
assert.ok(!reply.cursor.id.isZero());
const batches = [reply.cursor.firstBatch.length];
let cursorId = reply.cursor.id;
while (!cursorId.isZero()) {
  reply = app.runCommand({ getMore: cursorId, collection: 'items', batchSize: 20 });
  batches.push(reply.cursor.nextBatch.length);
  cursorId = reply.cursor.id;
}
eq(batches, [20, 20, 10]);
// A negative limit is a single batch.
eq(ids(app.items.find({}, { _id: 1 }).sort({ b: 1 }).limit(-3).toArray()), [0, 1, 2]);
eq(ids(app.items.find({}).sort({ b: 1 }).skip(298).toArray()), [298, 299]);
eq(app.items.find({}).skip(400).toArray(), []);

// Projection: inclusion, exclusion, dotted paths, $slice, $elemMatch.
eq(app.items.find({ _id: 7 }, { a: 1, _id: 0 }).toArray(), [{ a: 7 }]);
eq(app.items.find({ _id: 7 }, { tags: 0, sub: 0 }).toArray(), [{ _id: 7, a: 7, b: 7 }]);
eq(app.items.find({ _id: 7 }, { 'sub.y': 1 }).toArray(), [{ _id: 7, sub: { y: -7 } }]);
eq(app.items.find({ _id: 7 }, { tags: { $slice: -1 }, a: 1 }).toArray(), [{ _id: 7, a: 7, tags: [13] }]);
eq(app.items.find({ _id: 7 }, { tags: { $elemMatch: { $gte: 10 } } }).toArray(), [{ _id: 7, tags: [13] }]);

// hint: the index's order without a sort.
eq(ids(app.items.find({ a: 3, b: { $lt: 40 } }).hint({ a: 1, b: -1 }).toArray()), [33, 23, 13, 3]);
eq(ids(app.items.find({ a: 3, b: { $lt: 40 } }).hint('a_1_b_-1').toArray()), [33, 23, 13, 3]);
expectError(2, () => app.items.find({}).hint('missing_1').toArray());
// $natural: -1 scans newest first.
eq(ids(app.items.find({ _id: { $lt: 5 } }).sort({ $natural: -1 }).toArray()), [4, 3, 2, 1, 0]);
eq(ids(app.items.find({ _id: { $lt: 5 } }).hint({ $natural: -1 }).toArray()), [4, 3, 2, 1, 0]);

// min/max with a hint: [min, max) in the index's order.
app.small.insertMany(range(0, 30).map((i) => ({ _id: i, a: i % 10, b: i })));
app.small.createIndex({ a: 1, b: -1 });
eq(ids(app.small.find().min({ a: 2, b: 12 }).max({ a: 4, b: 100 }).hint({ a: 1, b: -1 }).toArray()), [12, 2, 23, 13, 3]);
eq(ids(app.small.find({ b: { $lt: 15 } }).max({ a: 1, b: 100 }).hint('a_1_b_-1').toArray()), [10, 0]);
expectError(51173, () => app.small.find().min({ a: 1, b: 1 }).toArray());
expectError(51174, () => app.small.find().min({ a: 1 }).hint({ a: 1, b: -1 }).toArray());
expectError(51175, () => app.small.find().min({ a: 5, b: 1 }).max({ a: 4, b: 1 }).hint({ a: 1, b: -1 }).toArray());

// returnKey: the index key the document was found by; {} for a collection scan.
eq(app.small.find({ a: 7 }).sort({ b: -1 }).returnKey(true).toArray(), [{ a: 7, b: 27 }, { a: 7, b: 17 }, { a: 7, b: 7 }]);
eq(app.small.find({ b: { $lt: 2 } }).returnKey(true).toArray(), [{}, {}]);
// showRecordId: $recordId, an int64, distinct per document.
const withIds = app.small.find({ b: { $lt: 5 } }).showRecordId(true).toArray();
assert.strictEqual(withIds.length, 5);
for (const d of withIds) {
  assert.ok(d.$recordId instanceof Long, EJSON.stringify(d));
  eq(Object.keys(d), ['_id', 'a', 'b', '$recordId']);
}
assert.strictEqual(new Set(withIds.map((d) => d.$recordId.toString())).size, 5);

// maxTimeMS: a generous limit succeeds; bad values are BadValue.
assert.strictEqual(app.items.find({ a: 1 }).maxTimeMS(10000).toArray().length, 30);
expectError(2, () => app.items.find().maxTimeMS(-1).toArray());
// MaxTimeMSExpired (50) through the maxTimeAlwaysTimeOut fail point, only with test commands.
let failPoint = null;
try {
  failPoint = db.adminCommand({ configureFailPoint: 'maxTimeAlwaysTimeOut', mode: { times: 1 } });
} catch (e) {
  assert.strictEqual(e.code, 59, e.message); // CommandNotFound without --enable-test-commands
}
if (failPoint) {
  const err = expectError(50, () => app.items.find({ a: 1 }).maxTimeMS(10000).toArray());
  assert.strictEqual(err.codeName, 'MaxTimeMSExpired');
  assert.strictEqual(app.items.find({ a: 1 }).maxTimeMS(10000).toArray().length, 30); // used up
  db.adminCommand({ configureFailPoint: 'maxTimeAlwaysTimeOut', mode: 'off' });
} else {
  print('note: configureFailPoint is not available (no --enable-test-commands): MaxTimeMSExpired not checked');
}

// allowDiskUse (true and false) on sorts that fit in memory.
eq(ids(app.items.find({ a: 2 }, { _id: 1 }).sort({ 'sub.y': 1 }).allowDiskUse(true).limit(3).toArray()), [292, 282, 272]);
eq(ids(app.items.find({ a: 2 }, { _id: 1 }).sort({ 'sub.y': 1 }).allowDiskUse(false).limit(3).toArray()), [292, 282, 272]);

// A large blocking sort (no index) read through several batches, and its top-k form.
const n = 10000;
const pad = 'p'.repeat(200);
const big = app.big;
for (let start = 0; start < n; start += 5000) {
  big.insertMany(range(start, start + 5000).map((i) => ({ _id: i, k: (i * 7919) % n, pad })));
}
const keys = big.find({}, { k: 1 }).sort({ k: -1 }).allowDiskUse(true).batchSize(1000).toArray().map((d) => d.k);
assert.strictEqual(keys.length, n);
keys.forEach((k, i) => assert.strictEqual(k, n - 1 - i));
eq(big.find({}, { _id: 0, k: 1 }).sort({ k: 1 }).skip(100).limit(3).toArray(), [{ k: 100 }, { k: 101 }, { k: 102 }]);

app.dropDatabase();
print('mongosh find options: ok');
