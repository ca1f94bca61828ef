//! The user-defined role commands as routers and the config server both declare them: their
//! fields, the privileges MongoDB requires for each (creating or granting needs `grantRole` on
//! the databases granted; privileges beyond one database need it on `admin`), the role a
//! command names, and `rolesInfo`'s `showPrivileges` forms.

use super::privilege_documents;
use super::privileges::{Privilege, Resource};
use super::requires::{Required, Requires};
use super::user_admin::{UserCommand, named, parse_roles};
use super::users::RoleName;
use crate::command::{CommandRequest, missing, requests};
use crate::error::{MongoError, Result};
use bson::Bson;

/// The commands that change user-defined roles.
pub const ROLE_COMMANDS: [UserCommand; 8] = [
    UserCommand {
        name: "createRole",
        fields: requests::RoleRequest::FIELDS,
        requires: Requires::Computed(create_role_requires),
        changes: true,
        help: "Adds a role to the system",
    },
    UserCommand {
        name: "updateRole",
        fields: requests::RoleRequest::FIELDS,
        requires: Requires::Computed(update_role_requires),
        changes: true,
        help: "Used to update a role",
    },
    UserCommand {
        name: "dropRole",
        fields: requests::DropRoleRequest::FIELDS,
        requires: Requires::Database(&["dropRole"]),
        changes: true,
        help: "Drops a single role.  Before deleting the role completely it must remove it from any users or roles that reference it.",
    },
    UserCommand {
        name: "dropAllRolesFromDatabase",
        fields: requests::DropAllRolesFromDatabaseRequest::FIELDS,
        requires: Requires::Database(&["dropRole"]),
        changes: true,
        help: "Drops all roles from the given database.  Before deleting the roles completely it must remove them from any users or other roles that reference them.",
    },
    UserCommand {
        name: "grantRolesToRole",
        fields: requests::RoleRolesRequest::FIELDS,
        requires: Requires::Computed(grant_roles_to_role_requires),
        changes: true,
        help: "Grants roles to another role.",
    },
    UserCommand {
        name: "revokeRolesFromRole",
        fields: requests::RoleRolesRequest::FIELDS,
        requires: Requires::Computed(revoke_roles_from_role_requires),
        changes: true,
        help: "Revokes roles from another role.",
    },
    UserCommand {
        name: "grantPrivilegesToRole",
        fields: requests::RolePrivilegesRequest::FIELDS,
        requires: Requires::Computed(grant_privileges_requires),
        changes: true,
        help: "Grants privileges to a role",
    },
    UserCommand {
        name: "revokePrivilegesFromRole",
        fields: requests::RolePrivilegesRequest::FIELDS,
        requires: Requires::Computed(revoke_privileges_requires),
        changes: true,
        help: "Revokes privileges from a role",
    },
];

/// The role a command names in its first field (`createRole: "name"`), in the request's
/// database.
pub fn role_of(request: &CommandRequest) -> Result<RoleName> {
    Ok(RoleName {
        role: named(request, "Role name must be non-empty")?.to_string(),
        db: request.db.clone(),
    })
}

/// A required array field of a role command.
pub fn required(
    request: &CommandRequest,
    values: Option<Vec<Bson>>,
    field: &str,
) -> Result<Vec<Bson>> {
    values.ok_or_else(|| missing(request.name(), field))
}

/// A required array of what a grant or revocation lists, which must not be empty.
pub fn listed(
    request: &CommandRequest,
    values: Option<Vec<Bson>>,
    field: &str,
) -> Result<Vec<Bson>> {
    let values = required(request, values, field)?;
    if values.is_empty() {
        return Err(MongoError::bad_value(format!(
            "{} command requires a non-empty \"{field}\" array",
            request.name()
        )));
    }
    Ok(values)
}

/// BadValue for a built-in role: only user-defined ones change.
pub fn check_modifiable(role: &RoleName) -> Result<()> {
    if super::roles::is_builtin(&role.role, &role.db) {
        return Err(MongoError::bad_value(format!(
            "{role} is a built-in role and cannot be modified"
        )));
    }
    Ok(())
}

/// `action` on each role's database.
fn on_role_databases(roles: &[RoleName], action: &'static str) -> Vec<Privilege> {
    roles
        .iter()
        .map(|r| Privilege::new(Resource::Database(r.db.clone()), &[action]))
        .collect()
}

/// Granting or revoking privileges: `action` on the database they target, or on `admin` for
/// those spanning databases or the cluster (malformed ones are the command's to refuse).
fn on_privilege_databases(privileges: &[Bson], action: &'static str) -> Vec<Privilege> {
    privileges
        .iter()
        .filter_map(|p| privilege_documents::parse_privileges(std::slice::from_ref(p)).ok())
        .flatten()
        .map(|p| {
            let db = match p.resource {
                Resource::Database(db) | Resource::Collection(db, _) => db,
                _ => "admin".to_string(),
            };
            Privilege::new(Resource::Database(db), &[action])
        })
        .collect()
}

fn roles_in(request: &CommandRequest, roles: &Option<Vec<Bson>>) -> Result<Vec<RoleName>> {
    parse_roles(roles.as_deref().unwrap_or_default(), &request.db)
}

/// What granting a role's `roles`, `privileges` and `authenticationRestrictions` needs.
fn granting(request: &CommandRequest, parsed: requests::RoleRequest) -> Result<Vec<Privilege>> {
    let mut needed = on_role_databases(&roles_in(request, &parsed.roles)?, "grantRole");
    let privileges = parsed.privileges.unwrap_or_default();
    needed.extend(on_privilege_databases(&privileges, "grantRole"));
    if parsed.authentication_restrictions.is_some() {
        needed.push(Privilege::new(
            Resource::Database(request.db.clone()),
            &["setAuthenticationRestriction"],
        ));
    }
    Ok(needed)
}

/// `createRole`: createRole on the database, grantRole on what it grants.
pub fn create_role_requires(request: &CommandRequest) -> Result<Required> {
    let parsed = requests::RoleRequest::parse(request)?;
    let db = Resource::Database(request.db.clone());
    let mut needed = vec![Privilege::new(db, &["createRole"])];
    needed.extend(granting(request, parsed)?);
    Ok(Required::Privileges(needed))
}

/// `updateRole`: revoking any role anywhere (what it replaces is unknown beforehand), and
/// granting what it grants.
pub fn update_role_requires(request: &CommandRequest) -> Result<Required> {
    let parsed = requests::RoleRequest::parse(request)?;
    let mut needed = vec![Privilege::new(Resource::AnyNormal, &["revokeRole"])];
    needed.extend(granting(request, parsed)?);
    Ok(Required::Privileges(needed))
}

fn roles_change_requires(request: &CommandRequest, action: &'static str) -> Result<Required> {
    let parsed = requests::RoleRolesRequest::parse(request)?;
    Ok(Required::Privileges(on_role_databases(
        &roles_in(request, &parsed.roles)?,
        action,
    )))
}

pub fn grant_roles_to_role_requires(request: &CommandRequest) -> Result<Required> {
    roles_change_requires(request, "grantRole")
}

pub fn revoke_roles_from_role_requires(request: &CommandRequest) -> Result<Required> {
    roles_change_requires(request, "revokeRole")
}

fn privileges_change_requires(request: &CommandRequest, action: &'static str) -> Result<Required> {
    let parsed = requests::RolePrivilegesRequest::parse(request)?;
    let privileges = parsed.privileges.unwrap_or_default();
    Ok(Required::Privileges(on_privilege_databases(
        &privileges,
        action,
    )))
}

pub fn grant_privileges_requires(request: &CommandRequest) -> Result<Required> {
    privileges_change_requires(request, "grantRole")
}

pub fn revoke_privileges_requires(request: &CommandRequest) -> Result<Required> {
    privileges_change_requires(request, "revokeRole")
}

/// `rolesInfo`: viewRole on each database whose roles it asks about.
pub fn roles_info_requires(request: &CommandRequest) -> Result<Required> {
    let databases: Vec<String> = match super::user_admin::roles_query(request)? {
        Some(roles) => roles.into_iter().map(|r| r.db).collect(),
        None => vec![request.db.clone()],
    };
    Ok(Required::Privileges(
        databases
            .into_iter()
            .map(|db| Privilege::new(Resource::Database(db), &["viewRole"]))
            .collect(),
    ))
}

/// What `rolesInfo`'s `showPrivileges` asks for.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ShowPrivileges {
    No,
    Yes,
    /// `"asUserFragment"`: the roles as a user holding them would see them.
    AsUserFragment,
}

pub fn show_privileges(value: Option<&Bson>) -> Result<ShowPrivileges> {
    Ok(match value {
        None | Some(Bson::Null) => ShowPrivileges::No,
        Some(Bson::Boolean(b)) => match b {
            true => ShowPrivileges::Yes,
            false => ShowPrivileges::No,
        },
        Some(Bson::Int32(n)) => match *n != 0 {
            true => ShowPrivileges::Yes,
            false => ShowPrivileges::No,
        },
        Some(Bson::Int64(n)) => match *n != 0 {
            true => ShowPrivileges::Yes,
            false => ShowPrivileges::No,
        },
        Some(Bson::Double(n)) => match *n != 0.0 {
            true => ShowPrivileges::Yes,
            false => ShowPrivileges::No,
        },
        Some(Bson::String(s)) if s == "asUserFragment" => ShowPrivileges::AsUserFragment,
        Some(other) => {
            return Err(MongoError::new(
                crate::error::ErrorCode::FailedToParse,
                format!(
                    "Failed to parse 'showPrivileges'. 'showPrivileges' should either be a boolean or the string 'asUserFragment', given: showPrivileges: {other}"
                ),
            ));
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    fn needed(required: Required) -> Vec<(Resource, Vec<&'static str>)> {
        match required {
            Required::Privileges(p) => p.into_iter().map(|p| (p.resource, p.actions)).collect(),
            _ => Vec::new(),
        }
    }

    #[test]
    fn creating_a_role_needs_grant_role_on_what_it_grants() {
        let request = CommandRequest::new(
            "app",
            rawdoc! {
                "createRole": "r",
                "privileges": [
                    {"resource": {"db": "app", "collection": "c"}, "actions": ["find"]},
                    {"resource": {"cluster": true}, "actions": ["serverStatus"]},
                ],
                "roles": [{"role": "read", "db": "other"}],
            },
        )
        .unwrap();
        let database = |db: &str| Resource::Database(db.into());
        assert_eq!(
            needed(create_role_requires(&request).unwrap()),
            vec![
                (database("app"), vec!["createRole"]),
                (database("other"), vec!["grantRole"]),
                (database("app"), vec!["grantRole"]),
                (database("admin"), vec!["grantRole"]),
            ]
        );
        let update = CommandRequest::new("app", rawdoc! {"updateRole": "r", "roles": []}).unwrap();
        assert_eq!(
            needed(update_role_requires(&update).unwrap()),
            vec![(Resource::AnyNormal, vec!["revokeRole"])]
        );
    }

    #[test]
    fn role_names_and_show_privileges() {
        let empty = CommandRequest::new("app", rawdoc! {"createRole": ""}).unwrap();
        assert_eq!(
            role_of(&empty).unwrap_err().message(),
            "Role name must be non-empty"
        );
        assert_eq!(
            show_privileges(Some(&Bson::from("asUserFragment"))).unwrap(),
            ShowPrivileges::AsUserFragment
        );
        assert_eq!(
            show_privileges(Some(&Bson::Boolean(true))).unwrap(),
            ShowPrivileges::Yes
        );
        assert_eq!(
            show_privileges(Some(&Bson::from("x")))
                .unwrap_err()
                .message(),
            "Failed to parse 'showPrivileges'. 'showPrivileges' should either be a boolean or the string 'asUserFragment', given: showPrivileges: \"x\""
        );
    }
}
