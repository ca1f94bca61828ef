//! `$unwind`: one output document per element of an array field, optionally with the element's
//! index, optionally keeping documents whose field is null, missing or an empty array.

use super::Stage;
use crate::error::{MongoError, Result};
use crate::expression::LetVariables;
use crate::expression::fieldpath::{FieldPath, get_nested, remove_nested, set_nested};
use crate::expression::value::bson_type_name;
use bson::{Bson, Document};
use std::sync::Arc;

pub struct Unwind {
    path: FieldPath,
    include_array_index: Option<FieldPath>,
    preserve_null_and_empty_arrays: bool,
}

/// `"$path"` or `{path, includeArrayIndex, preserveNullAndEmptyArrays}`.
pub fn parse(_name: &str, spec: &Bson, _vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    let mut path = String::new();
    let mut preserve = false;
    let mut index = None;
    match spec {
        Bson::Document(options) => {
            for (key, value) in options {
                match (key.as_str(), value) {
                    ("path", Bson::String(s)) => path = s.clone(),
                    ("path", other) => {
                        return Err(MongoError::location(
                            28808,
                            format!(
                                "expected a string as the path for $unwind stage, got {}",
                                bson_type_name(other)
                            ),
                        ));
                    }
                    ("preserveNullAndEmptyArrays", Bson::Boolean(b)) => preserve = *b,
                    ("preserveNullAndEmptyArrays", other) => {
                        return Err(MongoError::location(
                            28809,
                            format!(
                                "expected a boolean for the preserveNullAndEmptyArrays option to $unwind stage, got {}",
                                bson_type_name(other)
                            ),
                        ));
                    }
                    ("includeArrayIndex", Bson::String(s)) if !s.is_empty() => {
                        if s.starts_with('$') {
                            return Err(MongoError::location(
                                28822,
                                format!(
                                    "includeArrayIndex option to $unwind stage should not be prefixed with a '$': {s}"
                                ),
                            ));
                        }
                        index = Some(s.clone());
                    }
                    ("includeArrayIndex", other) => {
                        return Err(MongoError::location(
                            28810,
                            format!(
                                "expected a non-empty string for the includeArrayIndex  option to $unwind stage, got {}",
                                bson_type_name(other)
                            ),
                        ));
                    }
                    (other, _) => {
                        return Err(MongoError::location(
                            28811,
                            format!("unrecognized option to $unwind stage: {other}"),
                        ));
                    }
                }
            }
        }
        Bson::String(s) => path = s.clone(),
        other => {
            return Err(MongoError::location(
                15981,
                format!(
                    "expected either a string or an object as specification for $unwind stage, got {}",
                    bson_type_name(other)
                ),
            ));
        }
    }
    if path.is_empty() {
        return Err(MongoError::location(
            28812,
            "no path specified to $unwind stage",
        ));
    }
    let Some(unprefixed) = path.strip_prefix('$') else {
        return Err(MongoError::location(
            28818,
            format!("path option to $unwind stage should be prefixed with a '$': {path}"),
        ));
    };
    Ok(vec![Stage::Unwind(Unwind {
        path: FieldPath::parse(unprefixed)?,
        include_array_index: index.as_deref().map(FieldPath::parse).transpose()?,
        preserve_null_and_empty_arrays: preserve,
    })])
}

impl Unwind {
    pub fn run(&self, docs: Vec<Document>) -> Vec<Document> {
        let mut out = Vec::with_capacity(docs.len());
        for doc in docs {
            match get_nested(&doc, self.path.parts()) {
                Some(Bson::Array(items)) if !items.is_empty() => {
                    for (i, item) in items.iter().enumerate() {
                        let mut unwound = doc.clone();
                        set_nested(&mut unwound, self.path.parts(), item.clone());
                        self.set_index(&mut unwound, Bson::Int64(i as i64));
                        out.push(unwound);
                    }
                }
                Some(Bson::Array(_)) => {
                    if self.preserve_null_and_empty_arrays {
                        let mut kept = doc;
                        remove_nested(&mut kept, self.path.parts());
                        self.set_index(&mut kept, Bson::Null);
                        out.push(kept);
                    }
                }
                None | Some(Bson::Null) | Some(Bson::Undefined) => {
                    if self.preserve_null_and_empty_arrays {
                        let mut kept = doc;
                        self.set_index(&mut kept, Bson::Null);
                        out.push(kept);
                    }
                }
                // A value that is not an array is treated as a one-element array.
                Some(_) => {
                    let mut kept = doc;
                    self.set_index(&mut kept, Bson::Null);
                    out.push(kept);
                }
            }
        }
        out
    }

    fn set_index(&self, doc: &mut Document, value: Bson) {
        if let Some(index) = &self.include_array_index {
            set_nested(doc, index.parts(), value);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::{bson, doc};

    fn unwind(spec: Bson, input: Document) -> Vec<Document> {
        let stages = parse("$unwind", &spec, &crate::aggregate::stages::no_variables()).unwrap();
        let [Stage::Unwind(unwind)] = &stages[..] else {
            panic!("one stage")
        };
        unwind.run(vec![input])
    }

    fn error(spec: Bson) -> (i32, String) {
        let err = parse("$unwind", &spec, &crate::aggregate::stages::no_variables())
            .err()
            .unwrap();
        (err.code().code(), err.message().to_string())
    }

    #[test]
    fn unwinds_arrays_with_indexes() {
        assert_eq!(
            unwind(bson!("$a"), doc! {"_id": 0, "a": [1, 2], "b": 3}),
            vec![
                doc! {"_id": 0, "a": 1, "b": 3},
                doc! {"_id": 0, "a": 2, "b": 3}
            ]
        );
        assert_eq!(
            unwind(
                bson!({"path": "$a.b", "includeArrayIndex": "i"}),
                doc! {"_id": 0, "a": {"b": ["x", "y"]}}
            ),
            vec![
                doc! {"_id": 0, "a": {"b": "x"}, "i": 0_i64},
                doc! {"_id": 0, "a": {"b": "y"}, "i": 1_i64}
            ]
        );
        assert_eq!(
            unwind(
                bson!({"path": "$a", "includeArrayIndex": "a"}),
                doc! {"_id": 0, "a": [null]}
            ),
            vec![doc! {"_id": 0, "a": 0_i64}]
        );
    }

    #[test]
    fn null_missing_empty_and_scalars() {
        let keep = |input: Document| {
            unwind(
                bson!({"path": "$a", "preserveNullAndEmptyArrays": true, "includeArrayIndex": "i"}),
                input,
            )
        };
        assert_eq!(unwind(bson!("$a"), doc! {"_id": 0}), Vec::<Document>::new());
        assert_eq!(
            unwind(bson!("$a"), doc! {"_id": 0, "a": null}),
            Vec::<Document>::new()
        );
        assert_eq!(
            unwind(bson!("$a"), doc! {"_id": 0, "a": []}),
            Vec::<Document>::new()
        );
        assert_eq!(
            unwind(
                bson!({"path": "$a", "includeArrayIndex": "i"}),
                doc! {"_id": 0, "a": 1}
            ),
            vec![doc! {"_id": 0, "a": 1, "i": null}]
        );
        assert_eq!(
            unwind(bson!("$a"), doc! {"_id": 0, "a": {}}),
            vec![doc! {"_id": 0, "a": {}}]
        );
        assert_eq!(keep(doc! {"_id": 0}), vec![doc! {"_id": 0, "i": null}]);
        assert_eq!(
            keep(doc! {"_id": 0, "a": null}),
            vec![doc! {"_id": 0, "a": null, "i": null}]
        );
        assert_eq!(
            keep(doc! {"_id": 0, "a": []}),
            vec![doc! {"_id": 0, "i": null}]
        );
        assert_eq!(
            unwind(
                bson!({"path": "$a.b", "preserveNullAndEmptyArrays": true}),
                doc! {"_id": 0, "a": {"b": []}}
            ),
            vec![doc! {"_id": 0, "a": {}}]
        );
        assert_eq!(
            unwind(
                bson!({"path": "$a.b", "preserveNullAndEmptyArrays": true, "includeArrayIndex": "_id"}),
                doc! {"_id": 0}
            ),
            vec![doc! {"_id": null}]
        );
    }

    #[test]
    fn specification_errors() {
        assert_eq!(
            error(bson!(1)),
            (
                15981,
                "expected either a string or an object as specification for $unwind stage, got int"
                    .into()
            )
        );
        assert_eq!(error(bson!({"path": 1})).0, 28808);
        assert_eq!(
            error(bson!({"path": "$a", "preserveNullAndEmptyArrays": 1})).0,
            28809
        );
        assert_eq!(
            error(bson!({"path": "$a", "includeArrayIndex": ""})).0,
            28810
        );
        assert_eq!(
            error(bson!({"path": "$a", "includeArrayIndex": "$i"})).0,
            28822
        );
        assert_eq!(
            error(bson!({"path": "$a", "x": 1})),
            (28811, "unrecognized option to $unwind stage: x".into())
        );
        assert_eq!(
            error(bson!({})),
            (28812, "no path specified to $unwind stage".into())
        );
        assert_eq!(error(bson!("")).0, 28812);
        assert_eq!(
            error(bson!("a")),
            (
                28818,
                "path option to $unwind stage should be prefixed with a '$': a".into()
            )
        );
        assert_eq!(error(bson!("$")).0, 40352);
    }
}
