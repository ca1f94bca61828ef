//! Stages that select, order or replace documents without reshaping them field by field:
//! `$match`, `$sort`, `$skip`, `$limit`, `$replaceRoot` and `$replaceWith`.

use super::{RunContext, Stage};
use crate::document::display::render as bson_to_string;
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::decimal::Dec;
use crate::expression::value::{bson_type_name, render, render_document, type_name};
use crate::expression::{Expression, LetVariables};
use crate::query::filter::Filter;
use crate::query::sort::SortSpec;
use bson::{Bson, Document};
use std::sync::Arc;

pub fn parse_match(_name: &str, spec: &Bson, vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    let Bson::Document(filter) = spec else {
        return Err(MongoError::location(
            15959,
            "the match filter must be an expression in an object",
        ));
    };
    let filter = Filter::parse_with_variables(filter, vars)?;
    filter.refuse_near()?;
    Ok(vec![Stage::Match(filter)])
}

pub fn parse_sort(_name: &str, spec: &Bson, vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    let Bson::Document(keys) = spec else {
        return Err(MongoError::location(
            15973,
            "the $sort key specification must be an object",
        ));
    };
    if keys.is_empty() {
        return Err(MongoError::location(
            15976,
            "$sort stage must have at least one sort key",
        ));
    }
    Ok(vec![Stage::Sort(SortSpec::parse_for(keys, vars)?)])
}

pub fn parse_skip(name: &str, spec: &Bson, _vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    Ok(vec![Stage::Skip(non_negative_count(name, 5107200, spec)?)])
}

pub fn parse_limit(name: &str, spec: &Bson, _vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    let limit = non_negative_count(name, 5107201, spec)?;
    if limit == 0 {
        return Err(MongoError::location(15958, "the limit must be positive"));
    }
    Ok(vec![Stage::Limit(limit)])
}

/// A whole number of documents, of any numeric type, with the server's wording for each way
/// it can be wrong.
fn non_negative_count(stage: &str, code: i32, value: &Bson) -> Result<u64> {
    let shown = || format!("{stage}: {}", bson_to_string(value));
    let invalid = |reason: String| {
        MongoError::location(code, format!("invalid argument to {stage} stage: {reason}"))
    };
    let unrepresentable = || invalid(format!("Cannot represent as a 64-bit integer: {}", shown()));
    let n = match value {
        Bson::Int32(v) => i64::from(*v),
        Bson::Int64(v) => *v,
        Bson::Double(v) => {
            if v.fract() != 0.0 {
                return Err(invalid(format!("Expected an integer: {}", shown())));
            }
            // 2^63 is the first double above the int64 range.
            if !(*v >= -9_223_372_036_854_775_808.0 && *v < 9_223_372_036_854_775_808.0) {
                return Err(unrepresentable());
            }
            *v as i64
        }
        Bson::Decimal128(d) => Dec::decode(*d).to_i64_exact().ok_or_else(unrepresentable)?,
        _ => return Err(invalid(format!("Expected a number in: {}", shown()))),
    };
    u64::try_from(n).map_err(|_| invalid(format!("Expected a non-negative number in: {}", shown())))
}

/// `$replaceRoot`/`$replaceWith`: the expression's value becomes the document.
pub struct ReplaceRoot {
    new_root: Expression,
    /// How the server names the expression in its error: `'newRoot' expression` or
    /// `'replacement document'`.
    described_as: &'static str,
}

pub fn parse_replace_root(
    _name: &str,
    spec: &Bson,
    vars: &Arc<LetVariables>,
) -> Result<Vec<Stage>> {
    let Bson::Document(options) = spec else {
        return Err(MongoError::location(
            40229,
            format!(
                "expected an object as specification for $replaceRoot stage, got {}",
                bson_type_name(spec)
            ),
        ));
    };
    let mut new_root = None;
    for (key, value) in options {
        if key != "newRoot" {
            return Err(MongoError::new(
                ErrorCode::IDLUnknownField,
                format!("BSON field '$replaceRoot.{key}' is an unknown field."),
            ));
        }
        new_root = Some(Expression::parse_in(value, vars.scope())?);
    }
    let new_root = new_root.ok_or_else(|| crate::command::missing("$replaceRoot", "newRoot"))?;
    Ok(vec![Stage::ReplaceRoot(ReplaceRoot {
        new_root,
        described_as: "'newRoot' expression",
    })])
}

pub fn parse_replace_with(
    _name: &str,
    spec: &Bson,
    vars: &Arc<LetVariables>,
) -> Result<Vec<Stage>> {
    let new_root = Expression::parse_in(spec, vars.scope())?;
    Ok(vec![Stage::ReplaceRoot(ReplaceRoot {
        new_root,
        described_as: "'replacement document'",
    })])
}

impl ReplaceRoot {
    pub fn apply(&self, doc: &Document, ctx: &RunContext) -> Result<Document> {
        match self.new_root.evaluate(&ctx.variables(doc))? {
            Some(Bson::Document(mut new_root)) => {
                // As MongoDB's, the new document keeps the old one's metadata.
                if ctx.vars.carries_metadata() {
                    crate::expression::meta::copy(doc, &mut new_root);
                }
                Ok(new_root)
            }
            other => Err(MongoError::location(
                40228,
                format!(
                    "{}  must evaluate to an object, but resulting value was: {}. Type of resulting value: '{}'. \
                     Input document: {}",
                    self.described_as,
                    render(other.as_ref()),
                    type_name(other.as_ref()),
                    render_document(doc)
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::stages::no_variables;
    use bson::{bson, doc};

    fn error(name: &str, spec: Bson) -> (i32, String) {
        let parsed = match name {
            "$skip" => parse_skip(name, &spec, &no_variables()),
            "$limit" => parse_limit(name, &spec, &no_variables()),
            "$sort" => parse_sort(name, &spec, &no_variables()),
            "$match" => parse_match(name, &spec, &no_variables()),
            _ => parse_replace_root(name, &spec, &no_variables()),
        };
        let err = parsed.err().unwrap();
        (err.code().code(), err.message().to_string())
    }

    #[test]
    fn skip_and_limit_arguments() {
        assert!(matches!(
            parse_skip("$skip", &bson!(0), &no_variables()).unwrap()[..],
            [Stage::Skip(0)]
        ));
        assert!(matches!(
            parse_skip("$skip", &bson!(3.0), &no_variables()).unwrap()[..],
            [Stage::Skip(3)]
        ));
        assert!(matches!(
            parse_limit("$limit", &bson!(2_i64), &no_variables()).unwrap()[..],
            [Stage::Limit(2)]
        ));
        assert!(matches!(
            parse_limit(
                "$limit",
                &Bson::Decimal128("4".parse().unwrap()),
                &no_variables()
            )
            .unwrap()[..],
            [Stage::Limit(4)]
        ));
        assert_eq!(
            error("$skip", bson!("x")),
            (
                5107200,
                "invalid argument to $skip stage: Expected a number in: $skip: \"x\"".into()
            )
        );
        assert_eq!(
            error("$skip", bson!(-1)),
            (
                5107200,
                "invalid argument to $skip stage: Expected a non-negative number in: $skip: -1"
                    .into()
            )
        );
        assert_eq!(
            error("$skip", bson!(1.5)),
            (
                5107200,
                "invalid argument to $skip stage: Expected an integer: $skip: 1.5".into()
            )
        );
        assert_eq!(
            error("$skip", bson!([1])).1,
            "invalid argument to $skip stage: Expected a number in: $skip: [ 1 ]"
        );
        assert_eq!(
            error("$limit", bson!(0)),
            (15958, "the limit must be positive".into())
        );
        assert_eq!(error("$limit", bson!(-1)).0, 5107201);
        assert_eq!(
            error("$limit", bson!(true)).1,
            "invalid argument to $limit stage: Expected a number in: $limit: true"
        );
        assert_eq!(
            error("$limit", Bson::Decimal128("1.5".parse().unwrap())).1,
            "invalid argument to $limit stage: Cannot represent as a 64-bit integer: $limit: 1.5"
        );
    }

    #[test]
    fn match_and_sort_specifications() {
        assert_eq!(error("$match", bson!(1)).0, 15959);
        assert_eq!(
            error("$sort", bson!(1)),
            (
                15973,
                "the $sort key specification must be an object".into()
            )
        );
        assert_eq!(
            error("$sort", bson!({})),
            (15976, "$sort stage must have at least one sort key".into())
        );
    }

    #[test]
    fn replace_root_specification() {
        assert_eq!(
            error("$replaceRoot", bson!(1)),
            (
                40229,
                "expected an object as specification for $replaceRoot stage, got int".into()
            )
        );
        assert_eq!(
            error("$replaceRoot", bson!({})),
            (
                40414,
                "BSON field '$replaceRoot.newRoot' is missing but a required field".into()
            )
        );
        assert_eq!(
            error("$replaceRoot", bson!({"newRoot": "$a", "bogus": 1})),
            (
                40415,
                "BSON field '$replaceRoot.bogus' is an unknown field.".into()
            )
        );
    }

    #[test]
    fn replace_root_needs_a_document() {
        let ctx = RunContext::at_epoch();
        let stages =
            parse_replace_root("$replaceRoot", &bson!({"newRoot": "$a.b"}), &no_variables())
                .unwrap();
        let [Stage::ReplaceRoot(replace)] = &stages[..] else {
            panic!("one stage")
        };
        assert_eq!(
            replace.apply(&doc! {"a": {"b": {"c": 10}}}, &ctx).unwrap(),
            doc! {"c": 10}
        );
        let err = replace
            .apply(&doc! {"_id": 1, "a": {"b": 10}, "c": 123}, &ctx)
            .unwrap_err();
        assert_eq!(err.code().code(), 40228);
        assert_eq!(
            err.message(),
            "'newRoot' expression  must evaluate to an object, but resulting value was: 10. Type of resulting value: 'int'. \
             Input document: {_id: 1, a: {b: 10}, c: 123}"
        );
        let stages =
            parse_replace_with("$replaceWith", &bson!("$missing"), &no_variables()).unwrap();
        let [Stage::ReplaceRoot(replace)] = &stages[..] else {
            panic!("one stage")
        };
        let err = replace.apply(&doc! {"_id": 1}, &ctx).unwrap_err();
        assert!(err.message().starts_with("'replacement document'  must evaluate to an object, but resulting value was: MISSING. Type of resulting value: 'missing'."));
    }
}
