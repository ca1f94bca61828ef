//! `$group` and the stages defined in terms of it: `$count` (a group and a projection) and
//! `$sortByCount` (a group and a sort). A `$group` split over shards runs in two halves: on
//! each shard with `$willBeMerged: true` (it outputs partial states), on the router with
//! `$doingMerge: true` (it merges them), as the router's pipeline split writes them.

use super::shape::Shape;
use super::{RunContext, Stage};
use crate::aggregate::accumulators::{Accumulator, State, group_output};
use crate::error::{MongoError, Result};
use crate::expression::value::is_number;
use crate::expression::{Expression, LetVariables, Scope};
use crate::query::sort::SortSpec;
use bson::{Bson, Document, doc};
use std::sync::Arc;

pub struct Group {
    pub(super) id: Expression,
    pub(super) accumulators: Vec<Accumulator>,
    /// `$doingMerge`: the input documents are other groups' partial outputs.
    pub(super) doing_merge: bool,
    /// `$willBeMerged`: outputs partial states for a merging `$group`.
    pub(super) will_be_merged: bool,
}

pub fn parse_group(_name: &str, spec: &Bson, vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    let scope = vars.scope();
    let Bson::Document(spec) = spec else {
        return Err(MongoError::location(
            15947,
            "a group's fields must be specified in an object",
        ));
    };
    let mut id = None;
    let mut accumulators = Vec::new();
    let (mut doing_merge, mut will_be_merged) = (false, false);
    for (field, value) in spec {
        match field.as_str() {
            "_id" => {
                if id.is_some() {
                    return Err(id_twice());
                }
                id = Some(parse_id(value, scope)?);
            }
            "$doingMerge" => {
                if value != &Bson::Boolean(true) {
                    return Err(MongoError::location(
                        17030,
                        "$doingMerge should be true if present",
                    ));
                }
                doing_merge = true;
            }
            "$willBeMerged" => {
                let Bson::Boolean(merged) = value else {
                    return Err(MongoError::type_mismatch("$willBeMerged must be a boolean"));
                };
                will_be_merged = *merged;
            }
            _ => accumulators.push(Accumulator::parse(field, value, vars)?),
        }
    }
    let id =
        id.ok_or_else(|| MongoError::location(15955, "a group specification must include an _id"))?;
    Ok(vec![Stage::Group(Group {
        id,
        accumulators,
        doing_merge,
        will_be_merged,
    })])
}

fn id_twice() -> MongoError {
    MongoError::location(15948, "a group's _id may only be specified once")
}

/// The group key: `{}` is a constant, `{$op: ...}` an expression, and any other object an
/// object of expressions (which may not be inclusion flags).
fn parse_id(value: &Bson, scope: &Scope) -> Result<Expression> {
    let Bson::Document(fields) = value else {
        return Expression::parse_in(value, scope);
    };
    match fields.keys().next() {
        None => Ok(Expression::Constant(Bson::Document(Document::new()))),
        Some(first) if first.starts_with('$') => Expression::parse_object_in(fields, scope),
        Some(_) => {
            if fields
                .values()
                .any(|field| is_number(field) || matches!(field, Bson::Boolean(_)))
            {
                return Err(MongoError::location(
                    17390,
                    "$group does not support inclusion-style expressions",
                ));
            }
            Expression::parse_object_in(fields, scope)
        }
    }
}

/// `{$count: "name"}`: the number of input documents under `name`, or no document at all when
/// there is no input.
pub fn parse_count(_name: &str, spec: &Bson, vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    let non_empty_string = "the count field must be a non-empty string";
    let Bson::String(field) = spec else {
        return Err(MongoError::location(40156, non_empty_string));
    };
    if field.is_empty() {
        return Err(MongoError::location(40157, non_empty_string));
    }
    if field.starts_with('$') {
        return Err(MongoError::location(
            40158,
            "the count field cannot be a $-prefixed path",
        ));
    }
    if field.contains('\0') {
        return Err(MongoError::location(
            40159,
            "the count field cannot contain a null byte",
        ));
    }
    if field.contains('.') {
        return Err(MongoError::location(
            40160,
            "the count field cannot contain '.'",
        ));
    }
    if field == "_id" {
        return Err(id_twice());
    }
    let group = Group::new(
        Expression::Constant(Bson::Null),
        vec![Accumulator::count(field)],
    );
    let project = Shape::projection(
        &[("_id", &Bson::Int32(0)), (field.as_str(), &Bson::Int32(1))],
        vars.scope(),
    )?;
    Ok(vec![Stage::Group(group), Stage::Shape(project)])
}

/// `{$sortByCount: <expr>}`: groups by the expression, counts, and sorts by count descending.
pub fn parse_sort_by_count(
    _name: &str,
    spec: &Bson,
    vars: &Arc<LetVariables>,
) -> Result<Vec<Stage>> {
    let must_be_path_or_expression = "the sortByCount field must be defined as a $-prefixed path or an expression inside an object";
    let id = match spec {
        Bson::Document(expr) => {
            if !expr
                .keys()
                .next()
                .is_some_and(|first| first.starts_with('$'))
            {
                return Err(MongoError::location(40147, must_be_path_or_expression));
            }
            Expression::parse_object_in(expr, vars.scope())?
        }
        Bson::String(path) => {
            if !path.starts_with('$') {
                return Err(MongoError::location(40148, must_be_path_or_expression));
            }
            Expression::parse_in(spec, vars.scope())?
        }
        _ => {
            return Err(MongoError::location(
                40149,
                "the sortByCount field must be specified as a string or as an object",
            ));
        }
    };
    let group = Group::new(id, vec![Accumulator::count("count")]);
    Ok(vec![
        Stage::Group(group),
        Stage::Sort(SortSpec::parse(&doc! {"count": -1})?),
    ])
}

impl Group {
    /// A group by `id` with `accumulators`, for the stages that desugar into one (`$bucket`).
    pub(super) fn new(id: Expression, accumulators: Vec<Accumulator>) -> Group {
        Group {
            id,
            accumulators,
            doing_merge: false,
            will_be_merged: false,
        }
    }
}

impl Group {
    /// A new group's accumulator states; what they are initialized from (`n`) reads the group
    /// key's fields when the key is a document.
    pub(super) fn start_group(&self, key: &Bson, ctx: &RunContext) -> Result<Vec<State>> {
        let empty = Document::new();
        let key_doc = match key {
            Bson::Document(fields) => fields,
            _ => &empty,
        };
        let vars = ctx.variables(key_doc);
        self.accumulators
            .iter()
            .map(|acc| acc.start(&vars))
            .collect()
    }

    /// A finished group's output document: final values, or partial states for a merging
    /// `$group`.
    pub(super) fn output(&self, key: Bson, states: Vec<State>) -> Document {
        if self.will_be_merged {
            partial_output(key, &self.accumulators, states)
        } else {
            group_output(key, &self.accumulators, states)
        }
    }
}

/// A group as a shard sends it to be merged: `_id`, then each accumulator's partial state.
fn partial_output(id: Bson, accumulators: &[Accumulator], states: Vec<State>) -> Document {
    let mut out = Document::new();
    out.insert("_id", id);
    for (acc, state) in accumulators.iter().zip(states) {
        out.insert(acc.field.clone(), state.partial());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::stages::no_variables;
    use bson::bson;

    fn run(spec: Bson, docs: Vec<Document>) -> Result<Vec<Document>> {
        let ctx = RunContext::at_epoch();
        let mut docs = docs;
        for stage in parse_group("$group", &spec, &no_variables())? {
            docs = stage.run(docs, &ctx)?;
        }
        Ok(docs)
    }

    fn error(name: &str, spec: Bson) -> (i32, String) {
        let parsed = match name {
            "$count" => parse_count(name, &spec, &no_variables()),
            "$sortByCount" => parse_sort_by_count(name, &spec, &no_variables()),
            _ => parse_group(name, &spec, &no_variables()),
        };
        let err = parsed.err().unwrap();
        (err.code().code(), err.message().to_string())
    }

    #[test]
    fn groups_by_value_equality() {
        let docs = vec![
            doc! {"k": 1, "v": 1},
            doc! {"k": 1.0, "v": 2},
            doc! {"k": 2_i64, "v": 3},
            doc! {"v": 4},
            doc! {"k": null, "v": 5},
        ];
        let out = run(
            bson!({"_id": "$k", "total": {"$sum": "$v"}, "n": {"$sum": 1}}),
            docs,
        )
        .unwrap();
        assert_eq!(
            out,
            vec![
                doc! {"_id": 1, "total": 3, "n": 2},
                doc! {"_id": 2_i64, "total": 3, "n": 1},
                doc! {"_id": null, "total": 9, "n": 2}
            ]
        );
    }

    #[test]
    fn object_keys_leave_out_missing_fields() {
        let docs = vec![doc! {"a": 1}, doc! {"a": 1, "b": null}, doc! {"a": 1}];
        let out = run(
            bson!({"_id": {"a": "$a", "b": "$b"}, "n": {"$sum": 1}}),
            docs,
        )
        .unwrap();
        assert_eq!(
            out,
            vec![
                doc! {"_id": {"a": 1}, "n": 2},
                doc! {"_id": {"a": 1, "b": null}, "n": 1}
            ]
        );
        assert_eq!(
            run(bson!({"_id": {}, "n": {"$sum": 1}}), vec![doc! {}]).unwrap(),
            vec![doc! {"_id": {}, "n": 1}]
        );
        assert_eq!(
            run(bson!({"_id": null}), vec![]).unwrap(),
            Vec::<Document>::new()
        );
    }

    #[test]
    fn group_specification_errors() {
        assert_eq!(
            error("$group", bson!(1)),
            (
                15947,
                "a group's fields must be specified in an object".into()
            )
        );
        assert_eq!(
            error("$group", bson!({"n": {"$sum": 1}})),
            (15955, "a group specification must include an _id".into())
        );
        assert_eq!(
            error("$group", bson!({"_id": {"a": 1}})),
            (
                17390,
                "$group does not support inclusion-style expressions".into()
            )
        );
        assert_eq!(error("$group", bson!({"_id": null, "n": 1})).0, 40234);
        assert_eq!(error("$group", bson!({"_id": {"$foo": 1}})).0, 168);
        // The inclusion check covers every field before any is parsed.
        assert_eq!(
            error("$group", bson!({"_id": {"a": "$", "b": true}})).0,
            17390
        );
        assert_eq!(error("$group", bson!({"_id": {"a.b": "$x"}})).0, 16412);
        assert_eq!(
            error("$group", bson!({"_id": null, "x": {"$foo": 1}})),
            (15952, "unknown group operator '$foo'".into())
        );
    }

    #[test]
    fn accumulator_errors_stop_the_run() {
        assert_eq!(
            run(
                bson!({"_id": null, "m": {"$mergeObjects": "$v"}}),
                vec![doc! {"v": "x"}]
            )
            .unwrap_err()
            .code()
            .code(),
            40400
        );
        // `n` is checked when a group starts, so an empty input has nothing to complain about.
        let spec = bson!({"_id": "$k", "f": {"$firstN": {"input": "$v", "n": 0}}});
        assert!(run(spec.clone(), vec![]).unwrap().is_empty());
        assert_eq!(
            run(spec, vec![doc! {"k": 1}]).unwrap_err().code().code(),
            5787908
        );
    }

    #[test]
    fn partial_and_merging_groups() {
        assert_eq!(
            error("$group", bson!({"_id": null, "$doingMerge": false})),
            (17030, "$doingMerge should be true if present".into())
        );
        assert_eq!(
            error("$group", bson!({"_id": null, "$willBeMerged": 1})).0,
            14
        );
        let partial = run(
            bson!({"_id": "$k", "s": {"$sum": "$v"}, "a": {"$avg": "$v"}, "$willBeMerged": true}),
            vec![doc! {"k": 1, "v": 2}, doc! {"k": 1, "v": 3_i64}],
        )
        .unwrap();
        assert_eq!(
            partial,
            vec![doc! {"_id": 1, "s": [18, 5.0, 0.0], "a": {"count": 2_i64, "ps": [18, 5.0, 0.0]}}]
        );
        let merged = run(
            bson!({"_id": "$$ROOT._id", "s": {"$sum": "$$ROOT.s"}, "a": {"$avg": "$$ROOT.a"},
                   "$doingMerge": true}),
            [partial.clone(), partial].concat(),
        )
        .unwrap();
        assert_eq!(merged, vec![doc! {"_id": 1, "s": 10_i64, "a": 2.5}]);
    }

    #[test]
    fn count_specification_errors() {
        assert_eq!(
            error("$count", bson!(1)),
            (40156, "the count field must be a non-empty string".into())
        );
        assert_eq!(error("$count", bson!("")).0, 40157);
        assert_eq!(
            error("$count", bson!("$n")),
            (40158, "the count field cannot be a $-prefixed path".into())
        );
        assert_eq!(error("$count", bson!("a\0b")).0, 40159);
        assert_eq!(
            error("$count", bson!("a.b")),
            (40160, "the count field cannot contain '.'".into())
        );
        assert_eq!(error("$count", bson!("_id")).0, 15948);
    }

    #[test]
    fn sort_by_count_specification_errors() {
        let message = "the sortByCount field must be defined as a $-prefixed path or an expression inside an object";
        assert_eq!(error("$sortByCount", bson!({})), (40147, message.into()));
        assert_eq!(error("$sortByCount", bson!({"a": 1})).0, 40147);
        assert_eq!(error("$sortByCount", bson!("a")), (40148, message.into()));
        assert_eq!(
            error("$sortByCount", bson!(1)),
            (
                40149,
                "the sortByCount field must be specified as a string or as an object".into()
            )
        );
    }
}
