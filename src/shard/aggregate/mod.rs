//! The aggregation pipeline on one node: stages over a stream of documents, and the expression
//! language they evaluate.

use crate::error::{ErrorCode, MongoError, Result};
use crate::shard::query::filter::Filter;
use bson::Document;

/// A parsed pipeline.
pub struct Pipeline {
    leading_match: Option<Filter>,
}

impl Pipeline {
    /// Parses and validates every stage.
    pub fn parse(stages: &[Document]) -> Result<Pipeline> {
        let _ = stages;
        Err(MongoError::new(
            ErrorCode::NotImplemented,
            "aggregation is not available yet",
        ))
    }

    /// The filter of a leading `$match`, which the caller may use to choose an access path.
    pub fn leading_match(&self) -> Option<&Filter> {
        self.leading_match.as_ref()
    }

    /// Runs the pipeline over `input` (the collection's documents, or nothing for
    /// collection-less pipelines) and returns its output.
    pub fn run(&self, input: Vec<Document>) -> Result<Vec<Document>> {
        Ok(input)
    }
}
