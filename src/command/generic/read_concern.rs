//! The `readConcern` argument, parsed as MongoDB parses it (levels, cluster times, how they
//! combine), and which commands accept which level. Each shard is one node whose reads see
//! every acknowledged write, so `local`, `majority`, `linearizable` and `available` read the
//! same data; `afterClusterTime` is waited for by the dispatcher (`server::clock`); `snapshot`
//! (and `atClusterTime`) needs point-in-time reads docgrid does not have yet, and is refused.

use super::CommandInfo;
use super::idl;
use crate::document::display::render_doc;
use crate::error::{ErrorCode, MongoError, Result};
use bson::spec::ElementType;
use bson::{Bson, Document, RawBsonRef, Timestamp, doc};

const LEVELS: [&str; 5] = ["local", "majority", "linearizable", "available", "snapshot"];

/// Commands that read with any level but `snapshot`.
const READS: &[&str] = &["find", "aggregate", "count", "distinct"];

/// Commands MongoDB runs at a snapshot outside transactions.
const SNAPSHOT_READS: &[&str] = &["find", "aggregate", "distinct"];

#[derive(Debug)]
pub(super) struct ReadConcern {
    level: Option<&'static str>,
    after_op_time: Option<Document>,
    after_cluster_time: Option<Timestamp>,
    at_cluster_time: Option<Timestamp>,
    provenance: Option<&'static str>,
}

fn invalid(message: &str) -> MongoError {
    MongoError::new(ErrorCode::InvalidOptions, message)
}

fn timestamp(path: &str, value: RawBsonRef<'_>) -> Result<Option<Timestamp>> {
    Ok(
        match idl::typed(path, Some(value), ElementType::Timestamp)? {
            Some(RawBsonRef::Timestamp(ts)) => Some(ts),
            _ => None,
        },
    )
}

/// `afterOpTime`: `{ts: Timestamp, t: long}`.
fn op_time(path: &str, value: RawBsonRef<'_>) -> Result<Option<Document>> {
    let Some(RawBsonRef::Document(doc)) =
        idl::typed(path, Some(value), ElementType::EmbeddedDocument)?
    else {
        return Ok(None);
    };
    let mut ts = false;
    for element in doc {
        let (name, value) = element?;
        match name {
            "ts" => {
                ts = idl::typed("OpTimeBase.ts", Some(value), ElementType::Timestamp)?.is_some()
            }
            "t" => {
                idl::typed("OpTimeBase.t", Some(value), ElementType::Int64)?;
            }
            _ => {}
        }
    }
    if !ts {
        return Err(idl::missing_field("OpTimeBase.ts"));
    }
    Ok(Some(Document::try_from(doc)?))
}

impl ReadConcern {
    pub fn parse(
        value: Option<RawBsonRef<'_>>,
        command: &CommandInfo<'_>,
    ) -> Result<Option<ReadConcern>> {
        let Some(value) = value else {
            return Ok(None);
        };
        let RawBsonRef::Document(doc) = value else {
            return Err(MongoError::failed_to_parse(
                "readConcern field should be an object",
            ));
        };
        let mut out = ReadConcern {
            level: None,
            after_op_time: None,
            after_cluster_time: None,
            at_cluster_time: None,
            provenance: None,
        };
        idl::strict_fields(
            "readConcern",
            doc,
            &[
                "level",
                "afterOpTime",
                "afterClusterTime",
                "atClusterTime",
                "provenance",
                "$_allowTransactionTableSnapshot",
                "$_waitLastStableRecoveryTimestamp",
            ],
            |name, value| {
                let path = format!("readConcern.{name}");
                match name {
                    "level" => {
                        if let Some(RawBsonRef::String(level)) =
                            idl::typed(&path, Some(value), ElementType::String)?
                        {
                            out.level = Some(LEVELS.into_iter().find(|l| *l == level).ok_or_else(
                                || {
                                    MongoError::bad_value(format!(
                                        "Enumeration value '{level}' for field '{path}' is not a valid value."
                                    ))
                                },
                            )?);
                        }
                    }
                    "afterOpTime" => out.after_op_time = op_time(&path, value)?,
                    "afterClusterTime" => out.after_cluster_time = timestamp(&path, value)?,
                    "atClusterTime" => out.at_cluster_time = timestamp(&path, value)?,
                    "provenance" => {
                        if !matches!(value, RawBsonRef::Null | RawBsonRef::Undefined) {
                            out.provenance = Some(super::provenance(&path, value)?);
                        }
                    }
                    _ => {
                        idl::boolean(&path, Some(value))?;
                    }
                }
                Ok(())
            },
        )?;
        out.validate(command)?;
        Ok(Some(out))
    }

    /// The cluster time the command must see every write up to (`afterClusterTime`).
    pub fn after_cluster_time(&self) -> Option<Timestamp> {
        self.after_cluster_time
    }

    /// The level as the request gave it.
    pub fn level(&self) -> Option<&'static str> {
        self.level
    }

    /// `atClusterTime` (level `snapshot` only).
    pub fn at_cluster_time(&self) -> Option<Timestamp> {
        self.at_cluster_time
    }

    /// The level a read runs at: `local` unless one is given.
    fn effective_level(&self) -> &'static str {
        self.level.unwrap_or("local")
    }

    fn validate(&self, command: &CommandInfo<'_>) -> Result<()> {
        let level = self.effective_level();
        if self.after_cluster_time.is_some() && self.after_op_time.is_some() {
            return Err(invalid(
                "Can not specify both afterClusterTime and afterOpTime",
            ));
        }
        if self.after_cluster_time.is_some() && self.at_cluster_time.is_some() {
            return Err(invalid(
                "Specifying a timestamp for readConcern snapshot in a causally consistent \
                 session is not allowed. See \
                 https://docs.mongodb.com/manual/core/read-isolation-consistency-recency/#causal-consistency",
            ));
        }
        if self.after_cluster_time.is_some() && !matches!(level, "majority" | "local" | "snapshot")
        {
            return Err(invalid(
                "afterClusterTime field can be set only if level is equal to majority, local, or snapshot",
            ));
        }
        if self.after_op_time.is_some() && level == "snapshot" {
            return Err(invalid(
                "afterOpTime field cannot be set if level is equal to snapshot",
            ));
        }
        if self.at_cluster_time.is_some() && level != "snapshot" {
            return Err(invalid(
                "atClusterTime field can be set only if level is equal to snapshot",
            ));
        }
        let null = |ts: &Timestamp| ts.time == 0 && ts.increment == 0;
        if self.at_cluster_time.as_ref().is_some_and(null) {
            return Err(invalid("atClusterTime cannot be a null timestamp"));
        }
        if self.after_cluster_time.as_ref().is_some_and(null) {
            return Err(invalid("afterClusterTime cannot be a null timestamp"));
        }
        if command.router
            && !command.internal
            && self.provenance.is_some_and(|p| p != "clientSupplied")
        {
            return Err(invalid(
                "readConcern provenance must be unset or \"clientSupplied\"",
            ));
        }
        Ok(())
    }

    /// Whether the command accepts this level: `snapshot` on the reads MongoDB runs at a
    /// snapshot is not implemented yet; any other unsupported level is MongoDB's error.
    pub fn check_supported(&self, command: &CommandInfo<'_>) -> Result<()> {
        let Some(level) = self.level else {
            return Ok(());
        };
        let supported = match level {
            "local" => true,
            "snapshot" if SNAPSHOT_READS.contains(&command.name) => true,
            "snapshot" => false,
            _ => READS.contains(&command.name),
        };
        if supported {
            return Ok(());
        }
        Err(MongoError::new(
            ErrorCode::InvalidOptions,
            format!(
                "Command {} does not support {} :: caused by :: read concern not supported",
                command.name,
                self.render()
            ),
        ))
    }

    /// The concern as MongoDB prints it in messages (with the provenance it assigns).
    fn render(&self) -> String {
        let mut inner = Document::new();
        if let Some(level) = self.level {
            inner.insert("level", level);
        }
        if let Some(op_time) = &self.after_op_time {
            inner.insert("afterOpTime", op_time.clone());
        }
        if let Some(ts) = self.after_cluster_time {
            inner.insert("afterClusterTime", Bson::Timestamp(ts));
        }
        if let Some(ts) = self.at_cluster_time {
            inner.insert("atClusterTime", Bson::Timestamp(ts));
        }
        inner.insert("provenance", self.provenance.unwrap_or("clientSupplied"));
        render_doc(&doc! {"readConcern": inner})
    }
}
