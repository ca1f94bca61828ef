//! What the date operators share: their named-argument form (`{date, timezone, ...}`, with
//! which fields were given), the `timezone` argument, and the values that convert to a date.

use super::{Args, Expression, Scope, missing_parameter};
use crate::error::{MongoError, Result};
use crate::expression::datetime::TimeZone;
use crate::expression::decimal::Dec;
use crate::expression::value::{Value, bson_type_name, is_nullish};
use bson::{Bson, Document};

/// `spec`'s fields in the order of `names`, after a first argument holding which of them were
/// given (a field given as an expression that evaluates to missing is not a field left out).
pub(super) fn parse_fields(
    spec: &Document,
    names: &[&str],
    scope: &Scope,
    unknown: impl Fn(&str) -> MongoError,
) -> Result<Vec<Expression>> {
    let mut given = 0_i32;
    let mut exprs = vec![Expression::Constant(Bson::Null); names.len() + 1];
    for (key, value) in spec {
        let position = names
            .iter()
            .position(|name| name == key)
            .ok_or_else(|| unknown(key))?;
        given |= 1 << position;
        exprs[position + 1] = Expression::parse_in(value, scope)?;
    }
    exprs[0] = Expression::Constant(Bson::Int32(given));
    Ok(exprs)
}

/// Fields that must be given, each with the code of its error when it is not.
pub(super) fn require_fields(spec: &Document, name: &str, required: &[(i32, &str)]) -> Result<()> {
    match required.iter().find(|(_, field)| !spec.contains_key(field)) {
        Some(&(code, field)) => Err(missing_parameter(code, name, field)),
        None => Ok(()),
    }
}

/// The arguments of an operator parsed by [`parse_fields`].
pub(super) struct Fields<'a> {
    args: &'a Args<'a>,
    given: i32,
}

impl<'a> Fields<'a> {
    pub fn new(args: &'a Args<'a>) -> Result<Self> {
        let given = match args.eval(0)? {
            Some(Bson::Int32(given)) => given,
            _ => 0,
        };
        Ok(Fields { args, given })
    }

    pub fn given(&self, field: usize) -> bool {
        self.given & (1 << field) != 0
    }

    pub fn eval(&self, field: usize) -> Result<Value> {
        self.args.eval(field + 1)
    }

    /// The first fields, in order, `None` as soon as one is null or missing; a field left out
    /// with a default takes it without being evaluated.
    pub fn values(&self, defaults: &[Option<Bson>]) -> Result<Option<Vec<Bson>>> {
        let mut values = Vec::with_capacity(defaults.len());
        for (field, default) in defaults.iter().enumerate() {
            let value = match default {
                Some(default) if !self.given(field) => default.clone(),
                _ => match non_null(self.eval(field)?) {
                    Some(value) => value,
                    None => return Ok(None),
                },
            };
            values.push(value);
        }
        Ok(Some(values))
    }

    /// The `timezone` field: UTC when not given, `None` when null or missing.
    pub fn zone(&self, field: usize) -> Result<Option<TimeZone>> {
        if !self.given(field) {
            return Ok(Some(TimeZone::Utc));
        }
        match non_null(self.eval(field)?) {
            None => Ok(None),
            Some(Bson::String(id)) => TimeZone::parse(&id).map(Some),
            Some(other) => Err(MongoError::location(
                40517,
                format!(
                    "timezone must evaluate to a string, found {}",
                    bson_type_name(&other)
                ),
            )),
        }
    }
}

/// The value unless it is null, undefined or missing.
pub(super) fn non_null(value: Value) -> Option<Bson> {
    value.filter(|v| !is_nullish(Some(v)))
}

/// Dates, timestamps (their seconds) and ObjectIds (their creation second) are dates.
pub(super) fn as_date(value: &Bson) -> Option<i64> {
    match value {
        Bson::DateTime(date) => Some(date.timestamp_millis()),
        Bson::Timestamp(ts) => Some(i64::from(ts.time) * 1000),
        Bson::ObjectId(oid) => Some(oid.timestamp().timestamp_millis()),
        _ => None,
    }
}

/// [`as_date`], or MongoDB's error for a value that is not one.
pub(super) fn to_date(value: &Bson) -> Result<i64> {
    as_date(value).ok_or_else(|| {
        MongoError::location(
            16006,
            format!(
                "can't convert from BSON type {} to Date",
                bson_type_name(value)
            ),
        )
    })
}

/// A number whose value is a 64-bit integer (`Value::integral64Bit`).
pub(super) fn integral_i64(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(v) => Some(i64::from(*v)),
        Bson::Int64(v) => Some(*v),
        Bson::Double(v)
            if v.fract() == 0.0
                && *v >= -9.223_372_036_854_776e18
                && *v < 9.223_372_036_854_776e18 =>
        {
            Some(*v as i64)
        }
        Bson::Decimal128(d) => Dec::decode(*d).to_i64_exact(),
        _ => None,
    }
}
