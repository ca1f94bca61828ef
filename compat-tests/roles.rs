//! User-defined roles through the official driver: a role granting `find` on one collection
//! lets its user read that collection and nothing else (Unauthorized 13), changes to the role
//! reach open connections, inheritance through built-in and user-defined roles, `rolesInfo` and
//! `usersInfo` showing them, MongoDB's errors, and dropping a role out of users and roles.

use crate::auth::{client, run, with_root};
use crate::harness::{error_code, failure};
use bson::{Bson, Document, doc};
use mongodb::Client;

async fn ok(client: &Client, db: &str, command: Document) -> Document {
    run(client, db, command).await.unwrap()
}

async fn code_of(client: &Client, db: &str, command: Document) -> Option<i32> {
    error_code(&run(client, db, command).await.unwrap_err())
}

fn find_on(coll: &str) -> Document {
    doc! {"resource": {"db": "app", "collection": coll}, "actions": ["find"]}
}

fn names(list: &[Bson]) -> Vec<String> {
    list.iter()
        .filter_map(|r| r.as_document())
        .map(|r| {
            format!(
                "{}@{}",
                r.get_str("role").unwrap_or_default(),
                r.get_str("db").unwrap_or_default()
            )
        })
        .collect()
}

#[tokio::test]
async fn roles_a_custom_role_grants_exactly_its_privileges() {
    let cluster = with_root().await;
    let addr = cluster.addr;
    let root = client(addr, "root:example", "&authSource=admin").await;
    for coll in ["c", "d"] {
        ok(
            &root,
            "app",
            doc! {"insert": coll, "documents": [{"_id": 1}]},
        )
        .await;
    }
    ok(
        &root,
        "app",
        doc! {"createRole": "cReader", "privileges": [find_on("c")], "roles": []},
    )
    .await;
    ok(
        &root,
        "app",
        doc! {"createUser": "u", "pwd": "p", "roles": ["cReader"]},
    )
    .await;
    let user = client(addr, "u:p", "&authSource=app").await;
    ok(&user, "app", doc! {"find": "c"}).await;
    for refused in [
        doc! {"find": "d"},
        doc! {"insert": "c", "documents": [{"_id": 2}]},
    ] {
        let e = run(&user, "app", refused.clone()).await.unwrap_err();
        assert_eq!(error_code(&e), Some(13), "{refused}");
    }
    // Changes to the role reach the open connection.
    let insert_on_c = doc! {"resource": {"db": "app", "collection": "c"}, "actions": ["insert"]};
    ok(
        &root,
        "app",
        doc! {"grantPrivilegesToRole": "cReader", "privileges": [insert_on_c.clone()]},
    )
    .await;
    ok(
        &user,
        "app",
        doc! {"insert": "c", "documents": [{"_id": 2}]},
    )
    .await;
    ok(
        &root,
        "app",
        doc! {"revokePrivilegesFromRole": "cReader", "privileges": [insert_on_c]},
    )
    .await;
    assert_eq!(
        code_of(
            &user,
            "app",
            doc! {"insert": "c", "documents": [{"_id": 3}]}
        )
        .await,
        Some(13)
    );
    // Inheriting a built-in role through the custom one.
    ok(
        &root,
        "app",
        doc! {"grantRolesToRole": "cReader", "roles": ["read"]},
    )
    .await;
    ok(&user, "app", doc! {"find": "d"}).await;
    let info = ok(
        &root,
        "app",
        doc! {"usersInfo": "u", "showPrivileges": true},
    )
    .await;
    let u = info.get_array("users").unwrap()[0].as_document().unwrap();
    assert_eq!(names(u.get_array("roles").unwrap()), vec!["cReader@app"]);
    let e = run(&root, "app", doc! {"usersInfo": 1, "showPrivileges": true})
        .await
        .unwrap_err();
    assert_eq!(
        failure(&e),
        (
            20,
            "IllegalOperation".into(),
            "Privilege or restriction details require exact-match usersInfo queries".into()
        )
    );
    let inherited = names(u.get_array("inheritedRoles").unwrap());
    assert!(
        inherited.contains(&"cReader@app".to_string()),
        "{inherited:?}"
    );
    assert!(inherited.contains(&"read@app".to_string()), "{inherited:?}");
    let privileges = u.get_array("inheritedPrivileges").unwrap();
    assert!(
        privileges.iter().any(
            |p| p.as_document().unwrap().get_document("resource").unwrap()
                == &doc! {"db": "app", "collection": "c"}
        ),
        "{privileges:?}"
    );
    // rolesInfo: the role as stored, with and without privileges, and among the database's.
    let shown = ok(
        &root,
        "app",
        doc! {"rolesInfo": "cReader", "showPrivileges": true},
    )
    .await;
    let role = shown.get_array("roles").unwrap()[0].as_document().unwrap();
    assert_eq!(role.get_str("_id").unwrap(), "app.cReader");
    assert!(!role.get_bool("isBuiltin").unwrap());
    assert_eq!(
        role.get_array("privileges").unwrap()[0]
            .as_document()
            .unwrap(),
        &doc! {"resource": {"db": "app", "collection": "c"}, "actions": ["find"]}
    );
    assert_eq!(names(role.get_array("roles").unwrap()), vec!["read@app"]);
    assert!(!role.get_array("inheritedPrivileges").unwrap().is_empty());
    let all = ok(&root, "app", doc! {"rolesInfo": 1}).await;
    let all = all.get_array("roles").unwrap();
    assert_eq!(all.len(), 1);
    assert!(!all[0].as_document().unwrap().contains_key("privileges"));
    let with_builtin = ok(
        &root,
        "app",
        doc! {"rolesInfo": 1, "showBuiltinRoles": true},
    )
    .await;
    assert_eq!(with_builtin.get_array("roles").unwrap().len(), 6);
    // Dropping the role takes it out of its user: nothing is left to read with.
    ok(&root, "app", doc! {"dropRole": "cReader"}).await;
    assert_eq!(code_of(&user, "app", doc! {"find": "c"}).await, Some(13));
    let info = ok(&root, "app", doc! {"usersInfo": "u"}).await;
    let u = info.get_array("users").unwrap()[0].as_document().unwrap();
    assert!(u.get_array("roles").unwrap().is_empty());
    cluster.shutdown().await;
}

#[tokio::test]
async fn roles_mongodb_errors_and_privileges_of_the_role_commands() {
    let cluster = with_root().await;
    let addr = cluster.addr;
    let root = client(addr, "root:example", "&authSource=admin").await;
    let create = |role: &str, privileges: Vec<Document>, roles: Vec<Bson>| {
        doc! {"createRole": role, "privileges": privileges, "roles": roles}
    };
    ok(&root, "app", create("a", vec![find_on("c")], vec![])).await;
    ok(&root, "app", create("b", vec![], vec!["a".into()])).await;
    let fails = |e: mongodb::error::Error| failure(&e);
    let e = run(&root, "app", create("a", vec![], vec![]))
        .await
        .unwrap_err();
    assert_eq!(
        fails(e),
        (
            51002,
            "Location51002".into(),
            "Role \"a@app\" already exists".into()
        )
    );
    let e = run(&root, "app", create("read", vec![], vec![]))
        .await
        .unwrap_err();
    assert_eq!(
        fails(e),
        (
            2,
            "BadValue".into(),
            "Cannot create roles with the same name as a built-in role".into()
        )
    );
    // Authentication restrictions would have to be enforced at login: refused, never ignored.
    let restricted = vec![doc! {"clientSource": ["10.0.0.0/8"]}];
    for command in [
        doc! {"createRole": "r", "privileges": [], "roles": [], "authenticationRestrictions": restricted.clone()},
        doc! {"createUser": "u", "pwd": "p", "roles": [], "authenticationRestrictions": restricted.clone()},
        doc! {"updateUser": "u", "authenticationRestrictions": restricted},
    ] {
        assert_eq!(
            code_of(&root, "app", command.clone()).await,
            Some(238),
            "{command}"
        );
    }
    let flying = doc! {"resource": {"db": "app", "collection": ""}, "actions": ["fly"]};
    let e = run(&root, "app", create("x", vec![flying], vec![]))
        .await
        .unwrap_err();
    assert_eq!(
        fails(e),
        (
            2,
            "BadValue".into(),
            "Unknown action type in privilege set: 'fly'".into()
        )
    );
    let cluster_wide = doc! {"resource": {"cluster": true}, "actions": ["serverStatus"]};
    assert_eq!(
        code_of(
            &root,
            "app",
            create("x", vec![cluster_wide.clone()], vec![])
        )
        .await,
        Some(49)
    );
    // An admin role may grant cluster privileges.
    ok(
        &root,
        "admin",
        create("monitor", vec![cluster_wide], vec![]),
    )
    .await;
    let e = run(&root, "app", doc! {"grantRolesToRole": "a", "roles": ["b"]})
        .await
        .unwrap_err();
    assert_eq!(
        fails(e),
        (
            49,
            "InvalidRoleModification".into(),
            "Granting roles to a@app would introduce a cycle in the role graph".into()
        )
    );
    let e = run(&root, "app", doc! {"dropRole": "ghost"})
        .await
        .unwrap_err();
    assert_eq!(
        fails(e),
        (
            31,
            "RoleNotFound".into(),
            "Could not find role: ghost@app".into()
        )
    );
    assert_eq!(
        code_of(&root, "app", doc! {"createRole": "x", "roles": []}).await,
        Some(40414)
    );
    // Without userAdmin, the role commands are refused; with it, they run.
    ok(
        &root,
        "app",
        doc! {"createUser": "reader", "pwd": "r", "roles": ["read"]},
    )
    .await;
    ok(
        &root,
        "app",
        doc! {"createUser": "admin", "pwd": "a", "roles": ["userAdmin"]},
    )
    .await;
    let reader = client(addr, "reader:r", "&authSource=app").await;
    assert_eq!(
        code_of(&reader, "app", create("y", vec![], vec![])).await,
        Some(13)
    );
    let admin = client(addr, "admin:a", "&authSource=app").await;
    ok(&admin, "app", create("y", vec![find_on("c")], vec![])).await;
    assert_eq!(
        code_of(&reader, "app", doc! {"rolesInfo": 1}).await,
        Some(13)
    );
    // Granting a role of another database needs grantRole there.
    assert_eq!(
        code_of(
            &admin,
            "app",
            doc! {"grantRolesToUser": "reader", "roles": [{"role": "monitor", "db": "admin"}]}
        )
        .await,
        Some(13)
    );
    // Dropping every role of the database takes them out of other roles too.
    let dropped = ok(&root, "app", doc! {"dropAllRolesFromDatabase": 1}).await;
    assert_eq!(dropped.get_i32("n").unwrap(), 3);
    let left = ok(&root, "admin", doc! {"rolesInfo": 1}).await;
    assert_eq!(left.get_array("roles").unwrap().len(), 1);
    cluster.shutdown().await;
}
