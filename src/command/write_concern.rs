//! The `writeConcern` argument: what a write must reach before it is acknowledged, parsed with
//! MongoDB's errors, and the `writeConcernError` a cluster of single-node shards answers when
//! the concern asks for more nodes (or a tag set) than there are.

use super::Args;
use super::bson_type_name;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document, RawBsonRef, RawDocument, doc};

/// Most members a replica set may have: MongoDB's bound on a numeric `w`.
const MAX_MEMBERS: i64 = 50;

/// A parsed write concern. Each shard is a single durable node, so `w: "majority"`, `j: true`
/// and `fsync: true` all mean "fsynced before the reply".
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WriteConcern {
    /// `w: 0`: the client does not wait for the reply.
    pub unacknowledged: bool,
    /// The write must be on disk (fsync) before the reply.
    pub durable: bool,
    /// The error a single-node shard reports after the write: more nodes than one, or a mode
    /// it has no tags for.
    failure: Option<(ErrorCode, String)>,
    /// The concern as MongoDB echoes it in `errInfo` (`w`, `j`/`fsync`, `wtimeout`, provenance).
    echo: Document,
    /// Where the client says the concern comes from, if it says.
    provenance: Option<&'static str>,
}

fn failed(message: impl Into<String>) -> MongoError {
    MongoError::failed_to_parse(message)
}

fn is_number(value: RawBsonRef<'_>) -> bool {
    matches!(
        value,
        RawBsonRef::Int32(_)
            | RawBsonRef::Int64(_)
            | RawBsonRef::Double(_)
            | RawBsonRef::Decimal128(_)
    )
}

/// MongoDB's `safeNumberLong`: doubles truncate and saturate, NaN is 0.
fn safe_long(value: RawBsonRef<'_>) -> i64 {
    match value {
        RawBsonRef::Int32(v) => i64::from(v),
        RawBsonRef::Int64(v) => v,
        RawBsonRef::Double(v) => v as i64,
        RawBsonRef::Decimal128(d) => d.to_string().parse::<f64>().map_or(0, |v| v as i64),
        _ => 0,
    }
}

/// IDL's `safeBool`: a boolean or a number (non-zero is true); null means absent.
fn safe_bool(field: &str, value: RawBsonRef<'_>) -> Result<Option<bool>> {
    match value {
        RawBsonRef::Null | RawBsonRef::Undefined => Ok(None),
        RawBsonRef::Boolean(b) => Ok(Some(b)),
        v if is_number(v) => Ok(Some(match v {
            RawBsonRef::Double(d) => d != 0.0,
            other => safe_long(other) != 0,
        })),
        other => Err(MongoError::type_mismatch(format!(
            "BSON field 'WriteConcernOptions.{field}' is the wrong type '{}', expected types '[bool, long, int, decimal, double]'",
            bson_type_name(other.element_type())
        ))),
    }
}

enum W {
    Default,
    Nodes(i64),
    Mode(String),
    Tags(Document),
}

fn parse_w(value: RawBsonRef<'_>) -> Result<W> {
    match value {
        RawBsonRef::Null | RawBsonRef::Undefined => Ok(W::Default),
        RawBsonRef::Double(d) if d.is_nan() => Err(failed("w cannot be NaN")),
        v if is_number(v) => {
            let n = safe_long(v);
            if !(0..=MAX_MEMBERS).contains(&n) {
                return Err(failed(format!(
                    "w has to be a non-negative number and not greater than {MAX_MEMBERS}; found: {n}"
                )));
            }
            Ok(W::Nodes(n))
        }
        RawBsonRef::String(mode) => {
            if mode.contains('\0') {
                return Err(failed(format!(
                    "w has illegal embedded NUL byte, w: {mode}"
                )));
            }
            Ok(W::Mode(mode.to_string()))
        }
        RawBsonRef::Document(tags) => {
            let mut any = false;
            for tag in tags {
                let (name, count) = tag?;
                if !is_number(count) {
                    return Err(failed(format!(
                        "tags must be a single level document with only number values; found: {}",
                        crate::document::display::render_element(
                            name,
                            &Bson::try_from(count.to_raw_bson())?
                        )
                    )));
                }
                any = true;
            }
            if !any {
                return Err(failed("tagged write concern requires tags"));
            }
            Ok(W::Tags(Document::try_from(tags)?))
        }
        other => Err(failed(format!(
            "w has to be a number, string, or object; found: {}",
            bson_type_name(other.element_type())
        ))),
    }
}

impl WriteConcern {
    /// The command's `writeConcern`, if any.
    pub fn parse(args: &Args<'_>) -> Result<WriteConcern> {
        WriteConcern::from_field(args.get("writeConcern")?)
    }

    /// A `writeConcern` field's value (`None` when the command has none).
    pub fn from_field(value: Option<RawBsonRef<'_>>) -> Result<WriteConcern> {
        match value {
            None => Ok(WriteConcern::default()),
            Some(RawBsonRef::Document(wc)) => WriteConcern::from_document(wc),
            Some(other) => Err(MongoError::type_mismatch(format!(
                "\"writeConcern\" had the wrong type. Expected object, found {}",
                bson_type_name(other.element_type())
            ))),
        }
    }

    /// Whether a `writeConcern` field asks for anything (MongoDB ignores `{}`).
    pub fn specified(value: Option<RawBsonRef<'_>>) -> bool {
        match value {
            Some(RawBsonRef::Document(wc)) => !wc.is_empty(),
            Some(_) => true,
            None => false,
        }
    }

    fn from_document(wc: &RawDocument) -> Result<WriteConcern> {
        let mut w = W::Default;
        let (mut j, mut fsync, mut wtimeout) = (None, None, 0_i64);
        let mut provenance = None;
        let mut seen: Vec<&str> = Vec::new();
        for field in wc {
            let (name, value) = field?;
            if seen.contains(&name) {
                return Err(MongoError::new(
                    ErrorCode::IDLDuplicateField,
                    format!("BSON field 'WriteConcernOptions.{name}' is a duplicate field"),
                ));
            }
            seen.push(name);
            match name {
                "w" => w = parse_w(value)?,
                "j" => j = safe_bool(name, value)?,
                "fsync" => fsync = safe_bool(name, value)?,
                // Any other type counts as no timeout, as in MongoDB.
                "wtimeout" if is_number(value) => wtimeout = safe_long(value),
                "wtimeout" => {}
                "provenance" if matches!(value, RawBsonRef::Null | RawBsonRef::Undefined) => {}
                "provenance" => {
                    provenance = Some(super::generic::provenance(
                        "WriteConcernOptions.provenance",
                        value,
                    )?)
                }
                // Accepted and ignored by MongoDB for compatibility with old clients.
                "wElectionId" | "wOpTime" | "getLastError" => {}
                other => {
                    return Err(MongoError::new(
                        ErrorCode::IDLUnknownField,
                        format!("BSON field 'WriteConcernOptions.{other}' is an unknown field."),
                    ));
                }
            }
        }
        if j == Some(true) && fsync == Some(true) {
            return Err(failed("fsync and j options cannot be used together"));
        }
        let mut out = WriteConcern {
            durable: j == Some(true) || fsync == Some(true),
            ..WriteConcern::default()
        };
        let mut echo = Document::new();
        match &w {
            W::Default => echo.insert("w", 1),
            W::Nodes(n) => match i32::try_from(*n) {
                Ok(n) => echo.insert("w", n),
                Err(_) => echo.insert("w", *n),
            },
            W::Mode(mode) => echo.insert("w", mode.clone()),
            W::Tags(tags) => echo.insert("w", tags.clone()),
        };
        if j == Some(true) {
            echo.insert("j", true);
        } else if fsync == Some(true) {
            echo.insert("fsync", true);
        } else if j == Some(false) {
            echo.insert("j", false);
        }
        echo.insert("wtimeout", i32::try_from(wtimeout).unwrap_or(i32::MAX));
        echo.insert("provenance", provenance.unwrap_or("clientSupplied"));
        match w {
            W::Nodes(0) => out.unacknowledged = true,
            W::Nodes(n) if n > 1 => {
                out.failure = Some((
                    ErrorCode::UnsatisfiableWriteConcern,
                    "Not enough data-bearing nodes".into(),
                ))
            }
            W::Mode(mode) if mode == "majority" => out.durable = true,
            W::Mode(mode) => {
                out.failure = Some((
                    ErrorCode::UnknownReplWriteConcern,
                    format!(
                        "No write concern mode named '{mode}' found in replica set configuration"
                    ),
                ))
            }
            // A single-node shard has no member tags: MongoDB fails on the first tag key.
            W::Tags(tags) => {
                let first = tags.keys().min().cloned().unwrap_or_default();
                out.failure = Some((
                    ErrorCode::NoSuchKey,
                    format!("No replica set tag key {first} in config"),
                ))
            }
            _ => {}
        }
        if out.unacknowledged && out.durable {
            return Err(MongoError::new(
                ErrorCode::InvalidOptions,
                "Cannot request unacknowledged write concern with journaling",
            ));
        }
        out.echo = echo;
        out.provenance = provenance;
        Ok(out)
    }

    /// The `provenance` the concern names, if it names one.
    pub fn provenance(&self) -> Option<&'static str> {
        self.provenance
    }

    /// The `writeConcernError` a reply carries when the concern cannot be met: after the write,
    /// as a single-node replica set reports it.
    pub fn error(&self) -> Option<Document> {
        self.failure.as_ref().map(|(code, message)| {
            doc! {
                "code": code.code(),
                "codeName": code.name().as_ref(),
                "errmsg": message,
                "errInfo": {"writeConcern": self.echo.clone()},
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    fn parse(body: bson::RawDocumentBuf) -> Result<WriteConcern> {
        WriteConcern::parse(&Args::new("insert", &body))
    }

    fn message(body: bson::RawDocumentBuf) -> (i32, String) {
        let err = parse(body).unwrap_err();
        (err.code().code(), err.message().to_string())
    }

    #[test]
    fn majority_journal_and_fsync_mean_durable() {
        let durable = |wc: bson::RawDocumentBuf| {
            parse(rawdoc! {"insert": "c", "writeConcern": wc})
                .unwrap()
                .durable
        };
        assert!(durable(rawdoc! {"w": "majority"}));
        assert!(durable(rawdoc! {"w": 1, "j": true}));
        assert!(durable(rawdoc! {"fsync": 1}));
        assert!(!durable(rawdoc! {"w": 1, "wtimeout": 100}));
        assert!(!parse(rawdoc! {"insert": "c"}).unwrap().durable);
        assert!(
            parse(rawdoc! {"insert": "c", "writeConcern": {"w": 0}})
                .unwrap()
                .unacknowledged
        );
    }

    #[test]
    fn more_nodes_or_unknown_modes_are_reported_after_the_write() {
        let wce = parse(rawdoc! {"insert": "c", "writeConcern": {"w": 3}})
            .unwrap()
            .error()
            .unwrap();
        assert_eq!(wce.get_i32("code").unwrap(), 100);
        assert_eq!(
            wce.get_str("errmsg").unwrap(),
            "Not enough data-bearing nodes"
        );
        assert_eq!(
            wce.get_document("errInfo").unwrap(),
            &doc! {"writeConcern": {"w": 3, "wtimeout": 0, "provenance": "clientSupplied"}}
        );
        let wce = parse(rawdoc! {"insert": "c", "writeConcern": {"w": "dc2"}})
            .unwrap()
            .error()
            .unwrap();
        assert_eq!(wce.get_str("codeName").unwrap(), "UnknownReplWriteConcern");
        assert_eq!(
            wce.get_str("errmsg").unwrap(),
            "No write concern mode named 'dc2' found in replica set configuration"
        );
        assert!(
            parse(rawdoc! {"insert": "c", "writeConcern": {"w": 1}})
                .unwrap()
                .error()
                .is_none()
        );
        let wce = parse(rawdoc! {"insert": "c", "writeConcern": {"w": {"rack": 1, "dc": 2}}})
            .unwrap()
            .error()
            .unwrap();
        assert_eq!(wce.get_str("codeName").unwrap(), "NoSuchKey");
        assert_eq!(
            wce.get_str("errmsg").unwrap(),
            "No replica set tag key dc in config"
        );
    }

    #[test]
    fn refuses_what_mongodb_refuses() {
        assert_eq!(
            message(rawdoc! {"insert": "c", "writeConcern": 1}),
            (
                14,
                "\"writeConcern\" had the wrong type. Expected object, found int".into()
            )
        );
        assert_eq!(
            message(rawdoc! {"insert": "c", "writeConcern": {"w": 51}}),
            (
                9,
                "w has to be a non-negative number and not greater than 50; found: 51".into()
            )
        );
        assert_eq!(
            message(rawdoc! {"insert": "c", "writeConcern": {"w": -1}}).0,
            9
        );
        assert_eq!(
            message(rawdoc! {"insert": "c", "writeConcern": {"w": true}}),
            (
                9,
                "w has to be a number, string, or object; found: bool".into()
            )
        );
        assert_eq!(
            message(rawdoc! {"insert": "c", "writeConcern": {"w": {}}}),
            (9, "tagged write concern requires tags".into())
        );
        assert_eq!(
            message(rawdoc! {"insert": "c", "writeConcern": {"w": 1, "x": 1}}),
            (
                40415,
                "BSON field 'WriteConcernOptions.x' is an unknown field.".into()
            )
        );
        assert_eq!(
            message(rawdoc! {"insert": "c", "writeConcern": {"j": "yes"}}),
            (14, "BSON field 'WriteConcernOptions.j' is the wrong type 'string', expected types '[bool, long, int, decimal, double]'".into())
        );
        assert_eq!(
            message(rawdoc! {"insert": "c", "writeConcern": {"j": true, "fsync": true}}),
            (9, "fsync and j options cannot be used together".into())
        );
        assert_eq!(
            message(rawdoc! {"insert": "c", "writeConcern": {"w": 0, "j": true}}).0,
            72
        );
        assert!(parse(rawdoc! {"insert": "c", "writeConcern": {}}).is_ok());
        assert!(
            parse(rawdoc! {"insert": "c", "writeConcern": {"w": 1, "wtimeout": "x", "wOpTime": 1}})
                .is_ok()
        );
    }
}
