//! A request's sharding state (MongoDB's OperationShardingState), parsed once per request: the
//! versions a router attached — `shardVersion`, `databaseVersion`, or per `nsInfo` entry for
//! `bulkWrite` — and the namespaces they apply to. The one definition of "versioned".

use super::{CommandRequest, bson_type_name};
use crate::catalog::{ChunkVersion, DatabaseVersion, split_namespace};
use crate::error::{ErrorCode, MongoError, Result};
use bson::{RawBsonRef, RawDocument};

/// One namespace of a versioned request.
#[derive(Clone, Debug, PartialEq)]
pub struct NamespaceVersion {
    /// `db.collection`.
    pub ns: String,
    /// The `shardVersion` a router attached for it.
    pub shard_version: Option<ChunkVersion>,
    /// The version the shard checks it against: the attached shard version, or UNSHARDED when
    /// a database version came for it alone (its router believes it unsharded); `None`: the
    /// collection's placement is not checked.
    pub expected: Option<ChunkVersion>,
}

/// What a router attached to one request. A request is *versioned* when it carries a
/// `shardVersion` or a `databaseVersion` (at its top level, or for `bulkWrite` in an `nsInfo`
/// entry); a request sent to a node directly carries neither.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ShardingState {
    /// The database the versions are about; `None` when the request is not versioned.
    db: Option<String>,
    database_version: Option<DatabaseVersion>,
    /// The collections the request is about, with their versions (empty when not versioned).
    namespaces: Vec<NamespaceVersion>,
    /// `bulkWrite`: the namespaces are its `nsInfo`, each versioned on its own.
    per_namespace: bool,
}

impl ShardingState {
    /// Reads the versions of `request`, failing as MongoDB does on malformed ones.
    ///
    /// For most commands the versions apply to the namespace the command names (for `explain`,
    /// the explained command's; `aggregate: 1` names none). `bulkWrite` is sent to `admin`:
    /// its database is the one database of its `nsInfo` namespaces (routers send one
    /// database's operations per request), a top-level `databaseVersion` applies to that
    /// database, and each entry's `shardVersion` / `databaseVersion` to its namespace.
    pub fn parse(request: &CommandRequest) -> Result<ShardingState> {
        let args = request.args();
        let shard_version = match args.get("shardVersion")? {
            None => None,
            Some(RawBsonRef::Document(d)) => {
                Some(ChunkVersion::from_document(&d.to_owned().to_document()?)?)
            }
            Some(_) => {
                return Err(MongoError::new(
                    ErrorCode::Location(10065),
                    "invalid parameter: expected an object (shardVersion)",
                ));
            }
        };
        let database_version = match args.get("databaseVersion")? {
            None => None,
            Some(RawBsonRef::Document(d)) => Some(DatabaseVersion::from_document(
                &d.to_owned().to_document()?,
            )?),
            Some(other) => {
                let shown = bson::Bson::try_from(other.to_raw_bson())
                    .map(|v| v.to_string())
                    .unwrap_or_default();
                return Err(MongoError::bad_value(format!(
                    "expected databaseVersion element to be an object, got databaseVersion: {shown}"
                )));
            }
        };
        let versioned = shard_version.is_some() || database_version.is_some();
        if request.name() == "bulkWrite" {
            return Self::parse_bulk_write(request, database_version, versioned);
        }
        if !versioned {
            return Ok(ShardingState::default());
        }
        let namespaces = named_namespace(request)
            .map(|ns| NamespaceVersion {
                ns,
                shard_version,
                expected: shard_version.or(database_version.map(|_| ChunkVersion::unsharded())),
            })
            .into_iter()
            .collect();
        Ok(ShardingState {
            db: Some(request.db.clone()),
            database_version,
            namespaces,
            per_namespace: false,
        })
    }

    fn parse_bulk_write(
        request: &CommandRequest,
        mut database_version: Option<DatabaseVersion>,
        mut versioned: bool,
    ) -> Result<ShardingState> {
        let entries = match request.document_array("nsInfo") {
            Ok(entries) => entries,
            // Not versioned: the command's own parse reports it.
            Err(_) if !versioned => return Ok(ShardingState::default()),
            Err(e) => return Err(e),
        };
        let mut namespaces = Vec::with_capacity(entries.len());
        for entry in entries {
            let ns = match entry.get("ns")? {
                Some(RawBsonRef::String(ns)) => ns,
                _ => continue,
            };
            let shard_version = entry_version(entry, "shardVersion")?
                .map(|d| ChunkVersion::from_document(&d))
                .transpose()?;
            let entry_database_version = entry_version(entry, "databaseVersion")?
                .map(|d| DatabaseVersion::from_document(&d))
                .transpose()?;
            if let Some(version) = entry_database_version {
                match database_version {
                    Some(other) if other != version => {
                        return Err(MongoError::bad_value(
                            "a versioned bulkWrite must carry one databaseVersion",
                        ));
                    }
                    _ => database_version = Some(version),
                }
            }
            versioned |= shard_version.is_some() || entry_database_version.is_some();
            namespaces.push(NamespaceVersion {
                ns: ns.to_string(),
                shard_version,
                expected: shard_version
                    .or(entry_database_version.map(|_| ChunkVersion::unsharded())),
            });
        }
        if !versioned {
            return Ok(ShardingState::default());
        }
        let mut db: Option<&str> = None;
        for namespace in &namespaces {
            let (name, _) = split_namespace(&namespace.ns)?;
            match db {
                Some(d) if d != name => {
                    return Err(MongoError::bad_value(
                        "a versioned bulkWrite must write to a single database",
                    ));
                }
                _ => db = Some(name),
            }
        }
        let db = db.unwrap_or(&request.db).to_string();
        Ok(ShardingState {
            db: Some(db),
            database_version,
            namespaces,
            per_namespace: true,
        })
    }

    /// Whether a router versioned the request (see the type's documentation).
    pub fn is_versioned(&self) -> bool {
        self.db.is_some()
    }

    /// The database a versioned request is about.
    pub fn database(&self) -> Option<&str> {
        self.db.as_deref()
    }

    /// The `databaseVersion` the router attached.
    pub fn database_version(&self) -> Option<DatabaseVersion> {
        self.database_version
    }

    /// The collections a versioned request is about, with their versions.
    pub fn namespaces(&self) -> &[NamespaceVersion] {
        &self.namespaces
    }

    /// The collection whose ownership filter the request runs under: the one it names, when a
    /// router attached a shard version for it (not `bulkWrite`'s, whose operations each have
    /// their own).
    pub fn filtered_namespace(&self) -> Option<&str> {
        match self.namespaces.as_slice() {
            [one] if !self.per_namespace && one.shard_version.is_some() => Some(&one.ns),
            _ => None,
        }
    }
}

/// An `nsInfo` entry's version field, which must be an object (IDL's TypeMismatch otherwise).
fn entry_version(entry: &RawDocument, field: &str) -> Result<Option<bson::Document>> {
    match entry.get(field)? {
        None => Ok(None),
        Some(RawBsonRef::Document(d)) => Ok(Some(d.to_owned().to_document()?)),
        Some(other) => Err(MongoError::type_mismatch(format!(
            "BSON field 'bulkWrite.nsInfo.{field}' is the wrong type '{}', expected type 'object'",
            bson_type_name(other.element_type())
        ))),
    }
}

/// The collection a command names (for `explain`, the explained command's); `None` for one
/// that names none (`aggregate: 1`).
fn named_namespace(request: &CommandRequest) -> Option<String> {
    let target = match request.name() {
        "explain" => match request.args().target() {
            Ok(RawBsonRef::Document(inner)) => inner.iter().next()?.ok()?.1,
            _ => return None,
        },
        _ => request.args().target().ok()?,
    };
    match target {
        RawBsonRef::String(coll) => Some(format!("{}.{coll}", request.db)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::CollectionGeneration;
    use bson::{Document, Timestamp, doc, oid::ObjectId};

    fn request(db: &str, body: Document) -> CommandRequest {
        CommandRequest::from_document(db, &body).unwrap()
    }

    fn chunk_version() -> ChunkVersion {
        let generation = CollectionGeneration {
            epoch: ObjectId::new(),
            timestamp: Timestamp {
                time: 3,
                increment: 1,
            },
        };
        ChunkVersion::new(generation, 2, 5)
    }

    fn database_version() -> DatabaseVersion {
        DatabaseVersion::new(Timestamp {
            time: 9,
            increment: 2,
        })
    }

    #[test]
    fn a_request_without_versions_is_not_versioned() {
        let state = request("app", doc! {"find": "c", "filter": {}})
            .sharding()
            .unwrap()
            .clone();
        assert!(!state.is_versioned());
        assert_eq!(state, ShardingState::default());
        assert_eq!(state.filtered_namespace(), None);
    }

    #[test]
    fn a_shard_version_applies_to_the_named_collection() {
        let version = chunk_version();
        let req = request(
            "app",
            doc! {"find": "c", "shardVersion": version.to_document()},
        );
        let state = req.sharding().unwrap();
        assert!(state.is_versioned());
        assert_eq!(state.database(), Some("app"));
        assert_eq!(state.database_version(), None);
        assert_eq!(
            state.namespaces(),
            [NamespaceVersion {
                ns: "app.c".into(),
                shard_version: Some(version),
                expected: Some(version),
            }]
        );
        assert_eq!(state.filtered_namespace(), Some("app.c"));
        // Parsed once: the same value again.
        assert!(std::ptr::eq(state, req.sharding().unwrap()));
        // A clone (which a router changes before sending it) parses its own body.
        let mut copy = req.clone();
        copy.body = bson::rawdoc! {"find": "c"};
        assert!(!copy.sharding().unwrap().is_versioned());
    }

    #[test]
    fn a_database_version_alone_expects_the_collection_unsharded() {
        let version = database_version();
        let state = ShardingState::parse(&request(
            "app",
            doc! {"explain": {"count": "c"}, "databaseVersion": version.to_document()},
        ))
        .unwrap();
        assert_eq!(state.database_version(), Some(version));
        assert_eq!(
            state.namespaces(),
            [NamespaceVersion {
                ns: "app.c".into(),
                shard_version: None,
                expected: Some(ChunkVersion::unsharded()),
            }]
        );
        assert_eq!(state.filtered_namespace(), None);
        // A command naming no collection is versioned for its database only.
        let state = ShardingState::parse(&request(
            "app",
            doc! {"aggregate": 1, "pipeline": [], "databaseVersion": version.to_document()},
        ))
        .unwrap();
        assert!(state.is_versioned());
        assert!(state.namespaces().is_empty());
    }

    #[test]
    fn bulk_write_is_versioned_per_namespace() {
        let (shard, db) = (chunk_version(), database_version());
        let body = |info: Vec<Document>, top: Option<Document>| {
            let mut body = doc! {"bulkWrite": 1, "ops": [], "nsInfo": info};
            if let Some(top) = top {
                body.insert("databaseVersion", top);
            }
            request("admin", body)
        };
        // As docgrid's router sends it: the database version at the top level.
        let state = ShardingState::parse(&body(
            vec![doc! {"ns": "app.a"}, doc! {"ns": "app.b"}],
            Some(db.to_document()),
        ))
        .unwrap();
        assert_eq!(state.database(), Some("app"));
        assert_eq!(state.database_version(), Some(db));
        assert!(state.namespaces().iter().all(|n| n.expected.is_none()));
        // As MongoDB's router sends it: per entry.
        let state = ShardingState::parse(&body(
            vec![
                doc! {"ns": "app.a", "shardVersion": shard.to_document()},
                doc! {"ns": "app.b", "databaseVersion": db.to_document()},
            ],
            None,
        ))
        .unwrap();
        assert!(state.is_versioned());
        assert_eq!(state.database_version(), Some(db));
        assert_eq!(state.namespaces()[0].expected, Some(shard));
        assert_eq!(
            state.namespaces()[1].expected,
            Some(ChunkVersion::unsharded())
        );
        assert_eq!(state.filtered_namespace(), None);
        // Unversioned: several databases are fine; versioned: refused.
        let several = vec![doc! {"ns": "a.x"}, doc! {"ns": "b.x"}];
        assert!(
            !ShardingState::parse(&body(several.clone(), None))
                .unwrap()
                .is_versioned()
        );
        let err = ShardingState::parse(&body(several, Some(db.to_document()))).unwrap_err();
        assert_eq!(err.code(), ErrorCode::BadValue);
    }

    #[test]
    fn malformed_versions_get_mongodb_errors() {
        let err = |db: &str, body: Document| ShardingState::parse(&request(db, body)).unwrap_err();
        let e = err("app", doc! {"find": "c", "shardVersion": 1});
        assert_eq!(e.code().code(), 10065);
        assert_eq!(
            e.message(),
            "invalid parameter: expected an object (shardVersion)"
        );
        let e = err("app", doc! {"find": "c", "databaseVersion": "x"});
        assert_eq!(e.code(), ErrorCode::BadValue);
        assert_eq!(
            e.message(),
            "expected databaseVersion element to be an object, got databaseVersion: \"x\""
        );
        let e = err("app", doc! {"find": "c", "shardVersion": {"e": 1}});
        assert_eq!(e.code(), ErrorCode::FailedToParse);
        let e = err(
            "admin",
            doc! {"bulkWrite": 1, "ops": [], "nsInfo": [{"ns": "app.a", "shardVersion": []}]},
        );
        assert_eq!(e.code(), ErrorCode::TypeMismatch);
        assert_eq!(
            e.message(),
            "BSON field 'bulkWrite.nsInfo.shardVersion' is the wrong type 'array', expected type 'object'"
        );
    }
}
