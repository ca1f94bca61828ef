//! The `$currentOp` stage's specification and where it may run, shared by routers (which
//! gather it from every shard) and the nodes that answer it from their own operations.

use crate::document::types::type_name;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document};

pub const STAGE: &str = "$currentOp";

/// `$currentOp`'s options (MongoDB's defaults: active operations of the current user, the
/// router's shards rather than its own operations, commands not truncated).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct CurrentOpSpec {
    pub all_users: bool,
    pub idle_connections: bool,
    /// Default true: sessions holding a transaction between its commands.
    pub idle_sessions: bool,
    pub local_ops: bool,
    pub truncate_ops: bool,
    pub idle_cursors: bool,
    /// Backtraces of operations waiting for a lock: docgrid operations never wait for one.
    pub backtrace: bool,
    /// Every node of every shard: each docgrid shard is one node.
    pub target_all_nodes: bool,
}

impl CurrentOpSpec {
    pub fn parse(spec: &Bson) -> Result<CurrentOpSpec> {
        let Bson::Document(options) = spec else {
            return Err(MongoError::failed_to_parse(format!(
                "$currentOp options must be specified in an object, but found: {}",
                type_name(spec)
            )));
        };
        let mut out = CurrentOpSpec {
            idle_sessions: true,
            ..CurrentOpSpec::default()
        };
        for (name, value) in options {
            let slot = match name.as_str() {
                "allUsers" => &mut out.all_users,
                "idleConnections" => &mut out.idle_connections,
                "idleSessions" => &mut out.idle_sessions,
                "localOps" => &mut out.local_ops,
                "truncateOps" => &mut out.truncate_ops,
                "idleCursors" => &mut out.idle_cursors,
                "backtrace" => &mut out.backtrace,
                "targetAllNodes" => &mut out.target_all_nodes,
                other => {
                    return Err(MongoError::failed_to_parse(format!(
                        "Unrecognized option '{other}' in $currentOp stage."
                    )));
                }
            };
            match value {
                Bson::Boolean(b) => *slot = *b,
                other => {
                    return Err(MongoError::failed_to_parse(format!(
                        "The '{name}' parameter of the $currentOp stage must be a boolean value, but found: {}",
                        type_name(other)
                    )));
                }
            }
        }
        if out.idle_cursors {
            return Err(MongoError::new(
                ErrorCode::NotImplemented,
                "$currentOp with idleCursors is not supported yet: docgrid does not report idle cursors",
            ));
        }
        Ok(out)
    }

    /// The stage as sent to the shards: their own operations.
    pub fn for_shards(&self) -> Document {
        let mut spec = Document::new();
        spec.insert("allUsers", self.all_users);
        spec.insert("idleConnections", self.idle_connections);
        spec.insert("idleSessions", self.idle_sessions);
        spec.insert("truncateOps", self.truncate_ops);
        spec.insert("backtrace", self.backtrace);
        spec
    }
}

/// `$currentOp` runs on `admin` with `{aggregate: 1}` only.
pub fn check_namespace(db: &str, collectionless: bool) -> Result<()> {
    if db == "admin" && collectionless {
        Ok(())
    } else {
        Err(MongoError::new(
            ErrorCode::InvalidNamespace,
            "$currentOp must be run against the 'admin' database with {aggregate: 1}",
        ))
    }
}

/// The stages whose documents come from the server rather than a collection: each must come
/// first (MongoDB's error 40602 otherwise).
pub const SOURCE_STAGES: [&str; 5] = [
    "$currentOp",
    "$listLocalSessions",
    "$listSessions",
    "$indexStats",
    "$planCacheStats",
];

/// Refuses a pipeline naming a server source stage anywhere but first.
pub fn check_sources_first(stages: &[Document]) -> Result<()> {
    for stage in stages.iter().skip(1) {
        if let Some(name) = stage.keys().next() {
            if SOURCE_STAGES.contains(&name.as_str()) {
                return Err(MongoError::location(
                    40602,
                    format!("{name} is only valid as the first stage in a pipeline."),
                ));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn options_and_their_errors() {
        let spec = CurrentOpSpec::parse(&Bson::Document(
            doc! {"allUsers": true, "localOps": true, "idleConnections": false},
        ))
        .unwrap();
        assert!(spec.all_users && spec.local_ops && spec.idle_sessions);
        assert!(!spec.idle_connections);
        let code = |spec: Bson| CurrentOpSpec::parse(&spec).unwrap_err().code().code();
        assert_eq!(code(Bson::Int32(1)), 9);
        assert_eq!(code(Bson::Document(doc! {"allUsers": 1})), 9);
        assert_eq!(code(Bson::Document(doc! {"bogus": true})), 9);
        assert_eq!(code(Bson::Document(doc! {"idleCursors": true})), 238);
        assert!(CurrentOpSpec::parse(&Bson::Document(doc! {"idleCursors": false})).is_ok());
    }

    #[test]
    fn where_it_may_run() {
        assert!(check_namespace("admin", true).is_ok());
        assert_eq!(check_namespace("app", true).unwrap_err().code().code(), 73);
        assert_eq!(
            check_namespace("admin", false).unwrap_err().code().code(),
            73
        );
        let late = [doc! {"$match": {}}, doc! {"$indexStats": {}}];
        let err = check_sources_first(&late).unwrap_err();
        assert_eq!(err.code().code(), 40602);
        assert_eq!(
            err.message(),
            "$indexStats is only valid as the first stage in a pipeline."
        );
        assert!(check_sources_first(&[doc! {"$currentOp": {}}, doc! {"$match": {}}]).is_ok());
    }
}
