//! `$bucket`: documents grouped into the ranges between sorted constant boundaries, with an
//! optional `default` bucket. As in MongoDB it is a `$group` keyed by a `$switch` over the
//! ranges followed by a sort on `_id`, so documents outside every range without a `default`
//! fail with the `$switch` error (40066).

use super::Stage;
use super::group::Group;
use crate::aggregate::accumulators::Accumulator;
use crate::document::order::canonical_rank;
use crate::error::{MongoError, Result};
use crate::expression::value::{bson_type_name, compare, render};
use crate::expression::{Expression, LetVariables};
use crate::query::sort::SortSpec;
use bson::{Bson, Document, doc};
use std::cmp::Ordering;
use std::sync::Arc;

pub fn parse(_name: &str, spec: &Bson, vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    let Bson::Document(spec) = spec else {
        return Err(MongoError::location(
            40201,
            format!(
                "Argument to $bucket stage must be an object, but found type: {}.",
                bson_type_name(spec)
            ),
        ));
    };
    let scope = vars.scope();
    let mut group_by = None;
    let mut boundaries: Vec<Bson> = Vec::new();
    let mut default = None;
    let mut output = None;
    for (name, value) in spec {
        match name.as_str() {
            "groupBy" => {
                let is_expression = match value {
                    Bson::Document(d) => d.keys().next().is_some_and(|k| k.starts_with('$')),
                    Bson::String(s) => s.starts_with('$'),
                    _ => false,
                };
                if !is_expression {
                    return Err(MongoError::location(
                        40202,
                        format!(
                            "The $bucket 'groupBy' field must be defined as a $-prefixed path or an expression, but found: {}.",
                            render(Some(value))
                        ),
                    ));
                }
                group_by = Some(value.clone());
            }
            "boundaries" => {
                let Bson::Array(items) = value else {
                    return Err(MongoError::location(
                        40200,
                        format!(
                            "The $bucket 'boundaries' field must be an array, but found type: {}.",
                            bson_type_name(value)
                        ),
                    ));
                };
                boundaries.clear();
                for item in items {
                    let constant = constant_value(item, vars)?.ok_or_else(|| {
                        MongoError::location(
                            40191,
                            format!(
                                "The $bucket 'boundaries' field must be an array of constant values, but found value: {}.",
                                render(Some(item))
                            ),
                        )
                    })?;
                    boundaries.push(constant);
                }
                check_boundaries(&boundaries)?;
            }
            "default" => {
                default = Some(constant_value(value, vars)?.ok_or_else(|| {
                    MongoError::location(
                        40195,
                        format!(
                            "The $bucket 'default' field must be a constant expression, but found: {}.",
                            render(Some(value))
                        ),
                    )
                })?);
            }
            "output" => {
                let Bson::Document(fields) = value else {
                    return Err(MongoError::location(
                        40196,
                        format!(
                            "The $bucket 'output' field must be an object, but found type: {}.",
                            bson_type_name(value)
                        ),
                    ));
                };
                output = Some(fields.clone());
            }
            other => {
                return Err(MongoError::location(
                    40197,
                    format!("Unrecognized option to $bucket: {other}."),
                ));
            }
        }
    }
    let (Some(group_by), false) = (group_by, boundaries.is_empty()) else {
        return Err(MongoError::location(
            40198,
            "$bucket requires 'groupBy' and 'boundaries' to be specified.",
        ));
    };
    if let (Some(default), Some(lowest), Some(highest)) =
        (&default, boundaries.first(), boundaries.last())
    {
        let in_range = compare(Some(default), Some(lowest)) != Ordering::Less
            && compare(Some(default), Some(highest)) == Ordering::Less;
        if canonical_rank(default) == canonical_rank(lowest) && in_range {
            return Err(MongoError::location(
                40199,
                "The $bucket 'default' field must be less than the lowest boundary or greater than or equal to the highest boundary.",
            ));
        }
    }
    let id = Expression::parse_in(&switch(&group_by, &boundaries, default), scope)?;
    let accumulators = match output {
        Some(fields) => fields
            .iter()
            .map(|(field, acc)| Accumulator::parse(field, acc, vars))
            .collect::<Result<Vec<_>>>()?,
        None => vec![Accumulator::count("count")],
    };
    Ok(vec![
        Stage::Group(Group::new(id, accumulators)),
        Stage::Sort(SortSpec::parse_for(&doc! {"_id": 1}, vars)?),
    ])
}

/// The value of an operand that does not read the document (a literal, or an expression of
/// literals and variables, which MongoDB folds into a constant); `None` when it reads it.
pub(super) fn constant_value(operand: &Bson, vars: &Arc<LetVariables>) -> Result<Option<Bson>> {
    let expr = Expression::parse_in(operand, vars.scope())?;
    if expr.depends_on_document() {
        return Ok(None);
    }
    let empty = Document::new();
    Ok(Some(
        expr.evaluate(&vars.variables(&empty))?
            .unwrap_or(Bson::Null),
    ))
}

/// At least two boundaries, of one canonical type, strictly ascending.
fn check_boundaries(boundaries: &[Bson]) -> Result<()> {
    if boundaries.len() < 2 {
        return Err(MongoError::location(
            40192,
            format!(
                "The $bucket 'boundaries' field must have at least 2 values, but found {} value(s).",
                boundaries.len()
            ),
        ));
    }
    for (i, pair) in boundaries.windows(2).enumerate() {
        let [lower, upper] = pair else { continue };
        if canonical_rank(lower) != canonical_rank(upper) {
            return Err(MongoError::location(
                40193,
                format!(
                    "All values in the the 'boundaries' option to $bucket must have the same type. Found conflicting types {} and {}.",
                    bson_type_name(lower),
                    bson_type_name(upper)
                ),
            ));
        }
        if compare(Some(lower), Some(upper)) != Ordering::Less {
            return Err(MongoError::location(
                40194,
                format!(
                    "The 'boundaries' option to $bucket must be sorted, but elements {} and {} are not in ascending order ({} is not less than {}).",
                    i,
                    i + 1,
                    render(Some(lower)),
                    render(Some(upper))
                ),
            ));
        }
    }
    Ok(())
}

/// `{$switch: {branches: [{case: lower <= groupBy < upper, then: lower}...], default}}`.
fn switch(group_by: &Bson, boundaries: &[Bson], default: Option<Bson>) -> Bson {
    let literal = |value: &Bson| Bson::Document(doc! {"$literal": value.clone()});
    let branches: Vec<Bson> = boundaries
        .windows(2)
        .filter_map(|pair| match pair {
            [lower, upper] => Some(Bson::Document(doc! {
                "case": {"$and": [
                    {"$gte": [group_by.clone(), literal(lower)]},
                    {"$lt": [group_by.clone(), literal(upper)]},
                ]},
                "then": literal(lower),
            })),
            _ => None,
        })
        .collect();
    let mut spec = doc! {"branches": branches};
    if let Some(default) = default {
        spec.insert("default", literal(&default));
    }
    Bson::Document(doc! {"$switch": spec})
}

#[cfg(test)]
mod tests {
    use crate::aggregate::Pipeline;
    use bson::{Bson, Document, bson, doc};

    fn stages(spec: Bson) -> Vec<Document> {
        vec![doc! {"$bucket": spec}]
    }

    fn run(spec: Bson, docs: Vec<Document>) -> crate::error::Result<Vec<Document>> {
        Pipeline::parse(&stages(spec))?.run(docs)
    }

    fn code(spec: Bson) -> i32 {
        Pipeline::parse(&stages(spec))
            .err()
            .map_or(0, |e| e.code().code())
    }

    fn artists() -> Vec<Document> {
        vec![
            doc! {"_id": 1, "last_name": "Bernard", "first_name": "Emil", "year_born": 1868, "year_died": 1941, "nationality": "France"},
            doc! {"_id": 2, "last_name": "Rippl-Ronai", "first_name": "Joszef", "year_born": 1861, "year_died": 1927, "nationality": "Hungary"},
            doc! {"_id": 3, "last_name": "Ostroumova", "first_name": "Anna", "year_born": 1871, "year_died": 1955, "nationality": "Russia"},
            doc! {"_id": 4, "last_name": "Van Gogh", "first_name": "Vincent", "year_born": 1853, "year_died": 1890, "nationality": "Holland"},
            doc! {"_id": 5, "last_name": "Maurer", "first_name": "Alfred", "year_born": 1868, "year_died": 1932, "nationality": "USA"},
            doc! {"_id": 6, "last_name": "Munch", "first_name": "Edvard", "year_born": 1863, "year_died": 1944, "nationality": "Norway"},
            doc! {"_id": 7, "last_name": "Redon", "first_name": "Odilon", "year_born": 1840, "year_died": 1916, "nationality": "France"},
            doc! {"_id": 8, "last_name": "Diriks", "first_name": "Edvard", "year_born": 1855, "year_died": 1930, "nationality": "Norway"},
        ]
    }

    /// The manual's "Bucket by Year and Filter by Bucket Results" example.
    #[test]
    fn manual_artists_by_birth_year() {
        let out = run(
            bson!({
                "groupBy": "$year_born",
                "boundaries": [1840, 1850, 1860, 1870, 1880],
                "default": "Other",
                "output": {
                    "count": {"$sum": 1},
                    "artists": {"$push": {"name": {"$concat": ["$first_name", " ", "$last_name"]}, "year_born": "$year_born"}}
                }
            }),
            artists(),
        )
        .unwrap();
        let ids: Vec<&Bson> = out.iter().map(|d| d.get("_id").unwrap()).collect();
        assert_eq!(
            ids,
            vec![
                &Bson::Int32(1840),
                &Bson::Int32(1850),
                &Bson::Int32(1860),
                &Bson::Int32(1870)
            ]
        );
        assert_eq!(out[3].get("count"), Some(&Bson::Int32(1)));
        assert_eq!(out[0].get("count"), Some(&Bson::Int32(1)));
        assert_eq!(out[1].get("count"), Some(&Bson::Int32(2)));
        assert_eq!(out[2].get("count"), Some(&Bson::Int32(4)));
        assert_eq!(
            out[1].get("artists"),
            Some(&bson!([
                {"name": "Vincent Van Gogh", "year_born": 1853},
                {"name": "Edvard Diriks", "year_born": 1855}
            ]))
        );
    }

    #[test]
    fn default_bucket_and_count() {
        let docs = vec![
            doc! {"p": 5},
            doc! {"p": 150},
            doc! {"p": "x"},
            doc! {},
            doc! {"p": 10},
        ];
        let out = run(
            bson!({"groupBy": "$p", "boundaries": [0, 10, 100], "default": "Other"}),
            docs,
        )
        .unwrap();
        assert_eq!(
            out,
            vec![
                doc! {"_id": 0, "count": 1},
                doc! {"_id": 10, "count": 1},
                doc! {"_id": "Other", "count": 3}
            ]
        );
    }

    #[test]
    fn outside_the_boundaries_without_default_fails() {
        let err = run(
            bson!({"groupBy": "$p", "boundaries": [0, 10]}),
            vec![doc! {"p": 11}],
        )
        .unwrap_err();
        assert_eq!(err.code().code(), 40066);
    }

    #[test]
    fn specification_errors() {
        assert_eq!(code(bson!(1)), 40201);
        assert_eq!(code(bson!({"groupBy": "p", "boundaries": [0, 1]})), 40202);
        assert_eq!(code(bson!({"groupBy": "$p", "boundaries": 1})), 40200);
        assert_eq!(
            code(bson!({"groupBy": "$p", "boundaries": ["$x", 1]})),
            40191
        );
        assert_eq!(code(bson!({"groupBy": "$p", "boundaries": [0]})), 40192);
        assert_eq!(
            code(bson!({"groupBy": "$p", "boundaries": [0, "a"]})),
            40193
        );
        assert_eq!(code(bson!({"groupBy": "$p", "boundaries": [1, 1]})), 40194);
        assert_eq!(
            code(bson!({"groupBy": "$p", "boundaries": [0, 1.5, 2_i64]})),
            0
        );
        assert_eq!(
            code(bson!({"groupBy": "$p", "boundaries": [0, 5], "default": "$x"})),
            40195
        );
        assert_eq!(
            code(bson!({"groupBy": "$p", "boundaries": [0, 5], "default": 3})),
            40199
        );
        assert_eq!(
            code(bson!({"groupBy": "$p", "boundaries": [0, 5], "default": 5})),
            0
        );
        assert_eq!(
            code(bson!({"groupBy": "$p", "boundaries": [0, 5], "output": 1})),
            40196
        );
        assert_eq!(
            code(bson!({"groupBy": "$p", "boundaries": [0, 5], "x": 1})),
            40197
        );
        assert_eq!(code(bson!({"groupBy": "$p"})), 40198);
        assert_eq!(
            code(bson!({"groupBy": "$p", "boundaries": [0, 5], "output": {"n": 1}})),
            40234
        );
    }
}
