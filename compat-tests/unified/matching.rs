//! Evaluating matches as the unified test format defines them: special `$$` operators, extra
//! fields permitted only in root-level documents, arrays of equal length, flexible numeric
//! comparisons (int32, int64 and double equal when numerically equal; decimal128 only to itself),
//! and the exact comparison used for collection outcomes.

use crate::values::{as_f64, short, type_name};
use mongodb::bson::{Bson, Document};

/// What `$$matchesEntity` and `$$sessionLsid` need from the entity map.
pub trait Lookup {
    fn bson_entity(&self, name: &str) -> Result<Bson, String>;
    fn session_lsid(&self, name: &str) -> Result<Document, String>;
}

/// The single `$$` key of an operator document, if it is one.
pub fn special_operator(doc: &Document) -> Option<(&str, &Bson)> {
    if doc.len() != 1 {
        return None;
    }
    let (k, v) = doc.iter().next()?;
    k.starts_with("$$").then_some((k.as_str(), v))
}

/// Matches `expected` against `actual` (None = absent). `root` says whether `actual` is a
/// root-level document, where extra fields are permitted.
pub fn matches(
    expected: &Bson,
    actual: Option<&Bson>,
    root: bool,
    lookup: &dyn Lookup,
) -> Result<(), String> {
    match_at(expected, actual, root, lookup, "")
}

fn at(path: &str) -> String {
    if path.is_empty() {
        "the value".to_string()
    } else {
        format!("`{path}`")
    }
}

fn match_at(
    expected: &Bson,
    actual: Option<&Bson>,
    root: bool,
    lookup: &dyn Lookup,
    path: &str,
) -> Result<(), String> {
    match expected {
        Bson::Document(exp) => {
            if let Some((op, arg)) = special_operator(exp) {
                return operator(op, arg, actual, root, lookup, path);
            }
            let act = match actual {
                Some(Bson::Document(d)) => d,
                Some(other) => {
                    return Err(format!(
                        "{}: expected a document {}, got {}",
                        at(path),
                        short(expected),
                        short(other)
                    ));
                }
                None => {
                    return Err(format!(
                        "{}: expected {}, absent",
                        at(path),
                        short(expected)
                    ));
                }
            };
            for (key, value) in exp {
                let child = if path.is_empty() {
                    key.clone()
                } else {
                    format!("{path}.{key}")
                };
                let actual_value = act.get(key);
                if let Bson::Document(vd) = value {
                    if let Some((op, arg)) = special_operator(vd) {
                        operator(op, arg, actual_value, false, lookup, &child)?;
                        continue;
                    }
                }
                if actual_value.is_none() {
                    return Err(format!(
                        "`{child}`: expected {}, the field is absent (actual {})",
                        short(value),
                        short(&Bson::Document(act.clone()))
                    ));
                }
                match_at(value, actual_value, false, lookup, &child)?;
            }
            if !root {
                if let Some(extra) = act.keys().find(|k| !exp.contains_key(*k)) {
                    return Err(format!(
                        "{}: unexpected field `{extra}` in {} (expected {})",
                        at(path),
                        short(&Bson::Document(act.clone())),
                        short(expected)
                    ));
                }
            }
            Ok(())
        }
        Bson::Array(exp) => {
            let act = match actual {
                Some(Bson::Array(a)) => a,
                Some(other) => {
                    return Err(format!(
                        "{}: expected an array {}, got {}",
                        at(path),
                        short(expected),
                        short(other)
                    ));
                }
                None => {
                    return Err(format!(
                        "{}: expected {}, absent",
                        at(path),
                        short(expected)
                    ));
                }
            };
            if exp.len() != act.len() {
                return Err(format!(
                    "{}: expected {} elements {}, got {} {}",
                    at(path),
                    exp.len(),
                    short(expected),
                    act.len(),
                    short(&Bson::Array(act.clone()))
                ));
            }
            for (i, (e, a)) in exp.iter().zip(act).enumerate() {
                match_at(e, Some(a), false, lookup, &format!("{path}[{i}]"))?;
            }
            Ok(())
        }
        scalar => {
            let Some(act) = actual else {
                return Err(format!("{}: expected {}, absent", at(path), short(scalar)));
            };
            if scalars_equal(scalar, act) {
                Ok(())
            } else {
                Err(format!(
                    "{}: expected {} ({}), got {} ({})",
                    at(path),
                    short(scalar),
                    type_name(scalar),
                    short(act),
                    type_name(act)
                ))
            }
        }
    }
}

/// Flexible numerics for int32/int64/double; everything else must be the same type and equal.
fn scalars_equal(expected: &Bson, actual: &Bson) -> bool {
    match (as_f64(expected), as_f64(actual)) {
        (Some(e), Some(a)) => {
            // Both integers: compare exactly (f64 loses precision beyond 2^53).
            match (expected, actual) {
                (Bson::Int32(_) | Bson::Int64(_), Bson::Int32(_) | Bson::Int64(_)) => {
                    crate::values::as_i64(expected) == crate::values::as_i64(actual)
                }
                _ => e == a || (e.is_nan() && a.is_nan()),
            }
        }
        _ => expected == actual,
    }
}

fn operator(
    op: &str,
    arg: &Bson,
    actual: Option<&Bson>,
    root: bool,
    lookup: &dyn Lookup,
    path: &str,
) -> Result<(), String> {
    match op {
        "$$exists" => {
            let want = arg
                .as_bool()
                .ok_or_else(|| format!("$$exists takes a boolean, got {arg}"))?;
            match (want, actual) {
                (true, None) => Err(format!("{}: expected to exist, absent", at(path))),
                (false, Some(v)) => Err(format!(
                    "{}: expected to be absent, got {}",
                    at(path),
                    short(v)
                )),
                _ => Ok(()),
            }
        }
        "$$type" => {
            let names: Vec<&str> = match arg {
                Bson::String(s) => vec![s.as_str()],
                Bson::Array(a) => a.iter().filter_map(Bson::as_str).collect(),
                other => return Err(format!("$$type takes a string or array, got {other}")),
            };
            let Some(act) = actual else {
                return Err(format!(
                    "{}: expected a value of type {names:?}, absent",
                    at(path)
                ));
            };
            let actual_type = type_name(act);
            let ok = names.iter().any(|n| {
                *n == actual_type
                    || (*n == "number"
                        && matches!(
                            act,
                            Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)
                        ))
            });
            if ok {
                Ok(())
            } else {
                Err(format!(
                    "{}: expected type {names:?}, got {actual_type} {}",
                    at(path),
                    short(act)
                ))
            }
        }
        "$$unsetOrMatches" => match actual {
            None => Ok(()),
            Some(_) => match_at(arg, actual, root, lookup, path),
        },
        "$$matchesEntity" => {
            let name = arg
                .as_str()
                .ok_or_else(|| format!("$$matchesEntity takes an entity name, got {arg}"))?;
            let entity = lookup.bson_entity(name)?;
            match_at(&entity, actual, root, lookup, path)
        }
        "$$sessionLsid" => {
            let name = arg
                .as_str()
                .ok_or_else(|| format!("$$sessionLsid takes a session name, got {arg}"))?;
            let lsid = Bson::Document(lookup.session_lsid(name)?);
            match actual {
                Some(a) if *a == lsid => Ok(()),
                Some(a) => Err(format!(
                    "{}: expected the lsid of {name} {}, got {}",
                    at(path),
                    short(&lsid),
                    short(a)
                )),
                None => Err(format!("{}: expected the lsid of {name}, absent", at(path))),
            }
        }
        "$$matchesHexBytes" => {
            let hex = arg
                .as_str()
                .ok_or_else(|| format!("$$matchesHexBytes takes a string, got {arg}"))?;
            let want = decode_hex(hex)?;
            let got = match actual {
                Some(Bson::Binary(b)) => b.bytes.clone(),
                Some(Bson::String(s)) => s.as_bytes().to_vec(),
                Some(other) => {
                    return Err(format!(
                        "{}: expected bytes {hex}, got {}",
                        at(path),
                        short(other)
                    ));
                }
                None => return Err(format!("{}: expected bytes {hex}, absent", at(path))),
            };
            if got == want {
                Ok(())
            } else {
                Err(format!(
                    "{}: expected bytes {hex}, got {got:02x?}",
                    at(path)
                ))
            }
        }
        "$$lte" => {
            let limit = as_f64(arg).ok_or_else(|| format!("$$lte takes a number, got {arg}"))?;
            match actual.and_then(as_f64) {
                Some(a) if a <= limit => Ok(()),
                _ => Err(format!(
                    "{}: expected a number <= {limit}, got {}",
                    at(path),
                    actual.map(short).unwrap_or_else(|| "nothing".into())
                )),
            }
        }
        "$$matchAsDocument" => {
            let Some(Bson::String(text)) = actual else {
                return Err(format!(
                    "{}: $$matchAsDocument needs an Extended JSON string, got {}",
                    at(path),
                    actual.map(short).unwrap_or_else(|| "nothing".into())
                ));
            };
            let json: serde_json::Value = serde_json::from_str(text)
                .map_err(|e| format!("{}: not JSON ({e}): {text}", at(path)))?;
            let parsed = Bson::try_from(json)
                .map_err(|e| format!("{}: not Extended JSON ({e})", at(path)))?;
            match_at(arg, Some(&parsed), false, lookup, path)
        }
        "$$matchAsRoot" => match_at(arg, actual, true, lookup, path),
        "$$placeholder" => Err(format!(
            "{}: $$placeholder cannot be matched (the runner has no value to put there)",
            at(path)
        )),
        other => Err(format!("unknown special operator {other}")),
    }
}

pub fn decode_hex(hex: &str) -> Result<Vec<u8>, String> {
    if hex.len() % 2 != 0 {
        return Err(format!("malformed hex bytes `{hex}` (odd length)"));
    }
    (0..hex.len())
        .step_by(2)
        .map(|i| {
            hex.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
                .ok_or_else(|| format!("malformed hex bytes `{hex}`"))
        })
        .collect()
}

/// The exact comparison used for `outcome`: same types and values, key order ignored.
pub fn exactly_equal(expected: &Bson, actual: &Bson) -> bool {
    match (expected, actual) {
        (Bson::Document(e), Bson::Document(a)) => {
            e.len() == a.len()
                && e.iter()
                    .all(|(k, v)| a.get(k).is_some_and(|av| exactly_equal(v, av)))
        }
        (Bson::Array(e), Bson::Array(a)) => {
            e.len() == a.len() && e.iter().zip(a).all(|(x, y)| exactly_equal(x, y))
        }
        (Bson::Double(e), Bson::Double(a)) => e == a || (e.is_nan() && a.is_nan()),
        _ => expected == actual,
    }
}
