//! The Stable API parameters (`apiVersion`, `apiStrict`, `apiDeprecationErrors`): their types,
//! the one version there is, and what `apiStrict: true` refuses (commands and aggregation
//! stages outside API Version 1).

use super::CommandInfo;
use super::fields::Fields;
use super::idl;
use crate::error::{ErrorCode, MongoError, Result};
use bson::RawBsonRef;
use bson::spec::ElementType;

/// The commands of Stable API Version 1 that docgrid has.
const VERSION_1_COMMANDS: &[&str] = &[
    "abortTransaction",
    "aggregate",
    "bulkWrite",
    "collMod",
    "collStats",
    "commitTransaction",
    "count",
    "create",
    "createIndexes",
    "delete",
    "drop",
    "dropDatabase",
    "dropIndexes",
    "endSessions",
    "explain",
    "find",
    "findAndModify",
    "getMore",
    "hello",
    "insert",
    "killCursors",
    "listCollections",
    "listDatabases",
    "listIndexes",
    "ping",
    "refreshSessions",
    "renameCollection",
    "update",
];

/// The aggregation stages of Stable API Version 1.
const VERSION_1_STAGES: &[&str] = &[
    "$addFields",
    "$bucket",
    "$bucketAuto",
    "$changeStream",
    "$collStats",
    "$count",
    "$densify",
    "$documents",
    "$facet",
    "$fill",
    "$geoNear",
    "$graphLookup",
    "$group",
    "$indexStats",
    "$limit",
    "$lookup",
    "$match",
    "$merge",
    "$out",
    "$project",
    "$redact",
    "$replaceRoot",
    "$replaceWith",
    "$sample",
    "$set",
    "$setWindowFields",
    "$skip",
    "$sort",
    "$sortByCount",
    "$unionWith",
    "$unset",
    "$unwind",
];

const CONTEXT: &str = "APIParametersFromClient";

pub(super) fn check(
    fields: &Fields<'_>,
    body: &bson::RawDocument,
    command: &CommandInfo<'_>,
) -> Result<()> {
    let version = idl::typed(
        &format!("{CONTEXT}.apiVersion"),
        fields.api_version,
        ElementType::String,
    )?
    .and_then(|v| v.as_str());
    let strict = idl::boolean(&format!("{CONTEXT}.apiStrict"), fields.api_strict)?;
    let deprecation_errors = idl::boolean(
        &format!("{CONTEXT}.apiDeprecationErrors"),
        fields.api_deprecation_errors,
    )?;
    let Some(version) = version else {
        if strict.is_some() || deprecation_errors.is_some() {
            return Err(MongoError::location(
                4886600,
                "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion",
            ));
        }
        return Ok(());
    };
    match version {
        "1" => {}
        "2" => {
            return Err(MongoError::new(
                ErrorCode::APIVersionError,
                "Cannot accept API version 2",
            ));
        }
        _ => {
            return Err(MongoError::new(
                ErrorCode::APIVersionError,
                "API version must be \"1\"",
            ));
        }
    }
    if strict != Some(true) {
        return Ok(());
    }
    // `isMaster` is MongoDB's own command beside `hello`, outside the Stable API.
    let name = match command.requested {
        "isMaster" | "ismaster" => command.requested,
        _ => command.name,
    };
    if !VERSION_1_COMMANDS.contains(&name) {
        return Err(MongoError::new(
            ErrorCode::APIStrictError,
            format!(
                "Provided apiStrict:true, but the command {name} is not in API Version 1. \
                 Information on supported commands and migrations in API Version 1 can be \
                 found at https://dochub.mongodb.org/core/manual-versioned-api.",
            ),
        ));
    }
    if command.name == "aggregate" {
        strict_pipeline(body)?;
    }
    Ok(())
}

/// The stages of an aggregation under `apiStrict: true`.
fn strict_pipeline(body: &bson::RawDocument) -> Result<()> {
    let Ok(Some(RawBsonRef::Array(stages))) = body.get("pipeline") else {
        return Ok(());
    };
    for stage in stages {
        let Ok(RawBsonRef::Document(stage)) = stage else {
            continue;
        };
        let Some(Ok((name, _))) = stage.into_iter().next() else {
            continue;
        };
        if !VERSION_1_STAGES.contains(&name) {
            return Err(MongoError::new(
                ErrorCode::APIStrictError,
                format!("{name} is not allowed with 'apiStrict: true' in API Version 1"),
            ));
        }
    }
    Ok(())
}
