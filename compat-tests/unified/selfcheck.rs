//! The runner's own checks, run as the `runner-self-check` case: the matching rules must reject
//! what the format says they reject, or every "passed" above would mean nothing.

use crate::matching::{Lookup, exactly_equal, matches};
use mongodb::bson::{Bson, Document, doc};

struct NoEntities;

impl Lookup for NoEntities {
    fn bson_entity(&self, name: &str) -> Result<Bson, String> {
        if name == "saved" {
            Ok(Bson::Int32(7))
        } else {
            Err(format!("no entity {name}"))
        }
    }

    fn session_lsid(&self, name: &str) -> Result<Document, String> {
        if name == "session0" {
            Ok(doc! {"id": 1})
        } else {
            Err(format!("no session {name}"))
        }
    }
}

fn check(expected: Bson, actual: Option<Bson>, root: bool, want: bool) -> Result<(), String> {
    let got = matches(&expected, actual.as_ref(), root, &NoEntities);
    if got.is_ok() == want {
        Ok(())
    } else {
        Err(format!(
            "matching {expected} against {actual:?} (root: {root}) gave {got:?}, expected {}",
            if want { "a match" } else { "a mismatch" }
        ))
    }
}

pub fn run() -> Result<(), String> {
    let d = |d: Document| Some(Bson::Document(d));
    // Extra fields: allowed at the root only.
    check(doc! {"x": 1}.into(), d(doc! {"x": 1, "y": 1}), true, true)?;
    check(doc! {"x": 1, "y": 1}.into(), d(doc! {"x": 1}), true, false)?;
    check(
        doc! {"x": {"y": 1}}.into(),
        d(doc! {"x": {"y": 1, "z": 1}}),
        true,
        false,
    )?;
    // Key order does not matter; array length does.
    check(
        doc! {"x": 1, "y": 2}.into(),
        d(doc! {"y": 2, "x": 1}),
        false,
        true,
    )?;
    check(
        Bson::Array(vec![1.into(), 2.into()]),
        Some(Bson::Array(vec![1.into(), 2.into(), 3.into()])),
        true,
        false,
    )?;
    // Flexible numerics, but not across decimal128 and not for unequal values.
    check(Bson::Int32(1), Some(Bson::Double(1.0)), true, true)?;
    check(Bson::Int32(1), Some(Bson::Int64(1)), true, true)?;
    check(Bson::Int32(1), Some(Bson::Double(1.5)), true, false)?;
    check(Bson::Int32(1), Some(Bson::String("1".into())), true, false)?;
    // Special operators.
    check(
        doc! {"a": {"$$exists": false}}.into(),
        d(doc! {"a": 1}),
        true,
        false,
    )?;
    check(
        doc! {"a": {"$$exists": true}}.into(),
        d(doc! {}),
        true,
        false,
    )?;
    check(
        doc! {"a": {"$$type": ["int", "long"]}}.into(),
        d(doc! {"a": 1.5}),
        true,
        false,
    )?;
    check(
        doc! {"a": {"$$type": "double"}}.into(),
        d(doc! {"a": 1.5}),
        true,
        true,
    )?;
    check(
        doc! {"a": {"$$unsetOrMatches": 2}}.into(),
        d(doc! {}),
        true,
        true,
    )?;
    check(
        doc! {"a": {"$$unsetOrMatches": 2}}.into(),
        d(doc! {"a": 3}),
        true,
        false,
    )?;
    check(
        doc! {"$$matchesEntity": "saved"}.into(),
        Some(7.into()),
        true,
        true,
    )?;
    check(
        doc! {"$$matchesEntity": "saved"}.into(),
        Some(8.into()),
        true,
        false,
    )?;
    check(
        doc! {"lsid": {"$$sessionLsid": "session0"}}.into(),
        d(doc! {"lsid": {"id": 2}}),
        true,
        false,
    )?;
    check(
        doc! {"$$lte": 5}.into(),
        Some(Bson::Double(5.0)),
        true,
        true,
    )?;
    check(doc! {"$$lte": 5}.into(), Some(Bson::Int64(6)), true, false)?;
    check(
        doc! {"$$matchesHexBytes": "616263"}.into(),
        Some("abc".into()),
        true,
        true,
    )?;
    check(
        doc! {"$$matchAsDocument": {"a": 1}}.into(),
        Some(r#"{"a": 1, "b": 2}"#.into()),
        true,
        false,
    )?;
    check(
        doc! {"$$matchAsDocument": {"$$matchAsRoot": {"a": 1}}}.into(),
        Some(r#"{"a": 1, "b": 2}"#.into()),
        true,
        true,
    )?;
    // Outcome comparison is exact (types included), key order aside.
    if exactly_equal(&doc! {"x": 1}.into(), &doc! {"x": 1i64}.into()) {
        return Err("exact comparison treats int32 1 and int64 1 as equal".into());
    }
    if !exactly_equal(&doc! {"x": 1, "y": 2}.into(), &doc! {"y": 2, "x": 1}.into()) {
        return Err("exact comparison depends on key order".into());
    }
    Ok(())
}
