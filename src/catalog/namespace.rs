//! Database and collection name rules, with MongoDB's errors.

use crate::error::{ErrorCode, MongoError, Result};

/// Longest database name MongoDB accepts.
const MAX_DB_NAME: usize = 63;
/// Longest `db.collection` MongoDB accepts.
const MAX_NAMESPACE: usize = 255;

pub fn validate_db_name(db: &str) -> Result<()> {
    let bad = db.is_empty()
        || db.len() > MAX_DB_NAME
        || db
            .chars()
            .any(|c| matches!(c, '/' | '\\' | '.' | ' ' | '"' | '$' | '\0'));
    if bad {
        return Err(MongoError::new(
            ErrorCode::InvalidNamespace,
            format!("Invalid database name: '{db}'"),
        ));
    }
    Ok(())
}

pub fn validate_collection_name(db: &str, coll: &str) -> Result<()> {
    validate_db_name(db)?;
    let ns = format!("{db}.{coll}");
    if coll.is_empty()
        || coll.starts_with('.')
        || coll.contains('\0')
        || (coll.contains('$') && !coll.starts_with("$cmd"))
    {
        return Err(MongoError::new(
            ErrorCode::InvalidNamespace,
            format!("Invalid namespace specified '{ns}'"),
        ));
    }
    if ns.len() > MAX_NAMESPACE {
        return Err(MongoError::new(
            ErrorCode::InvalidNamespace,
            format!("Fully qualified namespace is too long. Namespace: {ns} Max: {MAX_NAMESPACE}"),
        ));
    }
    Ok(())
}

/// Splits a full namespace `db.collection` at its first dot.
pub fn split_namespace(ns: &str) -> Result<(&str, &str)> {
    ns.split_once('.')
        .filter(|(db, coll)| !db.is_empty() && !coll.is_empty())
        .ok_or_else(|| MongoError::invalid_namespace(format!("Invalid namespace specified '{ns}'")))
}

/// Users may not write to most `system.*` collections or to internal databases' collections.
pub fn validate_user_write(db: &str, coll: &str) -> Result<()> {
    validate_collection_name(db, coll)?;
    let allowed_system = ["system.js", "system.views", "system.profile"];
    // `config.system.sessions` is where routers flush their logical session caches.
    let sessions = db == "config" && coll == "system.sessions";
    if coll.starts_with("system.")
        && !allowed_system.contains(&coll)
        && !coll.starts_with("system.buckets.")
        && !sessions
    {
        return Err(MongoError::new(
            ErrorCode::InvalidNamespace,
            format!("cannot write to '{db}.{coll}'"),
        ));
    }
    if db == "local" && coll != "startup_log" {
        // A single-node shard has no oplog; `local` holds nothing users may write.
        return Ok(());
    }
    Ok(())
}

/// What any rename of `source` to `target` (full namespaces) must satisfy: both are names users
/// may write to, and they differ.
pub fn check_rename(source: &str, target: &str) -> Result<()> {
    let (from_db, from) = split_namespace(source)?;
    let (to_db, to) = split_namespace(target)?;
    validate_user_write(from_db, from)?;
    validate_user_write(to_db, to)?;
    if source == target {
        return Err(MongoError::new(
            ErrorCode::IllegalOperation,
            "Can't rename a collection to itself",
        ));
    }
    Ok(())
}

/// Namespaces MongoDB refuses to shard.
pub fn check_shardable(db: &str, coll: &str) -> Result<()> {
    if matches!(db, "admin" | "local") || (db == "config" && coll != "system.sessions") {
        return Err(MongoError::new(
            ErrorCode::IllegalOperation,
            format!(
                "can't shard {db}.{coll}: only config.system.sessions may be sharded among the internal databases"
            ),
        ));
    }
    if coll.starts_with("system.") && !(db == "config" && coll == "system.sessions") {
        return Err(MongoError::new(
            ErrorCode::IllegalOperation,
            format!("can't shard system namespaces {db}.{coll}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_names_mongodb_rejects() {
        assert!(validate_db_name("app").is_ok());
        assert!(validate_db_name("a.b").is_err());
        assert!(validate_db_name("").is_err());
        assert!(validate_collection_name("app", "users").is_ok());
        assert!(validate_collection_name("app", "").is_err());
        assert!(validate_collection_name("app", "a$b").is_err());
        assert!(validate_user_write("app", "system.users").is_err());
        assert!(validate_user_write("app", "system.js").is_ok());
    }

    #[test]
    fn renames_go_to_another_writable_name() {
        assert!(check_rename("app.a", "app.b").is_ok());
        assert!(check_rename("app.a", "other.a").is_ok());
        let code = |from, to| check_rename(from, to).unwrap_err().code();
        assert_eq!(code("app.a", "app.a"), ErrorCode::IllegalOperation);
        assert_eq!(
            code("app.a", "app.system.users"),
            ErrorCode::InvalidNamespace
        );
        assert_eq!(code("app.a", "app"), ErrorCode::InvalidNamespace);
    }

    #[test]
    fn internal_namespaces_cannot_be_sharded() {
        assert!(check_shardable("admin", "c").is_err());
        assert!(check_shardable("config", "chunks").is_err());
        assert!(check_shardable("config", "system.sessions").is_ok());
        assert!(check_shardable("app", "system.views").is_err());
        assert!(check_shardable("app", "users").is_ok());
    }
}
