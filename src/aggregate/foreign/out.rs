//! `$out`: replaces a collection with the pipeline's output, all at once — the documents go
//! into a temporary collection with the target's options and indexes, which is then renamed
//! over the target (a crash leaves only the temporary collection, dropped at startup).

use super::{Host, write_outcome};
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::value::bson_type_name;
use bson::{Bson, Document, doc};

/// The prefix of `$out`'s temporary collections (MongoDB's).
pub const TEMP_PREFIX: &str = "tmp.agg_out.";
/// Most bytes of documents per insert command.
const INSERT_BATCH_BYTES: usize = 8 * 1024 * 1024;
/// Databases no pipeline writes to.
pub(super) const INTERNAL_DATABASES: &[&str] = &["admin", "config", "local"];

pub struct Out {
    /// `None`: the pipeline's database.
    db: Option<String>,
    coll: String,
    options: Document,
}

pub fn parse(spec: &Bson) -> Result<Out> {
    match spec {
        Bson::String(coll) => Ok(Out {
            db: None,
            coll: coll.clone(),
            options: Document::new(),
        }),
        Bson::Document(spec) => {
            let mut out = Out {
                db: None,
                coll: String::new(),
                options: Document::new(),
            };
            let mut has_coll = false;
            for (name, value) in spec {
                match (name.as_str(), value) {
                    ("db", Bson::String(db)) => out.db = Some(db.clone()),
                    ("coll", Bson::String(coll)) => {
                        out.coll = coll.clone();
                        has_coll = true;
                    }
                    ("timeseries", Bson::Document(options)) => {
                        out.options.insert("timeseries", options.clone());
                    }
                    ("db" | "coll" | "timeseries", other) => {
                        let expected = if name == "timeseries" {
                            "object"
                        } else {
                            "string"
                        };
                        return Err(MongoError::type_mismatch(format!(
                            "BSON field '$out.{name}' is the wrong type '{}', expected type '{expected}'",
                            bson_type_name(other)
                        )));
                    }
                    _ => {
                        return Err(MongoError::location(
                            40415,
                            format!("BSON field '$out.{name}' is an unknown field."),
                        ));
                    }
                }
            }
            if !has_coll {
                return Err(MongoError::location(
                    40414,
                    "BSON field '$out.coll' is missing but a required field",
                ));
            }
            Ok(out)
        }
        other => Err(MongoError::location(
            16990,
            format!(
                "$out only supports a string or object argument, but found {}",
                bson_type_name(other)
            ),
        )),
    }
}

/// The sharding of `db.coll` as the config server records it (`None`: not sharded).
pub(super) async fn shard_key(host: &Host<'_>, db: &str, coll: &str) -> Result<Option<Document>> {
    let reply = host
        .runner
        .run_command(
            "config",
            doc! {"find": "collections", "filter": {"_id": format!("{db}.{coll}")}, "limit": 1},
        )
        .await?;
    let first = reply
        .get_document("cursor")
        .ok()
        .and_then(|c| c.get_array("firstBatch").ok())
        .and_then(|batch| batch.first())
        .and_then(Bson::as_document);
    Ok(first.map(|entry| entry.get_document("key").cloned().unwrap_or_default()))
}

/// The entry `listCollections` gives for `db.coll`, if it exists.
pub(super) async fn collection_info(
    host: &Host<'_>,
    db: &str,
    coll: &str,
) -> Result<Option<Document>> {
    let reply = host
        .runner
        .run_command(db, doc! {"listCollections": 1, "filter": {"name": coll}})
        .await?;
    Ok(reply
        .get_document("cursor")
        .ok()
        .and_then(|c| c.get_array("firstBatch").ok())
        .and_then(|batch| batch.first())
        .and_then(Bson::as_document)
        .cloned())
}

/// The index specifications of `db.coll` (none when it does not exist).
pub(super) async fn indexes(host: &Host<'_>, db: &str, coll: &str) -> Result<Vec<Document>> {
    match host
        .runner
        .run_command(db, doc! {"listIndexes": coll, "cursor": {}})
        .await
    {
        Ok(reply) => Ok(reply
            .get_document("cursor")
            .ok()
            .and_then(|c| c.get_array("firstBatch").ok())
            .into_iter()
            .flatten()
            .filter_map(Bson::as_document)
            .cloned()
            .collect()),
        Err(e) if e.code() == ErrorCode::NamespaceNotFound => Ok(Vec::new()),
        Err(e) => Err(e),
    }
}

impl Out {
    pub async fn run(&self, docs: Vec<Document>, host: &Host<'_>) -> Result<()> {
        let db = self.db.as_deref().unwrap_or(host.db);
        let coll = self.coll.as_str();
        if crate::catalog::validate_collection_name(db, coll).is_err() {
            return Err(MongoError::invalid_namespace(format!(
                "Invalid $out target namespace, {db}.{coll}"
            )));
        }
        if coll.starts_with("system.") {
            return Err(MongoError::location(
                17385,
                format!("Can't $out to special collection: {coll}"),
            ));
        }
        if INTERNAL_DATABASES.contains(&db) {
            return Err(MongoError::location(
                31321,
                format!("Can't $out to internal database: {db}"),
            ));
        }
        if shard_key(host, db, coll).await?.is_some() {
            return Err(MongoError::location(
                28769,
                format!("{db}.{coll} cannot be sharded"),
            ));
        }
        let mut create = doc! {"create": format!("{TEMP_PREFIX}{}", uuid::Uuid::new_v4())};
        if let Some(info) = collection_info(host, db, coll).await? {
            if info.get_str("type") == Ok("view") {
                return Err(MongoError::new(
                    ErrorCode::CommandNotSupportedOnView,
                    format!("Cannot write to a view: {db}.{coll}"),
                ));
            }
            let options = info.get_document("options").cloned().unwrap_or_default();
            if options.get_bool("capped") == Ok(true) {
                return Err(MongoError::location(
                    17152,
                    format!("namespace '{db}.{coll}' is capped so it can't be used for $out"),
                ));
            }
            for (name, value) in options {
                create.insert(name, value);
            }
        }
        for (name, value) in &self.options {
            create.insert(name.clone(), value.clone());
        }
        let temp = create.get_str("create").unwrap_or_default().to_string();
        let written = self.fill(host, db, coll, &temp, create, docs).await;
        if written.is_err() {
            let _ = host.runner.run_command(db, doc! {"drop": &temp}).await;
        }
        written
    }

    /// Creates the temporary collection, copies the target's indexes onto it, inserts the
    /// documents and renames it over the target.
    async fn fill(
        &self,
        host: &Host<'_>,
        db: &str,
        coll: &str,
        temp: &str,
        create: Document,
        docs: Vec<Document>,
    ) -> Result<()> {
        host.runner.run_command(db, create).await?;
        let specs: Vec<Bson> = indexes(host, db, coll)
            .await?
            .into_iter()
            .filter(|spec| spec.get_str("name") != Ok("_id_"))
            .map(|mut spec| {
                spec.remove("v");
                Bson::Document(spec)
            })
            .collect();
        if !specs.is_empty() {
            host.runner
                .run_command(db, doc! {"createIndexes": temp, "indexes": specs})
                .await
                .map_err(|e| {
                    MongoError::new(
                        e.code(),
                        format!(
                            "copying index for $out failed. :: caused by :: {}",
                            e.message()
                        ),
                    )
                })?;
        }
        let mut batch: Vec<Document> = Vec::new();
        let mut bytes = 0;
        for doc in docs {
            let size = bson::to_vec(&doc).map(|b| b.len()).unwrap_or(0);
            if !batch.is_empty() && bytes + size > INSERT_BATCH_BYTES {
                insert(host, db, temp, std::mem::take(&mut batch)).await?;
                bytes = 0;
            }
            bytes += size;
            batch.push(doc);
        }
        if !batch.is_empty() {
            insert(host, db, temp, batch).await?;
        }
        let rename = doc! {
            "renameCollection": format!("{db}.{temp}"),
            "to": format!("{db}.{coll}"),
            "dropTarget": true,
        };
        host.run_write("admin", rename).await?;
        Ok(())
    }
}

/// Inserts `docs` into `db.coll` in order, failing on the first write error.
pub(super) async fn insert(
    host: &Host<'_>,
    db: &str,
    coll: &str,
    docs: Vec<Document>,
) -> Result<()> {
    let command = doc! {"insert": coll, "documents": docs, "ordered": true};
    let reply = host.run_write(db, command).await?;
    write_outcome(&reply)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(spec: Bson) -> i32 {
        match parse(&spec) {
            Ok(_) => 0,
            Err(e) => e.code().code(),
        }
    }

    #[test]
    fn specifications_are_checked_as_mongodb_does() {
        assert_eq!(code(Bson::String("out".into())), 0);
        assert_eq!(code(Bson::Document(doc! {"db": "d", "coll": "c"})), 0);
        assert_eq!(code(Bson::Document(doc! {"db": "d"})), 40414);
        assert_eq!(code(Bson::Document(doc! {"coll": "c", "x": 1})), 40415);
        assert_eq!(code(Bson::Document(doc! {"coll": 1})), 14);
        assert_eq!(code(Bson::Int32(1)), 16990);
    }
}
