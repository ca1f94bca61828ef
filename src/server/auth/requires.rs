//! What a command needs before it may run, as each command table declares it
//! (`CommandSpec::requires`): nothing, an authenticated user, or privileges on the command's
//! collection, database or the cluster (computed from the request where they depend on it).

use super::privileges::{Privilege, Resource};
use super::users::UserName;
use crate::command::CommandRequest;
use crate::error::Result;

/// A command's declared need.
#[derive(Clone, Copy)]
pub enum Requires {
    /// Runs without authentication (MongoDB's `requiresAuth() == false`: hello, ping, ...).
    Nothing,
    /// Any authenticated user, no privilege (its own sessions, cursors, transactions).
    Authenticated,
    /// These actions on the command's collection (its first field's value), or on its
    /// database when that is not a collection name (`aggregate: 1`).
    Collection(&'static [&'static str]),
    /// These actions on the command's database.
    Database(&'static [&'static str]),
    /// These actions on the cluster.
    Cluster(&'static [&'static str]),
    /// Privileges that depend on the request (writes with upserts, explain, renames, user
    /// management).
    Computed(fn(&CommandRequest) -> Result<Required>),
    /// Privileges that depend on the request and on who asks (a user may view itself).
    ForCaller(fn(&CommandRequest, Option<&UserName>) -> Result<Required>),
}

/// What a request needs, resolved.
#[derive(Debug, PartialEq)]
pub enum Required {
    Nothing,
    Authenticated,
    Privileges(Vec<Privilege>),
    /// Any one of these lists of privileges (a user changing its own password may hold
    /// `changeOwnPassword` instead of `changePassword`).
    AnyOf(Vec<Vec<Privilege>>),
}

impl Requires {
    /// What `request` needs from `caller`, the connection's authenticated user.
    pub fn resolve(&self, request: &CommandRequest, caller: Option<&UserName>) -> Result<Required> {
        Ok(match self {
            Requires::Nothing => Required::Nothing,
            Requires::Authenticated => Required::Authenticated,
            Requires::Collection(actions) => {
                Required::Privileges(vec![Privilege::new(target_resource(request), actions)])
            }
            Requires::Database(actions) => Required::Privileges(vec![Privilege::new(
                Resource::Database(request.db.clone()),
                actions,
            )]),
            Requires::Cluster(actions) => {
                Required::Privileges(vec![Privilege::new(Resource::Cluster, actions)])
            }
            Requires::Computed(compute) => compute(request)?,
            Requires::ForCaller(compute) => compute(request, caller)?,
        })
    }
}

/// The collection a command names in its first field, or its database.
pub fn target_resource(request: &CommandRequest) -> Resource {
    match request.args().target() {
        Ok(bson::RawBsonRef::String(coll)) if !coll.is_empty() => {
            Resource::collection(&request.db, coll)
        }
        _ => Resource::Database(request.db.clone()),
    }
}

/// The resource of a full namespace `db.collection` (`renameCollection`, `shardCollection`).
pub fn namespace_resource(ns: &str) -> Resource {
    match ns.split_once('.') {
        Some((db, coll)) => Resource::collection(db, coll),
        None => Resource::Database(ns.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    #[test]
    fn declared_needs_resolve_on_the_request() {
        let find = CommandRequest::new("app", rawdoc! {"find": "users"}).unwrap();
        assert_eq!(
            Requires::Collection(&["find"])
                .resolve(&find, None)
                .unwrap(),
            Required::Privileges(vec![Privilege::new(
                Resource::collection("app", "users"),
                &["find"]
            )])
        );
        let aggregate = CommandRequest::new("app", rawdoc! {"aggregate": 1}).unwrap();
        assert_eq!(
            Requires::Collection(&["find"])
                .resolve(&aggregate, None)
                .unwrap(),
            Required::Privileges(vec![Privilege::new(
                Resource::Database("app".into()),
                &["find"]
            )])
        );
        assert_eq!(
            Requires::Nothing.resolve(&find, None).unwrap(),
            Required::Nothing
        );
        assert_eq!(
            namespace_resource("a.b.c"),
            Resource::collection("a", "b.c")
        );
    }
}
