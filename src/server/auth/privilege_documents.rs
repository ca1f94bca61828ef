//! Privilege documents (`{resource, actions}`) as MongoDB parses and stores them: the
//! resource patterns a role may grant, MongoDB's errors for malformed ones and unknown actions,
//! and adding or removing actions on a resource as `grantPrivilegesToRole` and
//! `revokePrivilegesFromRole` do.

use super::actions;
use super::privileges::{Privilege, Resource};
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document};
use std::collections::BTreeSet;

pub fn privileges_value(privileges: &[Privilege]) -> Vec<Bson> {
    privileges.iter().map(|p| p.to_document().into()).collect()
}

/// Privilege documents (`[{resource, actions}]`) as MongoDB resolves them: BadValue for a
/// malformed resource or empty actions, and every unknown action named at once.
pub fn parse_privileges(values: &[Bson]) -> Result<Vec<Privilege>> {
    let mut unknown = BTreeSet::new();
    let mut out = Vec::new();
    for value in values {
        let Bson::Document(privilege) = value else {
            return Err(MongoError::new(
                ErrorCode::TypeMismatch,
                "BSON field 'privileges' is the wrong type, expected type 'object'",
            ));
        };
        let resource = match privilege.get("resource") {
            Some(Bson::Document(r)) => parse_resource(r)?,
            Some(_) => {
                return Err(MongoError::new(
                    ErrorCode::TypeMismatch,
                    "BSON field 'resource' is the wrong type, expected type 'object'",
                ));
            }
            None => return Err(crate::command::missing("privileges", "resource")),
        };
        let names = match privilege.get("actions") {
            Some(Bson::Array(names)) => names,
            Some(_) => {
                return Err(MongoError::new(
                    ErrorCode::TypeMismatch,
                    "BSON field 'actions' is the wrong type, expected type 'array'",
                ));
            }
            None => return Err(crate::command::missing("privileges", "actions")),
        };
        if names.is_empty() {
            return Err(MongoError::bad_value(
                "'actions' field of privilege resource must not be empty",
            ));
        }
        let mut granted = Vec::new();
        for name in names {
            let name = name.as_str().unwrap_or_default();
            match actions::action(name) {
                Some(action) => granted.push(action),
                None => {
                    unknown.insert(name.to_string());
                }
            }
        }
        add_privilege(&mut out, Privilege::new(resource, &granted));
    }
    if !unknown.is_empty() {
        let plural = if unknown.len() > 1 { "s" } else { "" };
        let listed: Vec<String> = unknown.iter().map(|a| format!(" '{a}'")).collect();
        return Err(MongoError::bad_value(format!(
            "Unknown action type{plural} in privilege set:{}",
            listed.join(",")
        )));
    }
    Ok(out)
}

/// A privilege's `resource`: `{cluster: true}`, `{anyResource: true}` or `{db, collection}`.
fn parse_resource(doc: &Document) -> Result<Resource> {
    let flag = |field: &str| match doc.get(field) {
        None => Ok(None),
        Some(Bson::Boolean(b)) => Ok(Some(*b)),
        Some(Bson::Int32(n)) => Ok(Some(*n != 0)),
        Some(Bson::Int64(n)) => Ok(Some(*n != 0)),
        Some(Bson::Double(n)) => Ok(Some(*n != 0.0)),
        Some(_) => Err(MongoError::new(
            ErrorCode::TypeMismatch,
            format!("BSON field 'resource.{field}' is the wrong type, expected type 'bool'"),
        )),
    };
    let text = |field: &str| match doc.get(field) {
        None => Ok(None),
        Some(Bson::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(MongoError::new(
            ErrorCode::TypeMismatch,
            format!("BSON field 'resource.{field}' is the wrong type, expected type 'string'"),
        )),
    };
    let conflict = |resource: &str, field: &str, present: bool| {
        if present {
            return Err(MongoError::bad_value(format!(
                "{resource} conflicts with resource type '{field}'"
            )));
        }
        Ok(())
    };
    let (db, collection, buckets) = (text("db")?, text("collection")?, text("system_buckets")?);
    if let Some(cluster) = flag("cluster")? {
        if !cluster {
            return Err(MongoError::bad_value(
                "resource: {cluster: false} must be true",
            ));
        }
        let kind = "resource: {cluster: true}";
        conflict(kind, "anyResource", doc.contains_key("anyResource"))?;
        conflict(kind, "db", db.is_some())?;
        conflict(kind, "collection", collection.is_some())?;
        conflict(kind, "system_buckets", buckets.is_some())?;
        return Ok(Resource::Cluster);
    }
    if let Some(any) = flag("anyResource")? {
        if !any {
            return Err(MongoError::bad_value(
                "resource: {anyResource: false} must be true",
            ));
        }
        let kind = "resource: {anyResource: true}";
        conflict(kind, "db", db.is_some())?;
        conflict(kind, "collection", collection.is_some())?;
        conflict(kind, "system_buckets", buckets.is_some())?;
        return Ok(Resource::Any);
    }
    conflict(
        "resource: {collection: '...'}",
        "system_buckets",
        collection.is_some() && buckets.is_some(),
    )?;
    if buckets.is_some() {
        return Err(MongoError::new(
            ErrorCode::NotImplemented,
            "system_buckets resources are not supported: docgrid has no time series collections",
        ));
    }
    let Some(collection) = collection else {
        return Err(MongoError::bad_value(
            "resource pattern must contain 'collection' or 'systemBuckets' specifier",
        ));
    };
    let Some(db) = db else {
        return Err(MongoError::bad_value(
            "resource {collection: '...'} must include 'db' field as well",
        ));
    };
    let valid = !collection.starts_with('.')
        && !collection.contains('\0')
        && (!collection.contains('$') || (db == "local" && collection == "oplog.$main"));
    if !collection.is_empty() && !valid {
        return Err(MongoError::bad_value(format!(
            "'{collection}' is not a valid collection name"
        )));
    }
    Ok(match (db.is_empty(), collection.is_empty()) {
        (true, true) => Resource::AnyNormal,
        (true, false) => Resource::CollectionInAnyDatabase(collection.into()),
        (false, true) => Resource::Database(db.into()),
        (false, false) => Resource::collection(db, collection),
    })
}

/// Adds `privilege` to `privileges`, beside the actions already granted on its resource.
pub fn add_privilege(privileges: &mut Vec<Privilege>, privilege: Privilege) {
    match privileges
        .iter_mut()
        .find(|p| p.resource == privilege.resource)
    {
        Some(existing) => {
            for action in privilege.actions {
                if !existing.actions.contains(&action) {
                    existing.actions.push(action);
                }
            }
        }
        None => privileges.push(privilege),
    }
}

/// Removes `privilege`'s actions from the privilege on the same resource, dropping it when
/// none is left.
pub fn remove_privilege(privileges: &mut Vec<Privilege>, privilege: &Privilege) {
    if let Some(at) = privileges
        .iter()
        .position(|p| p.resource == privilege.resource)
    {
        privileges[at]
            .actions
            .retain(|a| !privilege.actions.contains(a));
        if privileges[at].actions.is_empty() {
            privileges.remove(at);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn find_on(coll: &str) -> Bson {
        doc! {"resource": {"db": "app", "collection": coll}, "actions": ["find"]}.into()
    }

    #[test]
    fn privilege_documents_parse_as_mongodb_resolves_them() {
        let parsed = parse_privileges(&[
            doc! {"resource": {"cluster": true}, "actions": ["serverStatus"]}.into(),
            doc! {"resource": {"anyResource": true}, "actions": ["anyAction"]}.into(),
            doc! {"resource": {"db": "", "collection": ""}, "actions": ["find"]}.into(),
            doc! {"resource": {"db": "", "collection": "c"}, "actions": ["find"]}.into(),
            doc! {"resource": {"db": "app", "collection": ""}, "actions": ["insert"]}.into(),
            find_on("c"),
            find_on("c"),
        ])
        .unwrap();
        let resources: Vec<Resource> = parsed.iter().map(|p| p.resource.clone()).collect();
        assert_eq!(
            resources,
            vec![
                Resource::Cluster,
                Resource::Any,
                Resource::AnyNormal,
                Resource::CollectionInAnyDatabase("c".into()),
                Resource::Database("app".into()),
                Resource::collection("app", "c"),
            ]
        );
        let message =
            |values: Vec<Bson>| parse_privileges(&values).unwrap_err().message().to_string();
        assert_eq!(
            message(vec![
                doc! {"resource": {"db": "a", "collection": ""}, "actions": ["fly", "find", "jump"]}
                    .into()
            ]),
            "Unknown action types in privilege set: 'fly', 'jump'"
        );
        assert_eq!(
            message(vec![
                doc! {"resource": {"cluster": true, "db": "a"}, "actions": ["find"]}.into()
            ]),
            "resource: {cluster: true} conflicts with resource type 'db'"
        );
        assert_eq!(
            message(vec![
                doc! {"resource": {"db": "a"}, "actions": ["find"]}.into()
            ]),
            "resource pattern must contain 'collection' or 'systemBuckets' specifier"
        );
        assert_eq!(
            message(vec![
                doc! {"resource": {"db": "a", "collection": ""}, "actions": []}.into()
            ]),
            "'actions' field of privilege resource must not be empty"
        );
    }
}
