//! The catalog commands' requests (create, drop, renameCollection, createIndexes,
//! dropIndexes, listCollections, listIndexes), their fields as MongoDB 8.0's IDL declares them.

use super::command_request;
use crate::command::CommandRequest;
use crate::error::{MongoError, Result};
use bson::{Document, RawBsonRef};

command_request! {
    /// `create`.
    pub struct CreateRequest("create") {
    }
    known: [
        "capped", "viewOn", "validator", "autoIndexId", "idIndex", "size", "max", "storageEngine",
        "validationLevel", "validationAction", "indexOptionDefaults", "pipeline", "collation",
        "changeStreamPreAndPostImages", "timeseries", "clusteredIndex", "recordIdsReplicated",
        "expireAfterSeconds", "encryptedFields", "temp", "flags", "collectionUUID",
        "recordPreImages"
    ]
}

command_request! {
    /// `drop`.
    pub struct DropRequest("drop") {
    }
    known: ["collectionUUID", "isTimeseriesNamespace"]
}

command_request! {
    /// `renameCollection`.
    pub struct RenameCollectionRequest("renameCollection") {
        to: Option<String> = "to" via str,
        drop_target: Option<bool> = "dropTarget" via bool,
        stay_temp: Option<bool> = "stayTemp" via bool,
    }
    known: ["collectionUUID", "targetUUID", "newTargetCollectionUuid"]
}

/// A rename as router and data nodes read it.
pub struct Rename {
    /// The source namespace (the command's value).
    pub source: String,
    /// The target namespace (`to`, required).
    pub target: String,
    pub drop_target: bool,
}

impl RenameCollectionRequest {
    /// The source, the required `to` and `dropTarget`, with MongoDB's messages.
    pub fn rename(request: &CommandRequest) -> Result<Rename> {
        let source = match request.args().target()? {
            RawBsonRef::String(s) => s.to_string(),
            _ => {
                return Err(MongoError::type_mismatch(
                    "BSON field 'renameCollection.renameCollection' is the wrong type, expected type 'string'",
                ));
            }
        };
        let parsed = Self::parse(request)?;
        let target = parsed
            .to
            .ok_or_else(|| crate::command::missing("renameCollection", "to"))?;
        Ok(Rename {
            source,
            target,
            drop_target: parsed.drop_target.unwrap_or(false),
        })
    }
}

command_request! {
    /// `createIndexes`.
    pub struct CreateIndexesRequest("createIndexes") {
    }
    known: [
        "indexes", "commitQuorum", "ignoreUnknownIndexOptions", "isTimeseriesNamespace",
        "collectionUUID", "returnOnStart", "rawData"
    ]
}

command_request! {
    /// `dropIndexes`.
    pub struct DropIndexesRequest("dropIndexes") {
    }
    known: ["index", "collectionUUID", "isTimeseriesNamespace", "rawData"]
}

command_request! {
    /// `listCollections`.
    pub struct ListCollectionsRequest("listCollections") {
    }
    known: [
        "filter", "nameOnly", "authorizedCollections", "cursor", "includePendingDrops",
        "$_requestResumeToken"
    ]
}

command_request! {
    /// `listIndexes`.
    pub struct ListIndexesRequest("listIndexes") {
    }
    known: [
        "cursor", "includeBuildUUIDs", "includeIndexBuildInfo", "isTimeseriesNamespace",
        "rawData"
    ]
}

command_request! {
    /// `listDatabases`.
    pub struct ListDatabasesRequest("listDatabases") {
        filter: Option<Document> = "filter" via document,
        name_only: Option<bool> = "nameOnly" via bool,
        authorized_databases: Option<bool> = "authorizedDatabases" via bool,
    }
    known: []
}

command_request! {
    /// `dropDatabase`.
    pub struct DropDatabaseRequest("dropDatabase") {
    }
    known: []
}

command_request! {
    /// `collMod`.
    pub struct CollModRequest("collMod") {
    }
    known: [
        "validator", "validationLevel", "validationAction", "index", "viewOn", "pipeline",
        "expireAfterSeconds", "changeStreamPreAndPostImages", "clusteredIndex", "timeseries",
        "collectionUUID", "dryRun", "cappedSize", "cappedMax", "recordIdsReplicated",
        "timeseriesBucketsMayHaveMixedSchemaData", "isTimeseriesNamespace", "encryptedFields",
        "recordPreImages", "timeseriesBucketingParametersHaveChanged", "noop"
    ]
}

command_request! {
    /// `explain` (the explained command's own fields are its parser's).
    pub struct ExplainFields("explain") {
    }
    known: ["verbosity"]
}

command_request! {
    /// `enableSharding`.
    pub struct EnableShardingRequest("enableSharding") {
        primary_shard: Option<String> = "primaryShard" via str,
    }
    known: []
}

command_request! {
    /// `shardCollection`.
    pub struct ShardCollectionRequest("shardCollection") {
        key: Option<Document> = "key" via document,
        unique: Option<bool> = "unique" via bool,
    }
    known: [
        "numInitialChunks", "presplitHashedZones", "collation", "timeseries",
        "collectionUUID", "implicitlyCreateIndex", "enforceUniquenessCheck", "dataShard",
        "unsplittable", "getUUIDfromPrimaryShard"
    ]
}

command_request! {
    /// `movePrimary`.
    pub struct MovePrimaryRequest("movePrimary") {
        to: Option<String> = "to" via str,
    }
    known: []
}

command_request! {
    /// `startSession`.
    pub struct StartSessionRequest("startSession") {
    }
    known: []
}
