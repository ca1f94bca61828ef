//! Arithmetic with MongoDB's numeric promotion (int → long → double, any decimal makes the result
//! a decimal, overflow widens instead of wrapping), date arithmetic for `$add`/`$subtract`, and
//! the double-double summation behind `$sum` and `$avg`.

use super::decimal::Dec;
use super::value::{Value, bson_type_name, is_nullish, is_number};
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, DateTime};

/// The numeric types in widening order (`Value::getWidestNumeric`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Width {
    Int,
    Long,
    Double,
    Decimal,
}

pub fn width(value: &Bson) -> Option<Width> {
    match value {
        Bson::Int32(_) => Some(Width::Int),
        Bson::Int64(_) => Some(Width::Long),
        Bson::Double(_) => Some(Width::Double),
        Bson::Decimal128(_) => Some(Width::Decimal),
        _ => None,
    }
}

/// An int32 when the value fits, otherwise an int64 (`Value::createIntOrLong`).
/// The `n` of the `N` operators and accumulators (`$firstN`, `$topN`, ...): a number with an
/// integral value, greater than zero.
pub fn n_argument(value: &Value) -> Result<usize> {
    let not_integral = |code| {
        MongoError::location(
            code,
            format!(
                "Value for 'n' must be of integral type, but found {}",
                super::value::render(value.as_ref())
            ),
        )
    };
    let count = match value {
        Some(Bson::Int32(v)) => i64::from(*v),
        Some(Bson::Int64(v)) => *v,
        Some(Bson::Double(v)) if v.fract() == 0.0 && v.abs() < 9.2e18 => *v as i64,
        Some(Bson::Decimal128(d)) => Dec::decode(*d)
            .to_i64_exact()
            .ok_or_else(|| not_integral(5787903))?,
        Some(Bson::Double(_)) => return Err(not_integral(5787903)),
        _ => return Err(not_integral(5787902)),
    };
    if count <= 0 {
        return Err(MongoError::location(
            5787908,
            format!("'n' must be greater than 0, found {count}"),
        ));
    }
    Ok(usize::try_from(count).unwrap_or(usize::MAX))
}

pub fn int_or_long(value: i64) -> Bson {
    i32::try_from(value).map_or(Bson::Int64(value), Bson::Int32)
}

pub fn to_f64(value: &Bson) -> f64 {
    match value {
        Bson::Int32(v) => f64::from(*v),
        Bson::Int64(v) => *v as f64,
        Bson::Double(v) => *v,
        Bson::Decimal128(d) => Dec::decode(*d).to_f64(),
        _ => 0.0,
    }
}

/// `coerceToLong` for the integral types (doubles truncate toward zero, saturating).
pub fn to_i64(value: &Bson) -> i64 {
    match value {
        Bson::Int32(v) => i64::from(*v),
        Bson::Int64(v) => *v,
        Bson::Double(v) => *v as i64,
        Bson::Decimal128(d) => Dec::decode(*d).to_i64_rounded().unwrap_or(0),
        _ => 0,
    }
}

/// `coerceToDecimal`: integers exactly, doubles rounded to 15 significant digits.
pub fn to_dec(value: &Bson) -> Dec {
    match value {
        Bson::Int32(v) => Dec::from_i64(i64::from(*v)),
        Bson::Int64(v) => Dec::from_i64(*v),
        Bson::Double(v) => Dec::from_f64(*v, 15),
        Bson::Decimal128(d) => Dec::decode(*d),
        _ => Dec::ZERO,
    }
}

/// `a + b` in decimal128 (round half to even), other numeric types coerced as `to_dec` does:
/// MongoDB's `SafeNum` addition as soon as one side is a decimal.
pub fn decimal_sum(a: &Bson, b: &Bson) -> bson::Decimal128 {
    to_dec(a).plus(to_dec(b)).encode()
}

/// `a × b` in decimal128, coerced like [`decimal_sum`].
pub fn decimal_product(a: &Bson, b: &Bson) -> bson::Decimal128 {
    to_dec(a).times(to_dec(b)).encode()
}

fn date_overflow() -> MongoError {
    MongoError::new(ErrorCode::Overflow, "date overflow")
}

/// Converts a number to the milliseconds it adds to or subtracts from a date.
fn date_millis_operand(value: &Bson) -> Result<i64> {
    match value {
        Bson::Int32(v) => Ok(i64::from(*v)),
        Bson::Int64(v) => Ok(*v),
        Bson::Double(v) => {
            // The upper bound is exclusive because i64::MAX rounds up to 2^63 as a double.
            if *v >= -9_223_372_036_854_775_808.0 && *v < 9_223_372_036_854_775_808.0 {
                Ok(v.round() as i64)
            } else {
                Err(date_overflow())
            }
        }
        Bson::Decimal128(d) => Dec::decode(*d).to_i64_rounded().ok_or_else(date_overflow),
        _ => Err(date_overflow()),
    }
}

/// The running state of `$add`: separate totals per width so that the narrowest exact type is
/// returned, and a date total once a date has been seen.
pub struct AddState {
    long_total: i64,
    double_total: f64,
    decimal_total: Dec,
    widest: Width,
    is_date: bool,
}

impl Default for AddState {
    fn default() -> Self {
        AddState {
            long_total: 0,
            double_total: 0.0,
            decimal_total: Dec::ZERO,
            widest: Width::Int,
            is_date: false,
        }
    }
}

impl AddState {
    /// Adds a number or a date; the caller has already rejected other types and nullish values.
    pub fn add(&mut self, operand: &Bson) -> Result<()> {
        if let Bson::DateTime(date) = operand {
            if self.is_date {
                return Err(MongoError::location(
                    16612,
                    "only one date allowed in an $add expression",
                ));
            }
            let so_far = self.value();
            self.long_total = 0;
            self.is_date = true;
            self.add_to_date(&so_far)?;
            return self.add_to_date(&Bson::Int64(date.timestamp_millis()));
        }
        if self.is_date {
            return self.add_to_date(operand);
        }
        let Some(operand_width) = width(operand) else {
            return Err(MongoError::type_mismatch(format!(
                "$add only supports numeric or date types, not {}",
                bson_type_name(operand)
            )));
        };
        let old = self.widest;
        self.widest = self.widest.max(operand_width);
        if old != self.widest {
            match (old, self.widest) {
                (Width::Int | Width::Long, Width::Double) => {
                    self.double_total = self.long_total as f64
                }
                (Width::Int | Width::Long, Width::Decimal) => {
                    self.decimal_total = Dec::from_i64(self.long_total)
                }
                (Width::Double, Width::Decimal) => {
                    self.decimal_total = Dec::from_f64(self.double_total, 15)
                }
                _ => {}
            }
        }
        match self.widest {
            Width::Int | Width::Long => match self.long_total.checked_add(to_i64(operand)) {
                Some(total) => self.long_total = total,
                None => {
                    self.widest = Width::Double;
                    self.double_total = self.long_total as f64 + to_f64(operand);
                }
            },
            Width::Double => self.double_total += to_f64(operand),
            Width::Decimal => self.decimal_total = self.decimal_total.plus(to_dec(operand)),
        }
        Ok(())
    }

    fn add_to_date(&mut self, operand: &Bson) -> Result<()> {
        let millis = date_millis_operand(operand)?;
        self.long_total = self
            .long_total
            .checked_add(millis)
            .ok_or_else(date_overflow)?;
        Ok(())
    }

    pub fn value(&self) -> Bson {
        if self.is_date {
            return Bson::DateTime(DateTime::from_millis(self.long_total));
        }
        match self.widest {
            Width::Int => int_or_long(self.long_total),
            Width::Long => Bson::Int64(self.long_total),
            Width::Double => Bson::Double(self.double_total),
            Width::Decimal => Bson::Decimal128(self.decimal_total.encode()),
        }
    }
}

/// The running state of `$multiply`: the product in the narrowest type that holds it.
pub struct MultiplyState {
    double_product: f64,
    long_product: i64,
    decimal_product: Dec,
    widest: Width,
}

impl Default for MultiplyState {
    fn default() -> Self {
        MultiplyState {
            double_product: 1.0,
            long_product: 1,
            decimal_product: Dec::ZERO,
            widest: Width::Int,
        }
    }
}

impl MultiplyState {
    /// Multiplies by a number; the caller has already rejected other types.
    pub fn multiply(&mut self, operand: &Bson) {
        let Some(operand_width) = width(operand) else {
            return;
        };
        let old = self.widest;
        self.widest = self.widest.max(operand_width);
        if self.widest == Width::Decimal {
            if old != Width::Decimal {
                self.decimal_product = if old == Width::Double {
                    Dec::from_f64(self.double_product, 15)
                } else {
                    Dec::from_i64(self.long_product)
                };
            }
            self.decimal_product = self.decimal_product.times(to_dec(operand));
            return;
        }
        self.double_product *= to_f64(operand);
        if self.widest != Width::Double {
            match self.long_product.checked_mul(to_i64(operand)) {
                Some(product) => self.long_product = product,
                None => self.widest = Width::Double,
            }
        }
    }

    pub fn value(&self) -> Bson {
        match self.widest {
            Width::Int => int_or_long(self.long_product),
            Width::Long => Bson::Int64(self.long_product),
            Width::Double => Bson::Double(self.double_product),
            Width::Decimal => Bson::Decimal128(self.decimal_product.encode()),
        }
    }
}

/// `$subtract`: numbers (widening on overflow), a date minus a number (a date), or a date minus
/// a date (milliseconds as a long).
pub fn subtract(lhs: Value, rhs: Value) -> Result<Value> {
    let numeric = |v: &Value| v.as_ref().and_then(width);
    if let (Some(lw), Some(rw), Some(l), Some(r)) =
        (numeric(&lhs), numeric(&rhs), lhs.as_ref(), rhs.as_ref())
    {
        let result = match lw.max(rw) {
            Width::Decimal => Bson::Decimal128(to_dec(l).minus(to_dec(r)).encode()),
            Width::Double => Bson::Double(to_f64(l) - to_f64(r)),
            Width::Long => match to_i64(l).checked_sub(to_i64(r)) {
                Some(difference) => Bson::Int64(difference),
                None => Bson::Double(to_f64(l) - to_f64(r)),
            },
            Width::Int => int_or_long(to_i64(l) - to_i64(r)),
        };
        return Ok(Some(result));
    }
    if is_nullish(lhs.as_ref()) || is_nullish(rhs.as_ref()) {
        return Ok(Some(Bson::Null));
    }
    let (Some(l), Some(r)) = (lhs.as_ref(), rhs.as_ref()) else {
        return Ok(Some(Bson::Null));
    };
    if let Bson::DateTime(date) = l {
        return match r {
            Bson::DateTime(other) => Ok(Some(Bson::Int64(
                date.timestamp_millis()
                    .wrapping_sub(other.timestamp_millis()),
            ))),
            number if is_number(number) => {
                let millis = date_millis_operand(number)?;
                let result = date
                    .timestamp_millis()
                    .checked_sub(millis)
                    .ok_or_else(date_overflow)?;
                Ok(Some(Bson::DateTime(DateTime::from_millis(result))))
            }
            other => Err(MongoError::type_mismatch(format!(
                "can't $subtract {} from Date",
                bson_type_name(other)
            ))),
        };
    }
    Err(MongoError::type_mismatch(format!(
        "can't $subtract {} from {}",
        bson_type_name(r),
        bson_type_name(l)
    )))
}

fn divide_by_zero() -> MongoError {
    MongoError::location(16608, "can't $divide by zero")
}

/// `$divide`: always a double, unless either side is a decimal.
pub fn divide(lhs: Value, rhs: Value) -> Result<Value> {
    match (lhs.as_ref(), rhs.as_ref()) {
        (Some(l), Some(r)) if is_number(l) && is_number(r) => {
            if matches!(l, Bson::Decimal128(_)) || matches!(r, Bson::Decimal128(_)) {
                let denominator = to_dec(r);
                if denominator.is_zero() {
                    return Err(divide_by_zero());
                }
                return Ok(Some(Bson::Decimal128(
                    to_dec(l).divided_by(denominator).encode(),
                )));
            }
            let denominator = to_f64(r);
            if denominator == 0.0 {
                return Err(divide_by_zero());
            }
            Ok(Some(Bson::Double(to_f64(l) / denominator)))
        }
        (l, r) if is_nullish(l) || is_nullish(r) => Ok(Some(Bson::Null)),
        (l, r) => Err(MongoError::type_mismatch(format!(
            "$divide only supports numeric types, not {} and {}",
            super::value::type_name(l),
            super::value::type_name(r)
        ))),
    }
}

/// `$mod`: the remainder with the dividend's sign, in the widest operand type.
pub fn modulo(lhs: Value, rhs: Value) -> Result<Value> {
    match (lhs.as_ref(), rhs.as_ref()) {
        (Some(l), Some(r)) if is_number(l) && is_number(r) => {
            let widest = width(l).max(width(r)).unwrap_or(Width::Int);
            if widest == Width::Decimal {
                let divisor = to_dec(r);
                if divisor.is_zero() {
                    return Err(MongoError::location(5733415, "can't $mod by zero"));
                }
                let remainder = to_dec(l).remainder(divisor);
                return Ok(Some(Bson::Decimal128(remainder.encode())));
            }
            if to_f64(r) == 0.0 {
                return Err(MongoError::location(16610, "can't $mod by zero"));
            }
            Ok(Some(match widest {
                Width::Double => Bson::Double(to_f64(l) % to_f64(r)),
                Width::Long => Bson::Int64(to_i64(l).checked_rem(to_i64(r)).unwrap_or(0)),
                _ => Bson::Int32(
                    (to_i64(l) as i32)
                        .checked_rem(to_i64(r) as i32)
                        .unwrap_or(0),
                ),
            }))
        }
        (l, r) if is_nullish(l) || is_nullish(r) => Ok(Some(Bson::Null)),
        (l, r) => Err(MongoError::location(
            16611,
            format!(
                "$mod only supports numeric types, not {} and {}",
                super::value::type_name(l),
                super::value::type_name(r)
            ),
        )),
    }
}

/// `$abs`.
pub fn abs(value: Value) -> Result<Value> {
    let Some(v) = value else {
        return Ok(Some(Bson::Null));
    };
    Ok(Some(match v {
        Bson::Null | Bson::Undefined => Bson::Null,
        Bson::Double(d) => Bson::Double(d.abs()),
        Bson::Decimal128(d) => Bson::Decimal128(Dec::decode(d).abs().encode()),
        Bson::Int32(i) => int_or_long(i64::from(i).abs()),
        Bson::Int64(i) => match i.checked_abs() {
            Some(a) => Bson::Int64(a),
            None => {
                return Err(MongoError::location(
                    28680,
                    "can't take $abs of long long min",
                ));
            }
        },
        other => {
            return Err(MongoError::location(
                28765,
                format!(
                    "$abs only supports numeric types, not {}",
                    bson_type_name(&other)
                ),
            ));
        }
    }))
}

/// A compensated sum of doubles kept as an unevaluated pair (`sum + addend`), exact for
/// integers up to 2^106: the server's `DoubleDoubleSummation`.
#[derive(Clone, Copy, Debug, Default)]
pub struct DoubleDouble {
    sum: f64,
    addend: f64,
    /// A plain sum, used for the result when the compensated one turns into NaN.
    special: f64,
}

impl DoubleDouble {
    pub fn add_double(&mut self, x: f64) {
        self.special += x;
        let (x, addend) = fast_two_sum(x, self.addend);
        self.addend = addend;
        let (sum, x) = two_sum(self.sum, x);
        self.sum = sum;
        self.addend += x;
    }

    /// Adds an int64 exactly by splitting it into two doubles.
    pub fn add_long(&mut self, x: i64) {
        let high = x / (1 << 32) * (1 << 32);
        let low = x - high;
        self.add_double(low as f64);
        self.add_double(high as f64);
    }

    pub fn get_double(&self) -> f64 {
        if self.sum.is_nan() {
            self.special
        } else {
            self.sum
        }
    }

    /// The unevaluated pair `(sum, addend)`: what a partial `$sum` sends to be merged.
    pub fn parts(&self) -> (f64, f64) {
        (self.sum, self.addend)
    }

    /// Whether the sum rounds to a value in the int64 range.
    pub fn fits_long(&self) -> bool {
        const MIN: f64 = -9_223_372_036_854_775_808.0;
        const MAX_PLUS_ONE: f64 = 9_223_372_036_854_775_808.0;
        if self.sum > MIN && self.sum < MAX_PLUS_ONE {
            return true;
        }
        if self.sum == MAX_PLUS_ONE {
            return self.addend < -0.5;
        }
        if self.sum == MIN {
            return self.addend >= -0.5;
        }
        false
    }

    /// The sum rounded to the nearest integer (halves away from zero); only when `fits_long`.
    pub fn get_long(&self) -> i64 {
        if self.sum == 9_223_372_036_854_775_808.0 {
            return (self.addend.round() as i64).wrapping_sub(i64::MIN);
        }
        let sum = self.sum.round() as i64;
        sum.wrapping_add(((self.sum - sum as f64) + self.addend).round() as i64)
    }

    /// The sum as a decimal: exact for integers, otherwise the double rounded to 34 digits.
    pub fn get_decimal(&self) -> Dec {
        if self.fits_long() && self.sum.fract() == 0.0 && self.addend.fract() == 0.0 {
            Dec::from_i64(self.get_long())
        } else {
            Dec::from_f64(self.sum, 34).plus(Dec::from_f64(self.addend, 34))
        }
    }
}

fn two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    let a_prime = s - b;
    let b_prime = s - a_prime;
    (s, (a - a_prime) + (b - b_prime))
}

fn fast_two_sum(a: f64, b: f64) -> (f64, f64) {
    let s = a + b;
    (s, b - (s - a))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn add_all(values: &[Bson]) -> Result<Bson> {
        let mut state = AddState::default();
        for v in values {
            state.add(v)?;
        }
        Ok(state.value())
    }

    #[test]
    fn add_promotes_like_mongodb() {
        assert_eq!(
            add_all(&[Bson::Int32(1), Bson::Int32(2)]).unwrap(),
            Bson::Int32(3)
        );
        assert_eq!(
            add_all(&[Bson::Int32(i32::MAX), Bson::Int32(1)]).unwrap(),
            Bson::Int64(2_147_483_648)
        );
        assert_eq!(
            add_all(&[Bson::Int64(1), Bson::Int32(2)]).unwrap(),
            Bson::Int64(3)
        );
        assert_eq!(
            add_all(&[Bson::Int64(i64::MAX), Bson::Int32(1)]).unwrap(),
            Bson::Double(9.223_372_036_854_776e18)
        );
        assert_eq!(
            add_all(&[Bson::Int32(1), Bson::Double(0.5)]).unwrap(),
            Bson::Double(1.5)
        );
        let decimal = add_all(&[Bson::Int32(1), Bson::Decimal128("1.5".parse().unwrap())]).unwrap();
        assert_eq!(
            decimal.to_string(),
            Bson::Decimal128("2.5".parse().unwrap()).to_string()
        );
    }

    #[test]
    fn add_with_a_date() {
        let date = Bson::DateTime(DateTime::from_millis(1000));
        assert_eq!(
            add_all(&[Bson::Int32(5), date.clone(), Bson::Double(2.6)]).unwrap(),
            Bson::DateTime(DateTime::from_millis(1008))
        );
        assert_eq!(
            add_all(&[date.clone(), date.clone()])
                .unwrap_err()
                .code()
                .code(),
            16612
        );
        assert_eq!(
            add_all(&[date, Bson::Int64(i64::MAX)]).unwrap_err().code(),
            ErrorCode::Overflow
        );
    }

    #[test]
    fn subtract_numbers_and_dates() {
        let d = |ms| Some(Bson::DateTime(DateTime::from_millis(ms)));
        assert_eq!(
            subtract(Some(Bson::Int32(5)), Some(Bson::Int32(7))).unwrap(),
            Some(Bson::Int32(-2))
        );
        assert_eq!(
            subtract(Some(Bson::Int64(i64::MIN)), Some(Bson::Int64(1))).unwrap(),
            Some(Bson::Double(-9.223_372_036_854_776e18))
        );
        assert_eq!(subtract(d(5000), d(2000)).unwrap(), Some(Bson::Int64(3000)));
        assert_eq!(subtract(d(5000), Some(Bson::Int32(1000))).unwrap(), d(4000));
        assert_eq!(subtract(d(5000), None).unwrap(), Some(Bson::Null));
        let err = subtract(Some(Bson::Int32(1)), d(0)).unwrap_err();
        assert_eq!(
            (err.code(), err.message()),
            (ErrorCode::TypeMismatch, "can't $subtract date from int")
        );
        let err = subtract(d(0), Some(Bson::String("x".into()))).unwrap_err();
        assert_eq!(err.message(), "can't $subtract string from Date");
    }

    #[test]
    fn divide_mod_and_abs() {
        assert_eq!(
            divide(Some(Bson::Int32(10)), Some(Bson::Int32(4))).unwrap(),
            Some(Bson::Double(2.5))
        );
        assert_eq!(
            divide(Some(Bson::Int32(1)), Some(Bson::Int32(0)))
                .unwrap_err()
                .code()
                .code(),
            16608
        );
        assert_eq!(
            divide(Some(Bson::Null), Some(Bson::Int32(0))).unwrap(),
            Some(Bson::Null)
        );
        let err = divide(Some(Bson::String("a".into())), Some(Bson::Int32(1))).unwrap_err();
        assert_eq!(
            (err.code(), err.message()),
            (
                ErrorCode::TypeMismatch,
                "$divide only supports numeric types, not string and int"
            )
        );
        assert_eq!(
            modulo(Some(Bson::Int32(-7)), Some(Bson::Int32(3))).unwrap(),
            Some(Bson::Int32(-1))
        );
        assert_eq!(
            modulo(Some(Bson::Int32(i32::MIN)), Some(Bson::Int32(-1))).unwrap(),
            Some(Bson::Int32(0))
        );
        assert_eq!(
            modulo(Some(Bson::Int64(7)), Some(Bson::Int32(4))).unwrap(),
            Some(Bson::Int64(3))
        );
        assert_eq!(
            modulo(Some(Bson::Double(7.5)), Some(Bson::Int32(2))).unwrap(),
            Some(Bson::Double(1.5))
        );
        assert_eq!(
            modulo(Some(Bson::Int32(1)), Some(Bson::Int32(0)))
                .unwrap_err()
                .code()
                .code(),
            16610
        );
        assert_eq!(
            modulo(Some(Bson::Boolean(true)), Some(Bson::Int32(2)))
                .unwrap_err()
                .code()
                .code(),
            16611
        );
        assert_eq!(
            abs(Some(Bson::Int32(i32::MIN))).unwrap(),
            Some(Bson::Int64(2_147_483_648))
        );
        assert_eq!(
            abs(Some(Bson::Int64(i64::MIN))).unwrap_err().code().code(),
            28680
        );
        assert_eq!(abs(None).unwrap(), Some(Bson::Null));
        assert_eq!(
            abs(Some(Bson::String("x".into())))
                .unwrap_err()
                .code()
                .code(),
            28765
        );
    }

    #[test]
    fn multiply_widens_on_overflow() {
        let mut state = MultiplyState::default();
        state.multiply(&Bson::Int32(3));
        state.multiply(&Bson::Int32(4));
        assert_eq!(state.value(), Bson::Int32(12));
        state.multiply(&Bson::Int64(i64::MAX));
        assert_eq!(state.value(), Bson::Double(12.0 * i64::MAX as f64));
    }

    #[test]
    fn double_double_is_exact_for_large_integers() {
        let mut sum = DoubleDouble::default();
        sum.add_long(i64::MAX - 1);
        sum.add_long(1);
        assert!(sum.fits_long());
        assert_eq!(sum.get_long(), i64::MAX);
        sum.add_long(1);
        assert!(!sum.fits_long());
        let mut mixed = DoubleDouble::default();
        for _ in 0..10 {
            mixed.add_double(0.1);
        }
        assert_eq!(mixed.get_double(), 1.0);
    }
}
