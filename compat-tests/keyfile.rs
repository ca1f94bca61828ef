//! Cluster-member authentication with `--keyFile`, as separate processes: the cluster works
//! end to end through the router for a user, a client without the key cannot run internal
//! commands on any role (Unauthorized 13), the cluster's users authenticate on shards too, the key's `__system` user authenticates with both
//! SCRAM mechanisms as MongoDB's does, a shard with a wrong key or none cannot join, a shard
//! name cannot be taken over, and an unusable key file stops the process.

use crate::harness::{Process, ProcessCluster, failure, free_port, shard_names};
use mongodb::Client;
use mongodb::bson::{Document, doc};
use std::path::{Path, PathBuf};
use std::time::Duration;

const KEY: &str = "c2VjcmV0IGtleSBvZiB0aGUgY2x1c3Rlcg==";
const ROOT: &str = "root:example";

/// Writes `key` to `dir/name`, readable by its owner only.
fn key_file(dir: &Path, name: &str, key: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let path = dir.join(name);
    // Split over lines with spaces: whitespace is not part of the key.
    let (a, b) = key.split_at(10);
    std::fs::write(&path, format!("{a} \n  {b}\n")).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    path
}

/// A cluster whose members share [`KEY`], with the root user `root:example`.
async fn secured(shards: usize) -> ProcessCluster {
    let dir = tempfile::tempdir().unwrap();
    let key = key_file(dir.path(), "key", KEY).display().to_string();
    let args = [
        "--keyFile",
        &key,
        "--admin-user",
        "root",
        "--admin-password",
        "example",
    ];
    ProcessCluster::start_in(dir, shards, &args, Some(ROOT), "").await
}

async fn direct(port: u16, credentials: &str) -> Client {
    Client::with_uri_str(format!(
        "mongodb://{credentials}127.0.0.1:{port}/?directConnection=true&serverSelectionTimeoutMS=5000"
    ))
    .await
    .unwrap()
}

async fn refused(client: &Client, db: &str, command: Document) -> (i32, String, String) {
    let err = client
        .database(db)
        .run_command(command.clone())
        .await
        .expect_err(&format!("{command} was accepted"));
    failure(&err)
}

#[tokio::test]
async fn keyfile_cluster_works_and_internal_commands_need_the_key() {
    let cluster = secured(2).await;
    let client = cluster.client().await;
    crate::harness::sharded_round_trip(&client, 20).await;
    let coll = client.database("app").collection::<Document>("users");
    client
        .database("app")
        .run_command(doc! {"createUser": "reader", "pwd": "pw", "roles": ["read"]})
        .await
        .unwrap();
    // A user of the application's database, looked up by the router on the config server
    // over its authenticated connection: it reads, and may not write.
    let reader = Client::with_uri_str(format!(
        "mongodb://reader:pw@127.0.0.1:{}/?authSource=app&serverSelectionTimeoutMS=5000",
        cluster.router_port
    ))
    .await
    .unwrap();
    let readable = reader.database("app").collection::<Document>("users");
    assert_eq!(readable.count_documents(doc! {}).await.unwrap(), 20);
    let err = readable.insert_one(doc! {"_id": 100}).await.unwrap_err();
    assert_eq!(crate::harness::error_code(&err), Some(13), "{err}");
    // The router signs its cluster time with a key it read from the config server's process.
    let pinged = reader
        .database("app")
        .run_command(doc! {"ping": 1})
        .await
        .unwrap();
    let signature = pinged
        .get_document("$clusterTime")
        .and_then(|t| t.get_document("signature"))
        .unwrap_or_else(|_| panic!("no signed $clusterTime in {pinged}"));
    assert_ne!(signature.get_i64("keyId").unwrap(), 0, "{pinged}");

    // The router needs authentication as mongos with --auth does.
    let anonymous = crate::harness::client_for(([127, 0, 0, 1], cluster.router_port).into()).await;
    let (code, _, message) = refused(&anonymous, "app", doc! {"find": "users"}).await;
    assert_eq!(
        (code, message.as_str()),
        (13, "command find requires authentication")
    );

    // A shard's port: no internal command, nor any data command, without the key.
    let shard = direct(cluster.shard_port(0), "").await;
    for (db, command) in [
        ("app", doc! {"_shardsvrDropDatabaseParticipant": 1}),
        (
            "admin",
            doc! {"_addShard": 1, "shardIdentity": {"shardName": "shard0"}},
        ),
        (
            "admin",
            doc! {"_shardsvrMovePrimary": "app", "to": "shard1"},
        ),
        ("admin", doc! {"prepareTransaction": 1}),
        (
            "admin",
            doc! {"coordinateCommitTransaction": 1, "participants": []},
        ),
        ("app", doc! {"find": "users"}),
    ] {
        let name = command.keys().next().unwrap().clone();
        let (code, code_name, message) = refused(&shard, db, command).await;
        assert_eq!(code, 13, "{name}: {message}");
        assert_eq!(code_name, "Unauthorized");
        assert_eq!(message, format!("command {name} requires authentication"));
    }
    // The cluster's users authenticate on a shard's port too: the shard reads them from the
    // config server as the router does. Data commands stay the routers' there (MongoDB 8.0
    // refuses direct shard operations too); root may run a shard's maintenance commands.
    let shard_reader = Client::with_uri_str(format!(
        "mongodb://reader:pw@127.0.0.1:{}/?directConnection=true&authSource=app&serverSelectionTimeoutMS=5000",
        cluster.shard_port(0)
    ))
    .await
    .unwrap();
    assert_eq!(
        crate::harness::authenticated_users(&shard_reader).await,
        vec![doc! {"user": "reader", "db": "app"}]
    );
    let (code, _, message) = refused(&shard_reader, "app", doc! {"find": "users"}).await;
    assert_eq!(code, 13, "{message}");
    let shard_root = direct(cluster.shard_port(0), "root:example@").await;
    shard_root
        .database("admin")
        .run_command(doc! {"cleanupOrphaned": "app.users"})
        .await
        .unwrap();
    // The config server's port, without credentials and as a user (even root) alike.
    let config = direct(cluster.config_port, "").await;
    let config_root = direct(cluster.config_port, "root:example@").await;
    for command in [
        doc! {"_configsvrCommitMovePrimary": "app", "to": "shard1"},
        doc! {"_configsvrAddShard": "127.0.0.1:1", "name": "shard0"},
    ] {
        let name = command.keys().next().unwrap().clone();
        let (code, _, message) = refused(&config, "admin", command.clone()).await;
        assert_eq!(
            (code, message),
            (13, format!("command {name} requires authentication"))
        );
        let (code, _, message) = refused(&config_root, "admin", command).await;
        assert_eq!(code, 13);
        assert!(
            message.starts_with(&format!(
                "not authorized on admin to execute command {{ {name}"
            )),
            "{message}"
        );
    }
    // Nothing was dropped behind the config server's back.
    assert_eq!(coll.count_documents(doc! {}).await.unwrap(), 20);

    // The key is `__system`'s password, with SCRAM-SHA-256 and SCRAM-SHA-1 as in MongoDB.
    for mechanism in ["SCRAM-SHA-256", "SCRAM-SHA-1"] {
        let member = Client::with_uri_str(format!(
            "mongodb://__system:{}@127.0.0.1:{}/?directConnection=true&authSource=local&authMechanism={mechanism}&serverSelectionTimeoutMS=5000",
            urlencoding(KEY),
            cluster.shard_port(0)
        ))
        .await
        .unwrap();
        crate::harness::assert_system_member(&member).await;
    }
    // A wrong key is a wrong password.
    let wrong = Client::with_uri_str(format!(
        "mongodb://__system:d3JvbmdrZXk=@127.0.0.1:{}/?directConnection=true&authSource=local&serverSelectionTimeoutMS=5000",
        cluster.shard_port(0)
    ))
    .await
    .unwrap();
    crate::harness::assert_authentication_fails(&wrong, "app", doc! {"find": "users"}).await;
}

/// A shard's profiler names the user the router runs a command for (MongoDB's impersonation
/// metadata, `$audit`): a client's own `$audit` does not pass the router, and a shard refuses
/// one from a user who is no cluster member.
#[tokio::test]
async fn keyfile_shards_profile_the_user_a_router_runs_for() {
    let cluster = secured(1).await;
    let client = cluster.client().await;
    let db = client.database("prof");
    db.collection::<Document>("c")
        .insert_one(doc! {"_id": 1})
        .await
        .unwrap();
    db.run_command(doc! {"createUser": "reader", "pwd": "pw", "roles": ["read"]})
        .await
        .unwrap();
    // Profiling a shard's database is a direct shard operation: a member's.
    let member = Client::with_uri_str(format!(
        "mongodb://__system:{}@127.0.0.1:{}/?directConnection=true&authSource=local&serverSelectionTimeoutMS=5000",
        urlencoding(KEY),
        cluster.shard_port(0)
    ))
    .await
    .unwrap();
    member
        .database("prof")
        .run_command(doc! {"profile": 2})
        .await
        .unwrap();
    let reader = Client::with_uri_str(format!(
        "mongodb://reader:pw@127.0.0.1:{}/?authSource=prof&serverSelectionTimeoutMS=5000",
        cluster.router_port
    ))
    .await
    .unwrap();
    let forged = doc! {
        "$impersonatedUser": {"user": "root", "db": "admin"},
        "$impersonatedRoles": [{"role": "root", "db": "admin"}],
    };
    reader
        .database("prof")
        .run_command(doc! {"find": "c", "filter": {"_id": 1}, "$audit": forged.clone()})
        .await
        .unwrap();
    db.run_command(doc! {"find": "c", "filter": {"_id": 2}})
        .await
        .unwrap();
    let profile = db.collection::<Document>("system.profile");
    let users = |id: i32| {
        let profile = profile.clone();
        async move {
            let entries = crate::harness::find_all(&profile, doc! {"command.filter._id": id}).await;
            let entry = entries.first().cloned().expect("a profile entry");
            (
                entry.get_str("user").unwrap().to_string(),
                entry.get_array("allUsers").unwrap().clone(),
            )
        }
    };
    assert_eq!(
        users(1).await,
        (
            "reader@prof".to_string(),
            vec![doc! {"user": "reader", "db": "prof"}.into()]
        )
    );
    assert_eq!(
        users(2).await,
        (
            "root@admin".to_string(),
            vec![doc! {"user": "root", "db": "admin"}.into()]
        )
    );
    // `$currentOp` through the router: the shard runs its part for root, named by the router
    // (a member, `__system`).
    let mut ops = client
        .database("admin")
        .aggregate([doc! {"$currentOp": {}}])
        .await
        .unwrap();
    let mut runs_for_root = false;
    while ops.advance().await.unwrap() {
        let op = ops.deserialize_current().unwrap();
        if op.get_array("runBy").ok()
            == Some(&vec![doc! {"user": "__system", "db": "local"}.into()])
        {
            assert_eq!(
                op.get_array("effectiveUsers").unwrap(),
                &vec![doc! {"user": "root", "db": "admin"}.into()],
                "{op}"
            );
            runs_for_root = true;
        }
    }
    assert!(runs_for_root, "no shard operation run for root");
    // Straight to the shard, a user may not name another.
    let shard_reader = Client::with_uri_str(format!(
        "mongodb://reader:pw@127.0.0.1:{}/?directConnection=true&authSource=prof&serverSelectionTimeoutMS=5000",
        cluster.shard_port(0)
    ))
    .await
    .unwrap();
    let (code, _, message) =
        refused(&shard_reader, "prof", doc! {"ping": 1, "$audit": forged}).await;
    assert_eq!(
        (code, message.as_str()),
        (13, "Unauthorized use of impersonation metadata.")
    );
    // A malformed one is refused by the router as by mongos.
    let (code, ..) = refused(
        &reader,
        "prof",
        doc! {"ping": 1, "$audit": {"$impersonatedUser": "reader"}},
    )
    .await;
    assert_eq!(code, 14);
    member
        .database("prof")
        .run_command(doc! {"profile": 0})
        .await
        .unwrap();
}

/// `%`-escapes what a URI's password may not hold as it is.
fn urlencoding(text: &str) -> String {
    text.replace('/', "%2F")
        .replace('+', "%2B")
        .replace('=', "%3D")
}

#[tokio::test]
async fn keyfile_a_shard_without_the_key_cannot_join_or_take_a_name() {
    let cluster = secured(1).await;
    let client = cluster.client().await;
    let dir = cluster.dir().to_path_buf();
    let wrong_key = key_file(&dir, "wrong-key", "YW5vdGhlciBrZXk=")
        .display()
        .to_string();
    let right_key = dir.join("key").display().to_string();

    // A shard with another key, one with none, and one with the key that knows no config
    // server (so it does not register itself).
    let spawn = |name: &str, key: Option<&str>, configdb: &str| {
        let port = free_port();
        let mut args: Vec<String> = [
            "shard",
            "--port",
            &port.to_string(),
            "--data-dir",
            &dir.join(name).display().to_string(),
            "--configdb",
            configdb,
        ]
        .iter()
        .map(|s| s.to_string())
        .collect();
        if let Some(key) = key {
            args.extend(["--keyFile".to_string(), key.to_string()]);
        }
        (
            Process::spawn_owned(&args, port),
            format!("127.0.0.1:{port}"),
        )
    };
    let configdb = cluster.configdb().to_string();
    let (_wrong, wrong_host) = spawn("wrong", Some(&wrong_key), &configdb);
    let (_keyless, keyless_host) = spawn("keyless", None, &configdb);
    let nowhere = format!("127.0.0.1:{}", free_port());
    let (_member, member_host) = spawn("member", Some(&right_key), &nowhere);

    // They try to register themselves every second; none gets in.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(shard_names(&client).await, vec!["shard0".to_string()]);

    // Added by an administrator, they fail to authenticate to the config server's dial.
    for host in [&wrong_host, &keyless_host] {
        let (code, code_name, message) = refused(&client, "admin", doc! {"addShard": host}).await;
        assert_eq!(
            (code, code_name.as_str()),
            (96, "OperationFailed"),
            "{message}"
        );
        assert!(
            message.starts_with(&format!(
                "failed to run command hello when attempting to add shard {host}"
            )) && message.contains("Authentication failed."),
            "{message}"
        );
    }
    // A member with the key cannot take an existing shard's name: it is not that shard.
    let (code, _, message) = refused(
        &client,
        "admin",
        doc! {"addShard": &member_host, "name": "shard0"},
    )
    .await;
    assert_eq!(code, 20, "{message}");
    assert_eq!(message, "A shard named 'shard0' already exists");
    assert_eq!(shard_names(&client).await, vec!["shard0".to_string()]);
    // Under a name of its own it joins.
    client
        .database("admin")
        .run_command(doc! {"addShard": &member_host, "name": "extra"})
        .await
        .unwrap();
    assert_eq!(shard_names(&client).await.len(), 2);
}

#[test]
fn keyfile_an_unusable_key_file_stops_the_process() {
    use std::os::unix::fs::PermissionsExt;
    let dir = tempfile::tempdir().unwrap();
    let run = |contents: &str, mode: u32| {
        let path = dir.path().join("key");
        std::fs::write(&path, contents).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_docgrid"))
            .args(["configsvr", "--port", &free_port().to_string()])
            .arg("--data-dir")
            .arg(dir.path().join("data"))
            .arg("--keyFile")
            .arg(&path)
            .output()
            .unwrap();
        assert!(!out.status.success());
        String::from_utf8_lossy(&out.stderr).to_string()
    };
    let path = dir.path().join("key").display().to_string();
    assert!(
        run(KEY, 0o644).contains(&format!("permissions on {path} are too open")),
        "group- or world-readable"
    );
    assert!(run("abc", 0o600).contains(&format!(
        "security key in {path} has length 3, must be between 6 and 1024 chars"
    )));
    assert!(run("abc-def-ghi", 0o400).contains(&format!("invalid char in key file {path}")));
    // The TOML file's `security.keyFile` is read with the same rules.
    let toml = dir.path().join("docgrid.toml");
    std::fs::write(&toml, format!("[security]\nkeyFile = {path:?}\n")).unwrap();
    std::fs::set_permissions(
        dir.path().join("key"),
        std::fs::Permissions::from_mode(0o604),
    )
    .unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_docgrid"))
        .args(["configsvr", "--port", &free_port().to_string(), "--config"])
        .arg(&toml)
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .output()
        .unwrap();
    assert!(!out.status.success());
    assert!(String::from_utf8_lossy(&out.stderr).contains("are too open"));
}
