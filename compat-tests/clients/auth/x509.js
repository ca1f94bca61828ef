// MONGODB-X509 in mongosh (`--tlsCertificateKeyFile --authenticationMechanism MONGODB-X509`),
// run by the user the client certificate names; it expects that user to be authenticated.
// Usage: mongosh ... --file x509.js   with SUBJECT in the environment.
const subject = process.env.SUBJECT;
const users = db.runCommand({ connectionStatus: 1 }).authInfo.authenticatedUsers;
if (users.length !== 1 || users[0].user !== subject || users[0].db !== "$external") {
  throw new Error(`authenticated as ${JSON.stringify(users)}`);
}
db.getSiblingDB("clients_mongosh_x509").c.insertOne({ a: 1 });
if (db.getSiblingDB("clients_mongosh_x509").c.countDocuments() !== 1) throw new Error("count");
db.getSiblingDB("clients_mongosh_x509").dropDatabase();
print("ok");
