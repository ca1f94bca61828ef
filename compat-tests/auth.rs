//! Authentication and authorization through the official driver: SCRAM-SHA-256 and
//! SCRAM-SHA-1 with credentials in the URI, wrong passwords, the user-management commands,
//! privileges of built-in roles (Unauthorized 13), `listDatabases`' authorized databases and
//! the localhost exception; cursor ownership and the privileges of stages reading other
//! collections.

use crate::harness::{TestCluster, error_code, failure, node_options};
use bson::{Bson, Document, doc};
use mongodb::Client;
use std::net::SocketAddr;

pub(crate) async fn client(addr: SocketAddr, credentials: &str, options: &str) -> Client {
    Client::with_uri_str(format!(
        "mongodb://{credentials}@{addr}/?serverSelectionTimeoutMS=5000{options}"
    ))
    .await
    .expect("client")
}

pub(crate) async fn with_root() -> TestCluster {
    let mut options = node_options();
    options.auth = true;
    options.initial_user = Some(("root".into(), "example".into()));
    TestCluster::with_options(options).await
}

/// The distinct values of `field` in a cursor reply's first batch, sorted ("" where absent).
fn batch_strings(reply: &Document, field: &str) -> Vec<String> {
    let batch = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch");
    let mut values: Vec<String> = batch
        .unwrap()
        .iter()
        .map(|d| {
            d.as_document()
                .unwrap()
                .get_str(field)
                .unwrap_or("")
                .to_string()
        })
        .collect();
    values.sort();
    values.dedup();
    values
}

pub(crate) async fn run(
    client: &Client,
    db: &str,
    command: Document,
) -> mongodb::error::Result<Document> {
    client.database(db).run_command(command).await
}

#[tokio::test]
async fn auth_scram_sha_256_and_sha_1_with_credentials_in_the_uri() {
    let cluster = with_root().await;
    let addr = cluster.addr;
    // Without credentials: the handshake and ping, nothing else.
    let anonymous = &cluster.client;
    run(anonymous, "admin", doc! {"ping": 1}).await.unwrap();
    let e = run(anonymous, "app", doc! {"find": "c"}).await.unwrap_err();
    // Claiming to be a cluster member changes nothing.
    let claimed = Client::with_uri_str(format!("mongodb://{addr}/?maxPoolSize=1"))
        .await
        .unwrap();
    let hello = doc! {"hello": 1, "internalClient": {"minWireVersion": 0, "maxWireVersion": 25}};
    run(&claimed, "admin", hello).await.unwrap();
    let refused = run(&claimed, "app", doc! {"find": "c"}).await.unwrap_err();
    assert_eq!(error_code(&refused), Some(13));
    assert_eq!(
        failure(&e),
        (
            13,
            "Unauthorized".into(),
            "command find requires authentication".into()
        )
    );
    let root = client(addr, "root:example", "&authSource=admin").await;
    run(
        &root,
        "app",
        doc! {"insert": "c", "documents": [{"_id": 1}]},
    )
    .await
    .unwrap();
    let status = run(
        &root,
        "admin",
        doc! {"connectionStatus": 1, "showPrivileges": true},
    )
    .await
    .unwrap();
    let info = status.get_document("authInfo").unwrap();
    assert_eq!(
        info.get_array("authenticatedUsers").unwrap()[0]
            .as_document()
            .unwrap(),
        &doc! {"user": "root", "db": "admin"}
    );
    assert_eq!(
        info.get_array("authenticatedUserRoles").unwrap()[0]
            .as_document()
            .unwrap(),
        &doc! {"role": "root", "db": "admin"}
    );
    assert!(
        !info
            .get_array("authenticatedUserPrivileges")
            .unwrap()
            .is_empty()
    );
    // Both mechanisms, each chosen explicitly.
    for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-1"] {
        let c = client(
            addr,
            "root:example",
            &format!("&authSource=admin&authMechanism={mechanism}"),
        )
        .await;
        let found = run(&c, "app", doc! {"find": "c"}).await.unwrap();
        assert_eq!(crate::harness::first_batch(&found).len(), 1, "{mechanism}");
    }
    cluster.shutdown().await;
}

#[tokio::test]
async fn auth_wrong_passwords_fail_and_the_server_keeps_serving() {
    let cluster = with_root().await;
    for (credentials, source) in [
        ("root:wrong", "admin"),
        ("nobody:example", "admin"),
        ("root:example", "app"),
    ] {
        let c = client(cluster.addr, credentials, &format!("&authSource={source}")).await;
        let e = run(&c, "admin", doc! {"ping": 1}).await.unwrap_err();
        assert!(
            e.to_string().contains("Authentication failed"),
            "{credentials}@{source}: {e}"
        );
    }
    // A malformed SASL payload on a plain connection.
    let e = run(
        &cluster.client,
        "admin",
        doc! {"saslStart": 1, "mechanism": "SCRAM-SHA-256", "payload": bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: b"garbage".to_vec() }},
    )
    .await
    .unwrap_err();
    assert_eq!(
        failure(&e),
        (
            18,
            "AuthenticationFailed".into(),
            "Authentication failed.".into()
        )
    );
    let e = run(
        &cluster.client,
        "admin",
        doc! {"saslStart": 1, "mechanism": "PLAIN", "payload": bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: vec![] }},
    )
    .await
    .unwrap_err();
    assert_eq!(error_code(&e), Some(334));
    let e = run(&cluster.client, "admin", doc! {"saslContinue": 1, "conversationId": 1, "payload": bson::Binary { subtype: bson::spec::BinarySubtype::Generic, bytes: vec![] }})
        .await
        .unwrap_err();
    assert_eq!(error_code(&e), Some(17));
    let e = run(
        &cluster.client,
        "$external",
        doc! {"authenticate": 1, "mechanism": "MONGODB-CR"},
    )
    .await
    .unwrap_err();
    assert_eq!(error_code(&e), Some(334));
    let root = client(cluster.addr, "root:example", "&authSource=admin").await;
    run(&root, "admin", doc! {"ping": 1}).await.unwrap();
    cluster.shutdown().await;
}

#[tokio::test]
async fn auth_users_roles_and_privileges() {
    let cluster = with_root().await;
    let addr = cluster.addr;
    let root = client(addr, "root:example", "&authSource=admin").await;
    run(
        &root,
        "app",
        doc! {"insert": "c", "documents": [{"_id": 1}]},
    )
    .await
    .unwrap();
    run(
        &root,
        "app",
        doc! {"createUser": "reader", "pwd": "r", "roles": ["read"]},
    )
    .await
    .unwrap();
    run(&root, "app", doc! {"createUser": "old", "pwd": "o", "roles": [{"role": "readWrite", "db": "app"}], "mechanisms": ["SCRAM-SHA-1"]})
        .await
        .unwrap();
    run(
        &root,
        "admin",
        doc! {"createUser": "nobody", "pwd": "n", "roles": []},
    )
    .await
    .unwrap();
    // MongoDB's errors.
    let e = run(
        &root,
        "app",
        doc! {"createUser": "reader", "pwd": "r", "roles": []},
    )
    .await
    .unwrap_err();
    assert_eq!(
        failure(&e),
        (
            51003,
            "Location51003".into(),
            "User \"reader@app\" already exists".into()
        )
    );
    let e = run(
        &root,
        "app",
        doc! {"createUser": "x", "pwd": "r", "roles": ["nope"]},
    )
    .await
    .unwrap_err();
    assert_eq!(
        failure(&e),
        (
            31,
            "RoleNotFound".into(),
            "Could not find role: nope@app".into()
        )
    );
    let e = run(&root, "app", doc! {"dropUser": "ghost"})
        .await
        .unwrap_err();
    assert_eq!(
        failure(&e),
        (
            11,
            "UserNotFound".into(),
            "Could not find user \"ghost\" for db \"app\"".into()
        )
    );
    let e = run(
        &root,
        "app",
        doc! {"createUser": "y", "pwd": "p", "roles": [], "digestPassword": false},
    )
    .await
    .unwrap_err();
    assert_eq!(error_code(&e), Some(2));
    // usersInfo's forms.
    let info = run(&root, "app", doc! {"usersInfo": 1}).await.unwrap();
    let users = info.get_array("users").unwrap();
    assert_eq!(users.len(), 2);
    let reader = run(&root, "app", doc! {"usersInfo": "reader"})
        .await
        .unwrap();
    let reader = reader.get_array("users").unwrap()[0]
        .as_document()
        .unwrap()
        .clone();
    assert_eq!(reader.get_str("_id").unwrap(), "app.reader");
    assert_eq!(reader.get_array("mechanisms").unwrap().len(), 2);
    assert!(!reader.contains_key("credentials"));
    let all = run(&root, "admin", doc! {"usersInfo": {"forAllDBs": true}})
        .await
        .unwrap();
    assert_eq!(all.get_array("users").unwrap().len(), 4);
    let named = run(
        &root,
        "admin",
        doc! {"usersInfo": [{"user": "old", "db": "app"}], "showCredentials": true},
    )
    .await
    .unwrap();
    let old = named.get_array("users").unwrap()[0].as_document().unwrap();
    assert!(
        old.get_document("credentials")
            .unwrap()
            .contains_key("SCRAM-SHA-1")
    );
    // A read user reads and cannot write.
    let reader = client(addr, "reader:r", "&authSource=app").await;
    run(&reader, "app", doc! {"find": "c"}).await.unwrap();
    let e = run(
        &reader,
        "app",
        doc! {"insert": "c", "documents": [{"_id": 2}]},
    )
    .await
    .unwrap_err();
    let (code, name, message) = failure(&e);
    assert_eq!((code, name.as_str()), (13, "Unauthorized"));
    assert!(
        message.starts_with("not authorized on app to execute command { insert: \"c\""),
        "{message}"
    );
    // A SCRAM-SHA-1-only user, negotiated by the driver.
    let old = client(addr, "old:o", "&authSource=app").await;
    run(&old, "app", doc! {"insert": "c", "documents": [{"_id": 3}]})
        .await
        .unwrap();
    // A user without privileges lists no database; asking for all of them is refused.
    let nobody = client(addr, "nobody:n", "&authSource=admin").await;
    let dbs = run(&nobody, "admin", doc! {"listDatabases": 1})
        .await
        .unwrap();
    assert!(dbs.get_array("databases").unwrap().is_empty(), "{dbs}");
    let e = run(
        &nobody,
        "admin",
        doc! {"listDatabases": 1, "authorizedDatabases": false},
    )
    .await
    .unwrap_err();
    assert_eq!(error_code(&e), Some(13));
    let dbs = run(
        &reader,
        "admin",
        doc! {"listDatabases": 1, "nameOnly": true},
    )
    .await
    .unwrap();
    assert_eq!(dbs.get_array("databases").unwrap().len(), 1, "{dbs}");
    // Role changes reach open connections.
    run(
        &root,
        "app",
        doc! {"grantRolesToUser": "reader", "roles": ["readWrite"]},
    )
    .await
    .unwrap();
    run(
        &reader,
        "app",
        doc! {"insert": "c", "documents": [{"_id": 4}]},
    )
    .await
    .unwrap();
    run(
        &root,
        "app",
        doc! {"revokeRolesFromUser": "reader", "roles": ["readWrite"]},
    )
    .await
    .unwrap();
    let e = run(
        &reader,
        "app",
        doc! {"insert": "c", "documents": [{"_id": 5}]},
    )
    .await
    .unwrap_err();
    assert_eq!(error_code(&e), Some(13));
    // A password change: the old one fails, the new one works.
    run(&root, "app", doc! {"updateUser": "reader", "pwd": "r2"})
        .await
        .unwrap();
    let e = run(
        &client(addr, "reader:r", "&authSource=app").await,
        "app",
        doc! {"find": "c"},
    )
    .await
    .unwrap_err();
    assert!(e.to_string().contains("Authentication failed"), "{e}");
    run(
        &client(addr, "reader:r2", "&authSource=app").await,
        "app",
        doc! {"find": "c"},
    )
    .await
    .unwrap();
    // A dropped user is no longer authenticated.
    run(&root, "app", doc! {"dropUser": "reader"})
        .await
        .unwrap();
    let e = run(&reader, "app", doc! {"find": "c"}).await.unwrap_err();
    assert_eq!(error_code(&e), Some(13));
    let dropped = run(&root, "app", doc! {"dropAllUsersFromDatabase": 1})
        .await
        .unwrap();
    assert_eq!(dropped.get_i32("n").unwrap(), 1);
    // Built-in roles.
    let roles = run(
        &root,
        "app",
        doc! {"rolesInfo": "readWrite", "showPrivileges": true},
    )
    .await
    .unwrap();
    let role = roles.get_array("roles").unwrap()[0].as_document().unwrap();
    assert!(role.get_bool("isBuiltin").unwrap());
    assert!(!role.get_array("privileges").unwrap().is_empty());
    cluster.shutdown().await;
}

/// `$currentOp` reads every user's operations and their commands: `inprog` (clusterMonitor
/// has it), not a read of the admin database (readAnyDatabase).
#[tokio::test]
async fn auth_current_op_needs_inprog() {
    let cluster = with_root().await;
    let root = client(cluster.addr, "root:example", "&authSource=admin").await;
    for (user, role) in [
        ("anyreader", "readAnyDatabase"),
        ("monitor", "clusterMonitor"),
    ] {
        run(
            &root,
            "admin",
            doc! {"createUser": user, "pwd": "pw", "roles": [role]},
        )
        .await
        .unwrap();
    }
    let current_op = doc! {"aggregate": 1, "pipeline": [{"$currentOp": {}}], "cursor": {}};
    let reader = client(cluster.addr, "anyreader:pw", "&authSource=admin").await;
    let e = run(&reader, "admin", current_op.clone()).await.unwrap_err();
    assert_eq!(error_code(&e), Some(13), "{e}");
    let monitor = client(cluster.addr, "monitor:pw", "&authSource=admin").await;
    run(&monitor, "admin", current_op).await.unwrap();
    // The shards' operations of the user's own (`allUsers: false`): the shard filters by the
    // user the router names.
    let own =
        doc! {"aggregate": 1, "cursor": {}, "pipeline": [{"$currentOp": {"allUsers": false}}]};
    let reply = run(&monitor, "admin", own).await.unwrap();
    let ops = reply
        .get_document("cursor")
        .unwrap()
        .get_array("firstBatch");
    let ops = ops.unwrap();
    assert!(!ops.is_empty(), "{reply}");
    for op in ops {
        let users = op.as_document().unwrap().get_array("effectiveUsers");
        let users = users.map(|u| u.to_vec()).unwrap_or_default();
        assert_eq!(
            users,
            [Bson::Document(doc! {"user": "monitor", "db": "admin"})],
            "{reply}"
        );
    }

    // The router's own operations and connections of the user's own need no `inprog`
    // (`localOps` without `allUsers`); told apart here by each client's appName.
    let reader = client(
        cluster.addr,
        "anyreader:pw",
        "&authSource=admin&appName=reader",
    )
    .await;
    let root = client(
        cluster.addr,
        "root:example",
        "&authSource=admin&appName=root",
    )
    .await;
    run(&root, "admin", doc! {"ping": 1}).await.unwrap();
    let local = |all_users: bool| {
        doc! {"aggregate": 1, "cursor": {}, "pipeline": [{"$currentOp": {
        "localOps": true, "allUsers": all_users, "idleConnections": true}}]}
    };
    let apps = |reply: Document| batch_strings(&reply, "appName");
    // (The earlier client of the same user, without an appName, is the user's too.)
    let own = apps(run(&reader, "admin", local(false)).await.unwrap());
    assert!(
        own.contains(&"reader".to_string()) && !own.contains(&"root".to_string()),
        "{own:?}"
    );
    let e = run(&reader, "admin", local(true)).await.unwrap_err();
    assert_eq!(error_code(&e), Some(13), "{e}");
    let everyone = apps(run(&root, "admin", local(true)).await.unwrap());
    assert!(
        everyone.contains(&"reader".to_string()) && everyone.contains(&"root".to_string()),
        "{everyone:?}"
    );
    let own = apps(run(&root, "admin", local(false)).await.unwrap());
    assert!(
        own.contains(&"root".to_string()) && !own.contains(&"reader".to_string()),
        "{own:?}"
    );
}

/// A cursor is its user's: another user's getMore is Unauthorized (and leaves the cursor to
/// its owner), killCursors needs `killAnyCursor` for it; `$lookup`, `$graphLookup` and
/// `$unionWith` need `find` on the collections they read; `authorizedCollections`; a user views
/// itself, and changes its own password with `changeOwnPassword`.
#[tokio::test]
async fn auth_cursors_and_foreign_collections_are_guarded() {
    let cluster = with_root().await;
    let root = client(cluster.addr, "root:example", "&authSource=admin").await;
    let docs: Vec<Document> = (0..10).map(|i| doc! {"_id": i, "k": i % 2}).collect();
    run(&root, "app", doc! {"insert": "c", "documents": docs})
        .await
        .unwrap();
    run(
        &root,
        "app",
        doc! {"insert": "secret", "documents": [{"_id": 0, "pin": 1234}]},
    )
    .await
    .unwrap();
    run(
        &root,
        "app",
        doc! {"createRole": "cOnly", "roles": [], "privileges": [
            {"resource": {"db": "app", "collection": "c"}, "actions": ["find"]},
        ]},
    )
    .await
    .unwrap();
    for user in ["alice", "bob"] {
        let create = doc! {"createUser": user, "pwd": "pw", "roles": ["read"]};
        run(&root, "app", create).await.unwrap();
    }
    run(
        &root,
        "app",
        doc! {"createUser": "carol", "pwd": "pw", "roles": ["cOnly"]},
    )
    .await
    .unwrap();
    let alice = client(cluster.addr, "alice:pw", "&authSource=app").await;
    let bob = client(cluster.addr, "bob:pw", "&authSource=app").await;
    let carol = client(cluster.addr, "carol:pw", "&authSource=app").await;

    let opened = run(&alice, "app", doc! {"find": "c", "batchSize": 2})
        .await
        .unwrap();
    let id = opened
        .get_document("cursor")
        .unwrap()
        .get_i64("id")
        .unwrap();
    let get_more = doc! {"getMore": id, "collection": "c", "batchSize": 2};
    let e = run(&bob, "app", get_more.clone()).await.unwrap_err();
    assert_eq!(error_code(&e), Some(13), "{e}");
    assert!(
        e.to_string().contains(&format!(
            "cursor id {id} was not created by the authenticated user"
        )),
        "{e}"
    );
    let kill = doc! {"killCursors": "c", "cursors": [id]};
    let e = run(&bob, "app", kill.clone()).await.unwrap_err();
    assert_eq!(error_code(&e), Some(13), "{e}");
    assert!(
        e.to_string()
            .contains("not authorized to kill cursor on app.c"),
        "{e}"
    );
    // The owner reads on; `killAnyCursor` (root's, through hostManager) kills it.
    run(&alice, "app", get_more).await.unwrap();
    let killed = run(&root, "app", kill).await.unwrap();
    assert_eq!(
        killed.get_array("cursorsKilled").unwrap().len(),
        1,
        "{killed}"
    );

    // Stages reading other collections need `find` on them.
    let aggregate = |pipeline: Vec<Document>| {
        doc! {"aggregate": "c", "pipeline": pipeline, "cursor": {}}
    };
    let lookup =
        doc! {"$lookup": {"from": "secret", "localField": "k", "foreignField": "_id", "as": "s"}};
    let union = doc! {"$unionWith": {"coll": "secret"}};
    let graph = doc! {"$graphLookup": {"from": "secret", "startWith": "$k",
    "connectFromField": "_id", "connectToField": "_id", "as": "s"}};
    let facet = doc! {"$facet": {"f": [{"$unionWith": "secret"}]}};
    let nested = doc! {"$lookup": {"from": "c", "as": "s", "pipeline": [{"$unionWith": "secret"}]}};
    for stage in [lookup.clone(), union, graph, facet, nested] {
        let e = run(&carol, "app", aggregate(vec![stage.clone()]))
            .await
            .unwrap_err();
        assert_eq!(error_code(&e), Some(13), "{stage}: {e}");
    }
    run(&carol, "app", aggregate(vec![doc! {"$match": {}}]))
        .await
        .unwrap();
    let self_lookup =
        doc! {"$lookup": {"from": "c", "localField": "k", "foreignField": "_id", "as": "s"}};
    run(&carol, "app", aggregate(vec![self_lookup]))
        .await
        .unwrap();
    run(&alice, "app", aggregate(vec![lookup])).await.unwrap();

    // `authorizedCollections` lists what the user holds a privilege on (mongosh's `show
    // collections`); without it, listCollections needs the privilege.
    let names = |reply: Document| batch_strings(&reply, "name");
    let authorized = doc! {"listCollections": 1, "nameOnly": true, "authorizedCollections": true};
    let listed = run(&carol, "app", authorized.clone()).await.unwrap();
    assert_eq!(names(listed), ["c"]);
    let mut filtered = authorized.clone();
    filtered.insert("filter", doc! {"name": {"$ne": "c"}});
    assert!(names(run(&carol, "app", filtered).await.unwrap()).is_empty());
    let listed = run(&alice, "app", authorized).await.unwrap();
    assert_eq!(names(listed), ["c", "secret"]);
    let e = run(&carol, "app", doc! {"listCollections": 1})
        .await
        .unwrap_err();
    assert_eq!(error_code(&e), Some(13), "{e}");

    // A user holding `changeOwnPassword` changes its own password, no one else's.
    let own_password = doc! {"createRole": "selfService", "roles": [], "privileges": [
        {"resource": {"db": "app", "collection": ""}, "actions": ["changeOwnPassword"]},
    ]};
    run(&root, "app", own_password).await.unwrap();
    let create = doc! {"createUser": "dave", "pwd": "pw", "roles": ["selfService"]};
    run(&root, "app", create).await.unwrap();
    let dave = client(cluster.addr, "dave:pw", "&authSource=app").await;
    let e = run(&dave, "app", doc! {"updateUser": "bob", "pwd": "x"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&e), Some(13), "{e}");
    let e = run(
        &dave,
        "app",
        doc! {"updateUser": "dave", "customData": {"a": 1}},
    )
    .await
    .unwrap_err();
    assert_eq!(error_code(&e), Some(13), "{e}");
    run(&dave, "app", doc! {"updateUser": "dave", "pwd": "new"})
        .await
        .unwrap();
    let dave = client(cluster.addr, "dave:new", "&authSource=app").await;
    run(&dave, "app", doc! {"usersInfo": "dave"}).await.unwrap();
    let e = run(&alice, "app", doc! {"updateUser": "alice", "pwd": "x"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&e), Some(13), "{e}");

    // A user views itself without `viewUser`, but no one else.
    let own = run(
        &alice,
        "app",
        doc! {"usersInfo": "alice", "showPrivileges": true},
    )
    .await
    .unwrap();
    let users = own.get_array("users").unwrap();
    assert_eq!(users.len(), 1, "{own}");
    let e = run(&alice, "app", doc! {"usersInfo": "bob"})
        .await
        .unwrap_err();
    assert_eq!(error_code(&e), Some(13), "{e}");
    let e = run(&alice, "app", doc! {"usersInfo": 1}).await.unwrap_err();
    assert_eq!(error_code(&e), Some(13), "{e}");
}

#[tokio::test]
async fn auth_localhost_exception_creates_the_first_user_only() {
    let mut options = node_options();
    options.auth = true;
    let cluster = TestCluster::with_options(options).await;
    let anonymous = &cluster.client;
    let e = run(
        anonymous,
        "app",
        doc! {"createUser": "u", "pwd": "p", "roles": []},
    )
    .await
    .unwrap_err();
    assert_eq!(error_code(&e), Some(13));
    run(
        anonymous,
        "admin",
        doc! {"createUser": "admin", "pwd": "p", "roles": ["root"]},
    )
    .await
    .unwrap();
    let e = run(
        anonymous,
        "admin",
        doc! {"createUser": "second", "pwd": "p", "roles": ["root"]},
    )
    .await
    .unwrap_err();
    assert_eq!(error_code(&e), Some(13));
    let admin = client(cluster.addr, "admin:p", "&authSource=admin").await;
    run(
        &admin,
        "admin",
        doc! {"createUser": "second", "pwd": "p", "roles": ["root"]},
    )
    .await
    .unwrap();
    run(&admin, "admin", doc! {"logout": 1}).await.unwrap();
    cluster.shutdown().await;
}
