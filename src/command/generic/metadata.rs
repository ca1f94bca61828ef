//! The request metadata drivers attach: `$readPreference` (parsed and checked as MongoDB's
//! `ReadPreferenceSetting` is; every node is a primary, so every valid mode reads the same
//! data) and `$clusterTime` (its shape, and MongoDB's bounds on how far a gossiped time may be
//! from the wall clock).

use crate::command::bson_type_name;
use crate::document::display::render_element;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, RawBsonRef, RawDocument};

const MODES: [&str; 5] = [
    "primary",
    "primaryPreferred",
    "secondary",
    "secondaryPreferred",
    "nearest",
];

/// MongoDB's smallest `maxStalenessSeconds`.
const MIN_MAX_STALENESS_SECS: i64 = 90;

/// How far ahead of this node's clock a gossiped cluster time may be (MongoDB's
/// `maxAcceptableLogicalClockDriftSecs`, one year).
const MAX_CLOCK_DRIFT_SECS: i64 = 365 * 24 * 60 * 60;

fn missing(field: &str) -> MongoError {
    MongoError::new(
        ErrorCode::NoSuchKey,
        format!("Missing expected field \"{field}\""),
    )
}

fn wrong_type(field: &str, expected: &str, found: RawBsonRef<'_>) -> MongoError {
    MongoError::type_mismatch(format!(
        "\"{field}\" had the wrong type. Expected {expected}, found {}",
        bson_type_name(found.element_type())
    ))
}

fn element(name: &str, value: RawBsonRef<'_>) -> String {
    Bson::try_from(value.to_raw_bson())
        .map(|v| render_element(name, &v))
        .unwrap_or_else(|_| name.to_string())
}

/// MongoDB's `bsonExtractIntegerField`: a number with an exact 64-bit integer value.
fn integer(doc: &RawDocument, field: &str) -> Result<Option<i64>> {
    let Some(value) = doc.get(field)? else {
        return Ok(None);
    };
    let exact = match value {
        RawBsonRef::Int32(v) => Some(i64::from(v)),
        RawBsonRef::Int64(v) => Some(v),
        RawBsonRef::Double(v) if v.fract() == 0.0 && v.abs() < 9.2e18 => Some(v as i64),
        RawBsonRef::Double(_) | RawBsonRef::Decimal128(_) => None,
        other => {
            return Err(MongoError::type_mismatch(format!(
                "Expected field \"{field}\" to have numeric type, but found {}",
                bson_type_name(other.element_type())
            )));
        }
    };
    exact.map(Some).ok_or_else(|| {
        MongoError::bad_value(format!(
            "Expected field \"{field}\" to have a value exactly representable as a 64-bit \
             integer, but found {}",
            element(field, value)
        ))
    })
}

pub(super) fn read_preference(value: Option<RawBsonRef<'_>>) -> Result<()> {
    let Some(value) = value else {
        return Ok(());
    };
    let RawBsonRef::Document(pref) = value else {
        return Err(MongoError::type_mismatch(format!(
            "$readPreference has incorrect type: expected object but got {}",
            bson_type_name(value.element_type())
        )));
    };
    let mode = match pref.get("mode")? {
        None => return Err(missing("mode")),
        Some(RawBsonRef::String(mode)) => mode,
        Some(other) => return Err(wrong_type("mode", "string", other)),
    };
    if !MODES.contains(&mode) {
        return Err(MongoError::bad_value(format!(
            "Could not parse $readPreference mode '{mode}'. Only the modes 'primary', \
             'primaryPreferred', 'secondary', 'secondaryPreferred', and 'nearest' are \
             supported. :: caused by :: Enumeration value '{mode}' for field 'mode' is not a \
             valid value."
        )));
    }
    let primary = mode == "primary";
    match pref.get("hedge")? {
        None => {}
        Some(RawBsonRef::Document(hedge)) => {
            let enabled = !matches!(hedge.get("enabled")?, Some(RawBsonRef::Boolean(false)));
            if enabled && primary {
                return Err(MongoError::new(
                    ErrorCode::InvalidOptions,
                    "cannot enable hedging for $readPreference mode \"primaryOnly\"",
                ));
            }
        }
        Some(other) => {
            return Err(MongoError::type_mismatch(format!(
                "hedge field must be of type object if provided; found {}",
                element("hedge", other)
            )));
        }
    }
    match pref.get("tags")? {
        None => {}
        Some(RawBsonRef::Array(tags)) => {
            // `[]` and `[{}]` are the default tag sets; any other needs a secondary mode.
            let mut sets = tags.into_iter();
            let default = match (sets.next(), sets.next()) {
                (None, _) => true,
                (Some(Ok(RawBsonRef::Document(set))), None) => set.is_empty(),
                _ => false,
            };
            if !default && primary {
                return Err(MongoError::bad_value(
                    "Only empty tags are allowed with primary read preference",
                ));
            }
        }
        Some(other) => return Err(wrong_type("tags", "array", other)),
    }
    let staleness = integer(pref, "maxStalenessSeconds")?.unwrap_or(0);
    if staleness < 0 {
        return Err(MongoError::bad_value(
            "maxStalenessSeconds must be a non-negative integer",
        ));
    }
    if staleness == i64::MAX {
        return Err(MongoError::bad_value(format!(
            "maxStalenessSeconds value can not exceed {}",
            i64::MAX
        )));
    }
    if staleness > 0 && staleness < MIN_MAX_STALENESS_SECS {
        return Err(MongoError::new(
            ErrorCode::MaxStalenessOutOfRange,
            format!("maxStalenessSeconds value can not be less than {MIN_MAX_STALENESS_SECS}"),
        ));
    }
    if staleness > 0 && primary {
        return Err(MongoError::bad_value(
            "maxStalenessSeconds can not be set for the primary mode",
        ));
    }
    Ok(())
}

fn typed<'a>(doc: &'a RawDocument, field: &str, expected: &str) -> Result<RawBsonRef<'a>> {
    let value = doc.get(field)?.ok_or_else(|| missing(field))?;
    if bson_type_name(value.element_type()) != expected {
        return Err(wrong_type(field, expected, value));
    }
    Ok(value)
}

/// A gossiped `$clusterTime`: the time and its signature (`hash`, `keyId`), which the node
/// checks before its clock advances to a time signed by another key than its own.
#[derive(Clone, Debug, PartialEq)]
pub struct SignedClusterTime {
    pub time: bson::Timestamp,
    pub hash: Vec<u8>,
    pub key_id: i64,
}

/// Checks a gossiped `$clusterTime` and returns it.
pub(super) fn cluster_time(value: Option<RawBsonRef<'_>>) -> Result<Option<SignedClusterTime>> {
    let Some(value) = value else {
        return Ok(None);
    };
    let RawBsonRef::Document(gossip) = value else {
        return Err(MongoError::location(
            10065,
            "invalid parameter: expected an object ($clusterTime)",
        ));
    };
    let RawBsonRef::Timestamp(time) = typed(gossip, "clusterTime", "timestamp")? else {
        return Ok(None);
    };
    let RawBsonRef::Document(signature) = typed(gossip, "signature", "object")? else {
        return Ok(None);
    };
    let RawBsonRef::Binary(hash) = typed(signature, "hash", "binData")? else {
        return Ok(None);
    };
    if hash.bytes.len() != 20 {
        return Err(MongoError::new(
            ErrorCode::UnsupportedFormat,
            format!("Unsupported SHA1Block hash length: {}", hash.bytes.len()),
        ));
    }
    let Some(key_id) = integer(signature, "keyId")? else {
        return Err(missing("keyId"));
    };
    let now = bson::DateTime::now().timestamp_millis() / 1000;
    let secs = i64::from(time.time);
    if secs > now && secs - now > MAX_CLOCK_DRIFT_SECS {
        return Err(MongoError::new(
            ErrorCode::ClusterTimeFailsRateLimiter,
            format!(
                "New $clusterTime, {secs}, is too far from this node's wall clock time, {now}."
            ),
        ));
    }
    if secs > i64::from(i32::MAX) || i64::from(time.increment) > i64::from(i32::MAX) {
        return Err(MongoError::location(
            40484,
            "$clusterTime cannot be advanced beyond its maximum value",
        ));
    }
    Ok(Some(SignedClusterTime {
        time,
        hash: hash.bytes.to_vec(),
        key_id,
    }))
}
