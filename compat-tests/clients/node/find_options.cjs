// find's options through the Node.js driver: sort/skip/limit/batchSize across getMore (counted
// with command monitoring), projection, hint, min/max, returnKey, showRecordId, maxTimeMS (and
// MaxTimeMSExpired when the cluster runs with --enable-test-commands), allowDiskUse, large sorts.
// Usage: NODE_PATH=<dir with the mongodb package> node find_options.cjs mongodb://127.0.0.1:27017
const assert = require('node:assert/strict');
const { MongoClient, Long } = require('mongodb');

const DB = 'clients_node_find_options';
const range = (from, to) => Array.from({ length: to - from }, (_, i) => from + i);
const ids = (docs) => docs.map((d) => d._id);

async function expectError(code, promise) {
  let err = null;
  try { await promise; } catch (e) { err = e; }
  assert.ok(err, `expected error ${code}, got success`);
  assert.equal(err.code, code, `expected error ${code}, got ${err.code}: ${err.message}`);
  return err;
}

async function main() {
  const client = new MongoClient(process.argv[2] ?? 'mongodb://127.0.0.1:27017', { monitorCommands: true });
  const events = [];
  client.on('commandStarted', (e) => events.push({ kind: 'started', name: e.commandName }));
  client.on('commandSucceeded', (e) => events.push({ kind: 'succeeded', name: e.commandName, reply: e.reply }));
  const started = () => events.filter((e) => e.kind === 'started').map((e) => e.name);
  try {
    const db = client.db(DB);
    await db.dropDatabase();
    const items = db.collection('items');
    await items.insertMany(range(0, 300).map((i) => ({ _id: i, a: i % 10, b: i, tags: [i % 3, 10 + (i % 4)], sub: { x: i, y: -i } })));
    await items.createIndex({ a: 1, b: -1 });

    // sort/skip/limit with a small batchSize: one find, getMores until the limit, every document
    // once and in order, the server closing the cursor (no killCursors).
    events.length = 0;
    const seen = [];
    for await (const d of items.find({}, { projection: { _id: 1 } }).sort({ b: -1 }).skip(10).limit(150).batchSize(20)) seen.push(d._id);
    assert.deepEqual(seen, range(0, 150).map((i) => 289 - i));
    assert.deepEqual(started(), ['find', ...Array(7).fill('getMore')]);
    const replies = events.filter((e) => e.kind === 'succeeded').map((e) => e.reply);
    assert.equal(replies[0].cursor.firstBatch.length, 20);
    assert.deepEqual(replies.slice(1).map((r) => r.cursor.nextBatch.length), [20, 20, 20, 20, 20, 20, 10]);
    assert.equal(Number(replies.at(-1).cursor.id), 0);
    // batchSize as a find option; a negative limit is a single batch (no getMore).
    events.length = 0;
    assert.equal((await items.find({ a: 1 }, { batchSize: 7 }).toArray()).length, 30);
    assert.deepEqual(started(), ['find', 'getMore', 'getMore', 'getMore', 'getMore']);
    events.length = 0;
    assert.deepEqual(ids(await items.find({}, { projection: { _id: 1 } }).sort({ b: 1 }).limit(-3).toArray()), [0, 1, 2]);
    assert.deepEqual(started(), ['find']);
    assert.deepEqual(ids(await items.find().sort({ b: 1 }).skip(298).toArray()), [298, 299]);
    assert.deepEqual(await items.find().skip(400).toArray(), []);

    // Projection: inclusion, exclusion, dotted paths, $slice, $elemMatch.
    assert.deepEqual(await items.find({ _id: 7 }, { projection: { a: 1, _id: 0 } }).toArray(), [{ a: 7 }]);
    assert.deepEqual(await items.find({ _id: 7 }).project({ tags: 0, sub: 0 }).toArray(), [{ _id: 7, a: 7, b: 7 }]);
    assert.deepEqual(await items.find({ _id: 7 }).project({ 'sub.y': 1 }).toArray(), [{ _id: 7, sub: { y: -7 } }]);
    assert.deepEqual(await items.find({ _id: 7 }).project({ tags: { $slice: -1 }, a: 1 }).toArray(), [{ _id: 7, a: 7, tags: [13] }]);
    assert.deepEqual(await items.find({ _id: 7 }).project({ tags: { $elemMatch: { $gte: 10 } } }).toArray(), [{ _id: 7, tags: [13] }]);

    // hint: the index's order without a sort.
    assert.deepEqual(ids(await items.find({ a: 3, b: { $lt: 40 } }).hint({ a: 1, b: -1 }).toArray()), [33, 23, 13, 3]);
    assert.deepEqual(ids(await items.find({ a: 3, b: { $lt: 40 } }, { hint: 'a_1_b_-1' }).toArray()), [33, 23, 13, 3]);
    await expectError(2, items.find().hint('missing_1').toArray());
    // $natural: -1 scans newest first.
    assert.deepEqual(ids(await items.find({ _id: { $lt: 5 } }).sort({ $natural: -1 }).toArray()), [4, 3, 2, 1, 0]);
    assert.deepEqual(ids(await items.find({ _id: { $lt: 5 } }).hint({ $natural: -1 }).toArray()), [4, 3, 2, 1, 0]);

    // min/max with a hint: [min, max) in the index's order.
    const small = db.collection('small');
    await small.insertMany(range(0, 30).map((i) => ({ _id: i, a: i % 10, b: i })));
    await small.createIndex({ a: 1, b: -1 });
    const hint = { a: 1, b: -1 };
    assert.deepEqual(ids(await small.find().min({ a: 2, b: 12 }).max({ a: 4, b: 100 }).hint(hint).toArray()), [12, 2, 23, 13, 3]);
    assert.deepEqual(ids(await small.find({ b: { $lt: 15 } }, { max: { a: 1, b: 100 }, hint: 'a_1_b_-1' }).toArray()), [10, 0]);
    await expectError(51173, small.find().min({ a: 1, b: 1 }).toArray());
    await expectError(51174, small.find().min({ a: 1 }).hint(hint).toArray());
    await expectError(51175, small.find().min({ a: 5, b: 1 }).max({ a: 4, b: 1 }).hint(hint).toArray());

    // returnKey: the index key the document was found by; {} for a collection scan.
    assert.deepEqual(await small.find({ a: 7 }).sort({ b: -1 }).returnKey(true).toArray(), [{ a: 7, b: 27 }, { a: 7, b: 17 }, { a: 7, b: 7 }]);
    assert.deepEqual(await small.find({ b: { $lt: 2 } }, { returnKey: true }).toArray(), [{}, {}]);
    // showRecordId: $recordId, an int64 (a Long with promoteLongs off), distinct per document.
    const withIds = await small.find({ b: { $lt: 5 } }, { promoteLongs: false }).showRecordId(true).toArray();
    assert.equal(withIds.length, 5);
    for (const d of withIds) {
      assert.ok(d.$recordId instanceof Long, JSON.stringify(d));
      assert.deepEqual(Object.keys(d), ['_id', 'a', 'b', '$recordId']);
    }
    assert.equal(new Set(withIds.map((d) => d.$recordId.toString())).size, 5);

    // maxTimeMS: a generous limit succeeds; bad values are BadValue.
    assert.equal((await items.find({ a: 1 }).maxTimeMS(10000).toArray()).length, 30);
    assert.equal((await items.find({ a: 1 }, { maxTimeMS: 10000 }).toArray()).length, 30);
    await expectError(2, db.command({ find: 'items', maxTimeMS: -1 }));
    // MaxTimeMSExpired (50) through the maxTimeAlwaysTimeOut fail point, only with test commands.
    let failPoint = true;
    try {
      await client.db('admin').command({ configureFailPoint: 'maxTimeAlwaysTimeOut', mode: { times: 1 } });
    } catch (e) {
      assert.equal(e.code, 59, e.message); // CommandNotFound without --enable-test-commands
      failPoint = false;
    }
    if (failPoint) {
      const err = await expectError(50, items.find({ a: 1 }).maxTimeMS(10000).toArray());
      assert.equal(err.codeName, 'MaxTimeMSExpired');
      assert.equal((await items.find({ a: 1 }).maxTimeMS(10000).toArray()).length, 30); // used up
      await client.db('admin').command({ configureFailPoint: 'maxTimeAlwaysTimeOut', mode: 'off' });
    } else {
      console.log('note: configureFailPoint is not available (no --enable-test-commands): MaxTimeMSExpired not checked');
    }

    // allowDiskUse (true and false) on sorts that fit in memory.
    for (const allowDiskUse of [true, false]) {
      const docs = await items.find({ a: 2 }, { projection: { _id: 1 }, allowDiskUse }).sort({ 'sub.y': 1 }).limit(3).toArray();
      assert.deepEqual(ids(docs), [292, 282, 272]);
    }

    // A large blocking sort (no index) read through several batches, and its top-k form.
    const n = 10000;
    const pad = 'p'.repeat(200);
    const big = db.collection('big');
    for (let start = 0; start < n; start += 5000) {
      await big.insertMany(range(start, start + 5000).map((i) => ({ _id: i, k: (i * 7919) % n, pad })));
    }
    events.length = 0;
    const keys = [];
    for await (const d of big.find({}, { projection: { k: 1 } }).sort({ k: -1 }).allowDiskUse(true).batchSize(1000)) keys.push(d.k);
    assert.deepEqual(keys, range(0, n).reverse());
    const getMores = started().filter((name) => name === 'getMore').length;
    assert.ok(getMores === 9 || getMores === 10, `getMores: ${getMores}`); // batches of 1,000
    assert.deepEqual(await big.find({}, { projection: { _id: 0, k: 1 } }).sort({ k: 1 }).skip(100).limit(3).toArray(), [{ k: 100 }, { k: 101 }, { k: 102 }]);

    await db.dropDatabase();
    console.log('node find options: ok');
  } finally {
    await client.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
