//! The `writeConcern` argument: what a write must reach before it is acknowledged.

use super::Args;
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document, doc};

/// A parsed write concern. Each shard is a single durable node, so `w: "majority"` and `j: true`
/// both mean "fsynced before the reply".
#[derive(Clone, Debug, Default, PartialEq)]
pub struct WriteConcern {
    /// `w: 0`: the client does not wait for the reply.
    pub unacknowledged: bool,
    /// The write must be on disk (fsync) before the reply.
    pub durable: bool,
    /// `w: n` with n > 1 cannot be satisfied by a single-node shard.
    pub unsatisfiable: bool,
}

impl WriteConcern {
    pub fn parse(args: &Args<'_>) -> Result<WriteConcern> {
        let Some(wc) = args.document("writeConcern")? else {
            return Ok(WriteConcern::default());
        };
        let mut out = WriteConcern::default();
        match wc.get("w") {
            None => {}
            Some(Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_)) => {
                let n = match wc.get("w") {
                    Some(Bson::Int32(v)) => i64::from(*v),
                    Some(Bson::Int64(v)) => *v,
                    Some(Bson::Double(v)) => *v as i64,
                    _ => 1,
                };
                if n < 0 {
                    return Err(MongoError::new(
                        ErrorCode::FailedToParse,
                        "w has to be a non-negative number and not greater than 50; found: {n}"
                            .replace("{n}", &n.to_string()),
                    ));
                }
                out.unacknowledged = n == 0;
                out.unsatisfiable = n > 1;
            }
            Some(Bson::String(mode)) if mode == "majority" => out.durable = true,
            Some(Bson::String(mode)) => {
                return Err(MongoError::new(
                    ErrorCode::UnknownReplWriteConcern,
                    format!("Unrecognized write concern mode: {mode}"),
                ));
            }
            Some(Bson::Document(_)) => {}
            Some(other) => {
                return Err(MongoError::new(
                    ErrorCode::FailedToParse,
                    format!(
                        "w has to be a number, string or object; found: {}",
                        super::bson_type_name(other.element_type())
                    ),
                ));
            }
        }
        match wc.get("j") {
            None | Some(Bson::Null) => {}
            Some(Bson::Boolean(j)) => out.durable |= *j,
            Some(Bson::Int32(v)) => out.durable |= *v != 0,
            Some(Bson::Int64(v)) => out.durable |= *v != 0,
            Some(Bson::Double(v)) => out.durable |= *v != 0.0,
            Some(other) => {
                return Err(MongoError::new(
                    ErrorCode::FailedToParse,
                    format!(
                        "j must be numeric or a boolean value; found: {}",
                        super::bson_type_name(other.element_type())
                    ),
                ));
            }
        }
        if out.unacknowledged && out.durable {
            return Err(MongoError::new(
                ErrorCode::InvalidOptions,
                "Cannot request unacknowledged write concern with journaling",
            ));
        }
        Ok(out)
    }

    /// The `writeConcernError` a reply carries when the concern cannot be met.
    pub fn error(&self) -> Option<Document> {
        self.unsatisfiable.then(|| {
            doc! {
                "code": ErrorCode::UnsatisfiableWriteConcern.code(),
                "codeName": "UnsatisfiableWriteConcern",
                "errmsg": "Not enough data-bearing nodes",
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

    #[test]
    fn majority_and_journal_mean_durable() {
        assert!(
            parse(rawdoc! {"insert": "c", "writeConcern": {"w": "majority"}})
                .unwrap()
                .durable
        );
        assert!(
            parse(rawdoc! {"insert": "c", "writeConcern": {"w": 1, "j": true}})
                .unwrap()
                .durable
        );
        assert!(!parse(rawdoc! {"insert": "c"}).unwrap().durable);
        assert!(
            parse(rawdoc! {"insert": "c", "writeConcern": {"w": 0}})
                .unwrap()
                .unacknowledged
        );
        assert!(
            parse(rawdoc! {"insert": "c", "writeConcern": {"w": 3}})
                .unwrap()
                .error()
                .is_some()
        );
        assert!(parse(rawdoc! {"insert": "c", "writeConcern": {"w": "nope"}}).is_err());
    }
}
