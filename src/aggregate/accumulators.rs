//! `$group` accumulators: parsing of `{field: {$acc: <expr>}}` and the per-group state each
//! accumulator keeps (`$sum $avg $min $max $first $last $push $addToSet $count`).

use super::decimal::Dec;
use super::expression::{Expression, Scope};
use super::numeric::{DoubleDouble, Width, int_or_long, width};
use super::value::{Value, compare, is_nullish};
use crate::document::order::values_equal;
use crate::error::{MongoError, Result};
use bson::{Bson, Document};
use std::cmp::Ordering;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Sum,
    Avg,
    Min,
    Max,
    First,
    Last,
    Push,
    AddToSet,
}

/// The accumulators by name; `$count` is `$sum: 1` and is handled when parsing.
const ACCUMULATORS: &[(&str, Kind)] = &[
    ("$sum", Kind::Sum),
    ("$avg", Kind::Avg),
    ("$min", Kind::Min),
    ("$max", Kind::Max),
    ("$first", Kind::First),
    ("$last", Kind::Last),
    ("$push", Kind::Push),
    ("$addToSet", Kind::AddToSet),
];

/// One output field of a `$group`.
#[derive(Clone, Debug)]
pub struct Accumulator {
    pub field: String,
    pub kind: Kind,
    pub argument: Expression,
}

impl Accumulator {
    /// Parses `field: {$acc: <expr>}` with the server's checks, in its order.
    pub fn parse(field: &str, spec: &Bson, scope: &Scope) -> Result<Accumulator> {
        let Bson::Document(spec) = spec else {
            return Err(not_an_accumulator(field));
        };
        let Some((name, argument)) = spec.iter().next().filter(|(name, _)| name.starts_with('$'))
        else {
            return Err(not_an_accumulator(field));
        };
        if field.contains('.') {
            return Err(MongoError::location(
                40235,
                format!("The field name '{field}' cannot contain '.'"),
            ));
        }
        if field.starts_with('$') {
            return Err(MongoError::location(
                40236,
                format!("The field name '{field}' cannot be an operator name"),
            ));
        }
        if spec.len() != 1 {
            return Err(MongoError::location(
                40238,
                format!("The field '{field}' must specify one accumulator"),
            ));
        }
        if matches!(argument, Bson::Array(_)) {
            return Err(MongoError::location(
                40237,
                format!("The {name} accumulator is a unary operator"),
            ));
        }
        if name == "$count" {
            if !matches!(argument, Bson::Document(d) if d.is_empty()) {
                return Err(MongoError::type_mismatch(
                    "$count takes no arguments, i.e. $count:{}",
                ));
            }
            return Ok(Accumulator::count(field));
        }
        let kind = ACCUMULATORS
            .iter()
            .find(|(known, _)| *known == name)
            .map(|(_, kind)| *kind)
            .ok_or_else(|| {
                MongoError::location(15952, format!("unknown group operator '{name}'"))
            })?;
        Ok(Accumulator {
            field: field.to_string(),
            kind,
            argument: Expression::parse_in(argument, scope)?,
        })
    }

    /// `{$sum: 1}` under `field`, what `$count` (stage and accumulator) means.
    pub fn count(field: &str) -> Accumulator {
        Accumulator {
            field: field.to_string(),
            kind: Kind::Sum,
            argument: Expression::Constant(Bson::Int32(1)),
        }
    }

    pub fn start(&self) -> State {
        match self.kind {
            Kind::Sum => State::Sum(Sum::default()),
            Kind::Avg => State::Avg(Sum::default(), 0),
            Kind::Min => State::Min(None),
            Kind::Max => State::Max(None),
            Kind::First => State::First(None),
            Kind::Last => State::Last(None),
            Kind::Push => State::Push(Vec::new()),
            Kind::AddToSet => State::AddToSet(Vec::new()),
        }
    }
}

fn not_an_accumulator(field: &str) -> MongoError {
    MongoError::location(
        40234,
        format!("The field '{field}' must be an accumulator object"),
    )
}

/// The running state of one accumulator in one group.
#[derive(Clone, Debug)]
pub enum State {
    Sum(Sum),
    /// The sum of the numeric inputs and how many there were.
    Avg(Sum, u64),
    Min(Option<Bson>),
    Max(Option<Bson>),
    /// `Some` once the first document has been seen; its value may be missing.
    First(Option<Value>),
    Last(Option<Value>),
    Push(Vec<Bson>),
    AddToSet(Vec<Bson>),
}

impl State {
    pub fn process(&mut self, input: Value) {
        match self {
            State::Sum(sum) => {
                sum.add(input.as_ref());
            }
            State::Avg(sum, count) => {
                if sum.add(input.as_ref()) {
                    *count += 1;
                }
            }
            State::Min(best) => keep_extreme(best, input, Ordering::Less),
            State::Max(best) => keep_extreme(best, input, Ordering::Greater),
            State::First(first) => {
                if first.is_none() {
                    *first = Some(input);
                }
            }
            State::Last(last) => *last = Some(input),
            State::Push(values) => values.extend(input),
            State::AddToSet(values) => {
                if let Some(value) = input {
                    if !values.iter().any(|seen| values_equal(seen, &value)) {
                        values.push(value);
                    }
                }
            }
        }
    }

    pub fn finish(self) -> Bson {
        match self {
            State::Sum(sum) => sum.total(),
            State::Avg(sum, count) => sum.average(count),
            State::Min(best) | State::Max(best) => best.unwrap_or(Bson::Null),
            State::First(value) | State::Last(value) => value.flatten().unwrap_or(Bson::Null),
            State::Push(values) | State::AddToSet(values) => Bson::Array(values),
        }
    }
}

/// `$min`/`$max` ignore null, undefined and missing; ties keep the earlier value.
fn keep_extreme(best: &mut Option<Bson>, input: Value, wanted: Ordering) {
    let Some(value) = input.filter(|v| !is_nullish(Some(v))) else {
        return;
    };
    if best
        .as_ref()
        .is_none_or(|current| compare(Some(&value), Some(current)) == wanted)
    {
        *best = Some(value);
    }
}

/// `$sum` as the server computes it: integers and doubles in a double-double sum, decimals in
/// a separate decimal sum, and the result in the widest type seen (narrowed back to an int when
/// an int-only sum fits).
#[derive(Clone, Debug)]
pub struct Sum {
    widest: Width,
    non_decimal: DoubleDouble,
    decimal: Dec,
}

impl Default for Sum {
    fn default() -> Self {
        Sum {
            widest: Width::Int,
            non_decimal: DoubleDouble::default(),
            decimal: Dec::ZERO,
        }
    }
}

impl Sum {
    /// Adds a number; anything else is ignored. Returns whether the input counted.
    pub fn add(&mut self, input: Option<&Bson>) -> bool {
        let Some(input) = input else {
            return false;
        };
        let Some(input_width) = width(input) else {
            return false;
        };
        self.widest = self.widest.max(input_width);
        match input {
            Bson::Int32(v) => self.non_decimal.add_double(f64::from(*v)),
            Bson::Int64(v) => self.non_decimal.add_long(*v),
            Bson::Double(v) => self.non_decimal.add_double(*v),
            Bson::Decimal128(d) => self.decimal = self.decimal.plus(Dec::decode(*d)),
            _ => return false,
        }
        true
    }

    pub fn total(&self) -> Bson {
        match self.widest {
            Width::Int if self.non_decimal.fits_long() => int_or_long(self.non_decimal.get_long()),
            Width::Int | Width::Long if self.non_decimal.fits_long() => {
                Bson::Int64(self.non_decimal.get_long())
            }
            Width::Int | Width::Long | Width::Double => Bson::Double(self.non_decimal.get_double()),
            Width::Decimal => Bson::Decimal128(self.decimal_total().encode()),
        }
    }

    fn decimal_total(&self) -> Dec {
        self.decimal.plus(self.non_decimal.get_decimal())
    }

    /// `$avg`: null without numeric input, a decimal if any input was one, else a double.
    pub fn average(&self, count: u64) -> Bson {
        if count == 0 {
            return Bson::Null;
        }
        if self.widest == Width::Decimal {
            let count = Dec::from_i64(i64::try_from(count).unwrap_or(i64::MAX));
            return Bson::Decimal128(self.decimal_total().divided_by(count).encode());
        }
        Bson::Double(self.non_decimal.get_double() / count as f64)
    }
}

/// The output document of one group: `_id` first, then the accumulators in spec order.
pub fn group_output(id: Bson, accumulators: &[Accumulator], states: Vec<State>) -> Document {
    let mut out = Document::new();
    out.insert("_id", id);
    for (acc, state) in accumulators.iter().zip(states) {
        out.insert(acc.field.clone(), state.finish());
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aggregate::expression::Variables;
    use bson::{DateTime, bson, doc};

    /// Runs one accumulator over documents whose `v` field holds `values` (`None`: no field).
    fn accumulate(spec: Bson, values: &[Option<Bson>]) -> Bson {
        let acc = Accumulator::parse("f", &spec, &Scope::default()).unwrap();
        let mut state = acc.start();
        for value in values {
            let doc = value.clone().map_or_else(Document::new, |v| doc! {"v": v});
            let vars = Variables::new(&doc, DateTime::from_millis(0));
            state.process(acc.argument.evaluate(&vars).unwrap());
        }
        state.finish()
    }

    fn code(spec: Bson) -> i32 {
        Accumulator::parse("f", &spec, &Scope::default())
            .unwrap_err()
            .code()
            .code()
    }

    #[test]
    fn parse_errors_in_server_order() {
        assert_eq!(code(bson!(1)), 40234);
        assert_eq!(code(bson!({})), 40234);
        assert_eq!(code(bson!({"a": 1})), 40234);
        assert_eq!(
            Accumulator::parse("a.b", &bson!({"$sum": 1}), &Scope::default())
                .unwrap_err()
                .code()
                .code(),
            40235
        );
        assert_eq!(
            Accumulator::parse("$a", &bson!({"$sum": 1}), &Scope::default())
                .unwrap_err()
                .code()
                .code(),
            40236
        );
        assert_eq!(code(bson!({"$sum": 1, "$avg": 1})), 40238);
        let err = Accumulator::parse("f", &bson!({"$sum": [1]}), &Scope::default()).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (40237, "The $sum accumulator is a unary operator")
        );
        let err = Accumulator::parse("f", &bson!({"$median": 1}), &Scope::default()).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (15952, "unknown group operator '$median'")
        );
        assert_eq!(code(bson!({"$count": 1})), 14);
        assert_eq!(code(bson!({"$sum": "$"})), 16872);
    }

    #[test]
    fn sum_promotes_and_ignores_non_numbers() {
        let n = |v: Bson| Some(v);
        assert_eq!(
            accumulate(bson!({"$sum": 1}), &[None, None]),
            Bson::Int32(2)
        );
        assert_eq!(accumulate(bson!({"$sum": "$v"}), &[]), Bson::Int32(0));
        assert_eq!(
            accumulate(bson!({"$sum": "$v"}), &[n(bson!("x")), None, n(Bson::Null)]),
            Bson::Int32(0)
        );
        assert_eq!(
            accumulate(
                bson!({"$sum": "$v"}),
                &[n(Bson::Int32(i32::MAX)), n(Bson::Int32(1))]
            ),
            Bson::Int64(2_147_483_648)
        );
        assert_eq!(
            accumulate(
                bson!({"$sum": "$v"}),
                &[n(Bson::Int32(1)), n(Bson::Int64(2))]
            ),
            Bson::Int64(3)
        );
        assert_eq!(
            accumulate(
                bson!({"$sum": "$v"}),
                &[n(Bson::Int64(i64::MAX - 1)), n(Bson::Int64(2))]
            ),
            Bson::Double(9.223_372_036_854_776e18)
        );
        assert_eq!(
            accumulate(
                bson!({"$sum": "$v"}),
                &[n(Bson::Int32(1)), n(Bson::Double(0.5))]
            ),
            Bson::Double(1.5)
        );
        let Bson::Double(zero) = accumulate(bson!({"$sum": "$v"}), &[n(Bson::Double(-0.0))]) else {
            panic!("a double")
        };
        assert!(zero == 0.0 && zero.is_sign_positive());
        let decimal = accumulate(
            bson!({"$sum": "$v"}),
            &[
                n(Bson::Int32(1)),
                n(Bson::Decimal128("1.5".parse().unwrap())),
            ],
        );
        assert_eq!(decimal.to_string(), "2.5");
        let negative_zero = accumulate(
            bson!({"$sum": "$v"}),
            &[n(Bson::Decimal128("-0".parse().unwrap()))],
        );
        assert_eq!(negative_zero.to_string(), "0");
    }

    #[test]
    fn avg_min_max() {
        let n = |v: i32| Some(Bson::Int32(v));
        assert_eq!(
            accumulate(bson!({"$avg": "$v"}), &[n(1), n(2), Some(bson!("x")), None]),
            Bson::Double(1.5)
        );
        assert_eq!(
            accumulate(bson!({"$avg": "$v"}), &[None, Some(bson!("x"))]),
            Bson::Null
        );
        let decimal = accumulate(
            bson!({"$avg": "$v"}),
            &[n(1), Some(Bson::Decimal128("2".parse().unwrap()))],
        );
        assert_eq!(decimal.to_string(), "1.5");
        assert_eq!(
            accumulate(
                bson!({"$min": "$v"}),
                &[n(3), None, Some(Bson::Null), n(1), Some(bson!("a"))]
            ),
            Bson::Int32(1)
        );
        assert_eq!(
            accumulate(bson!({"$max": "$v"}), &[n(3), Some(bson!("a")), n(9)]),
            bson!("a")
        );
        assert_eq!(
            accumulate(bson!({"$max": "$v"}), &[None, Some(Bson::Null)]),
            Bson::Null
        );
    }

    #[test]
    fn first_last_push_add_to_set() {
        let n = |v: i32| Some(Bson::Int32(v));
        assert_eq!(
            accumulate(bson!({"$first": "$v"}), &[None, n(2)]),
            Bson::Null
        );
        assert_eq!(
            accumulate(bson!({"$first": "$v"}), &[n(1), n(2)]),
            Bson::Int32(1)
        );
        assert_eq!(
            accumulate(bson!({"$last": "$v"}), &[n(1), None]),
            Bson::Null
        );
        assert_eq!(
            accumulate(
                bson!({"$push": "$v"}),
                &[n(1), None, Some(Bson::Null), n(1)]
            ),
            bson!([1, null, 1])
        );
        assert_eq!(
            accumulate(
                bson!({"$addToSet": "$v"}),
                &[n(1), None, Some(Bson::Double(1.0)), n(2)]
            ),
            bson!([1, 2])
        );
        assert_eq!(
            accumulate(bson!({"$count": {}}), &[None, None, None]),
            Bson::Int32(3)
        );
    }

    #[test]
    fn output_puts_id_first() {
        let accs = vec![
            Accumulator::parse("n", &bson!({"$sum": 1}), &Scope::default()).unwrap(),
            Accumulator::parse("a", &bson!({"$first": 1}), &Scope::default()).unwrap(),
        ];
        let states = accs.iter().map(Accumulator::start).collect();
        assert_eq!(
            group_output(Bson::Null, &accs, states),
            doc! {"_id": null, "n": 0, "a": null}
        );
    }
}
