//! The `explain` command's envelope, shared by shards and routers: the verbosity and the
//! explained command inside it.

use super::CommandRequest;
use crate::error::{MongoError, Result};

/// How much `explain` reports.
#[derive(Clone, Copy, Debug, PartialEq, PartialOrd)]
pub enum Verbosity {
    QueryPlanner,
    ExecutionStats,
    AllPlansExecution,
}

impl Verbosity {
    pub fn parse(value: Option<&str>) -> Result<Verbosity> {
        match value {
            Some("queryPlanner") => Ok(Verbosity::QueryPlanner),
            Some("executionStats") => Ok(Verbosity::ExecutionStats),
            // The explain command's default.
            Some("allPlansExecution") | None => Ok(Verbosity::AllPlansExecution),
            Some(other) => Err(MongoError::bad_value(format!(
                "verbosity string must be one of {{'queryPlanner', 'executionStats', 'allPlansExecution'}}; got '{other}'"
            ))),
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Verbosity::QueryPlanner => "queryPlanner",
            Verbosity::ExecutionStats => "executionStats",
            Verbosity::AllPlansExecution => "allPlansExecution",
        }
    }

    /// Whether the explained operation is run (its read side only) to report statistics.
    pub fn executes(self) -> bool {
        self >= Verbosity::ExecutionStats
    }
}

/// An `explain` request taken apart.
pub struct ExplainRequest {
    pub verbosity: Verbosity,
    /// The explained command, addressed to the `explain`'s database.
    pub command: CommandRequest,
}

impl ExplainRequest {
    pub fn parse(req: &CommandRequest) -> Result<ExplainRequest> {
        let args = req.args();
        let verbosity = Verbosity::parse(args.str("verbosity")?)?;
        let inner = match args.get("explain")? {
            Some(bson::RawBsonRef::Document(d)) => d.to_owned(),
            _ => {
                return Err(MongoError::failed_to_parse(
                    "explain command requires a nested object",
                ));
            }
        };
        Ok(ExplainRequest {
            verbosity,
            command: CommandRequest::new(req.db.clone(), inner)?,
        })
    }
}

/// Commands `explain` can describe.
pub const EXPLAINABLE: &[&str] = &[
    "find",
    "count",
    "distinct",
    "aggregate",
    "update",
    "delete",
    "findAndModify",
    "findandmodify",
];

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    #[test]
    fn parses_the_envelope() {
        let req = CommandRequest::from_document(
            "db",
            &doc! {"explain": {"find": "c", "filter": {"a": 1}}, "verbosity": "executionStats"},
        )
        .unwrap();
        let explain = ExplainRequest::parse(&req).unwrap();
        assert_eq!(explain.verbosity, Verbosity::ExecutionStats);
        assert_eq!(explain.command.name(), "find");
        assert_eq!(explain.command.db, "db");
        let bad = CommandRequest::from_document("db", &doc! {"explain": 1}).unwrap();
        assert!(ExplainRequest::parse(&bad).is_err());
        let bad = CommandRequest::from_document(
            "db",
            &doc! {"explain": {"find": "c"}, "verbosity": "everything"},
        )
        .unwrap();
        assert!(ExplainRequest::parse(&bad).is_err());
    }
}
