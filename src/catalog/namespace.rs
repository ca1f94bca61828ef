//! Database and collection name rules, with MongoDB's errors: what any command accepts as a
//! name, and what may be written or created.

use crate::error::{ErrorCode, MongoError, Result};

/// Longest database name MongoDB accepts.
const MAX_DB_NAME: usize = 63;
/// Longest `db.collection` MongoDB creates or writes to.
const MAX_NAMESPACE: usize = 255;

fn invalid(message: String) -> MongoError {
    MongoError::new(ErrorCode::InvalidNamespace, message)
}

/// What MongoDB refuses when it reads a database name off a request (`$db`), before it looks
/// at the command: a dot, a NUL, more than 63 bytes.
pub fn check_database_name(db: &str) -> Result<()> {
    if db.contains('.') {
        return Err(invalid(format!(
            "'.' is an invalid character in a db name: {db}"
        )));
    }
    if db.contains('\0') {
        return Err(invalid(
            "database names cannot have embedded null characters".into(),
        ));
    }
    if db.len() > MAX_DB_NAME {
        return Err(invalid(format!(
            "db name must be at most {MAX_DB_NAME} characters, found: {}",
            db.len()
        )));
    }
    Ok(())
}

/// MongoDB's `validDBName`: non-empty, shorter than 64 bytes, none of `/\. "` or NUL, and `$`
/// only where allowed. (MongoDB on Linux, like docgrid, accepts `*<>:|?`, which only its
/// Windows builds refuse.)
pub fn valid_db_name(db: &str, allow_dollar: bool) -> bool {
    !db.is_empty()
        && db.len() <= MAX_DB_NAME
        && !db.chars().any(|c| {
            matches!(c, '/' | '\\' | '.' | ' ' | '"' | '\0') || (c == '$' && !allow_dollar)
        })
}

/// The check every command's database gets: `Invalid database name: '<db>'`.
pub fn validate_db_name(db: &str) -> Result<()> {
    check_database_name(db)?;
    if !valid_db_name(db, true) {
        return Err(invalid(format!("Invalid database name: '{db}'")));
    }
    Ok(())
}

/// A namespace a command names to read or act on (MongoDB's `NamespaceString` and `isValid`):
/// a valid database and a non-empty collection that does not start with a dot. `$` is allowed
/// here (reading `a$b` finds nothing); creating or writing such a name is refused by
/// [`validate_user_create`] and [`validate_user_write`].
pub fn validate_collection_name(db: &str, coll: &str) -> Result<()> {
    check_database_name(db)?;
    if coll.starts_with('.') {
        return Err(invalid(format!(
            "Collection names cannot start with '.': {coll}"
        )));
    }
    if coll.contains('\0') {
        return Err(invalid(
            "namespaces cannot have embedded null characters".into(),
        ));
    }
    if coll.is_empty() || !valid_db_name(db, true) {
        return Err(invalid(format!(
            "Invalid namespace specified '{db}.{coll}'"
        )));
    }
    Ok(())
}

/// MongoDB's `validCollectionName`: non-empty, no leading dot, no `$`, no NUL.
fn valid_collection_name(coll: &str) -> bool {
    !coll.is_empty() && !coll.starts_with('.') && !coll.contains(['$', '\0'])
}

/// The `system.*` collections clients may create and write (MongoDB's `isLegalClientSystemNS`).
fn legal_client_system(db: &str, coll: &str) -> bool {
    let per_db = match db {
        "admin" => matches!(
            coll,
            "system.roles"
                | "system.version"
                | "system.keys"
                | "system.backup_users"
                | "system.new_users"
        ),
        "config" => matches!(
            coll,
            "system.sessions"
                | "system.indexBuilds"
                | "system.sharding_ddl_coordinators"
                | "system.preimages"
        ),
        "local" => matches!(coll, "system.replset" | "system.healthlog"),
        _ => false,
    };
    per_db
        || matches!(coll, "system.users" | "system.js" | "system.views")
        || coll.starts_with("system.resharding.")
        || coll
            .strip_prefix("system.buckets.")
            .is_some_and(valid_collection_name)
}

/// What MongoDB allows a client to create (`userAllowedCreateNS`), with its messages.
pub fn validate_user_create(db: &str, coll: &str) -> Result<()> {
    validate_collection_name(db, coll)?;
    let ns = format!("{db}.{coll}");
    if !valid_db_name(db, false) {
        return Err(invalid(format!("Invalid namespace: {ns}")));
    }
    if !valid_collection_name(coll) {
        return Err(invalid(format!("Invalid collection name: {coll}")));
    }
    if coll == "system.profile" {
        return Ok(());
    }
    if coll.starts_with("system.") && !legal_client_system(db, coll) {
        return Err(invalid(format!("Invalid system namespace: {ns}")));
    }
    if !coll.starts_with("system.") && ns.len() > MAX_NAMESPACE {
        return Err(invalid(format!(
            "Fully qualified namespace is too long. Namespace: {ns} Max: {MAX_NAMESPACE}"
        )));
    }
    // A collection named like `x.system.y` is refused, except the sharded session
    // collection's metadata on the config server.
    if coll.contains(".system.") && !(db == "config" && legal_client_system(db, coll)) {
        return Err(MongoError::bad_value(format!("Invalid namespace: {ns}")));
    }
    Ok(())
}

/// What MongoDB allows a client to write (`userAllowedWriteNS`): what it may create, except
/// the profiler's and the views' catalogs, which only the server writes.
pub fn validate_user_write(db: &str, coll: &str) -> Result<()> {
    validate_collection_name(db, coll)?;
    if matches!(coll, "system.profile" | "system.views") {
        return Err(invalid(format!("cannot write to {db}.{coll}")));
    }
    validate_user_create(db, coll)
}

/// Splits a full namespace `db.collection` at its first dot.
pub fn split_namespace(ns: &str) -> Result<(&str, &str)> {
    ns.split_once('.')
        .filter(|(db, coll)| !db.is_empty() && !coll.is_empty())
        .ok_or_else(|| MongoError::invalid_namespace(format!("Invalid namespace specified '{ns}'")))
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

    fn message(result: Result<()>) -> String {
        let err = result.unwrap_err();
        assert_eq!(err.code(), ErrorCode::InvalidNamespace, "{err:?}");
        err.message().to_string()
    }

    #[test]
    fn database_names_as_mongodb_reads_them() {
        assert!(validate_db_name("app").is_ok());
        assert!(
            validate_db_name("a$b").is_ok(),
            "$ is refused only on creation"
        );
        assert!(
            validate_db_name("a*b<c>").is_ok(),
            "only Windows refuses these"
        );
        assert!(validate_db_name(&"a".repeat(63)).is_ok());
        assert_eq!(
            message(validate_db_name(&"a".repeat(64))),
            "db name must be at most 63 characters, found: 64"
        );
        assert_eq!(
            message(validate_db_name("a.b")),
            "'.' is an invalid character in a db name: a.b"
        );
        assert_eq!(
            message(validate_db_name("a\0b")),
            "database names cannot have embedded null characters"
        );
        for bad in ["", "a/b", "a\\b", "a b", "a\"b"] {
            assert_eq!(
                message(validate_db_name(bad)),
                format!("Invalid database name: '{bad}'")
            );
        }
    }

    #[test]
    fn namespaces_commands_read() {
        assert!(validate_collection_name("app", "users").is_ok());
        assert!(validate_collection_name("app", "a$b").is_ok());
        assert!(validate_collection_name("app", "a.b c").is_ok());
        assert_eq!(
            message(validate_collection_name("app", "")),
            "Invalid namespace specified 'app.'"
        );
        assert_eq!(
            message(validate_collection_name("app", ".x..")),
            "Collection names cannot start with '.': .x.."
        );
        assert_eq!(
            message(validate_collection_name("app", "a\0")),
            "namespaces cannot have embedded null characters"
        );
        assert_eq!(
            message(validate_collection_name("a b", "c")),
            "Invalid namespace specified 'a b.c'"
        );
    }

    #[test]
    fn what_users_may_create_and_write() {
        assert!(validate_user_create("app", "system.views").is_ok());
        assert!(validate_user_create("app", "system.users").is_ok());
        assert!(validate_user_create("app", "system.buckets.m").is_ok());
        assert!(validate_user_create("config", "system.sessions").is_ok());
        assert!(validate_user_create("admin", "system.version").is_ok());
        assert_eq!(
            message(validate_user_create("app", "a$b")),
            "Invalid collection name: a$b"
        );
        assert_eq!(
            message(validate_user_create("a$b", "c")),
            "Invalid namespace: a$b.c"
        );
        assert_eq!(
            message(validate_user_create("app", "system.foo")),
            "Invalid system namespace: app.system.foo"
        );
        assert_eq!(
            message(validate_user_create("app", "system.version")),
            "Invalid system namespace: app.system.version"
        );
        let long = "x".repeat(300);
        assert_eq!(
            message(validate_user_create("app", &long)),
            format!("Fully qualified namespace is too long. Namespace: app.{long} Max: 255")
        );
        assert_eq!(
            validate_user_create("app", "a.system.b")
                .unwrap_err()
                .code(),
            ErrorCode::BadValue
        );
        assert_eq!(
            message(validate_user_write("app", "system.views")),
            "cannot write to app.system.views"
        );
        assert_eq!(
            message(validate_user_write("app", "system.profile")),
            "cannot write to app.system.profile"
        );
        assert!(validate_user_write("app", "system.js").is_ok());
    }

    #[test]
    fn renames_go_to_another_writable_name() {
        assert!(check_rename("app.a", "app.b").is_ok());
        assert!(check_rename("app.a", "other.a").is_ok());
        let code = |from, to| check_rename(from, to).unwrap_err().code();
        assert_eq!(code("app.a", "app.a"), ErrorCode::IllegalOperation);
        assert_eq!(code("app.a", "app.system.foo"), ErrorCode::InvalidNamespace);
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
