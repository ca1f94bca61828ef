//! `$top`, `$bottom`, `$topN` and `$bottomN`: the first or last `n` outputs of a group in
//! `sortBy` order. Each document's argument evaluates to its output and the values of the
//! sortBy fields, from which its sort key is made as the server makes it; the kept entries
//! live in a [`Bounded`](super::n_results::Bounded).

use super::n_results::expect_object;
use super::{Kind, Parsed};
use crate::document::order::compare_values;
use crate::error::{MongoError, Result};
use crate::expression::value::Value;
use crate::expression::{Expression, LetVariables};
use crate::query::sort::SortSpec;
use bson::Bson;
use std::cmp::Ordering;

/// `{output, sortBy}` of `$top`/`$bottom`, plus `n` for `$topN`/`$bottomN`. The argument
/// evaluates to `[output, <sort field values>...]`, the values the sort key is made from.
pub fn parse_sorted(name: &'static str, argument: &Bson, vars: &LetVariables) -> Result<Parsed> {
    let single = name == "$top" || name == "$bottom";
    let spec = expect_object(name, argument, 5788001)?;
    let (mut n, mut output, mut sort_by) = (None, None, None);
    for (field, value) in spec {
        match field.as_str() {
            "n" if !single => n = Some(Expression::parse_in(value, vars.scope())?),
            "output" => output = Some(value),
            "sortBy" => {
                let Bson::Document(pattern) = value else {
                    return Err(MongoError::location(
                        10065,
                        "invalid parameter: expected an object (sortBy)",
                    ));
                };
                sort_by = Some(pattern);
            }
            _ => {
                return Err(MongoError::location(
                    5788002,
                    format!("Unknown argument to {name} '{field}'"),
                ));
            }
        }
    }
    let n = match n {
        Some(n) => n,
        None if single => Expression::Constant(Bson::Int32(1)),
        None => return Err(MongoError::location(5788003, "Missing value for 'n'")),
    };
    let output =
        output.ok_or_else(|| MongoError::location(5788004, "Missing value for 'output'"))?;
    let sort_by =
        sort_by.ok_or_else(|| MongoError::location(5788005, "Missing value for 'sortBy'"))?;
    let spec = SortSpec::parse_for(sort_by, vars)?;
    if spec.natural().is_some() {
        // The server builds a field path from every sortBy key, and `$natural` is not one.
        return Err(MongoError::location(
            16410,
            "FieldPath field names may not start with '$'. Consider using $getField or $setField.",
        ));
    }
    let mut items = vec![Expression::parse_in(output, vars.scope())?];
    let mut ascending = Vec::new();
    for (path, up) in spec.fields() {
        items.push(Expression::parse_in(
            &Bson::String(format!("${path}")),
            vars.scope(),
        )?);
        ascending.push(up);
    }
    Ok(Parsed {
        kind: Kind::Sorted(SortOrder {
            ascending,
            bottom: name.starts_with("$bottom"),
            single,
        }),
        argument: Expression::Array(items),
        n: Some(n),
    })
}
/// The sort of `$top`/`$bottom`/`$topN`/`$bottomN`: one direction per sortBy field.
#[derive(Clone, Debug)]
pub struct SortOrder {
    pub(super) ascending: Vec<bool>,
    /// Keeps the last `n` in sort order rather than the first.
    pub(super) bottom: bool,
    /// `$top`/`$bottom`: the value itself rather than an array of one.
    pub(super) single: bool,
}

/// `[output, field values...]` as (sort key, output): an array field value sorts by its
/// smallest element ascending and its largest descending (an empty array as undefined).
pub(super) fn sort_entry(input: Value, ascending: &[bool]) -> (Bson, Bson) {
    let Some(Bson::Array(items)) = input else {
        return (Bson::Array(Vec::new()), Bson::Null);
    };
    let mut items = items.into_iter();
    let output = items.next().unwrap_or(Bson::Null);
    let key = items
        .zip(ascending)
        .map(|(value, up)| match value {
            Bson::Array(elements) => {
                let wanted = if *up {
                    Ordering::Less
                } else {
                    Ordering::Greater
                };
                elements
                    .into_iter()
                    .reduce(|best, v| {
                        if compare_values(&v, &best) == wanted {
                            v
                        } else {
                            best
                        }
                    })
                    .unwrap_or(Bson::Undefined)
            }
            other => other,
        })
        .collect();
    (Bson::Array(key), output)
}
#[cfg(test)]
mod tests {
    use super::super::tests::{code, group, group_error, per_game};
    use bson::{bson, doc};

    #[test]
    fn top_n_and_bottom_n_documented_examples() {
        assert_eq!(
            per_game(
                bson!({"$topN": {"output": ["$playerId", "$score"], "sortBy": {"score": -1}, "n": 3}})
            ),
            vec![
                bson!([["PlayerC", 99], ["PlayerB", 33], ["PlayerA", 31]]),
                bson!([["PlayerD", 80], ["PlayerC", 66], ["PlayerB", 14]]),
            ]
        );
        assert_eq!(
            per_game(
                bson!({"$bottomN": {"output": ["$playerId", "$score"], "sortBy": {"score": -1}, "n": 3}})
            ),
            vec![
                bson!([["PlayerB", 33], ["PlayerA", 31], ["PlayerD", 1]]),
                bson!([["PlayerC", 66], ["PlayerB", 14], ["PlayerA", 10]]),
            ]
        );
        assert_eq!(
            per_game(bson!({"$top": {"output": ["$playerId", "$score"], "sortBy": {"score": -1}}})),
            vec![bson!(["PlayerC", 99]), bson!(["PlayerD", 80])]
        );
        assert_eq!(
            per_game(
                bson!({"$bottom": {"output": ["$playerId", "$score"], "sortBy": {"score": -1}}})
            ),
            vec![bson!(["PlayerD", 1]), bson!(["PlayerA", 10])]
        );
    }

    #[test]
    fn top_n_nulls_missing_and_type_order() {
        let docs = [
            doc! {"playerId": "PlayerA", "gameId": "G1", "score": 1},
            doc! {"playerId": "PlayerB", "gameId": "G1", "score": 2},
            doc! {"playerId": "PlayerC", "gameId": "G1", "score": 3},
            doc! {"playerId": "PlayerD", "gameId": "G1"},
            doc! {"playerId": "PlayerE", "gameId": "G1", "score": null},
        ];
        let out = group(
            bson!({"_id": "$gameId", "playerId": {"$topN": {"output": ["$playerId", "$score"], "sortBy": {"score": 1}, "n": 3}}}),
            &docs,
        )
        .unwrap();
        assert_eq!(
            out,
            vec![
                doc! {"_id": "G1", "playerId": [["PlayerD", null], ["PlayerE", null], ["PlayerA", 1]]}
            ]
        );
        let docs = [
            doc! {"playerId": "PlayerA", "gameId": "G1", "score": 1},
            doc! {"playerId": "PlayerB", "gameId": "G1", "score": "2"},
            doc! {"playerId": "PlayerC", "gameId": "G1", "score": ""},
        ];
        let out = group(
            bson!({"_id": "$gameId", "playerId": {"$topN": {"output": ["$playerId", "$score"], "sortBy": {"score": -1}, "n": 3}}}),
            &docs,
        )
        .unwrap();
        assert_eq!(
            out,
            vec![
                doc! {"_id": "G1", "playerId": [["PlayerB", "2"], ["PlayerC", ""], ["PlayerA", 1]]}
            ]
        );
        // A missing output becomes null; arrays sort by their smallest element ascending.
        let docs = [
            doc! {"k": [5, 0]},
            doc! {"v": 2, "k": 3},
            doc! {"v": 3, "k": [2, 9]},
        ];
        let out = group(
            bson!({"_id": null,
                   "asc": {"$topN": {"output": "$v", "sortBy": {"k": 1}, "n": 2}},
                   "desc": {"$top": {"output": "$v", "sortBy": {"k": -1}}}}),
            &docs,
        )
        .unwrap();
        assert_eq!(out, vec![doc! {"_id": null, "asc": [null, 3], "desc": 3}]);
    }

    #[test]
    fn specification_errors() {
        assert_eq!(code(bson!({"$topN": 1})), 5788001);
        assert_eq!(
            group_error(
                bson!({"_id": null, "r": {"$top": {"output": 1, "sortBy": {"a": 1}, "n": 1}}}),
                &[]
            ),
            (5788002, "Unknown argument to $top 'n'".into())
        );
        assert_eq!(
            code(bson!({"$topN": {"output": 1, "sortBy": {"a": 1}}})),
            5788003
        );
        assert_eq!(
            code(bson!({"$bottomN": {"n": 1, "sortBy": {"a": 1}}})),
            5788004
        );
        assert_eq!(code(bson!({"$bottom": {"output": 1}})), 5788005);
        assert_eq!(code(bson!({"$top": {"output": 1, "sortBy": 1}})), 10065);
        assert_eq!(
            code(bson!({"$top": {"output": 1, "sortBy": {"a": 2}}})),
            15975
        );
        assert_eq!(
            code(bson!({"$top": {"output": 1, "sortBy": {"a": "x"}}})),
            15974
        );
        assert_eq!(
            code(bson!({"$top": {"output": 1, "sortBy": {"$natural": 1}}})),
            16410
        );
        assert_eq!(
            code(bson!({"$top": {"output": 1, "sortBy": {"a..b": 1}}})),
            15998
        );
    }
}
