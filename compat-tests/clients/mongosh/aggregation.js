// Aggregation stages that reach other collections, and introspection, through mongosh's helpers.
const d = db.getSiblingDB('clients_mongosh_agg');
d.dropDatabase();
sh.shardCollection('clients_mongosh_agg.orders', { _id: 'hashed' });
d.orders.insertMany([
  { _id: 1, item: 'almonds', qty: 2 },
  { _id: 2, item: 'pecans', qty: 1 },
  { _id: 3, item: 'almonds', qty: 5 },
]);
d.inventory.insertMany([
  { _id: 10, sku: 'almonds', instock: 120 },
  { _id: 11, sku: 'pecans', instock: 70 },
]);

const joined = d.orders.aggregate([
  { $lookup: { from: 'inventory', localField: 'item', foreignField: 'sku', as: 'stock' } },
  { $sort: { _id: 1 } },
]).toArray();
if (joined.length !== 3 || joined[0].stock[0].instock !== 120) throw new Error('lookup: ' + JSON.stringify(joined));

d.orders.aggregate([
  { $group: { _id: '$item', total: { $sum: '$qty' } } },
  { $out: 'totals' },
]);
const totals = d.totals.find().sort({ _id: 1 }).toArray();
if (JSON.stringify(totals) !== JSON.stringify([{ _id: 'almonds', total: 7 }, { _id: 'pecans', total: 1 }])) {
  throw new Error('$out: ' + JSON.stringify(totals));
}

d.orders.aggregate([
  { $group: { _id: '$item', orders: { $sum: 1 } } },
  { $merge: { into: 'totals', whenMatched: 'merge', whenNotMatched: 'discard' } },
]);
const merged = d.totals.findOne({ _id: 'almonds' });
if (merged.total !== 7 || merged.orders !== 2) throw new Error('$merge: ' + JSON.stringify(merged));

const union = d.orders.aggregate([
  { $project: { _id: 0, name: '$item' } },
  { $unionWith: { coll: 'inventory', pipeline: [{ $project: { _id: 0, name: '$sku' } }] } },
]).toArray();
if (union.length !== 5) throw new Error('$unionWith: ' + JSON.stringify(union));

const made = d.aggregate([{ $documents: [{ a: 1 }, { a: 2 }] }, { $match: { a: 2 } }]).toArray();
if (JSON.stringify(made) !== JSON.stringify([{ a: 2 }])) throw new Error('$documents: ' + JSON.stringify(made));

// db.currentOp() sends the currentOp command; it reports at least itself... on the shards.
const ops = db.currentOp();
if (!Array.isArray(ops.inprog)) throw new Error('currentOp: ' + JSON.stringify(ops));
const stats = d.orders.aggregate([{ $indexStats: {} }]).toArray();
if (stats.length < 2 || !stats.every((s) => s.name === '_id_' || s.name === '_id_hashed')) {
  throw new Error('$indexStats: ' + JSON.stringify(stats));
}
print('aggregation.js ok');
