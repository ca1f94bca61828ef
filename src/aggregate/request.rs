//! What an `aggregate` command asks, read once for router and data nodes alike: its target (a
//! collection, or 1 for a collection-less pipeline), its `pipeline` (required, stages as
//! objects, within the length limit before any stage is made a document) and its
//! `cursor.batchSize` (the `cursor` required except with `explain`), with MongoDB's errors.

use crate::command::CommandRequest;
use crate::error::{MongoError, Result};
use bson::{Bson, Document, RawBsonRef};

/// The aggregated collection; `None` for `aggregate: 1`.
pub fn target(request: &CommandRequest) -> Result<Option<String>> {
    match request.args().target()? {
        RawBsonRef::String(name) => Ok(Some(name.to_string())),
        RawBsonRef::Int32(1) | RawBsonRef::Int64(1) | RawBsonRef::Double(1.0) => Ok(None),
        _ => Err(MongoError::failed_to_parse(
            "Invalid {aggregate: ...} value: must be a string or the number 1",
        )),
    }
}

fn not_an_object() -> MongoError {
    MongoError::type_mismatch("Each element of the 'pipeline' array must be an object")
}

/// The `pipeline`'s stages.
pub fn pipeline(request: &CommandRequest) -> Result<Vec<Document>> {
    let args = request.args();
    // Counted as the request has them first: a pipeline past the length limit is refused
    // without making a document of each of its (maybe 100,000) stages.
    if let Some(RawBsonRef::Array(stages)) = args.get("pipeline")? {
        let mut count = 0;
        for stage in stages {
            if !matches!(stage?, RawBsonRef::Document(_)) {
                return Err(not_an_object());
            }
            count += 1;
        }
        super::limits::check_length(count)?;
    }
    args.array("pipeline")?
        .ok_or_else(|| crate::command::missing("aggregate", "pipeline"))?
        .into_iter()
        .map(|stage| match stage {
            Bson::Document(stage) => Ok(stage),
            _ => Err(not_an_object()),
        })
        .collect()
}

/// `cursor.batchSize` (`None`: the default first batch).
pub fn cursor_batch_size(request: &CommandRequest) -> Result<Option<i64>> {
    let args = request.args();
    let Some(cursor) = args.document("cursor")? else {
        if args.bool("explain")? == Some(true) {
            return Ok(None);
        }
        return Err(MongoError::failed_to_parse(
            "The 'cursor' option is required, except for aggregate with the explain argument",
        ));
    };
    match cursor.get("batchSize") {
        Some(Bson::Int32(n)) if *n >= 0 => Ok(Some(i64::from(*n))),
        Some(Bson::Int64(n)) if *n >= 0 => Ok(Some(*n)),
        Some(Bson::Double(n)) if *n >= 0.0 => Ok(Some(*n as i64)),
        None => Ok(None),
        Some(_) => Err(MongoError::bad_value(
            "cursor.batchSize must be a non-negative number",
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    fn request(body: bson::RawDocumentBuf) -> CommandRequest {
        CommandRequest::new("db", body).unwrap()
    }

    #[test]
    fn the_pipeline_is_required_and_made_of_objects() {
        let ok = request(rawdoc! {"aggregate": "c", "pipeline": [{"$match": {}}], "cursor": {}});
        assert_eq!(pipeline(&ok).unwrap().len(), 1);
        let missing = request(rawdoc! {"aggregate": "c", "cursor": {}});
        assert_eq!(pipeline(&missing).unwrap_err().code().code(), 40414);
        let scalar = request(rawdoc! {"aggregate": "c", "pipeline": [1], "cursor": {}});
        assert_eq!(pipeline(&scalar).unwrap_err().code().code(), 14);
    }

    #[test]
    fn the_cursor_is_required_except_with_explain() {
        let none = request(rawdoc! {"aggregate": "c", "pipeline": []});
        assert_eq!(cursor_batch_size(&none).unwrap_err().code().code(), 9);
        let explain = request(rawdoc! {"aggregate": "c", "pipeline": [], "explain": true});
        assert_eq!(cursor_batch_size(&explain).unwrap(), None);
        let sized = request(rawdoc! {"aggregate": "c", "pipeline": [], "cursor": {"batchSize": 5}});
        assert_eq!(cursor_batch_size(&sized).unwrap(), Some(5));
        let negative =
            request(rawdoc! {"aggregate": "c", "pipeline": [], "cursor": {"batchSize": -1}});
        assert_eq!(cursor_batch_size(&negative).unwrap_err().code().code(), 2);
        let bad_target = request(rawdoc! {"aggregate": 2, "pipeline": [], "cursor": {}});
        assert_eq!(target(&bad_target).unwrap_err().code().code(), 9);
    }
}
