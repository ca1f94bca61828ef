// Indexes through the Node.js driver: createIndex/createIndexes with options, listIndexes and
// indexInformation, duplicate keys, conflicting options, hint in find, dropIndex by name and by
// key, dropIndexes.
// Usage: NODE_PATH=<dir with the mongodb package> node indexes.cjs mongodb://127.0.0.1:27017
const assert = require('node:assert/strict');
const { MongoClient, MongoServerError, MongoBulkWriteError } = require('mongodb');

async function expectError(code, promise) {
  let err = null;
  try { await promise; } catch (e) { err = e; }
  assert.ok(err, `expected error ${code}, got success`);
  assert.equal(err.code, code, `expected error ${code}, got ${err.code}: ${err.message}`);
  return err;
}

async function main() {
  const client = new MongoClient(process.argv[2] ?? 'mongodb://127.0.0.1:27017');
  try {
    const db = client.db('clients_node_indexes');
    await db.dropDatabase();
    const items = db.collection('items');
    const now = new Date();
    await items.insertMany([
      { _id: 1, sku: 'a', cat: 'tools', price: 5, qty: 20, tag: 't1', owner: 'ann', createdAt: now },
      { _id: 2, sku: 'b', cat: 'tools', price: 9, qty: 3, owner: 'bob', createdAt: now },
      { _id: 3, sku: 'c', cat: 'garden', price: 7, qty: 50, tag: 't2', owner: 'ann', createdAt: now },
      { _id: 4, sku: 'd', cat: 'tools', price: 1, qty: 11, owner: 'cy', createdAt: now },
    ]);

    // createIndex / createIndexes with options; MongoDB's default names unless given.
    assert.equal(await items.createIndex({ sku: 1 }, { unique: true }), 'sku_1');
    assert.deepEqual(await items.createIndexes([
      { key: { cat: 1, price: -1 }, sparse: true },
      { key: { tag: 1 }, sparse: true },
      { key: { qty: 1 }, name: 'big_qty', partialFilterExpression: { qty: { $gt: 10 } } },
      { key: { createdAt: 1 }, expireAfterSeconds: 3600 },
      { key: { owner: 'hashed' } },
      { key: { legacy: 1 }, hidden: true, unique: true, sparse: true },
      { key: { cat: 1, sku: 1 }, name: 'by_cat_sku' },
    ]), ['cat_1_price_-1', 'tag_1', 'big_qty', 'createdAt_1', 'owner_hashed', 'legacy_1', 'by_cat_sku']);
    // The same index again is a no-op.
    const again = await db.command({ createIndexes: 'items', indexes: [{ key: { sku: 1 }, name: 'sku_1', unique: true }] });
    assert.equal(again.numIndexesBefore, again.numIndexesAfter);
    assert.equal(again.note, 'all indexes already exist');
    // A unique hashed index is refused.
    await expectError(16764, items.createIndex({ h: 'hashed' }, { unique: true }));

    // listIndexes / indexes / indexInformation: every specification, in creation order.
    const specs = await items.listIndexes().toArray();
    assert.deepEqual(specs.map((i) => i.name),
      ['_id_', 'sku_1', 'cat_1_price_-1', 'tag_1', 'big_qty', 'createdAt_1', 'owner_hashed', 'legacy_1', 'by_cat_sku']);
    const byName = Object.fromEntries(specs.map((i) => [i.name, i]));
    for (const spec of specs) assert.equal(spec.v, 2);
    assert.deepEqual(Object.entries(byName['cat_1_price_-1'].key), [['cat', 1], ['price', -1]]);
    assert.equal(byName.sku_1.unique, true);
    assert.equal(byName['cat_1_price_-1'].sparse, true);
    assert.equal(byName.tag_1.sparse, true);
    assert.deepEqual(byName.big_qty.partialFilterExpression, { qty: { $gt: 10 } });
    assert.equal(byName.createdAt_1.expireAfterSeconds, 3600);
    assert.deepEqual(byName.owner_hashed.key, { owner: 'hashed' });
    assert.equal(byName.legacy_1.hidden, true);
    assert.equal(byName.legacy_1.unique, true);
    assert.ok(!('unique' in byName.by_cat_sku) && !('sparse' in byName.by_cat_sku));
    assert.deepEqual((await items.indexes()).map((i) => i.name), specs.map((i) => i.name));
    const info = await items.indexInformation();
    assert.deepEqual(info['cat_1_price_-1'], [['cat', 1], ['price', -1]]);
    assert.equal(await items.indexExists(['big_qty', 'owner_hashed']), true);

    // Duplicate keys: code 11000 with keyPattern and keyValue on the error.
    let err = await expectError(11000, items.insertOne({ _id: 10, sku: 'a' }));
    assert.ok(err instanceof MongoServerError);
    assert.deepEqual(err.keyPattern, { sku: 1 });
    assert.deepEqual(err.keyValue, { sku: 'a' });
    assert.ok(err.message.includes('index: sku_1 dup key: { sku: "a" }'), err.message);
    err = await expectError(11000, items.insertMany([{ _id: 11, sku: 'e' }, { _id: 12, sku: 'b' }, { _id: 13, sku: 'f' }], { ordered: false }));
    assert.ok(err instanceof MongoBulkWriteError);
    assert.deepEqual(err.writeErrors.map((w) => [w.index, w.code]), [[1, 11000]]);
    assert.ok(err.writeErrors[0].errmsg.includes('dup key: { sku: "b" }'));
    assert.equal(err.result.insertedCount, 2);
    err = await expectError(11000, items.updateOne({ _id: 2 }, { $set: { sku: 'c' } }));
    assert.deepEqual(err.keyValue, { sku: 'c' });
    // A hidden unique index still enforces uniqueness.
    await items.updateOne({ _id: 1 }, { $set: { legacy: 'x' } });
    err = await expectError(11000, items.updateOne({ _id: 2 }, { $set: { legacy: 'x' } }));
    assert.deepEqual(err.keyPattern, { legacy: 1 });
    // Unique over existing duplicates fails and leaves no index behind.
    err = await expectError(11000, items.createIndex({ cat: 1 }, { unique: true }));
    assert.deepEqual(err.keyPattern, { cat: 1 });
    assert.equal(await items.indexExists('cat_1'), false);
    // unique + sparse: missing fields do not collide; unique + partial: outside the filter,
    // duplicates are allowed.
    assert.equal(await items.createIndex({ code: 1 }, { unique: true, sparse: true }), 'code_1');
    await items.insertMany([{ _id: 20, sku: 's20' }, { _id: 21, sku: 's21', code: 7 }]);
    err = await expectError(11000, items.insertOne({ _id: 22, sku: 's22', code: 7 }));
    assert.deepEqual(err.keyValue, { code: 7 });
    assert.equal(await items.createIndex({ email: 1 }, { unique: true, partialFilterExpression: { email: { $type: 'string' } } }), 'email_1');
    await items.insertMany([{ _id: 30, sku: 's30', email: null }, { _id: 31, sku: 's31', email: null }, { _id: 32, sku: 's32', email: 'x@y' }]);
    await expectError(11000, items.insertOne({ _id: 33, sku: 's33', email: 'x@y' }));

    // Conflicting options: 85 (same name and key, other options; same key, other name), 86 (same
    // name, other key), 67 for invalid combinations.
    err = await expectError(85, items.createIndex({ sku: 1 }, { name: 'sku_1' }));
    assert.equal(err.codeName, 'IndexOptionsConflict');
    err = await expectError(86, items.createIndex({ sku: -1 }, { name: 'sku_1' }));
    assert.equal(err.codeName, 'IndexKeySpecsConflict');
    await expectError(85, items.createIndex({ sku: 1 }, { unique: true, name: 'sku_again' }));
    await expectError(67, items.createIndex({ a: 1, b: 1 }, { expireAfterSeconds: 10 }));
    await expectError(67, items.createIndex({ a: 1 }, { sparse: true, partialFilterExpression: { a: 1 } }));
    // Invalid specifications.
    const rawIndex = (spec) => db.command({ createIndexes: 'items', indexes: [spec] });
    await expectError(197, rawIndex({ key: { a: 1 }, name: 'a_1', foo: 1 }));
    await expectError(197, items.createIndex({ _id: 1 }, { expireAfterSeconds: 10 }));
    await expectError(67, rawIndex({ key: { a: 0 }, name: 'a_0' }));
    await expectError(67, rawIndex({ key: { a: 'foo' }, name: 'a_foo' }));
    await expectError(67, rawIndex({ key: {}, name: 'none' }));
    await expectError(14, rawIndex({ key: { a: 1 }, name: 'a_1', sparse: 'yes' }));
    await expectError(2, rawIndex({ key: { q: 1 }, name: '*' }));
    await expectError(67, rawIndex({ key: { r: 1 }, name: 'r_1', partialFilterExpression: { r: { $regex: 'x' } } }));
    await expectError(197, rawIndex({ key: { _id: 1 }, name: '_id_', unique: true }));

    // hint in find: by name, by key pattern, $natural; the hinted index gives the order.
    const ids = async (cursor) => (await cursor.toArray()).map((d) => d._id);
    assert.deepEqual(await ids(items.find({ cat: 'tools' }, { projection: { _id: 1 } }).hint('cat_1_price_-1')), [2, 1, 4]);
    assert.deepEqual(await ids(items.find({ cat: 'tools' }, { projection: { _id: 1 }, hint: { cat: 1, price: -1 } })), [2, 1, 4]);
    assert.deepEqual(await ids(items.find({ _id: { $lte: 4 } }).hint({ $natural: 1 })), [1, 2, 3, 4]);
    assert.deepEqual(await ids(items.find({ _id: { $lte: 4 } }).hint({ $natural: -1 })), [4, 3, 2, 1]);
    assert.deepEqual(await ids(items.find({ owner: 'ann' }).hint('owner_hashed').sort({ _id: 1 })), [1, 3]);
    // A sparse index hinted: only the documents it holds.
    assert.deepEqual(await ids(items.find({}).hint('tag_1')), [1, 3]);
    err = await expectError(2, items.find({}).hint('no_such_index').toArray());
    assert.ok(err.message.includes('hint provided does not correspond to an existing index'));
    await expectError(2, items.find({}).hint({ nope: 1 }).toArray());
    await expectError(2, items.find({ legacy: 'x' }).hint('legacy_1').toArray()); // hidden

    // dropIndex by name, dropIndexes by key pattern, errors, dropIndexes '*'.
    await items.dropIndex('big_qty');
    assert.equal((await db.command({ dropIndexes: 'items', index: { cat: 1, price: -1 } })).ok, 1);
    await expectError(27, items.dropIndex('big_qty'));
    await expectError(27, db.command({ dropIndexes: 'items', index: { zz: 1 } }));
    await expectError(72, items.dropIndex('_id_'));
    const names = (await items.indexes()).map((i) => i.name);
    assert.ok(!names.includes('big_qty') && !names.includes('cat_1_price_-1') && names.includes('sku_1'), names.join());
    assert.equal(await items.dropIndexes(), true);
    assert.deepEqual((await items.indexes()).map((i) => i.name), ['_id_']);
    await items.insertOne({ _id: 40, sku: 'a' });
    await expectError(26, db.command({ listIndexes: 'missing' }));
    await expectError(26, db.collection('missing').listIndexes().toArray());

    await db.dropDatabase();
    console.log('node indexes: ok');
  } finally {
    await client.close();
  }
}

main().catch((err) => {
  console.error(err);
  process.exit(1);
});
