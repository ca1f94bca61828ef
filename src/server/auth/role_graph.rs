//! User-defined roles as `admin.system.roles` stores them (`{_id: "db.role", role, db,
//! privileges, roles, authenticationRestrictions?}`) and the role graph: what roles grant transitively (built-in roles included) and the
//! checks that keep a grant within its database and the graph acyclic.

use super::privilege_documents::{parse_privileges, privileges_value};
use super::privileges::{Privilege, Resource};
use super::roles;
use super::users::RoleName;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document, doc};
use std::collections::{BTreeMap, BTreeSet};

/// A user-defined role as stored.
#[derive(Clone, Debug)]
pub struct StoredRole {
    pub name: RoleName,
    pub privileges: Vec<Privilege>,
    pub roles: Vec<RoleName>,
    pub restrictions: Vec<Bson>,
}

impl StoredRole {
    /// Reads a stored role; `None` when the document is not one.
    pub fn from_document(doc: &Document) -> Option<StoredRole> {
        let name = RoleName {
            role: doc.get_str("role").ok()?.into(),
            db: doc.get_str("db").ok()?.into(),
        };
        let privileges = parse_privileges(doc.get_array("privileges").ok()?).ok()?;
        let roles = doc
            .get_array("roles")
            .map(|roles| roles.iter().filter_map(RoleName::from_bson).collect())
            .unwrap_or_default();
        let restrictions = doc
            .get_array("authenticationRestrictions")
            .cloned()
            .unwrap_or_default();
        Some(StoredRole {
            name,
            privileges,
            roles,
            restrictions,
        })
    }

    /// The document `admin.system.roles` keeps.
    pub fn to_document(&self) -> Document {
        let mut out = doc! {
            "_id": self.name.id(),
            "role": &self.name.role,
            "db": &self.name.db,
            "privileges": privileges_value(&self.privileges),
            "roles": roles_value(&self.roles),
        };
        if !self.restrictions.is_empty() {
            out.insert("authenticationRestrictions", self.restrictions.clone());
        }
        out
    }
}

pub fn roles_value(roles: &[RoleName]) -> Vec<Bson> {
    roles.iter().map(|r| r.to_document().into()).collect()
}

/// A role of another database may only grant privileges on its own database and its
/// collections; an `admin` role may grant anything.
pub fn check_privileges_for_role(role: &RoleName, privileges: &[Privilege]) -> Result<()> {
    if role.db == "admin" {
        return Ok(());
    }
    let within = |p: &Privilege| match &p.resource {
        Resource::Database(db) | Resource::Collection(db, _) => *db == role.db,
        _ => false,
    };
    if privileges.iter().all(within) {
        return Ok(());
    }
    Err(MongoError::new(
        ErrorCode::InvalidRoleModification,
        format!(
            "Roles on the '{}' database cannot be granted privileges that target other databases or the cluster",
            role.db
        ),
    ))
}

/// What a set of roles grants: every role reached and the privileges of all of them.
#[derive(Debug, Default)]
pub struct Resolved {
    pub roles: Vec<RoleName>,
    pub privileges: Vec<Privilege>,
    pub restrictions: Vec<Bson>,
}

/// Every user-defined role, read at once: small enough to resolve users and check grants in
/// memory.
#[derive(Debug, Default)]
pub struct RoleGraph {
    roles: BTreeMap<RoleName, StoredRole>,
}

impl RoleGraph {
    pub fn new(documents: &[Document]) -> RoleGraph {
        RoleGraph {
            roles: documents
                .iter()
                .filter_map(StoredRole::from_document)
                .map(|r| (r.name.clone(), r))
                .collect(),
        }
    }

    pub fn get(&self, name: &RoleName) -> Option<&StoredRole> {
        self.roles.get(name)
    }

    /// Every user-defined role, in name order.
    pub fn all(&self) -> impl Iterator<Item = &StoredRole> {
        self.roles.values()
    }

    /// The user-defined roles of `db`, in name order.
    pub fn roles_of(&self, db: &str) -> Vec<&StoredRole> {
        self.roles.values().filter(|r| r.name.db == db).collect()
    }

    pub fn exists(&self, name: &RoleName) -> bool {
        roles::is_builtin(&name.role, &name.db) || self.roles.contains_key(name)
    }

    /// RoleNotFound for the first role that exists neither built in nor user-defined.
    pub fn check_exist(&self, names: &[RoleName]) -> Result<()> {
        match names.iter().find(|r| !self.exists(r)) {
            Some(missing) => Err(role_not_found(missing)),
            None => Ok(()),
        }
    }

    /// Every role `names` reach (themselves included), with what they grant; a role that no
    /// longer exists grants nothing.
    pub fn resolve(&self, names: &[RoleName]) -> Resolved {
        let mut out = Resolved::default();
        let mut seen = BTreeSet::new();
        let mut pending: Vec<RoleName> = names.iter().rev().cloned().collect();
        while let Some(name) = pending.pop() {
            if !seen.insert(name.clone()) {
                continue;
            }
            if let Some(granted) = roles::privileges(&name.role, &name.db) {
                out.privileges.extend(granted);
                pending.extend(roles::subroles(&name.role).iter().map(|r| RoleName {
                    role: r.to_string(),
                    db: name.db.clone(),
                }));
            } else if let Some(custom) = self.roles.get(&name) {
                out.privileges.extend(custom.privileges.iter().cloned());
                out.restrictions.extend(custom.restrictions.iter().cloned());
                pending.extend(custom.roles.iter().rev().cloned());
            } else {
                continue;
            }
            out.roles.push(name);
        }
        out
    }

    /// MongoDB's checks before `role` is granted `to_add`: not itself, from its own database
    /// unless it is an `admin` role, existing, and not already inheriting `role` (a cycle).
    pub fn check_grant_roles_to_role(&self, role: &RoleName, to_add: &[RoleName]) -> Result<()> {
        for added in to_add {
            if added == role {
                return Err(MongoError::new(
                    ErrorCode::InvalidRoleModification,
                    format!("Cannot grant role {role} to itself."),
                ));
            }
            if role.db != "admin" && added.db != role.db {
                return Err(MongoError::new(
                    ErrorCode::InvalidRoleModification,
                    format!(
                        "Roles on the '{}' database cannot be granted roles from other databases",
                        role.db
                    ),
                ));
            }
        }
        if let Err(e) = self.check_exist(to_add) {
            return Err(MongoError::new(
                e.code(),
                format!("Cannot grant roles to '{role}': {}", e.message()),
            ));
        }
        if self.resolve(to_add).roles.contains(role) {
            return Err(MongoError::new(
                ErrorCode::InvalidRoleModification,
                format!("Granting roles to {role} would introduce a cycle in the role graph"),
            ));
        }
        Ok(())
    }

    /// A user-defined role as `rolesInfo` shows it.
    pub fn role_info(&self, role: &StoredRole, privileges: bool, restrictions: bool) -> Document {
        let inherited = self.resolve(&role.roles);
        let mut own = Resolved {
            privileges: role.privileges.clone(),
            ..Resolved::default()
        };
        own.privileges.extend(inherited.privileges);
        let mut info = doc! {"_id": role.name.id(), "role": &role.name.role, "db": &role.name.db};
        if privileges {
            info.insert("privileges", privileges_value(&role.privileges));
        }
        info.insert("roles", roles_value(&role.roles));
        info.insert("inheritedRoles", roles_value(&inherited.roles));
        if privileges {
            let merged = super::privileges::merged(&own.privileges);
            info.insert("inheritedPrivileges", privileges_value(&merged));
        }
        if restrictions {
            info.insert("authenticationRestrictions", role.restrictions.clone());
            let mut all = role.restrictions.clone();
            all.extend(inherited.restrictions);
            info.insert("inheritedAuthenticationRestrictions", all);
        }
        info.insert("isBuiltin", false);
        info
    }
}

pub fn role_not_found(role: &RoleName) -> MongoError {
    MongoError::new(
        ErrorCode::RoleNotFound,
        format!("Could not find role: {role}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn name(role: &str, db: &str) -> RoleName {
        RoleName {
            role: role.into(),
            db: db.into(),
        }
    }

    fn stored(role: &str, db: &str, privileges: Vec<Bson>, roles: Vec<RoleName>) -> Document {
        StoredRole {
            name: name(role, db),
            privileges: parse_privileges(&privileges).unwrap(),
            roles,
            restrictions: Vec::new(),
        }
        .to_document()
    }

    fn find_on(coll: &str) -> Bson {
        doc! {"resource": {"db": "app", "collection": coll}, "actions": ["find"]}.into()
    }

    #[test]
    fn roles_resolve_transitively_through_built_in_ones() {
        let graph = RoleGraph::new(&[
            stored("reader", "app", vec![find_on("c")], vec![]),
            stored(
                "writer",
                "app",
                vec![],
                vec![name("reader", "app"), name("readWrite", "app")],
            ),
        ]);
        let resolved = graph.resolve(&[name("writer", "app")]);
        let names: Vec<String> = resolved.roles.iter().map(|r| r.to_string()).collect();
        assert_eq!(
            names,
            vec!["writer@app", "reader@app", "readWrite@app", "read@app"]
        );
        let can = |resource, action| {
            super::super::privileges::allows(
                &resolved.privileges,
                &[Privilege::new(resource, &[action])],
            )
        };
        assert!(can(Resource::collection("app", "c"), "find"));
        assert!(can(Resource::collection("app", "d"), "insert"));
        assert!(!can(Resource::collection("other", "d"), "find"));
    }

    #[test]
    fn grants_stay_acyclic_and_within_their_database() {
        let graph = RoleGraph::new(&[
            stored("a", "app", vec![], vec![]),
            stored("b", "app", vec![], vec![name("a", "app")]),
        ]);
        let code = |r: Result<()>| r.unwrap_err().code();
        let a = name("a", "app");
        assert_eq!(
            code(graph.check_grant_roles_to_role(&a, &[name("b", "app")])),
            ErrorCode::InvalidRoleModification
        );
        assert_eq!(
            code(graph.check_grant_roles_to_role(&a, std::slice::from_ref(&a))),
            ErrorCode::InvalidRoleModification
        );
        assert_eq!(
            code(graph.check_grant_roles_to_role(&a, &[name("read", "other")])),
            ErrorCode::InvalidRoleModification
        );
        assert_eq!(
            code(graph.check_grant_roles_to_role(&a, &[name("nope", "app")])),
            ErrorCode::RoleNotFound
        );
        assert!(
            graph
                .check_grant_roles_to_role(&name("b", "app"), &[name("read", "app")])
                .is_ok()
        );
        let elsewhere =
            parse_privileges(&[doc! {"resource": {"cluster": true}, "actions": ["top"]}.into()])
                .unwrap();
        assert!(check_privileges_for_role(&a, &elsewhere).is_err());
        assert!(check_privileges_for_role(&name("x", "admin"), &elsewhere).is_ok());
    }
}
