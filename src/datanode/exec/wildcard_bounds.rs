//! Every key field of a wildcard scan bounded on its own, as MongoDB's bounds builder bounds
//! each field of a compound index: the leading fields' bounds become the scan's intervals of
//! encoded keys (points while they last, then one field's ranges), and the bounds on the
//! fields after those are checked on each key the scan reads before its document is fetched.

use crate::document::key_decode::component_lengths;
use crate::document::keystring;
use crate::query::bounds::FieldBounds;
use crate::query::key_intervals::{KeyInterval, KeyOrder, KeyPart, MAX_INTERVALS, key_intervals};
use bson::{Bson, Document};

/// What one key field allows, in its encoded form.
#[derive(Clone, Debug, PartialEq)]
pub enum Component {
    /// Any value.
    Whole,
    /// Exactly these encoded values, ascending.
    Points(Vec<Vec<u8>>),
    /// Encoded values within these intervals, ascending (none: no value).
    Ranges(Vec<KeyInterval>),
}

impl Component {
    /// The filter's bounds on `path` in a field ordered by `order` (`multikey`: its predicates
    /// do not intersect), with the bounds `explain` shows (`None`: unbounded).
    pub fn of_field(
        path: &str,
        order: KeyOrder,
        filter: &Document,
        multikey: bool,
    ) -> (Component, Option<FieldBounds>) {
        let part = KeyPart { path, order };
        let Some(bounded) = key_intervals(&[part], filter, multikey) else {
            return (Component::Whole, None);
        };
        match bounded.bounds.into_iter().next() {
            Some(points @ FieldBounds::Points(_)) => {
                let encoded = bounded.intervals.into_iter().map(|iv| iv.low).collect();
                (Component::Points(encoded), Some(points))
            }
            Some(range @ FieldBounds::Range { .. }) => {
                (Component::Ranges(bounded.intervals), Some(range))
            }
            None => (Component::Whole, None),
        }
    }

    /// One value, encoded ascending.
    pub fn point(value: &Bson) -> Component {
        Component::Points(vec![keystring::encode_one(value)])
    }

    /// Whether the field holds one value in every key the bounds admit.
    pub fn single_point(&self) -> bool {
        matches!(self, Component::Points(points) if points.len() == 1)
    }

    fn admits(&self, encoded: &[u8]) -> bool {
        match self {
            Component::Whole => true,
            Component::Points(points) => points.iter().any(|p| p == encoded),
            Component::Ranges(ranges) => ranges.iter().any(|iv| iv.contains(encoded)),
        }
    }
}

/// The bounds a scan's intervals leave to be checked on each key it reads.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyChecks {
    /// Per key field, whether its bytes are inverted.
    descending: Vec<bool>,
    /// The fields checked, by position, with their bounds.
    checks: Vec<(usize, Component)>,
}

impl KeyChecks {
    /// Whether `key` lies within every checked field's bounds. A key that does not split into
    /// the scan's fields is kept: the filter still runs on its document.
    pub fn admits(&self, key: &[u8]) -> bool {
        let Some(lengths) = component_lengths(key, &self.descending) else {
            return true;
        };
        let mut starts = Vec::with_capacity(lengths.len());
        let mut at = 0;
        for len in &lengths {
            starts.push(at);
            at += len;
        }
        self.checks.iter().all(|(field, component)| {
            let start = starts[*field];
            component.admits(&key[start..start + lengths[*field]])
        })
    }
}

/// A scan of keys whose fields are bounded by `components`.
#[derive(Debug)]
pub struct Composed {
    /// In ascending key order.
    pub intervals: Vec<KeyInterval>,
    /// The leading fields the intervals bound exactly.
    pub enforced: usize,
    /// The checks on the bounded fields after them (`None`: nothing to check).
    pub checks: Option<KeyChecks>,
}

/// The intervals of keys made of fields bounded by `components` (`descending` per field):
/// each combination of the leading fields' points, then the first other field's ranges under
/// each; the bounds on the fields after those are checked per key.
pub fn compose(components: &[Component], descending: &[bool]) -> Composed {
    let mut prefixes: Vec<Vec<u8>> = vec![Vec::new()];
    let mut tail: Option<&[KeyInterval]> = None;
    let mut enforced = 0;
    for component in components {
        match component {
            Component::Points(points) if prefixes.len() * points.len() <= MAX_INTERVALS => {
                prefixes = prefixes
                    .iter()
                    .flat_map(|prefix| points.iter().map(move |p| [prefix, p.as_slice()].concat()))
                    .collect();
                enforced += 1;
            }
            Component::Ranges(ranges) => {
                tail = Some(ranges);
                enforced += 1;
                break;
            }
            _ => break,
        }
    }
    let mut intervals = Vec::new();
    for prefix in &prefixes {
        let after_prefix = || {
            if prefix.is_empty() {
                None
            } else {
                keystring::successor(prefix)
            }
        };
        match tail {
            Some(ranges) => intervals.extend(ranges.iter().map(|iv| KeyInterval {
                low: [prefix.as_slice(), &iv.low].concat(),
                high: match &iv.high {
                    Some(high) => Some([prefix.as_slice(), high].concat()),
                    None => after_prefix(),
                },
            })),
            None => intervals.push(KeyInterval {
                low: prefix.clone(),
                high: after_prefix(),
            }),
        }
    }
    intervals.sort_by(|a, b| a.low.cmp(&b.low));
    let checks: Vec<(usize, Component)> = components
        .iter()
        .enumerate()
        .skip(enforced)
        .filter(|(_, c)| **c != Component::Whole)
        .map(|(i, c)| (i, c.clone()))
        .collect();
    Composed {
        intervals,
        enforced,
        checks: (!checks.is_empty()).then(|| KeyChecks {
            descending: descending.to_vec(),
            checks,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn key(values: &[(Bson, bool)]) -> Vec<u8> {
        keystring::encode_key(values.iter().map(|(v, d)| (v, *d)))
    }

    #[test]
    fn fields_after_a_range_are_checked_per_key() {
        let filter = doc! {"a": {"$gt": 1}, "b": 3, "c": {"$in": [1, 2]}};
        let fields = [("a", false), ("b", true), ("c", false)];
        let components: Vec<Component> = fields
            .iter()
            .map(|(path, desc)| {
                let order = if *desc {
                    KeyOrder::Descending
                } else {
                    KeyOrder::Ascending
                };
                Component::of_field(path, order, &filter, false).0
            })
            .collect();
        let composed = compose(&components, &[false, true, false]);
        assert_eq!(composed.enforced, 1);
        let checks = composed.checks.expect("b and c are checked");
        let k = |a: i32, b: i32, c: i32| {
            key(&[
                (Bson::Int32(a), false),
                (Bson::Int32(b), true),
                (Bson::Int32(c), false),
            ])
        };
        let inside = |k: &Vec<u8>| composed.intervals.iter().any(|iv| iv.contains(k));
        assert!(inside(&k(2, 3, 1)) && checks.admits(&k(2, 3, 1)));
        assert!(inside(&k(5, 9, 1)) && !checks.admits(&k(5, 9, 1)));
        assert!(!checks.admits(&k(5, 3, 7)) && !inside(&k(1, 3, 1)));
    }

    #[test]
    fn points_compose_into_one_interval_each() {
        let filter = doc! {"a": {"$in": [1, 2]}, "b": {"$lt": 0}};
        let components = vec![
            Component::of_field("a", KeyOrder::Ascending, &filter, false).0,
            Component::point(&Bson::String("p".into())),
            Component::of_field("b", KeyOrder::Ascending, &filter, false).0,
            Component::Whole,
        ];
        let composed = compose(&components, &[false; 4]);
        assert_eq!((composed.intervals.len(), composed.enforced), (2, 3));
        assert!(composed.checks.is_none());
    }
}
