//! `$fill`: nulls and missing fields filled with a constant expression (`value`, an
//! `$addFields` of `$ifNull`) or from other documents (`method: "locf"` or `"linear"`, a
//! `$setWindowFields` with `$locf` / `$linearFill`), as MongoDB desugars it.

use super::{Stage, shape, window};
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::LetVariables;
use crate::expression::value::bson_type_name;
use bson::{Bson, Document, doc};
use std::sync::Arc;

fn unknown(field: &str) -> MongoError {
    MongoError::new(
        ErrorCode::IDLUnknownField,
        format!("BSON field '$fill.{field}' is an unknown field."),
    )
}

fn wrong_type(field: &str, value: &Bson, expected: &str) -> MongoError {
    MongoError::new(
        ErrorCode::TypeMismatch,
        format!(
            "BSON field '$fill.{field}' is the wrong type '{}', expected type '{expected}'",
            bson_type_name(value)
        ),
    )
}

pub fn parse(name: &str, spec: &Bson, vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    let Bson::Document(spec) = spec else {
        return Err(MongoError::failed_to_parse(format!(
            "The {name} stage specification must be an object, found {}",
            bson_type_name(spec)
        )));
    };
    let (mut sort_by, mut partition_by, mut partition_by_fields, mut output) =
        (None, None, None, None);
    for (field, value) in spec {
        match field.as_str() {
            "sortBy" => match value {
                Bson::Document(_) => sort_by = Some(value.clone()),
                _ => return Err(wrong_type(field, value, "object")),
            },
            "partitionBy" => match value {
                Bson::Document(_) | Bson::String(_) => partition_by = Some(value.clone()),
                _ => return Err(wrong_type(field, value, "string, object")),
            },
            "partitionByFields" => {
                let Bson::Array(items) = value else {
                    return Err(wrong_type(field, value, "array"));
                };
                let mut names = Vec::with_capacity(items.len());
                for item in items {
                    let Bson::String(name) = item else {
                        return Err(wrong_type("partitionByFields.0", item, "string"));
                    };
                    names.push(name.clone());
                }
                partition_by_fields = Some(names);
            }
            "output" => match value {
                Bson::Document(fields) => output = Some(fields.clone()),
                _ => return Err(wrong_type(field, value, "object")),
            },
            other => return Err(unknown(other)),
        }
    }
    let output = output.ok_or_else(|| crate::command::missing("$fill", "output"))?;
    if output.is_empty() {
        return Err(MongoError::location(
            6050203,
            "The output field in '$fill' must contain an object with at least one element",
        ));
    }
    let mut window_output = Document::new();
    let mut add_fields = Document::new();
    for (field, fill) in &output {
        let Bson::Document(fill) = fill else {
            return Err(MongoError::location(
                6050200,
                "Each fill output specification must be an object with exactly one field",
            ));
        };
        let (mut method, mut value) = (None, None);
        for (key, argument) in fill {
            match key.as_str() {
                "method" => match argument {
                    Bson::String(m) => method = Some(m.clone()),
                    _ => return Err(wrong_type("method", argument, "string")),
                },
                "value" => value = Some(argument.clone()),
                other => return Err(unknown(other)),
            }
        }
        if let Some(method) = method {
            if value.is_some() {
                return Err(MongoError::location(
                    6050201,
                    "Each fill output specification must have exactly one of 'method' or 'value' fields, not both",
                ));
            }
            let function = match method.as_str() {
                "locf" => "$locf",
                "linear" => "$linearFill",
                _ => {
                    return Err(MongoError::location(
                        6050202,
                        "Method must be either locf or linear",
                    ));
                }
            };
            window_output.insert(field.clone(), doc! {function: format!("${field}")});
        }
        if let Some(value) = value {
            add_fields.insert(
                field.clone(),
                doc! {"$ifNull": [format!("${field}"), value]},
            );
        }
    }
    let mut window_spec = doc! {"output": window_output.clone()};
    if let Some(sort_by) = sort_by {
        window_spec.insert("sortBy", sort_by);
    }
    if let Some(partition_by) = partition_by {
        if partition_by_fields.is_some() {
            return Err(MongoError::location(
                6050204,
                "Maximum one of 'partitionBy' and 'partitionByFields can be specified in '$fill'",
            ));
        }
        window_spec.insert("partitionBy", partition_by);
    }
    if let Some(fields) = partition_by_fields {
        let key: Document = fields
            .iter()
            .map(|f| (f.clone(), Bson::String(format!("${f}"))))
            .collect();
        window_spec.insert("partitionBy", key);
    }
    let mut stages = Vec::new();
    if !window_output.is_empty() {
        stages.extend(window::parse(
            "$setWindowFields",
            &Bson::Document(window_spec),
            vars,
        )?);
    }
    if !add_fields.is_empty() {
        stages.extend(shape::parse_add_fields(
            "$addFields",
            &Bson::Document(add_fields),
            vars,
        )?);
    }
    Ok(stages)
}

#[cfg(test)]
mod tests {
    use crate::aggregate::Pipeline;
    use bson::{Bson, DateTime, Document, bson, doc};

    fn run(spec: Bson, docs: Vec<Document>) -> crate::error::Result<Vec<Document>> {
        Pipeline::parse(&[doc! {"$fill": spec}])?.run(docs)
    }

    fn code(spec: Bson) -> i32 {
        Pipeline::parse(&[doc! {"$fill": spec}])
            .err()
            .map_or(0, |e| e.code().code())
    }

    /// The manual's "Fill Missing Field Values with a Constant Value" example.
    #[test]
    fn manual_constant_values() {
        let docs = vec![
            doc! {"date": DateTime::from_millis(0), "bootsSold": 10, "sandalsSold": 20, "sneakersSold": 12},
            doc! {"date": DateTime::from_millis(1), "bootsSold": 7, "sneakersSold": 8},
            doc! {"date": DateTime::from_millis(2), "sneakersSold": 5},
        ];
        let out = run(
            bson!({"output": {"bootsSold": {"value": 0}, "sandalsSold": {"value": 0}, "sneakersSold": {"value": 0}}}),
            docs,
        )
        .unwrap();
        assert_eq!(
            out[1],
            doc! {"date": DateTime::from_millis(1), "bootsSold": 7, "sneakersSold": 8, "sandalsSold": 0}
        );
        assert_eq!(
            out[2],
            doc! {"date": DateTime::from_millis(2), "sneakersSold": 5, "bootsSold": 0, "sandalsSold": 0}
        );
    }

    /// The manual's linear interpolation and last-observation examples.
    #[test]
    fn manual_linear_and_locf() {
        let t = |h: i64| DateTime::from_millis(h * 3_600_000);
        let docs = vec![
            doc! {"time": t(3), "price": 485},
            doc! {"time": t(0), "price": 500},
            doc! {"time": t(1)},
            doc! {"time": t(2), "price": null},
        ];
        let out = run(
            bson!({"sortBy": {"time": 1}, "output": {"price": {"method": "linear"}}}),
            docs.clone(),
        )
        .unwrap();
        let prices: Vec<Bson> = out
            .iter()
            .map(|d| d.get("price").cloned().unwrap())
            .collect();
        assert_eq!(
            prices,
            vec![bson!(500), bson!(495.0), bson!(490.0), bson!(485)]
        );
        let out = run(
            bson!({"sortBy": {"time": 1}, "output": {"price": {"method": "locf"}}}),
            docs,
        )
        .unwrap();
        let prices: Vec<Bson> = out
            .iter()
            .map(|d| d.get("price").cloned().unwrap())
            .collect();
        assert_eq!(prices, vec![bson!(500), bson!(500), bson!(500), bson!(485)]);
    }

    #[test]
    fn partitions_by_fields() {
        let docs = vec![
            doc! {"_id": 1, "k": "a", "v": 1},
            doc! {"_id": 2, "k": "b", "v": 5},
            doc! {"_id": 3, "k": "a"},
            doc! {"_id": 4, "k": "b"},
        ];
        let out = run(
            bson!({"sortBy": {"_id": 1}, "partitionByFields": ["k"], "output": {"v": {"method": "locf"}}}),
            docs,
        )
        .unwrap();
        assert_eq!(
            out,
            vec![
                doc! {"_id": 1, "k": "a", "v": 1},
                doc! {"_id": 3, "k": "a", "v": 1},
                doc! {"_id": 2, "k": "b", "v": 5},
                doc! {"_id": 4, "k": "b", "v": 5},
            ]
        );
    }

    #[test]
    fn specification_errors() {
        assert_eq!(code(bson!(1)), 9);
        assert_eq!(code(bson!({})), 40414);
        assert_eq!(code(bson!({"output": {}})), 6050203);
        assert_eq!(code(bson!({"output": {"a": 1}})), 6050200);
        assert_eq!(
            code(bson!({"output": {"a": {"method": "locf", "value": 1}}})),
            6050201
        );
        assert_eq!(code(bson!({"output": {"a": {"method": "next"}}})), 6050202);
        assert_eq!(
            code(
                bson!({"partitionBy": "$a", "partitionByFields": ["a"], "output": {"a": {"method": "locf"}}})
            ),
            6050204
        );
        assert_eq!(code(bson!({"output": {"a": {"value": 1}}, "x": 1})), 40415);
        assert_eq!(code(bson!({"output": {"a": {"method": "linear"}}})), 605001);
    }
}
