//! `$audit`, MongoDB's impersonation metadata: the user (and roles) a router runs a command
//! for, which it names in every command it sends to the cluster's other nodes. Parsed as
//! MongoDB's strict `ImpersonatedUserMetadata`: `$impersonatedUser` (`{user, db}`),
//! `$impersonatedRoles` (`[{role, db}]`, required) and `$impersonatedClient` (`{hosts}`).

use super::idl::{missing_field, strict_fields, typed, wrong_type};
use crate::error::Result;
use bson::spec::ElementType;
use bson::{RawBsonRef, rawdoc};

/// What a command's `$audit` names: the user the command runs for and that user's roles, as
/// `(name, db)` pairs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Impersonation {
    pub user: Option<(String, String)>,
    pub roles: Vec<(String, String)>,
}

const FIELD: &str = "$audit";

impl Impersonation {
    /// The request's `$audit`, if it has one.
    pub fn parse(value: Option<RawBsonRef<'_>>) -> Result<Option<Impersonation>> {
        let Some(RawBsonRef::Document(doc)) = typed(FIELD, value, ElementType::EmbeddedDocument)?
        else {
            return Ok(None);
        };
        let mut out = Impersonation::default();
        let mut roles_given = false;
        let known = [
            "$impersonatedUser",
            "$impersonatedRoles",
            "$impersonatedClient",
        ];
        strict_fields(FIELD, doc, &known, |name, value| {
            let path = format!("{FIELD}.{name}");
            match name {
                "$impersonatedUser" => out.user = Some(pair(&path, value, "user")?),
                "$impersonatedRoles" => {
                    roles_given = true;
                    let RawBsonRef::Array(roles) = value else {
                        return Err(wrong_type(&path, value, "array"));
                    };
                    for role in roles {
                        out.roles.push(pair(&path, role?, "role")?);
                    }
                }
                _ => client_hosts(&path, value)?,
            }
            Ok(())
        })?;
        if !roles_given {
            return Err(missing_field(&format!("{FIELD}.$impersonatedRoles")));
        }
        Ok(Some(out))
    }

    /// The `$audit` field naming this impersonation.
    pub fn to_raw(&self) -> bson::RawDocumentBuf {
        let mut roles = bson::RawArrayBuf::new();
        for (role, db) in &self.roles {
            roles.push(rawdoc! {"role": role.as_str(), "db": db.as_str()});
        }
        let mut out = bson::RawDocumentBuf::new();
        if let Some((user, db)) = &self.user {
            out.append(
                "$impersonatedUser",
                rawdoc! {"user": user.as_str(), "db": db.as_str()},
            );
        }
        out.append("$impersonatedRoles", roles);
        out
    }
}

/// A strict `{<name>: string, db: string}` (MongoDB's `UserName`/`RoleName`).
fn pair(path: &str, value: RawBsonRef<'_>, name: &str) -> Result<(String, String)> {
    let RawBsonRef::Document(doc) = value else {
        return Err(wrong_type(path, value, "object"));
    };
    let (mut first, mut db) = (None, None);
    strict_fields(path, doc, &[name, "db"], |field, value| {
        let text = string(&format!("{path}.{field}"), value)?;
        if field == "db" {
            db = Some(text);
        } else {
            first = Some(text);
        }
        Ok(())
    })?;
    match (first, db) {
        (Some(first), Some(db)) => Ok((first, db)),
        (None, _) => Err(missing_field(&format!("{path}.{name}"))),
        (_, None) => Err(missing_field(&format!("{path}.db"))),
    }
}

fn string(path: &str, value: RawBsonRef<'_>) -> Result<String> {
    match value {
        RawBsonRef::String(s) => Ok(s.to_string()),
        other => Err(wrong_type(path, other, "string")),
    }
}

/// `$impersonatedClient`: `{hosts: [<"host:port">, ...]}`, at least one host.
fn client_hosts(path: &str, value: RawBsonRef<'_>) -> Result<()> {
    let RawBsonRef::Document(doc) = value else {
        return Err(wrong_type(path, value, "object"));
    };
    let mut hosts = None;
    strict_fields(path, doc, &["hosts"], |_, value| {
        hosts = Some(value);
        Ok(())
    })?;
    let hosts_path = format!("{path}.hosts");
    let Some(hosts) = hosts else {
        return Err(missing_field(&hosts_path));
    };
    let RawBsonRef::Array(list) = hosts else {
        return Err(wrong_type(&hosts_path, hosts, "array"));
    };
    let mut count = 0;
    for host in list {
        string(&hosts_path, host?)?;
        count += 1;
    }
    if count == 0 {
        return Err(crate::error::MongoError::type_mismatch(format!(
            "BSON field '{hosts_path}' must name at least one host"
        )));
    }
    Ok(())
}

/// `$audit` of a body, read straight from it (tests; requests are parsed by [`super::check`]).
#[cfg(test)]
pub fn of_body(body: &bson::RawDocument) -> Result<Option<Impersonation>> {
    Impersonation::parse(body.get(FIELD)?)
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    fn parse(audit: bson::RawDocumentBuf) -> Result<Option<Impersonation>> {
        of_body(&rawdoc! {"hello": 1, "$audit": audit})
    }

    #[test]
    fn mongodb_shapes() {
        let full = parse(rawdoc! {
            "$impersonatedUser": {"user": "foo", "db": "bar"},
            "$impersonatedRoles": [{"role": "r", "db": "bar"}],
        })
        .unwrap()
        .unwrap();
        assert_eq!(full.user, Some(("foo".into(), "bar".into())));
        assert_eq!(full.roles, vec![("r".into(), "bar".into())]);
        let again = of_body(&rawdoc! {"ping": 1, "$audit": full.to_raw()}).unwrap();
        assert_eq!(again, Some(full));
        let client = parse(rawdoc! {
            "$impersonatedRoles": [],
            "$impersonatedClient": {"hosts": ["172.23.55.11:23890"]},
        })
        .unwrap()
        .unwrap();
        assert_eq!(client, Impersonation::default());
        assert_eq!(of_body(&rawdoc! {"ping": 1}).unwrap(), None);
    }

    #[test]
    fn refusals_as_mongodb_tests_them() {
        let code = |audit| parse(audit).unwrap_err().code().code();
        let roles = || bson::RawArrayBuf::new();
        // Users: a string, `{}`, half a name, an array.
        assert_eq!(
            code(rawdoc! {"$impersonatedUser": "s", "$impersonatedRoles": roles()}),
            14
        );
        assert_eq!(
            code(rawdoc! {"$impersonatedUser": {}, "$impersonatedRoles": roles()}),
            40414
        );
        assert_eq!(
            code(rawdoc! {"$impersonatedUser": {"user": "foo"}, "$impersonatedRoles": roles()}),
            40414
        );
        assert_eq!(
            code(
                rawdoc! {"$impersonatedUser": [{"user": "foo", "db": "bar"}], "$impersonatedRoles": roles()}
            ),
            14
        );
        assert_eq!(
            code(
                rawdoc! {"$impersonatedUser": {"user": "f", "db": "b", "x": 1}, "$impersonatedRoles": roles()}
            ),
            40415
        );
        // Roles: strings, `{}`, half names; and required.
        assert_eq!(code(rawdoc! {"$impersonatedRoles": ["string"]}), 14);
        assert_eq!(code(rawdoc! {"$impersonatedRoles": [{}]}), 40414);
        assert_eq!(code(rawdoc! {"$impersonatedRoles": [{"db": "bar"}]}), 40414);
        assert_eq!(code(rawdoc! {}), 40414);
        // Clients: not a document, `{}`, no hosts, not strings.
        assert_eq!(
            code(rawdoc! {"$impersonatedRoles": roles(), "$impersonatedClient": []}),
            14
        );
        assert_eq!(
            code(rawdoc! {"$impersonatedRoles": roles(), "$impersonatedClient": {}}),
            40414
        );
        assert_eq!(
            code(rawdoc! {"$impersonatedRoles": roles(), "$impersonatedClient": {"hosts": []}}),
            14
        );
        assert_eq!(
            code(rawdoc! {"$impersonatedRoles": roles(), "$impersonatedClient": {"hosts": [{}]}}),
            14
        );
        assert_eq!(
            code(rawdoc! {"$other": 1, "$impersonatedRoles": roles()}),
            40415
        );
        assert_eq!(
            of_body(&rawdoc! {"hello": 1, "$audit": "x"})
                .unwrap_err()
                .code()
                .code(),
            14
        );
    }
}
