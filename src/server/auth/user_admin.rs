//! The user-management requests as MongoDB checks them: role lists, passwords, mechanisms
//! and the credentials they give, the forms of `usersInfo` and `rolesInfo`, and the
//! privileges each command requires (routers declare them; the config server executes).

use super::privileges::{Privilege, Resource};
use super::requires::{Required, Requires};
use super::roles;
use super::scram::{Credentials, Mechanism};
use super::users::{RoleName, UserName};
use crate::command::{CommandRequest, missing, requests};
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document, doc};

/// A user-management command as routers and the config server both declare it.
pub struct UserCommand {
    pub name: &'static str,
    pub fields: &'static [&'static str],
    pub requires: Requires,
    /// Changes users (takes a write concern; routers drop their user cache after it).
    pub changes: bool,
    pub help: &'static str,
}

/// The user-management commands.
pub const USER_COMMANDS: [UserCommand; 8] = [
    UserCommand {
        name: "createUser",
        fields: requests::UserRequest::FIELDS,
        requires: Requires::Computed(create_user_requires),
        changes: true,
        help: "Adds a user to the system",
    },
    UserCommand {
        name: "updateUser",
        fields: requests::UserRequest::FIELDS,
        requires: Requires::ForCaller(update_user_requires),
        changes: true,
        help: "Used to update a user, for example to change its password",
    },
    UserCommand {
        name: "dropUser",
        fields: requests::DropUserRequest::FIELDS,
        requires: Requires::Database(&["dropUser"]),
        changes: true,
        help: "Drops a single user.",
    },
    UserCommand {
        name: "dropAllUsersFromDatabase",
        fields: requests::DropAllUsersFromDatabaseRequest::FIELDS,
        requires: Requires::Database(&["dropUser"]),
        changes: true,
        help: "Drops all users for a single database.",
    },
    UserCommand {
        name: "grantRolesToUser",
        fields: requests::UserRolesRequest::FIELDS,
        requires: Requires::Computed(grant_roles_requires),
        changes: true,
        help: "Grants roles to a user.",
    },
    UserCommand {
        name: "revokeRolesFromUser",
        fields: requests::UserRolesRequest::FIELDS,
        requires: Requires::Computed(revoke_roles_requires),
        changes: true,
        help: "Revokes roles from a user.",
    },
    UserCommand {
        name: "usersInfo",
        fields: requests::UsersInfoRequest::FIELDS,
        requires: Requires::ForCaller(users_info_requires),
        changes: false,
        help: "Returns information about users.",
    },
    UserCommand {
        name: "rolesInfo",
        fields: requests::RolesInfoRequest::FIELDS,
        requires: Requires::Computed(super::role_admin::roles_info_requires),
        changes: false,
        help: "Returns information about roles.",
    },
];

/// The user a command names in its first field (`createUser: "name"`).
pub fn user_of(request: &CommandRequest) -> Result<UserName> {
    let user = named(request, "User name must not be empty")?;
    Ok(UserName::new(user, &request.db))
}

/// The non-empty string a user or role command names in its first field.
pub fn named<'a>(request: &'a CommandRequest, empty: &str) -> Result<&'a str> {
    match request.args().target()? {
        bson::RawBsonRef::String(name) if !name.is_empty() => Ok(name),
        bson::RawBsonRef::String(_) => Err(MongoError::bad_value(empty)),
        _ => Err(MongoError::new(
            ErrorCode::TypeMismatch,
            format!(
                "BSON field '{}' is the wrong type, expected type 'string'",
                request.name()
            ),
        )),
    }
}

/// A role list: names (in `db`) or `{role, db}` documents.
pub fn parse_roles(values: &[Bson], db: &str) -> Result<Vec<RoleName>> {
    values
        .iter()
        .map(|value| match value {
            Bson::String(role) => Ok(RoleName {
                role: role.clone(),
                db: db.to_string(),
            }),
            Bson::Document(d) => {
                let field = |name: &str| {
                    d.get_str(name).map(str::to_string).map_err(|_| {
                        MongoError::bad_value(format!("Missing expected field \"{name}\""))
                    })
                };
                Ok(RoleName {
                    role: field("role")?,
                    db: field("db")?,
                })
            }
            _ => Err(MongoError::bad_value(
                "Role names must be either strings or objects",
            )),
        })
        .collect()
}

/// The mechanisms a request names (all of them when it names none).
fn mechanisms(values: Option<&[Bson]>) -> Result<Vec<Mechanism>> {
    let Some(values) = values else {
        return Ok(Mechanism::ALL.to_vec());
    };
    if values.is_empty() {
        return Err(MongoError::bad_value("mechanisms field must not be empty"));
    }
    let mut out = Vec::new();
    for value in values {
        let name = value.as_str().unwrap_or_default();
        let mechanism = Mechanism::from_name(name)
            .ok_or_else(|| MongoError::bad_value(format!("Unknown auth mechanism '{name}'")))?;
        if !out.contains(&mechanism) {
            out.push(mechanism);
        }
    }
    Ok(out)
}

/// The `credentials` of a user for password `pwd` and the mechanisms asked for, salted at the
/// node's iteration counts; `digestPassword: false` only with SCRAM-SHA-1, whose password it
/// then is already digested.
pub fn credentials(
    user: &UserName,
    pwd: &str,
    digest_password: Option<bool>,
    mechanism_names: Option<&[Bson]>,
    iterations: impl Fn(Mechanism) -> u32,
) -> Result<Document> {
    if user.db == "$external" {
        return Err(MongoError::bad_value(
            "Cannot set the password for users defined on the '$external' database",
        ));
    }
    if pwd.is_empty() {
        return Err(MongoError::bad_value("User passwords must not be empty"));
    }
    let mechanisms = mechanisms(mechanism_names)?;
    let digest = digest_password != Some(false);
    if !digest && mechanisms.contains(&Mechanism::Sha256) {
        return Err(MongoError::bad_value(
            "Use of SCRAM-SHA-256 requires undigested passwords",
        ));
    }
    let mut out = Document::new();
    for mechanism in mechanisms {
        let prepared = match (mechanism, digest) {
            (Mechanism::Sha1, false) => pwd.to_string(),
            _ => mechanism
                .prepare_password(&user.user, pwd)
                .map_err(MongoError::bad_value)?,
        };
        let c = Credentials::generate(mechanism, &prepared, iterations(mechanism));
        out.insert(mechanism.name(), c.to_document());
    }
    Ok(out)
}

/// Which users `usersInfo` asks for.
#[derive(Debug, PartialEq)]
pub enum UsersQuery {
    /// Every user of a database (`usersInfo: 1`).
    Database(String),
    /// Every user (`{forAllDBs: true}`).
    All,
    /// These users.
    Named(Vec<UserName>),
}

pub fn users_query(request: &CommandRequest) -> Result<UsersQuery> {
    let named = |value: &Bson| -> Result<UserName> {
        match value {
            Bson::String(user) => Ok(UserName::new(user, &request.db)),
            Bson::Document(d) => match (d.get_str("user"), d.get_str("db")) {
                (Ok(user), Ok(db)) => Ok(UserName::new(user, db)),
                _ => Err(MongoError::bad_value(
                    "User name must contain a \"user\" and a \"db\" field",
                )),
            },
            _ => Err(MongoError::bad_value(
                "User and role names must be either strings or objects",
            )),
        }
    };
    let value = request.args().value(request.name())?.unwrap_or(Bson::Null);
    Ok(match value {
        Bson::Int32(1) | Bson::Int64(1) | Bson::Double(1.0) => {
            UsersQuery::Database(request.db.clone())
        }
        Bson::Document(d) if d.get_bool("forAllDBs") == Ok(true) => UsersQuery::All,
        Bson::Array(items) => UsersQuery::Named(items.iter().map(named).collect::<Result<_>>()?),
        other => UsersQuery::Named(vec![named(&other)?]),
    })
}

/// The roles `rolesInfo` asks for: `None` for every role of the database (`rolesInfo: 1`).
pub fn roles_query(request: &CommandRequest) -> Result<Option<Vec<RoleName>>> {
    let value = request.args().value(request.name())?.unwrap_or(Bson::Null);
    match value {
        Bson::Int32(1) | Bson::Int64(1) | Bson::Double(1.0) => Ok(None),
        Bson::Array(items) => Ok(Some(parse_roles(&items, &request.db)?)),
        other => Ok(Some(parse_roles(&[other], &request.db)?)),
    }
}

/// The `rolesInfo` entry of a built-in role.
pub fn builtin_role_info(role: &RoleName, show_privileges: bool) -> Option<Document> {
    let privileges = roles::privileges(&role.role, &role.db)?;
    let subroles: Vec<Bson> = roles::subroles(&role.role)
        .iter()
        .map(|r| doc! {"role": *r, "db": &role.db}.into())
        .collect();
    let mut info = doc! {
        "_id": format!("{}.{}", role.db, role.role),
        "role": &role.role,
        "db": &role.db,
        "isBuiltin": true,
        "roles": subroles.clone(),
        "inheritedRoles": subroles,
    };
    if show_privileges {
        let shown: Vec<Bson> = super::privileges::merged(&privileges)
            .iter()
            .map(|p| p.to_document().into())
            .collect();
        info.insert("privileges", shown.clone());
        info.insert("inheritedPrivileges", shown);
    }
    Some(info)
}

/// The privileges granting or revoking `roles` needs: `action` on each role's database.
fn on_role_databases(roles: &[RoleName], action: &'static str) -> Vec<Privilege> {
    roles
        .iter()
        .map(|r| Privilege::new(Resource::Database(r.db.clone()), &[action]))
        .collect()
}

/// `createUser`: createUser on the database, grantRole on each role's.
pub fn create_user_requires(request: &CommandRequest) -> Result<Required> {
    let parsed = requests::UserRequest::parse(request)?;
    let roles = parse_roles(parsed.roles.as_deref().unwrap_or_default(), &request.db)?;
    let mut needed = vec![Privilege::new(
        Resource::Database(request.db.clone()),
        &["createUser"],
    )];
    needed.extend(on_role_databases(&roles, "grantRole"));
    Ok(Required::Privileges(needed))
}

/// `updateUser`: changePassword, changeCustomData, and granting and revoking the roles.
/// `updateUser`: changePassword and changeCustomData for what it changes, or, for a user
/// changing itself, changeOwnPassword and changeOwnCustomData instead (each on the user's
/// database, as MongoDB checks them); new roles need grantRole on theirs and revokeRole.
pub fn update_user_requires(
    request: &CommandRequest,
    caller: Option<&UserName>,
) -> Result<Required> {
    let parsed = requests::UserRequest::parse(request)?;
    let own = caller.is_some_and(|c| Ok(c) == user_of(request).as_ref());
    let db = Resource::Database(request.db.clone());
    let mut needed = Vec::new();
    if let Some(roles) = &parsed.roles {
        let roles = parse_roles(roles, &request.db)?;
        needed.extend(on_role_databases(&roles, "grantRole"));
        needed.push(Privilege::new(db.clone(), &["revokeRole"]));
    }
    // Each change needs its action, or its own-user action when the user changes itself.
    let mut alternatives = vec![needed];
    let changes = [
        (parsed.pwd.is_some(), "changePassword", "changeOwnPassword"),
        (
            parsed.custom_data.is_some(),
            "changeCustomData",
            "changeOwnCustomData",
        ),
    ];
    for (_, any, mine) in changes.into_iter().filter(|(changed, ..)| *changed) {
        let actions: &[&'static str] = if own { &[any, mine] } else { &[any] };
        let db = &db;
        alternatives = alternatives
            .into_iter()
            .flat_map(|base| {
                actions.iter().map(move |action| {
                    let mut with = base.clone();
                    with.push(Privilege::new(db.clone(), &[action]));
                    with
                })
            })
            .collect();
    }
    Ok(match alternatives.len() {
        1 => Required::Privileges(alternatives.remove(0)),
        _ => Required::AnyOf(alternatives),
    })
}

fn role_change_requires(request: &CommandRequest, action: &'static str) -> Result<Required> {
    let roles = requests::UserRolesRequest::parse(request)?
        .roles
        .ok_or_else(|| missing(request.name(), "roles"))?;
    let roles = parse_roles(&roles, &request.db)?;
    Ok(Required::Privileges(on_role_databases(&roles, action)))
}

pub fn grant_roles_requires(request: &CommandRequest) -> Result<Required> {
    role_change_requires(request, "grantRole")
}

pub fn revoke_roles_requires(request: &CommandRequest) -> Result<Required> {
    role_change_requires(request, "revokeRole")
}

/// `usersInfo`: viewUser on each database asked about (the cluster for every database); a
/// user asking about itself needs nothing but to be authenticated, as in MongoDB.
pub fn users_info_requires(
    request: &CommandRequest,
    caller: Option<&UserName>,
) -> Result<Required> {
    let resources: Vec<Resource> = match users_query(request)? {
        UsersQuery::Database(db) => vec![Resource::Database(db)],
        UsersQuery::All => vec![Resource::Cluster],
        UsersQuery::Named(names) => names
            .into_iter()
            .filter(|n| Some(n) != caller)
            .map(|n| Resource::Database(n.db))
            .collect(),
    };
    Ok(Required::Privileges(
        resources
            .into_iter()
            .map(|r| Privilege::new(r, &["viewUser"]))
            .collect(),
    ))
}

/// Authentication restrictions are stored by MongoDB and enforced at authentication; docgrid
/// does not enforce them, so it refuses to store any rather than ignore them.
pub fn check_restrictions(restrictions: &Option<Vec<Bson>>) -> Result<Vec<Bson>> {
    match restrictions {
        Some(r) if !r.is_empty() => Err(MongoError::new(
            ErrorCode::NotImplemented,
            "authenticationRestrictions are not supported",
        )),
        _ => Ok(Vec::new()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    #[test]
    fn role_lists_and_their_errors() {
        let roles = parse_roles(
            &[
                Bson::from("read"),
                Bson::from(doc! {"role": "root", "db": "admin"}),
            ],
            "app",
        )
        .unwrap();
        assert_eq!(roles[0].to_string(), "read@app");
        assert_eq!(roles[1].to_string(), "root@admin");
        assert!(parse_roles(&[Bson::Int32(1)], "app").is_err());
    }

    #[test]
    fn passwords_and_mechanisms() {
        let user = UserName::new("u", "app");
        let both = credentials(&user, "pw", None, None, |_| 4096).unwrap();
        assert!(both.contains_key("SCRAM-SHA-1") && both.contains_key("SCRAM-SHA-256"));
        let only = [Bson::from("SCRAM-SHA-1")];
        let digested = credentials(&user, "abc", Some(false), Some(&only), |_| 4096).unwrap();
        assert_eq!(digested.len(), 1);
        let code = |r: Result<Document>| r.unwrap_err().message().to_string();
        assert_eq!(
            code(credentials(&user, "", None, None, |_| 4096)),
            "User passwords must not be empty"
        );
        assert_eq!(
            code(credentials(&user, "pw", Some(false), None, |_| 4096)),
            "Use of SCRAM-SHA-256 requires undigested passwords"
        );
        assert_eq!(
            code(credentials(
                &user,
                "pw",
                None,
                Some(&[Bson::from("PLAIN")]),
                |_| 4096
            )),
            "Unknown auth mechanism 'PLAIN'"
        );
    }

    #[test]
    fn users_info_forms() {
        let query = |body| users_query(&CommandRequest::new("app", body).unwrap()).unwrap();
        assert_eq!(
            query(rawdoc! {"usersInfo": 1}),
            UsersQuery::Database("app".into())
        );
        assert_eq!(
            query(rawdoc! {"usersInfo": {"forAllDBs": true}}),
            UsersQuery::All
        );
        assert_eq!(
            query(rawdoc! {"usersInfo": "u"}),
            UsersQuery::Named(vec![UserName::new("u", "app")])
        );
        assert_eq!(
            query(rawdoc! {"usersInfo": [{"user": "u", "db": "admin"}, "v"]}),
            UsersQuery::Named(vec![UserName::new("u", "admin"), UserName::new("v", "app")])
        );
    }

    #[test]
    fn a_user_changes_itself_with_its_own_actions() {
        let needs = |body, caller: &UserName| {
            let request = CommandRequest::new("app", body).unwrap();
            update_user_requires(&request, Some(caller)).unwrap()
        };
        let on_app =
            |action: &'static str| Privilege::new(Resource::Database("app".into()), &[action]);
        let me = UserName::new("me", "app");
        assert_eq!(
            needs(rawdoc! {"updateUser": "other", "pwd": "x"}, &me),
            Required::Privileges(vec![on_app("changePassword")])
        );
        assert_eq!(
            needs(rawdoc! {"updateUser": "me", "pwd": "x"}, &me),
            Required::AnyOf(vec![
                vec![on_app("changePassword")],
                vec![on_app("changeOwnPassword")]
            ])
        );
        let Required::AnyOf(both) = needs(
            rawdoc! {"updateUser": "me", "pwd": "x", "customData": {}},
            &me,
        ) else {
            panic!("alternatives expected");
        };
        assert_eq!(both.len(), 4);
        assert!(both.contains(&vec![
            on_app("changeOwnPassword"),
            on_app("changeOwnCustomData")
        ]));
    }

    #[test]
    fn a_user_views_itself_without_view_user() {
        let needs = |body, caller: &UserName| {
            let request = CommandRequest::new("app", body).unwrap();
            users_info_requires(&request, Some(caller)).unwrap()
        };
        let me = UserName::new("me", "app");
        assert_eq!(
            needs(rawdoc! {"usersInfo": "me"}, &me),
            Required::Privileges(Vec::new())
        );
        let view = |db: &str| Privilege::new(Resource::Database(db.into()), &["viewUser"]);
        assert_eq!(
            needs(
                rawdoc! {"usersInfo": ["me", {"user": "x", "db": "admin"}]},
                &me
            ),
            Required::Privileges(vec![view("admin")])
        );
        assert_eq!(
            needs(rawdoc! {"usersInfo": 1}, &me),
            Required::Privileges(vec![view("app")])
        );
    }
}
