// Authentication through the Node driver against docgrid --auth (root/example): both SCRAM
// mechanisms, a wrong password (18), a read user refused a write (13).
// Usage: node auth.cjs 127.0.0.1:27017
const { MongoClient } = require("mongodb");

async function main(host) {
  const root = new MongoClient(`mongodb://root:example@${host}/?authSource=admin`);
  const db = root.db("clients_node_auth");
  await db.command({ dropAllUsersFromDatabase: 1 });
  await db.dropDatabase();
  await db.command({ createUser: "writer", pwd: "w", roles: ["readWrite"] });
  await db.command({ createUser: "reader", pwd: "r", roles: ["read"] });
  for (const mechanism of ["SCRAM-SHA-256", "SCRAM-SHA-1"]) {
    const writer = new MongoClient(`mongodb://writer:w@${host}/?authSource=clients_node_auth&authMechanism=${mechanism}`);
    await writer.db("clients_node_auth").collection("c").insertOne({ mechanism });
    await writer.close();
  }
  const reader = new MongoClient(`mongodb://reader:r@${host}/?authSource=clients_node_auth`);
  if ((await reader.db("clients_node_auth").collection("c").countDocuments()) !== 2) throw new Error("reader's count");
  let code = null;
  try { await reader.db("clients_node_auth").collection("c").insertOne({ x: 1 }); } catch (e) { code = e.code; }
  if (code !== 13) throw new Error(`a read user's insert: ${code}`);
  await reader.close();
  const wrong = new MongoClient(`mongodb://reader:nope@${host}/?authSource=clients_node_auth&serverSelectionTimeoutMS=3000`);
  code = null;
  try { await wrong.db("clients_node_auth").command({ ping: 1 }); } catch (e) { code = e.code; }
  if (code !== 18) throw new Error(`a wrong password: ${code}`);
  await wrong.close();
  await db.command({ dropAllUsersFromDatabase: 1 });
  await db.dropDatabase();
  await root.close();
  console.log("ok");
}

main(process.argv[2]).catch((e) => { console.error(e); process.exit(1); });
