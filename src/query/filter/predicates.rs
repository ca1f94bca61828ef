//! The `$type`, `$mod`, `$regex` and `$bitsAllSet`/`$bitsAnySet`/`$bitsAllClear`/`$bitsAnyClear`
//! operators: parsing their arguments and testing one value against them.

use super::parse::{leaf, regex_leaf};
use super::{BitMask, BitTest, Node, Op, TypeSet};
use crate::error::{MongoError, Result};
use crate::expression::mongo_regex::MongoRegex;
use crate::query::values::{
    as_f64, coerce_i64, exact_i64, format_g, integer_to_i64, integer_to_non_negative_i32,
    integer_to_non_negative_i64, is_number, render_element, type_code_for_alias,
};
use bson::{Bson, Document};

pub(super) fn parse_type_set(path: &str, value: &Bson) -> Result<TypeSet> {
    let mut set = TypeSet::default();
    let mut add = |v: &Bson| -> Result<()> {
        match v {
            Bson::String(alias) => {
                if alias == "number" {
                    set.all_numbers = true;
                } else {
                    let code = type_code_for_alias(alias).ok_or_else(|| {
                        MongoError::bad_value(format!("Unknown type name alias: {alias}"))
                    })?;
                    set.codes.push(code);
                }
                Ok(())
            }
            v if is_number(v) => {
                let invalid = || {
                    MongoError::bad_value(format!(
                        "Invalid numerical type code: {}",
                        format_g(as_f64(v), 6)
                    ))
                };
                let code = integer_to_i64("", v).map_err(|_| invalid())?;
                let code = i32::try_from(code).map_err(|_| invalid())?;
                if !(code == -1 || code == 127 || (1..=19).contains(&code)) {
                    return Err(invalid());
                }
                set.codes.push(code);
                Ok(())
            }
            _ => Err(MongoError::type_mismatch(
                "type must be represented as a number or a string",
            )),
        }
    };
    match value {
        Bson::Array(items) => items.iter().try_for_each(&mut add)?,
        other => add(other)?,
    }
    if !set.all_numbers && set.codes.is_empty() {
        return Err(MongoError::failed_to_parse(format!(
            "{path} must match at least one type"
        )));
    }
    Ok(set)
}

pub(super) fn parse_mod(value: &Bson) -> Result<Op> {
    let Bson::Array(items) = value else {
        return Err(MongoError::bad_value("malformed mod, needs to be an array"));
    };
    let Some(divisor) = items.first() else {
        return Err(MongoError::bad_value("malformed mod, not enough elements"));
    };
    if !is_number(divisor) {
        return Err(MongoError::bad_value("malformed mod, divisor not a number"));
    }
    let Some(remainder) = items.get(1) else {
        return Err(MongoError::bad_value("malformed mod, not enough elements"));
    };
    if !is_number(remainder) {
        return Err(MongoError::bad_value(
            "malformed mod, remainder not a number",
        ));
    }
    if items.len() > 2 {
        return Err(MongoError::bad_value("malformed mod, too many elements"));
    }
    let divisor = coerce_i64(divisor).map_err(|why| {
        MongoError::bad_value(format!(
            "malformed mod, divisor value is invalid :: caused by :: {why}"
        ))
    })?;
    let remainder = coerce_i64(remainder).map_err(|why| {
        MongoError::bad_value(format!(
            "malformed mod, remainder value is invalid :: caused by :: {why}"
        ))
    })?;
    if divisor == 0 {
        return Err(MongoError::bad_value("divisor cannot be 0"));
    }
    Ok(Op::Mod { divisor, remainder })
}

pub(super) fn parse_regex_document(path: &str, context: &Document) -> Result<Node> {
    let mut pattern = String::new();
    let mut options = String::new();
    for (key, value) in context {
        match key.as_str() {
            "$regex" => match value {
                Bson::String(s) => pattern = s.clone(),
                Bson::RegularExpression(re) => {
                    pattern = re.pattern.clone();
                    if !re.options.is_empty() {
                        if !options.is_empty() {
                            return Err(MongoError::location(
                                51074,
                                "options set in both $regex and $options",
                            ));
                        }
                        options = re.options.clone();
                    }
                }
                _ => return Err(MongoError::bad_value("$regex has to be a string")),
            },
            "$options" => {
                let Bson::String(s) = value else {
                    return Err(MongoError::bad_value("$options has to be a string"));
                };
                if !options.is_empty() {
                    return Err(MongoError::location(
                        51075,
                        "options set in both $regex and $options",
                    ));
                }
                options = s.clone();
            }
            _ => {}
        }
    }
    regex_leaf(path, &pattern, &options)
}

pub(super) fn parse_bits(path: &str, name: &str, value: &Bson, test: BitTest) -> Result<Node> {
    let positions = match value {
        Bson::Array(items) => {
            let mut positions = Vec::with_capacity(items.len());
            for (i, item) in items.iter().enumerate() {
                let p = integer_to_non_negative_i32(&i.to_string(), item).map_err(|e| {
                    MongoError::bad_value(format!("Failed to parse bit position. {}", e.message()))
                })?;
                positions.push(p as u32);
            }
            positions
        }
        v if is_number(v) => {
            let mask = integer_to_non_negative_i64(name, v)?;
            (0..63).filter(|b| mask & (1i64 << b) != 0).collect()
        }
        Bson::Binary(bin) => {
            let mut positions = Vec::new();
            for (byte_index, byte) in bin.bytes.iter().enumerate() {
                for bit in 0..8 {
                    if byte & (1 << bit) != 0 {
                        positions.push((byte_index * 8 + bit) as u32);
                    }
                }
            }
            positions
        }
        _ => {
            return Err(MongoError::bad_value(format!(
                "{path} takes an Array, a number, or a BinData but received: {}",
                render_element(name, value)
            )));
        }
    };
    Ok(leaf(path, Op::Bits(test, BitMask::Positions(positions))))
}

pub(super) fn regex_matches(re: &MongoRegex, value: &Bson) -> bool {
    match value {
        Bson::String(s) | Bson::Symbol(s) => re.is_match(s),
        Bson::RegularExpression(r) => r.pattern == re.pattern && r.options == re.options,
        _ => false,
    }
}

pub(super) fn mod_matches(value: &Bson, divisor: i64, remainder: i64) -> bool {
    let dividend = match value {
        Bson::Int32(v) => i64::from(*v),
        Bson::Int64(v) => *v,
        Bson::Double(_) | Bson::Decimal128(_) => {
            let d = as_f64(value);
            if !d.is_finite() {
                return false;
            }
            let t = d.trunc();
            if !(-9_223_372_036_854_775_808.0..9_223_372_036_854_775_808.0).contains(&t) {
                return false;
            }
            t as i64
        }
        _ => return false,
    };
    dividend.checked_rem(divisor).unwrap_or(0) == remainder
}

pub(super) fn bits_match(value: &Bson, test: BitTest, mask: &BitMask) -> bool {
    let BitMask::Positions(positions) = mask;
    let bit_at: Box<dyn Fn(u32) -> bool> = match value {
        Bson::Binary(bin) => {
            let bytes = bin.bytes.clone();
            Box::new(move |p| {
                bytes
                    .get((p / 8) as usize)
                    .is_some_and(|b| b & (1 << (p % 8)) != 0)
            })
        }
        v if is_number(v) => {
            let Some(n) = exact_i64(v) else { return false };
            Box::new(move |p| if p >= 64 { n < 0 } else { (n >> p) & 1 == 1 })
        }
        _ => return false,
    };
    match test {
        BitTest::AllSet => positions.iter().all(|&p| bit_at(p)),
        BitTest::AnySet => positions.iter().any(|&p| bit_at(p)),
        BitTest::AllClear => positions.iter().all(|&p| !bit_at(p)),
        BitTest::AnyClear => positions.iter().any(|&p| !bit_at(p)),
    }
}
