// MONGODB-X509 through the Node driver against docgrid --auth over TLS (root/example): the
// client certificate's subject is a `$external` user; it writes where its role lets it and is
// refused elsewhere (13).
// Usage: node x509.cjs HOST:PORT CA_FILE CLIENT_PEM SUBJECT
const { MongoClient } = require("mongodb");

async function main(host, ca, cert, subject) {
  const tls = `tls=true&tlsCAFile=${encodeURIComponent(ca)}&tlsCertificateKeyFile=${encodeURIComponent(cert)}`;
  const root = new MongoClient(`mongodb://root:example@${host}/?authSource=admin&${tls}`);
  const external = root.db("$external");
  try { await external.command({ dropUser: subject }); } catch (e) { if (e.code !== 11) throw e; }
  await external.command({ createUser: subject, roles: [{ role: "readWrite", db: "clients_node_x509" }] });
  const client = new MongoClient(`mongodb://${host}/?authMechanism=MONGODB-X509&${tls}`);
  await client.db("clients_node_x509").collection("c").insertOne({ a: 1 });
  const status = await client.db("admin").command({ connectionStatus: 1 });
  const users = status.authInfo.authenticatedUsers;
  if (users.length !== 1 || users[0].user !== subject || users[0].db !== "$external") {
    throw new Error(`authenticated as ${JSON.stringify(users)}`);
  }
  let code = null;
  try { await client.db("other_db").collection("c").insertOne({ a: 1 }); } catch (e) { code = e.code; }
  if (code !== 13) throw new Error(`a write outside the user's role: ${code}`);
  await client.close();
  await external.command({ dropUser: subject });
  await root.db("clients_node_x509").dropDatabase();
  await root.close();
  console.log("ok");
}

main(...process.argv.slice(2)).catch((e) => { console.error(e); process.exit(1); });
