//! `maxTimeMS`, the time limit a client puts on one command.

use super::Args;
use crate::error::{ErrorCode, MongoError, Result};
use bson::RawBsonRef;
use std::future::Future;
use std::time::Duration;

/// MongoDB's answer for work past its `maxTimeMS`.
pub fn time_limit_exceeded() -> MongoError {
    MongoError::new(ErrorCode::MaxTimeMSExpired, "operation exceeded time limit")
}

/// Runs `work` within `limit` (without one, to its end); at the limit the work is dropped —
/// what it held is released, an open transaction rolls back — and the answer is
/// MaxTimeMSExpired.
pub async fn within<T>(
    limit: Option<Duration>,
    work: impl Future<Output = Result<T>>,
) -> Result<T> {
    match limit {
        Some(limit) => tokio::time::timeout(limit, work)
            .await
            .unwrap_or_else(|_| Err(time_limit_exceeded())),
        None => work.await,
    }
}

/// The command's time limit; `None` when absent or 0 (no limit).
pub fn max_time(args: &Args<'_>) -> Result<Option<Duration>> {
    let value = match args.get("maxTimeMS")? {
        None | Some(RawBsonRef::Null) => return Ok(None),
        Some(RawBsonRef::Int32(n)) => n as i64,
        Some(RawBsonRef::Int64(n)) => n,
        Some(RawBsonRef::Double(d)) => {
            if d.fract() != 0.0 && d.is_finite() {
                return Err(MongoError::bad_value("maxTimeMS has non-integral value"));
            }
            // Saturates like MongoDB's conversion of out-of-range doubles.
            d as i64
        }
        Some(RawBsonRef::Decimal128(_)) | Some(_) => {
            return Err(MongoError::bad_value("maxTimeMS must be a number"));
        }
    };
    if !(0..=i32::MAX as i64).contains(&value) {
        return Err(MongoError::bad_value(format!(
            "{value} value for maxTimeMS is out of range [0, 2147483647]"
        )));
    }
    Ok((value > 0).then(|| Duration::from_millis(value as u64)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{RawDocumentBuf, rawdoc};

    fn parse(body: RawDocumentBuf) -> Result<Option<Duration>> {
        max_time(&Args::new("find", &body))
    }

    #[test]
    fn accepts_whole_numbers_in_range() {
        assert_eq!(parse(rawdoc! {"find": "c"}).unwrap(), None);
        assert_eq!(parse(rawdoc! {"find": "c", "maxTimeMS": 0}).unwrap(), None);
        assert_eq!(
            parse(rawdoc! {"find": "c", "maxTimeMS": 250_i64}).unwrap(),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            parse(rawdoc! {"find": "c", "maxTimeMS": 10.0}).unwrap(),
            Some(Duration::from_millis(10))
        );
    }

    #[test]
    fn rejects_what_mongodb_rejects() {
        let message = |body| parse(body).unwrap_err().message().to_string();
        assert_eq!(
            message(rawdoc! {"find": "c", "maxTimeMS": -1}),
            "-1 value for maxTimeMS is out of range [0, 2147483647]"
        );
        assert_eq!(
            message(rawdoc! {"find": "c", "maxTimeMS": 43.15}),
            "maxTimeMS has non-integral value"
        );
        assert_eq!(
            message(rawdoc! {"find": "c", "maxTimeMS": "x"}),
            "maxTimeMS must be a number"
        );
        assert!(message(rawdoc! {"find": "c", "maxTimeMS": i64::MAX}).contains("out of range"));
    }
}
