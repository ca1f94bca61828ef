//! Matching a value against a schema: each keyword checks only the values of the type it is
//! about, `multipleOf` in decimal as MongoDB computes it, and `enum`/`uniqueItems` with
//! field-order-insensitive equality.

use super::{Additional, Dependency, Items, Schema};
use crate::document::numeric::{DecimalParts, Number};
use crate::document::order::values_equal;
use crate::expression::numeric::to_dec;
use crate::query::filter::CmpOp;
use crate::query::filter::eval::compare_single;
use crate::query::values::{is_number, type_code};
use bson::{Bson, Document};

/// What a schema is matched against. Documents are kept apart so that the top-level document
/// is matched without being cloned into a `Bson`.
#[derive(Clone, Copy)]
pub(super) enum Target<'a> {
    Object(&'a Document),
    Value(&'a Bson),
}

impl<'a> Target<'a> {
    fn of(value: &'a Bson) -> Target<'a> {
        match value {
            Bson::Document(d) => Target::Object(d),
            other => Target::Value(other),
        }
    }
}

const OBJECT_TYPE_CODE: i32 = 3;

impl Schema {
    pub(super) fn matches(&self, target: Target) -> bool {
        if let Some(types) = &self.types {
            let in_set = match target {
                Target::Object(_) => types.codes.contains(&OBJECT_TYPE_CODE),
                Target::Value(v) => {
                    (types.all_numbers && is_number(v)) || types.codes.contains(&type_code(v))
                }
            };
            if !in_set {
                return false;
            }
        }
        let type_specific = match target {
            Target::Object(d) => self.object_matches(d),
            Target::Value(v) if is_number(v) => self.number_matches(v),
            Target::Value(Bson::String(s)) => self.string_matches(s),
            Target::Value(Bson::Array(items)) => self.array_matches(items),
            Target::Value(_) => true,
        };
        type_specific && self.logic_matches(target)
    }

    fn number_matches(&self, v: &Bson) -> bool {
        let bound_ok = |bound: &Option<super::Bound>, inclusive: CmpOp, exclusive: CmpOp| {
            bound.as_ref().is_none_or(|b| {
                let op = if b.exclusive { exclusive } else { inclusive };
                compare_single(op, &b.value, Some(v), None)
            })
        };
        bound_ok(&self.minimum, CmpOp::Gte, CmpOp::Gt)
            && bound_ok(&self.maximum, CmpOp::Lte, CmpOp::Lt)
            && self
                .multiple_of
                .as_ref()
                .is_none_or(|d| is_multiple_of(v, d))
    }

    fn string_matches(&self, s: &str) -> bool {
        // Lengths are in code points, as MongoDB counts them.
        let len = || s.chars().count() as i64;
        self.min_length.is_none_or(|n| len() >= n)
            && self.max_length.is_none_or(|n| len() <= n)
            && self.pattern.as_ref().is_none_or(|re| re.is_match(s))
    }

    fn array_matches(&self, items: &[Bson]) -> bool {
        let len = items.len() as i64;
        if self.min_items.is_some_and(|n| len < n) || self.max_items.is_some_and(|n| len > n) {
            return false;
        }
        if self.unique_items
            && (1..items.len()).any(|i| items[..i].iter().any(|x| unordered_equal(x, &items[i])))
        {
            return false;
        }
        match &self.items {
            None => true,
            Some(Items::All(schema)) => items.iter().all(|x| schema.matches(Target::of(x))),
            Some(Items::Positional(schemas)) => {
                let positional = schemas
                    .iter()
                    .zip(items)
                    .all(|(schema, x)| schema.matches(Target::of(x)));
                positional
                    && items
                        .iter()
                        .skip(schemas.len())
                        .all(|x| match &self.additional_items {
                            None => true,
                            Some(additional) => additional.allows(x),
                        })
            }
        }
    }

    fn object_matches(&self, d: &Document) -> bool {
        if !self.required.iter().all(|name| d.contains_key(name)) {
            return false;
        }
        let len = d.len() as i64;
        if self.min_properties.is_some_and(|n| len < n)
            || self.max_properties.is_some_and(|n| len > n)
        {
            return false;
        }
        let properties_ok = self
            .properties
            .iter()
            .all(|(name, schema)| d.get(name).is_none_or(|v| schema.matches(Target::of(v))));
        if !properties_ok {
            return false;
        }
        if !self.pattern_properties.is_empty() || self.additional_properties.is_some() {
            for (name, value) in d {
                let mut listed = self.properties.iter().any(|(n, _)| n == name);
                for (re, schema) in &self.pattern_properties {
                    if re.is_match(name) {
                        listed = true;
                        if !schema.matches(Target::of(value)) {
                            return false;
                        }
                    }
                }
                if !listed
                    && self
                        .additional_properties
                        .as_ref()
                        .is_some_and(|a| !a.allows(value))
                {
                    return false;
                }
            }
        }
        true
    }

    /// `dependencies`, the logical keywords and `enum`, which apply to values of any type.
    fn logic_matches(&self, target: Target) -> bool {
        if let Target::Object(d) = target {
            let dependencies_ok = self
                .dependencies
                .iter()
                .filter(|(name, _)| d.contains_key(name))
                .all(|(_, dependency)| match dependency {
                    Dependency::Schema(schema) => schema.matches(target),
                    Dependency::Properties(names) => names.iter().all(|n| d.contains_key(n)),
                });
            if !dependencies_ok {
                return false;
            }
        }
        if !self.all_of.iter().all(|s| s.matches(target)) {
            return false;
        }
        if let Some(any_of) = &self.any_of {
            if !any_of.iter().any(|s| s.matches(target)) {
                return false;
            }
        }
        if let Some(one_of) = &self.one_of {
            if one_of.iter().filter(|s| s.matches(target)).count() != 1 {
                return false;
            }
        }
        if self.not.as_ref().is_some_and(|s| s.matches(target)) {
            return false;
        }
        match (&self.enum_values, target) {
            (None, _) => true,
            (Some(values), Target::Object(d)) => values
                .iter()
                .any(|v| matches!(v, Bson::Document(e) if documents_unordered_equal(d, e))),
            (Some(values), Target::Value(x)) => values.iter().any(|v| unordered_equal(v, x)),
        }
    }
}

impl Additional {
    fn allows(&self, value: &Bson) -> bool {
        match self {
            Additional::Allowed(allowed) => *allowed,
            Additional::Schema(schema) => schema.matches(Target::of(value)),
        }
    }
}

/// Equality in which documents are equal when they have the same fields with equal values,
/// in any order (MongoDB's `UnorderedFieldsBSONElementComparator`).
pub(super) fn unordered_equal(a: &Bson, b: &Bson) -> bool {
    match (a, b) {
        (Bson::Document(x), Bson::Document(y)) => documents_unordered_equal(x, y),
        (Bson::Array(x), Bson::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| unordered_equal(p, q))
        }
        _ => values_equal(a, b),
    }
}

fn documents_unordered_equal(x: &Document, y: &Document) -> bool {
    x.len() == y.len()
        && x.iter()
            .all(|(k, v)| y.get(k).is_some_and(|w| unordered_equal(v, w)))
}

/// Whether `multipleOf` accepts `divisor` (checked once, when the schema is parsed).
pub(super) fn is_positive(divisor: &Bson) -> bool {
    match Number::from_bson(divisor) {
        Some(Number::Int(v)) => v > 0,
        Some(Number::Double(v)) => v > 0.0 || v.is_nan(),
        Some(Number::Decimal(d)) => match DecimalParts::from_decimal128(d) {
            DecimalParts::Finite {
                negative,
                coefficient,
                ..
            } => !negative && coefficient != 0,
            DecimalParts::Infinity { negative } => !negative,
            DecimalParts::NaN { .. } => true,
        },
        None => false,
    }
}

/// MongoDB's `$_internalSchemaFmod`: the decimal remainder of `value / divisor` is zero, both
/// converted as `coerceToDecimal` does (doubles rounded to 15 significant digits). An infinite
/// divisor leaves a finite dividend as its own remainder; NaN and infinite values are no
/// multiple of anything.
fn is_multiple_of(value: &Bson, divisor: &Bson) -> bool {
    is_number(value) && to_dec(value).remainder(to_dec(divisor)).is_zero()
}
