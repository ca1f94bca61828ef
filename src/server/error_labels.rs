//! The error labels a data node adds to its replies for clients, as MongoDB's
//! `ErrorLabelBuilder`: `RetryableWriteError` on a retryable write's retriable failures.

use super::RequestContext;
use crate::error::{ErrorCode, Result};
use bson::{Bson, RawDocumentBuf};

/// The `RetryableWriteError` label on the failure of a retryable write sent by a client (not
/// another node), as a mongod adds it: on a retriable error code, or on a retriable write
/// concern error of a reply.
pub fn label_retryable(
    ctx: &RequestContext,
    retryable: bool,
    outcome: Result<RawDocumentBuf>,
) -> Result<RawDocumentBuf> {
    use crate::error::{RETRYABLE_WRITE_ERROR, is_retryable_write_error};
    if !retryable || ctx.is_internal() {
        return outcome;
    }
    match outcome {
        Err(e) if is_retryable_write_error(Some(e.code()), None) => {
            Err(e.with_label(RETRYABLE_WRITE_ERROR))
        }
        Ok(mut reply) => {
            let wc_code = match reply.get("writeConcernError")? {
                Some(bson::RawBsonRef::Document(wce)) => match wce.get("code")? {
                    Some(bson::RawBsonRef::Int32(code)) => Some(ErrorCode::from_code(code)),
                    _ => None,
                },
                _ => None,
            };
            if reply.get("errorLabels")?.is_none() && is_retryable_write_error(None, wc_code) {
                reply.append(
                    "errorLabels",
                    bson::RawBson::try_from(Bson::Array(vec![RETRYABLE_WRITE_ERROR.into()]))?,
                );
            }
            Ok(reply)
        }
        other => other,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::MongoError;
    use bson::rawdoc;

    #[test]
    fn retryable_writes_from_clients_get_the_retryable_write_error_label() {
        let client = RequestContext::connection(1, "127.0.0.1:1".parse().unwrap(), None);
        let retriable = || MongoError::new(ErrorCode::NotWritablePrimary, "not primary");
        let labels = |outcome: Result<RawDocumentBuf>| match outcome {
            Err(e) => e.labels().to_vec(),
            Ok(reply) => reply
                .to_document()
                .unwrap()
                .get_array("errorLabels")
                .map(|l| l.iter().map(|l| l.as_str().unwrap().to_string()).collect())
                .unwrap_or_default(),
        };
        assert_eq!(
            labels(label_retryable(&client, true, Err(retriable()))),
            ["RetryableWriteError"]
        );
        // Not a retryable write, another node asking, or a code that is not retriable: none.
        assert!(labels(label_retryable(&client, false, Err(retriable()))).is_empty());
        let node = RequestContext::internal();
        assert!(labels(label_retryable(&node, true, Err(retriable()))).is_empty());
        let bad = MongoError::bad_value("no");
        assert!(labels(label_retryable(&client, true, Err(bad))).is_empty());
        // A retriable write concern error labels the reply.
        let reply = rawdoc! {"n": 1, "writeConcernError": {"code": 91, "errmsg": "shutdown"}};
        assert_eq!(
            labels(label_retryable(&client, true, Ok(reply))),
            ["RetryableWriteError"]
        );
        let reply = rawdoc! {"n": 1, "writeConcernError": {"code": 100, "errmsg": "w: 2"}};
        assert!(labels(label_retryable(&client, true, Ok(reply))).is_empty());
    }
}
