// Users and authentication through mongosh, connected as root (--username/--password):
// db.createUser, show users (getUsers), db.auth with both mechanisms, a read user refused a
// write (13), db.logout, dropUser; user-defined roles: db.createRole, db.getRole, a user
// holding one, db.grantRolesToRole, db.dropRole.
const app = db.getSiblingDB("clients_mongosh_auth");
app.dropAllRoles();
app.dropAllUsers();
app.dropDatabase();
app.createUser({ user: "alice", pwd: "secret", roles: ["readWrite"] });
app.createUser({ user: "reader", pwd: "r", roles: ["read"], mechanisms: ["SCRAM-SHA-1"] });
const users = app.getUsers().users.map((u) => u.user).sort();
if (JSON.stringify(users) !== JSON.stringify(["alice", "reader"])) throw new Error("show users: " + users);
const status = db.runCommand({ connectionStatus: 1 });
if (status.authInfo.authenticatedUsers[0].user !== "root") throw new Error("connectionStatus: " + tojson(status));

const uri = db.getMongo()._uri.replace(/\/\/[^@]*@/, "//").split("?")[0];
const alice = new Mongo(uri).getDB("clients_mongosh_auth");
let refused = false;
try { alice.c.insertOne({ x: 0 }); } catch (e) { refused = e.code === 13; }
if (!refused) throw new Error("an unauthenticated insert was not refused with 13");
if (alice.auth("alice", "secret").ok !== 1) throw new Error("db.auth(alice)");
alice.c.insertOne({ x: 1 });
if (alice.c.countDocuments({}) !== 1) throw new Error("alice's insert");
alice.logout();

const reader = new Mongo(uri).getDB("clients_mongosh_auth");
if (reader.auth({ user: "reader", pwd: "r", mechanism: "SCRAM-SHA-1" }).ok !== 1) throw new Error("db.auth(reader, SCRAM-SHA-1)");
if (reader.c.find().toArray().length !== 1) throw new Error("reader's find");
refused = false;
try { reader.c.insertOne({ x: 2 }); } catch (e) { refused = e.code === 13; }
if (!refused) throw new Error("a read user's insert was not refused with 13");

let failed = false;
try { new Mongo(uri).getDB("clients_mongosh_auth").auth("alice", "wrong"); } catch (e) { failed = e.code === 18; }
if (!failed) throw new Error("a wrong password did not fail with 18");

app.createRole({
  role: "cReader",
  privileges: [{ resource: { db: "clients_mongosh_auth", collection: "c" }, actions: ["find"] }],
  roles: [],
});
const role = app.getRole("cReader", { showPrivileges: true });
if (role.isBuiltin || role.privileges[0].actions.join() !== "find") throw new Error("getRole: " + tojson(role));
app.createUser({ user: "carol", pwd: "c", roles: ["cReader"] });
const carol = new Mongo(uri).getDB("clients_mongosh_auth");
if (carol.auth("carol", "c").ok !== 1) throw new Error("db.auth(carol)");
if (carol.c.find().toArray().length !== 1) throw new Error("carol's find");
refused = false;
try { carol.d.find().toArray(); } catch (e) { refused = e.code === 13; }
if (!refused) throw new Error("a find outside the custom role was not refused with 13");
app.grantRolesToRole("cReader", ["readWrite"]);
carol.c.insertOne({ x: 3 });
if (app.getRoles().roles.map((r) => r.role).join() !== "cReader") throw new Error("getRoles: " + tojson(app.getRoles()));
app.dropRole("cReader");
if (app.getRole("cReader") !== null) throw new Error("the dropped role is still there");
if (app.getUser("carol").roles.length !== 0) throw new Error("the dropped role is still carol's");

app.dropUser("reader");
app.dropAllRoles();
app.dropAllUsers();
app.dropDatabase();
print("ok");
