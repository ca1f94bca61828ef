// Indexes through mongosh: createIndex/createIndexes with options, getIndexes, duplicate keys,
// conflicting options, hint in find, dropIndex by name and by key, dropIndexes.
const assert = require('assert');
const app = db.getSiblingDB('clients_mongosh_indexes');
app.dropDatabase();

// Strict equality of documents and arrays: types, values and field order (canonical Extended JSON).
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

const now = new Date();
app.items.insertMany([
  { _id: 1, sku: 'a', cat: 'tools', price: 5, qty: 20, tag: 't1', owner: 'ann', createdAt: now },
  { _id: 2, sku: 'b', cat: 'tools', price: 9, qty: 3, owner: 'bob', createdAt: now },
  { _id: 3, sku: 'c', cat: 'garden', price: 7, qty: 50, tag: 't2', owner: 'ann', createdAt: now },
  { _id: 4, sku: 'd', cat: 'tools', price: 1, qty: 11, owner: 'cy', createdAt: now },
]);

// createIndex / createIndexes with options; names are MongoDB's defaults unless given.
assert.strictEqual(app.items.createIndex({ sku: 1 }, { unique: true }), 'sku_1');
eq(
  app.items.createIndexes([{ cat: 1, price: -1 }, { tag: 1 }], { sparse: true }),
  ['cat_1_price_-1', 'tag_1'],
);
assert.strictEqual(app.items.createIndex({ qty: 1 }, { partialFilterExpression: { qty: { $gt: 10 } }, name: 'big_qty' }), 'big_qty');
assert.strictEqual(app.items.createIndex({ createdAt: 1 }, { expireAfterSeconds: 3600 }), 'createdAt_1');
assert.strictEqual(app.items.createIndex({ owner: 'hashed' }), 'owner_hashed');
assert.strictEqual(app.items.createIndex({ legacy: 1 }, { hidden: true, unique: true, sparse: true }), 'legacy_1');
assert.strictEqual(app.items.createIndex({ cat: 1, sku: 1 }, { name: 'by_cat_sku' }), 'by_cat_sku');
// The same index again is a no-op.
const again = app.runCommand({ createIndexes: 'items', indexes: [{ key: { sku: 1 }, name: 'sku_1', unique: true }] });
assert.strictEqual(again.ok, 1);
assert.strictEqual(again.numIndexesBefore, again.numIndexesAfter);
assert.strictEqual(again.note, 'all indexes already exist');
// A unique hashed index is refused.
expectError(16764, () => app.items.createIndex({ h: 'hashed' }, { unique: true }));

// getIndexes: every specification, in creation order.
const specs = app.items.getIndexes();
eq(specs.map((i) => i.name),
  ['_id_', 'sku_1', 'cat_1_price_-1', 'tag_1', 'big_qty', 'createdAt_1', 'owner_hashed', 'legacy_1', 'by_cat_sku']);
const byName = Object.fromEntries(specs.map((i) => [i.name, i]));
for (const spec of specs) assert.strictEqual(spec.v, 2);
eq(byName._id_.key, { _id: 1 });
eq(byName.sku_1.key, { sku: 1 });
assert.strictEqual(byName.sku_1.unique, true);
eq(byName['cat_1_price_-1'].key, { cat: 1, price: -1 });
assert.strictEqual(byName['cat_1_price_-1'].sparse, true);
assert.strictEqual(byName.tag_1.sparse, true);
eq(byName.big_qty.partialFilterExpression, { qty: { $gt: 10 } });
assert.strictEqual(byName.createdAt_1.expireAfterSeconds, 3600);
eq(byName.owner_hashed.key, { owner: 'hashed' });
assert.strictEqual(byName.legacy_1.hidden, true);
assert.strictEqual(byName.legacy_1.unique, true);
assert.strictEqual(byName.legacy_1.sparse, true);
assert.strictEqual(byName.by_cat_sku.unique, undefined);
assert.strictEqual(byName.by_cat_sku.sparse, undefined);

// Duplicate keys: code 11000 with keyPattern and keyValue.
let err = expectError(11000, () => app.items.insertOne({ _id: 10, sku: 'a' }));
eq(err.keyPattern, { sku: 1 });
eq(err.keyValue, { sku: 'a' });
assert.ok(err.message.includes('index: sku_1 dup key: { sku: "a" }'), err.message);
err = expectError(11000, () => app.items.insertMany([{ _id: 11, sku: 'e' }, { _id: 12, sku: 'b' }, { _id: 13, sku: 'f' }], { ordered: false }));
eq(err.writeErrors.map((w) => [w.index, w.code]), [[1, 11000]]);
assert.strictEqual(err.result.insertedCount, 2);
err = expectError(11000, () => app.items.updateOne({ _id: 2 }, { $set: { sku: 'c' } }));
eq(err.keyValue, { sku: 'c' });
// A hidden unique index still enforces uniqueness.
app.items.updateOne({ _id: 1 }, { $set: { legacy: 'x' } });
err = expectError(11000, () => app.items.updateOne({ _id: 2 }, { $set: { legacy: 'x' } }));
eq(err.keyPattern, { legacy: 1 });
// Unique over existing duplicates fails and leaves no index behind.
err = expectError(11000, () => app.items.createIndex({ cat: 1 }, { unique: true }));
eq(err.keyPattern, { cat: 1 });
assert.ok(!app.items.getIndexes().some((i) => i.name === 'cat_1'));
// Unique + sparse: documents without the field do not collide; unique + partial: outside the
// filter, duplicates are allowed.
assert.strictEqual(app.items.createIndex({ code: 1 }, { unique: true, sparse: true }), 'code_1');
app.items.insertMany([{ _id: 20, sku: 's20' }, { _id: 21, sku: 's21', code: 7 }]);
err = expectError(11000, () => app.items.insertOne({ _id: 22, sku: 's22', code: 7 }));
eq(err.keyValue, { code: 7 });
assert.strictEqual(app.items.createIndex({ email: 1 }, { unique: true, partialFilterExpression: { email: { $type: 'string' } } }), 'email_1');
app.items.insertMany([{ _id: 30, sku: 's30', email: null }, { _id: 31, sku: 's31', email: null }, { _id: 32, sku: 's32', email: 'x@y' }]);
expectError(11000, () => app.items.insertOne({ _id: 33, sku: 's33', email: 'x@y' }));

// Conflicting options: same name and key, other options (85); same name, other key (86);
// same key and options, other name (85).
err = expectError(85, () => app.items.createIndex({ sku: 1 }, { name: 'sku_1' }));
assert.strictEqual(err.codeName, 'IndexOptionsConflict');
err = expectError(86, () => app.items.createIndex({ sku: -1 }, { name: 'sku_1' }));
assert.strictEqual(err.codeName, 'IndexKeySpecsConflict');
expectError(85, () => app.items.createIndex({ sku: 1 }, { unique: true, name: 'sku_again' }));
expectError(67, () => app.items.createIndex({ a: 1, b: 1 }, { expireAfterSeconds: 10 }));
expectError(67, () => app.items.createIndex({ a: 1 }, { sparse: true, partialFilterExpression: { a: 1 } }));
// Invalid specifications.
const rawIndex = (spec) => app.runCommand({ createIndexes: 'items', indexes: [spec] });
expectError(197, () => rawIndex({ key: { a: 1 }, name: 'a_1', foo: 1 }));
expectError(197, () => app.items.createIndex({ _id: 1 }, { expireAfterSeconds: 10 }));
expectError(67, () => rawIndex({ key: { a: 0 }, name: 'a_0' }));
expectError(67, () => rawIndex({ key: { a: 'foo' }, name: 'a_foo' }));
expectError(67, () => rawIndex({ key: {}, name: 'none' }));
expectError(14, () => rawIndex({ key: { a: 1 }, name: 'a_1', sparse: 'yes' }));
expectError(2, () => rawIndex({ key: { q: 1 }, name: '*' }));
expectError(67, () => rawIndex({ key: { r: 1 }, name: 'r_1', partialFilterExpression: { r: { $regex: 'x' } } }));
expectError(197, () => rawIndex({ key: { _id: 1 }, name: '_id_', unique: true }));

// hint in find: by name, by key pattern, $natural; the hinted index gives the order.
const byCatPrice = app.items.find({ cat: 'tools' }, { _id: 1 }).hint('cat_1_price_-1').toArray();
eq(byCatPrice.map((d) => d._id), [2, 1, 4]);
eq(app.items.find({ cat: 'tools' }, { _id: 1 }).hint({ cat: 1, price: -1 }).toArray().map((d) => d._id), [2, 1, 4]);
eq(app.items.find({ _id: { $lte: 4 } }, { _id: 1 }).hint({ $natural: 1 }).toArray().map((d) => d._id), [1, 2, 3, 4]);
eq(app.items.find({ _id: { $lte: 4 } }, { _id: 1 }).hint({ $natural: -1 }).toArray().map((d) => d._id), [4, 3, 2, 1]);
eq(app.items.find({ owner: 'ann' }, { _id: 1 }).hint('owner_hashed').sort({ _id: 1 }).toArray(), [{ _id: 1 }, { _id: 3 }]);
// A sparse index hinted: only the documents it holds.
eq(app.items.find({}, { _id: 1 }).hint('tag_1').toArray().map((d) => d._id), [1, 3]);
err = expectError(2, () => app.items.find({}).hint('no_such_index').toArray());
assert.ok(err.message.includes('hint provided does not correspond to an existing index'));
expectError(2, () => app.items.find({}).hint({ nope: 1 }).toArray());
// Hidden indexes cannot be hinted.
expectError(2, () => app.items.find({ legacy: 'x' }).hint('legacy_1').toArray());

// dropIndex by name and by key; errors; dropIndexes '*'.
assert.strictEqual(app.items.dropIndex('big_qty').ok, 1);
assert.strictEqual(app.items.dropIndex({ cat: 1, price: -1 }).ok, 1);
expectError(27, () => app.items.dropIndex('big_qty'));
expectError(27, () => app.items.dropIndex({ zz: 1 }));
expectError(72, () => app.items.dropIndex('_id_'));
let names = app.items.getIndexes().map((i) => i.name);
assert.ok(!names.includes('big_qty') && !names.includes('cat_1_price_-1') && names.includes('sku_1'), names.join());
const dropped = app.items.dropIndexes('*');
assert.strictEqual(dropped.ok, 1);
assert.strictEqual(dropped.nIndexesWas, names.length);
eq(app.items.getIndexes().map((i) => i.name), ['_id_']);
// Without the unique index, duplicates go in.
app.items.insertOne({ _id: 40, sku: 'a' });
expectError(26, () => app.runCommand({ listIndexes: 'missing' }));

app.dropDatabase();
print('mongosh indexes: ok');
