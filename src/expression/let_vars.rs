//! A command's `let` parameters (`find`, `aggregate`, `update`, `delete`, `findAndModify`):
//! each value is an expression evaluated once, before any document is read, into a constant
//! user variable that the command's expressions (`$expr`, projections, pipelines) read as
//! `$$name`.

use super::{Expression, Scope, Variables, validate_name_for_user_write};
use crate::document::collation::Collation;
use crate::error::{MongoError, Result};
use crate::expression::value::Value;
use bson::{DateTime, Document};
use std::sync::Arc;

/// The user variables of one command and its `$$NOW`, shared by everything the command parses
/// so that every expression sees the same values.
#[derive(Clone, Debug)]
pub struct LetVariables {
    scope: Scope,
    values: Vec<Value>,
    now: DateTime,
    /// How many `$lookup`/`$unionWith` sub-pipelines enclose what is parsed with these
    /// variables (0 for the command's own pipeline).
    sub_pipeline_depth: usize,
    /// The command's collation (`None`: simple), which its filters, sorts, groupings and
    /// expressions compare strings by, as MongoDB's `ExpressionContext` carries it.
    collation: Option<Arc<Collation>>,
    /// Whether the documents expressions see may carry metadata fields (`$textScore`...):
    /// those of a pipeline whose first stage attaches metadata. Only then are the carrier
    /// fields metadata — `$$ROOT` leaves them out and a stage that replaces a document copies
    /// them —; elsewhere fields of those names are the document's own.
    metadata: bool,
}

/// System variables a client may not set (MongoDB reserves them for internal propagation).
const INTERNAL_CONSTANTS: &[&str] = &["NOW", "CLUSTER_TIME", "JS_SCOPE", "IS_MR", "USER_ROLES"];

impl LetVariables {
    /// No user variables; `$$NOW` is `now`.
    pub fn empty(now: DateTime) -> LetVariables {
        LetVariables {
            scope: Scope::default(),
            values: Vec::new(),
            now,
            sub_pipeline_depth: 0,
            collation: None,
            metadata: false,
        }
    }

    /// No user variables and `$$NOW` now, shared: what a command without `let` parses with.
    pub fn none() -> Arc<LetVariables> {
        Arc::new(LetVariables::empty(DateTime::now()))
    }

    /// Evaluates a `let` document in order (a value may use the variables defined before it),
    /// with MongoDB's errors for invalid names and values that read the document.
    pub fn parse(let_doc: Option<&Document>, now: DateTime) -> Result<LetVariables> {
        let mut vars = LetVariables::empty(now);
        let empty = Document::new();
        for (name, value) in let_doc.into_iter().flatten() {
            validate_let_name(name)?;
            let expr = Expression::parse_in(value, &vars.scope)?;
            if expr.depends_on_document() {
                // The missing space after "because" is MongoDB's.
                return Err(MongoError::location(
                    4890500,
                    "Command let Expression tried to access a field, but this is not allowed becauseCommand let Expressions run before the query examines any documents.",
                ));
            }
            let value = expr.evaluate(&Variables::with_user(&empty, now, &vars.values))?;
            vars.scope.define(name);
            vars.values.push(value);
        }
        Ok(vars)
    }

    /// These variables and, after them, the statement constants `c` of a pipeline-style update:
    /// literal values (not expressions) that shadow `let` variables of the same name.
    pub fn with_constants(&self, constants: &Document) -> LetVariables {
        let mut vars = self.clone();
        vars.scope = vars.scope.nested();
        for (name, value) in constants {
            vars.scope.define(name);
            vars.values.push(Some(value.clone()));
        }
        vars
    }

    /// What a `$lookup`/`$unionWith` sub-pipeline parses with: these variables, then `bound`
    /// (the ones its stage defines), one sub-pipeline deeper. The pipeline holds the depth to
    /// MongoDB's nesting limit before it opens one ([`LetVariables::sub_pipeline_depth`]).
    pub fn for_sub_pipeline(&self, bound: &Document) -> LetVariables {
        let mut vars = self.with_constants(bound);
        vars.sub_pipeline_depth += 1;
        // Another collection's documents: its own first stage decides.
        vars.metadata = false;
        vars
    }

    /// How many `$lookup`/`$unionWith` sub-pipelines enclose what these variables parse.
    pub fn sub_pipeline_depth(&self) -> usize {
        self.sub_pipeline_depth
    }

    /// The names expressions of this command may use, for [`Expression::parse_in`].
    pub fn scope(&self) -> &Scope {
        &self.scope
    }

    /// The variables' values, by the slots of [`LetVariables::scope`] (for stages that define
    /// further variables after them, as `$redact` does).
    pub fn values(&self) -> &[Value] {
        &self.values
    }

    /// Each variable's name and value, once (a later definition shadows an earlier one).
    pub fn named_values(&self) -> Vec<(String, Value)> {
        // Walked from the last definition back, keeping each name's first sighting: linear in
        // the number of definitions (a `let` may have 100,000), in order of last definition.
        let mut seen = std::collections::HashSet::with_capacity(self.values.len());
        let mut out: Vec<(String, Value)> = self
            .scope
            .names()
            .into_iter()
            .zip(&self.values)
            .rev()
            .filter(|(name, _)| seen.insert(*name))
            .map(|(name, value)| (name.to_string(), value.clone()))
            .collect();
        out.reverse();
        out
    }

    /// These variables for a command comparing strings by `collation` (`None` or the simple
    /// collation: bytewise).
    pub fn with_collation(mut self, collation: Option<Arc<Collation>>) -> LetVariables {
        self.collation = collation.filter(|c| !c.is_simple());
        self
    }

    /// What one statement with its own `collation` (an update's or a delete's) parses with:
    /// these variables, comparing by that collation when it gives one.
    pub fn for_statement(self: &Arc<Self>, collation: Option<Arc<Collation>>) -> Arc<LetVariables> {
        match collation {
            None => Arc::clone(self),
            Some(collation) => Arc::new(LetVariables::clone(self).with_collation(Some(collation))),
        }
    }

    /// These variables comparing by exactly `collation` (`None`: the simple one).
    pub fn with_exact_collation(self: &Arc<Self>, collation: Option<Arc<Collation>>) -> Arc<Self> {
        Arc::new(LetVariables::clone(self).with_collation(collation))
    }

    /// The command's collation, `None` when it is the simple one.
    pub fn collation(&self) -> Option<&Collation> {
        self.collation.as_deref()
    }

    /// The command's collation, shared, `None` when it is the simple one.
    pub fn collation_arc(&self) -> Option<Arc<Collation>> {
        self.collation.clone()
    }

    /// The command's `$$NOW`.
    pub fn now(&self) -> DateTime {
        self.now
    }

    /// What an expression of this command is evaluated against for `root`.
    pub fn variables<'a>(&'a self, root: &'a Document) -> Variables<'a> {
        Variables::with_user(root, self.now, &self.values)
            .with_collation(self.collation())
            .with_metadata(self.metadata)
    }

    /// The same variables for documents that carry metadata fields (a pipeline whose first
    /// stage attaches metadata, or the router's part reading such a pipeline's output).
    pub fn carrying_metadata(&self) -> LetVariables {
        let mut vars = self.clone();
        vars.metadata = true;
        vars
    }

    /// Whether the documents carry metadata fields ([`LetVariables::carrying_metadata`]).
    pub fn carries_metadata(&self) -> bool {
        self.metadata
    }
}

/// MongoDB's `isValidNameForUserWrite` (`CURRENT` may be rebound), wrapped as `let` wraps it.
fn validate_let_name(name: &str) -> Result<()> {
    if INTERNAL_CONSTANTS.contains(&name) {
        return Err(MongoError::location(
            4738901,
            format!("Attempt to set internal constant: {name}"),
        ));
    }
    validate_name_for_user_write(name).map_err(|err| {
        MongoError::failed_to_parse(format!(
            "Invalid 'let' parameter :: caused by :: {}",
            err.message()
        ))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{Bson, doc};

    #[test]
    fn named_values_keep_the_last_definition_of_each_name() {
        let vars = LetVariables::parse(Some(&doc! {"a": 1, "b": 2}), DateTime::from_millis(0))
            .unwrap()
            .with_constants(&doc! {"a": 3, "c": 4});
        let names: Vec<(String, Value)> = vars.named_values();
        assert_eq!(
            names,
            vec![
                ("b".to_string(), Some(Bson::Int32(2))),
                ("a".to_string(), Some(Bson::Int32(3))),
                ("c".to_string(), Some(Bson::Int32(4))),
            ]
        );
        // 100,000 names in one pass.
        let many: Document = (0..100_000)
            .map(|i| (format!("v{i}"), Bson::Int32(i)))
            .collect();
        let vars = LetVariables::empty(DateTime::from_millis(0)).with_constants(&many);
        assert_eq!(vars.named_values().len(), 100_000);
    }

    #[test]
    fn sub_pipelines_count_their_depth() {
        let mut vars = LetVariables::empty(DateTime::from_millis(0));
        for _ in 0..20 {
            vars = vars.for_sub_pipeline(&Document::new());
        }
        assert_eq!(vars.sub_pipeline_depth(), 20);
        assert_eq!(
            vars.with_constants(&Document::new()).sub_pipeline_depth(),
            20
        );
    }
}
