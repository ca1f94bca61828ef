//! Privileges as MongoDB models them: actions on resources (the cluster, a database, a
//! collection, every normal namespace, anything), the patterns a role grants and the test
//! "does this set of privileges allow that action on this resource".

use bson::{Bson, Document, doc};

/// What a privilege applies to: a role's pattern, or a command's concrete resource
/// (`Cluster`, `Database`, `Collection`).
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Resource {
    /// `{cluster: true}`.
    Cluster,
    /// `{anyResource: true}`.
    Any,
    /// `{db: "", collection: ""}`: every database and its non-system collections, except
    /// `local` and `config`.
    AnyNormal,
    /// `{db: "<db>", collection: ""}`: the database and its non-system collections.
    Database(String),
    /// `{db: "<db>", collection: "<coll>"}`.
    Collection(String, String),
    /// `{db: "", collection: "<coll>"}`: the collection in every database.
    CollectionInAnyDatabase(String),
}

impl Resource {
    pub fn collection(db: &str, coll: &str) -> Resource {
        Resource::Collection(db.into(), coll.into())
    }

    /// Whether this pattern covers `required` (a concrete `Cluster`, `Database` or
    /// `Collection`, or `AnyNormal` for what must hold on every database: `updateRole`'s
    /// revokeRole).
    pub fn covers(&self, required: &Resource) -> bool {
        let normal = |db: &str, coll: Option<&str>| {
            !matches!(db, "local" | "config") && !coll.is_some_and(|c| c.starts_with("system."))
        };
        match (self, required) {
            (Resource::Any, _) => true,
            (Resource::Cluster, Resource::Cluster) => true,
            (Resource::AnyNormal, Resource::AnyNormal) => true,
            (Resource::AnyNormal, Resource::Database(db)) => normal(db, None),
            (Resource::AnyNormal, Resource::Collection(db, coll)) => normal(db, Some(coll)),
            (Resource::Database(mine), Resource::Database(db)) => mine == db,
            (Resource::Database(mine), Resource::Collection(db, coll)) => {
                mine == db && !coll.starts_with("system.")
            }
            (Resource::Collection(d, c), Resource::Collection(db, coll)) => d == db && c == coll,
            (Resource::CollectionInAnyDatabase(c), Resource::Collection(_, coll)) => c == coll,
            _ => false,
        }
    }

    /// The resource document `connectionStatus` and `rolesInfo` show.
    pub fn to_document(&self) -> Document {
        match self {
            Resource::Cluster => doc! {"cluster": true},
            Resource::Any => doc! {"anyResource": true},
            Resource::AnyNormal => doc! {"db": "", "collection": ""},
            Resource::Database(db) => doc! {"db": db, "collection": ""},
            Resource::Collection(db, c) => doc! {"db": db, "collection": c},
            Resource::CollectionInAnyDatabase(c) => doc! {"db": "", "collection": c},
        }
    }
}

/// Actions allowed on a resource.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Privilege {
    pub resource: Resource,
    pub actions: Vec<&'static str>,
}

impl Privilege {
    pub fn new(resource: Resource, actions: &[&'static str]) -> Privilege {
        Privilege {
            resource,
            actions: actions.to_vec(),
        }
    }

    pub fn to_document(&self) -> Document {
        let mut actions: Vec<&str> = self.actions.clone();
        actions.sort_unstable();
        actions.dedup();
        doc! {
            "resource": self.resource.to_document(),
            "actions": actions.into_iter().map(Bson::from).collect::<Vec<_>>(),
        }
    }
}

/// Whether `granted` allows every action of every `required` privilege.
pub fn allows(granted: &[Privilege], required: &[Privilege]) -> bool {
    required.iter().all(|need| {
        need.actions.iter().all(|action| {
            granted.iter().any(|have| {
                have.resource.covers(&need.resource)
                    && have
                        .actions
                        .iter()
                        .any(|a| a == action || *a == "anyAction")
            })
        })
    })
}

/// Merges privileges on the same resource into one (for display), in resource order.
pub fn merged(privileges: &[Privilege]) -> Vec<Privilege> {
    let mut by_resource: std::collections::BTreeMap<Resource, Vec<&'static str>> =
        Default::default();
    for p in privileges {
        by_resource
            .entry(p.resource.clone())
            .or_default()
            .extend(p.actions.iter().copied());
    }
    by_resource
        .into_iter()
        .map(|(resource, mut actions)| {
            actions.sort_unstable();
            actions.dedup();
            Privilege { resource, actions }
        })
        .collect()
}

/// Whether `granted` holds any privilege at all on database `db` (MongoDB's
/// `authorizedDatabases` and `authorizedCollections` test).
pub fn any_on_database(granted: &[Privilege], db: &str) -> bool {
    granted.iter().any(|p| match &p.resource {
        Resource::Any => true,
        Resource::AnyNormal => !matches!(db, "local" | "config"),
        Resource::Database(d) | Resource::Collection(d, _) => d == db,
        Resource::Cluster | Resource::CollectionInAnyDatabase(_) => false,
    })
}

/// The collections of `db` that `granted` holds any privilege on, as a `listCollections`
/// filter on `name` (what MongoDB's `authorizedCollections` lists to a user without
/// `listCollections`); `None` when that is every collection.
pub fn authorized_collections(granted: &[Privilege], db: &str) -> Option<bson::Document> {
    let mut names = Vec::new();
    let mut normal = false;
    for privilege in granted {
        match &privilege.resource {
            Resource::Any => return None,
            Resource::AnyNormal => normal |= !matches!(db, "local" | "config"),
            Resource::Database(d) => normal |= d == db,
            Resource::Collection(d, c) if d == db => names.push(bson::Bson::from(c.as_str())),
            Resource::CollectionInAnyDatabase(c) => names.push(bson::Bson::from(c.as_str())),
            Resource::Collection(..) | Resource::Cluster => {}
        }
    }
    let mut allowed = vec![bson::Bson::Document(bson::doc! {"name": {"$in": names}})];
    if normal {
        // A database's privileges cover its collections but for `system.*`.
        let system = bson::Regex {
            pattern: "^system\\.".into(),
            options: String::new(),
        };
        allowed.push(bson::Bson::Document(bson::doc! {"name": {"$not": system}}));
    }
    Some(bson::doc! {"$or": allowed})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn authorized_collections_are_those_any_privilege_names() {
        let on = |resource: Resource| Privilege::new(resource, &["find"]);
        let granted = [
            on(Resource::collection("app", "a")),
            on(Resource::collection("other", "b")),
            on(Resource::CollectionInAnyDatabase("system.js".into())),
        ];
        assert_eq!(
            authorized_collections(&granted, "app"),
            Some(bson::doc! {"$or": [{"name": {"$in": ["a", "system.js"]}}]})
        );
        let database = [on(Resource::Database("app".into()))];
        let filter = authorized_collections(&database, "app").unwrap();
        assert_eq!(filter.get_array("$or").unwrap().len(), 2, "{filter}");
        assert_eq!(
            authorized_collections(&database, "other"),
            Some(bson::doc! {"$or": [{"name": {"$in": []}}]})
        );
        assert_eq!(authorized_collections(&[on(Resource::Any)], "app"), None);
    }

    #[test]
    fn patterns_cover_what_mongodb_matches() {
        let ns = Resource::collection("app", "users");
        let system = Resource::collection("app", "system.views");
        assert!(Resource::Database("app".into()).covers(&ns));
        assert!(!Resource::Database("app".into()).covers(&system));
        assert!(!Resource::Database("other".into()).covers(&ns));
        assert!(Resource::AnyNormal.covers(&ns));
        assert!(!Resource::AnyNormal.covers(&system));
        assert!(!Resource::AnyNormal.covers(&Resource::collection("config", "chunks")));
        assert!(!Resource::AnyNormal.covers(&Resource::Cluster));
        assert!(Resource::Any.covers(&Resource::Cluster));
        assert!(
            Resource::CollectionInAnyDatabase("system.js".into())
                .covers(&Resource::collection("x", "system.js"))
        );
        assert!(Resource::collection("app", "users").covers(&ns));
        assert!(!Resource::Cluster.covers(&ns));
    }

    #[test]
    fn every_action_must_be_granted() {
        let granted = vec![
            Privilege::new(Resource::Database("app".into()), &["find", "insert"]),
            Privilege::new(Resource::Cluster, &["listDatabases"]),
        ];
        let ns = Resource::collection("app", "c");
        assert!(allows(
            &granted,
            &[Privilege::new(ns.clone(), &["find", "insert"])]
        ));
        assert!(!allows(
            &granted,
            &[Privilege::new(ns.clone(), &["find", "remove"])]
        ));
        assert!(allows(
            &granted,
            &[Privilege::new(Resource::Cluster, &["listDatabases"])]
        ));
        assert!(!allows(
            &granted,
            &[Privilege::new(Resource::Cluster, &["shutdown"])]
        ));
        let root = vec![Privilege::new(Resource::Any, &["anyAction"])];
        assert!(allows(&root, &[Privilege::new(ns, &["whatever"])]));
        assert!(any_on_database(&granted, "app"));
        assert!(!any_on_database(&granted, "other"));
    }
}
