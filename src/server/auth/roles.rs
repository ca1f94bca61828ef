//! MongoDB's built-in roles and the privileges each grants (`role_graph_builtin_roles`): the
//! database roles exist in every database, the others only in `admin`.

use super::privileges::{Privilege, Resource};

const READ: &[&str] = &[
    "changeStream",
    "collStats",
    "dbHash",
    "dbStats",
    "find",
    "killCursors",
    "listCollections",
    "listIndexes",
    "listSearchIndexes",
    "planCacheRead",
];

const WRITE: &[&str] = &[
    "convertToCapped",
    "createCollection",
    "createIndex",
    "createSearchIndexes",
    "dropCollection",
    "dropIndex",
    "dropSearchIndex",
    "insert",
    "remove",
    "renameCollectionSameDB",
    "update",
    "updateSearchIndex",
];

const DB_ADMIN: &[&str] = &[
    "analyze",
    "bypassDocumentValidation",
    "collMod",
    "collStats",
    "compact",
    "convertToCapped",
    "createCollection",
    "createIndex",
    "dbStats",
    "dropCollection",
    "dropDatabase",
    "dropIndex",
    "enableProfiler",
    "listCollections",
    "listIndexes",
    "listSearchIndexes",
    "planCacheIndexFilter",
    "planCacheRead",
    "planCacheWrite",
    "reIndex",
    "renameCollectionSameDB",
    "storageDetails",
    "validate",
];

const USER_ADMIN: &[&str] = &[
    "changeCustomData",
    "changePassword",
    "createRole",
    "createUser",
    "dropRole",
    "dropUser",
    "grantRole",
    "revokeRole",
    "setAuthenticationRestriction",
    "viewRole",
    "viewUser",
];

const CLUSTER_MONITOR: &[&str] = &[
    "checkMetadataConsistency",
    "connPoolStats",
    "getCmdLineOpts",
    "getDefaultRWConcern",
    "getLog",
    "getParameter",
    "getShardMap",
    "hostInfo",
    "inprog",
    "listDatabases",
    "listSessions",
    "listShards",
    "netstat",
    "replSetGetConfig",
    "replSetGetStatus",
    "serverStatus",
    "top",
    "useUUID",
];

const CLUSTER_MONITOR_ANY_NORMAL: &[&str] = &[
    "collStats",
    "dbHash",
    "dbStats",
    "getShardVersion",
    "indexStats",
];

const HOST_MANAGER: &[&str] = &[
    "applicationMessage",
    "connPoolSync",
    "dropConnections",
    "flushRouterConfig",
    "fsync",
    "invalidateUserCache",
    "killAnyCursor",
    "killAnySession",
    "killop",
    "logRotate",
    "setParameter",
    "shutdown",
    "unlock",
];

const CLUSTER_MANAGER: &[&str] = &[
    "addShard",
    "appendOplogNote",
    "applicationMessage",
    "checkMetadataConsistency",
    "cleanupOrphaned",
    "flushRouterConfig",
    "getDefaultRWConcern",
    "listSessions",
    "listShards",
    "removeShard",
    "replSetConfigure",
    "replSetGetConfig",
    "replSetGetStatus",
    "replSetStateChange",
    "setDefaultRWConcern",
    "setFeatureCompatibilityVersion",
];

const CLUSTER_MANAGER_ANY_NORMAL: &[&str] = &[
    "analyzeShardKey",
    "clearJumboFlag",
    "enableSharding",
    "getShardVersion",
    "moveChunk",
    "refineCollectionShardKey",
    "reshardCollection",
    "splitChunk",
    "splitVector",
];

const CONFIG_WRITE: &[&str] = &[
    "collStats",
    "dbHash",
    "dbStats",
    "find",
    "insert",
    "killCursors",
    "listCollections",
    "listIndexes",
    "remove",
    "update",
];

const BACKUP_CLUSTER: &[&str] = &[
    "appendOplogNote",
    "getParameter",
    "listDatabases",
    "serverStatus",
];

const RESTORE: &[&str] = &[
    "bypassDocumentValidation",
    "changeCustomData",
    "changePassword",
    "collMod",
    "convertToCapped",
    "createCollection",
    "createIndex",
    "createRole",
    "createUser",
    "dropCollection",
    "dropRole",
    "dropUser",
    "grantRole",
    "insert",
    "revokeRole",
    "update",
    "viewRole",
    "viewUser",
];

/// The roles that exist in every database.
const DATABASE_ROLES: [&str; 5] = ["read", "readWrite", "dbAdmin", "dbOwner", "userAdmin"];

/// The roles that exist only in `admin`.
const ADMIN_ROLES: [&str; 13] = [
    "readAnyDatabase",
    "readWriteAnyDatabase",
    "userAdminAnyDatabase",
    "dbAdminAnyDatabase",
    "clusterAdmin",
    "clusterManager",
    "clusterMonitor",
    "hostManager",
    "backup",
    "restore",
    "root",
    "enableSharding",
    "__system",
];

/// Whether `role@db` is a built-in role.
pub fn is_builtin(role: &str, db: &str) -> bool {
    DATABASE_ROLES.contains(&role) || (db == "admin" && ADMIN_ROLES.contains(&role))
}

/// The built-in roles of `db`, in name order (`rolesInfo` with `showBuiltinRoles`).
pub fn builtin_roles(db: &str) -> Vec<&'static str> {
    let mut roles: Vec<&'static str> = DATABASE_ROLES.to_vec();
    if db == "admin" {
        roles.extend(ADMIN_ROLES.iter().filter(|r| **r != "__system"));
    }
    roles.sort_unstable();
    roles
}

/// The privileges of built-in role `role@db`; `None` if there is no such built-in role.
pub fn privileges(role: &str, db: &str) -> Option<Vec<Privilege>> {
    if !is_builtin(role, db) {
        return None;
    }
    let on_db = || Resource::Database(db.to_string());
    let ns = |coll: &str| Resource::collection(db, coll);
    let any_db = |actions| Privilege::new(Resource::AnyNormal, actions);
    let cluster = |actions| Privilege::new(Resource::Cluster, actions);
    let list_databases = || cluster(&["listDatabases"]);
    let readable_system = |db: &str| {
        ["system.js", "system.views"]
            .into_iter()
            .map(|c| Privilege::new(Resource::collection(db, c), READ))
            .collect::<Vec<_>>()
    };
    let privileges = match role {
        "read" => {
            let mut p = vec![Privilege::new(on_db(), READ)];
            p.extend(readable_system(db));
            p
        }
        "readWrite" => {
            let mut p = privileges("read", db)?;
            p.push(Privilege::new(on_db(), WRITE));
            p.push(Privilege::new(ns("system.js"), WRITE));
            p
        }
        "dbAdmin" => vec![
            Privilege::new(on_db(), DB_ADMIN),
            Privilege::new(ns("system.profile"), READ),
            Privilege::new(
                ns("system.profile"),
                &["dropCollection", "createCollection", "convertToCapped"],
            ),
        ],
        "userAdmin" => vec![Privilege::new(on_db(), USER_ADMIN)],
        "dbOwner" => {
            let mut p = privileges("readWrite", db)?;
            p.extend(privileges("dbAdmin", db)?);
            p.extend(privileges("userAdmin", db)?);
            p
        }
        "readAnyDatabase" => vec![
            any_db(READ),
            list_databases(),
            Privilege::new(Resource::CollectionInAnyDatabase("system.js".into()), READ),
        ],
        "readWriteAnyDatabase" => vec![
            any_db(READ),
            any_db(WRITE),
            list_databases(),
            Privilege::new(Resource::CollectionInAnyDatabase("system.js".into()), READ),
            Privilege::new(Resource::CollectionInAnyDatabase("system.js".into()), WRITE),
        ],
        "userAdminAnyDatabase" => vec![
            any_db(USER_ADMIN),
            cluster(&[
                "authSchemaUpgrade",
                "invalidateUserCache",
                "listDatabases",
                "viewUser",
            ]),
            Privilege::new(Resource::collection("admin", "system.users"), READ),
            Privilege::new(Resource::collection("admin", "system.roles"), READ),
        ],
        "dbAdminAnyDatabase" => vec![
            any_db(DB_ADMIN),
            list_databases(),
            Privilege::new(
                Resource::CollectionInAnyDatabase("system.profile".into()),
                READ,
            ),
        ],
        "clusterMonitor" => vec![
            cluster(CLUSTER_MONITOR),
            any_db(CLUSTER_MONITOR_ANY_NORMAL),
            Privilege::new(Resource::Database("config".into()), READ),
            Privilege::new(Resource::Database("local".into()), READ),
        ],
        "hostManager" => vec![cluster(HOST_MANAGER), any_db(&["killCursors"])],
        "clusterManager" => vec![
            cluster(CLUSTER_MANAGER),
            any_db(CLUSTER_MANAGER_ANY_NORMAL),
            Privilege::new(Resource::Database("config".into()), CONFIG_WRITE),
            Privilege::new(Resource::Database("local".into()), READ),
        ],
        "clusterAdmin" => {
            let mut p = privileges("clusterManager", db)?;
            p.extend(privileges("clusterMonitor", db)?);
            p.extend(privileges("hostManager", db)?);
            p.push(any_db(&["dropDatabase"]));
            p
        }
        "enableSharding" => vec![any_db(&[
            "enableSharding",
            "refineCollectionShardKey",
            "reshardCollection",
        ])],
        "backup" => vec![
            cluster(BACKUP_CLUSTER),
            any_db(&[
                "collStats",
                "dbStats",
                "find",
                "listCollections",
                "listIndexes",
            ]),
            Privilege::new(Resource::Database("config".into()), READ),
            Privilege::new(Resource::Database("local".into()), READ),
            Privilege::new(Resource::collection("admin", "system.users"), READ),
            Privilege::new(Resource::collection("admin", "system.roles"), READ),
            Privilege::new(Resource::collection("admin", "system.version"), READ),
        ],
        "restore" => vec![
            any_db(RESTORE),
            cluster(&["getParameter"]),
            Privilege::new(Resource::Database("config".into()), RESTORE),
            Privilege::new(Resource::collection("admin", "system.users"), RESTORE),
            Privilege::new(Resource::collection("admin", "system.roles"), RESTORE),
        ],
        "root" => {
            let mut p = Vec::new();
            for inner in [
                "readWriteAnyDatabase",
                "dbAdminAnyDatabase",
                "userAdminAnyDatabase",
                "clusterAdmin",
                "restore",
                "backup",
            ] {
                p.extend(privileges(inner, "admin")?);
            }
            p.push(Privilege::new(
                Resource::CollectionInAnyDatabase("system.buckets".into()),
                &["validate"],
            ));
            p
        }
        "__system" => vec![Privilege::new(Resource::Any, &["anyAction"])],
        _ => return None,
    };
    Some(privileges)
}

/// The built-in roles `role@db` includes, itself excluded (`rolesInfo`'s `inheritedRoles`
/// lists them beside their own).
pub fn subroles(role: &str) -> &'static [&'static str] {
    match role {
        "readWrite" => &["read"],
        "dbOwner" => &["readWrite", "dbAdmin", "userAdmin"],
        "clusterAdmin" => &["clusterManager", "clusterMonitor", "hostManager"],
        "root" => &[
            "readWriteAnyDatabase",
            "dbAdminAnyDatabase",
            "userAdminAnyDatabase",
            "clusterAdmin",
            "restore",
            "backup",
        ],
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::server::auth::privileges::allows;

    fn can(role: &str, db: &str, resource: Resource, actions: &[&'static str]) -> bool {
        allows(
            &privileges(role, db).unwrap(),
            &[Privilege::new(resource, actions)],
        )
    }

    #[test]
    fn database_roles() {
        let ns = Resource::collection("app", "c");
        assert!(can("read", "app", ns.clone(), &["find", "listIndexes"]));
        assert!(!can("read", "app", ns.clone(), &["insert"]));
        assert!(!can("read", "other", ns.clone(), &["find"]));
        assert!(can(
            "readWrite",
            "app",
            ns.clone(),
            &["find", "insert", "update", "remove"]
        ));
        assert!(!can(
            "readWrite",
            "app",
            Resource::Database("app".into()),
            &["dropDatabase"]
        ));
        assert!(can(
            "dbAdmin",
            "app",
            Resource::Database("app".into()),
            &["dropDatabase"]
        ));
        assert!(!can("dbAdmin", "app", ns.clone(), &["find"]));
        assert!(can(
            "dbOwner",
            "app",
            ns.clone(),
            &["find", "createUser", "collMod"]
        ));
        assert!(can(
            "userAdmin",
            "app",
            Resource::Database("app".into()),
            &["createUser", "grantRole"]
        ));
        assert!(!can("read", "app", Resource::Cluster, &["listDatabases"]));
    }

    #[test]
    fn admin_roles() {
        let ns = Resource::collection("app", "c");
        assert!(can("readAnyDatabase", "admin", ns.clone(), &["find"]));
        assert!(can(
            "readAnyDatabase",
            "admin",
            Resource::Cluster,
            &["listDatabases"]
        ));
        assert!(!can("readAnyDatabase", "admin", ns.clone(), &["insert"]));
        assert!(can(
            "readWriteAnyDatabase",
            "admin",
            ns.clone(),
            &["insert"]
        ));
        assert!(can(
            "clusterMonitor",
            "admin",
            Resource::Cluster,
            &["serverStatus"]
        ));
        assert!(!can(
            "clusterMonitor",
            "admin",
            Resource::Cluster,
            &["shutdown"]
        ));
        assert!(can(
            "clusterAdmin",
            "admin",
            Resource::Cluster,
            &["addShard", "serverStatus", "killop"]
        ));
        assert!(can(
            "root",
            "admin",
            ns.clone(),
            &["find", "insert", "createUser", "dropDatabase"]
        ));
        assert!(can(
            "root",
            "admin",
            Resource::Cluster,
            &["listDatabases", "addShard", "setParameter"]
        ));
        assert!(can(
            "root",
            "admin",
            Resource::collection("config", "chunks"),
            &["find"]
        ));
        assert!(can("__system", "admin", Resource::Cluster, &["internal"]));
        assert!(!can("root", "admin", Resource::Cluster, &["internal"]));
        // Admin-only roles exist only in admin.
        assert!(privileges("root", "app").is_none());
        assert!(privileges("nope", "admin").is_none());
        assert!(is_builtin("read", "app") && !is_builtin("clusterAdmin", "app"));
    }
}
