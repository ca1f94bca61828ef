//! The intervals of encoded keys (the order-preserving key encoding) a filter allows for a
//! list of key fields: equality and `$in` points on a prefix of the fields, then one range.
//! Index scans and the router's shard targeting both build on this.

use super::bounds::{FieldBounds, field_bounds};
use crate::document::{hashed, keystring};
use bson::{Bson, Document};

/// Most intervals one key may produce (a product of `$in` lists); beyond it, fewer fields are
/// bounded.
pub const MAX_INTERVALS: usize = 2000;

/// How a key field orders its values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum KeyOrder {
    Ascending,
    Descending,
    /// MongoDB's 64-bit hash of the value, ascending.
    Hashed,
}

/// One field of a key.
#[derive(Clone, Copy, Debug)]
pub struct KeyPart<'a> {
    pub path: &'a str,
    pub order: KeyOrder,
}

/// A half-open interval `[low, high)` of encoded keys (`high: None` runs to the end).
#[derive(Clone, Debug, PartialEq)]
pub struct KeyInterval {
    pub low: Vec<u8>,
    pub high: Option<Vec<u8>>,
}

impl KeyInterval {
    /// Every key.
    pub fn all() -> KeyInterval {
        KeyInterval {
            low: Vec::new(),
            high: None,
        }
    }

    pub fn contains(&self, key: &[u8]) -> bool {
        key >= self.low.as_slice() && self.high.as_deref().is_none_or(|h| key < h)
    }
}

/// What a filter allows for a key.
#[derive(Clone, Debug)]
pub struct KeyIntervals {
    /// In ascending key order; a single unbounded interval when nothing is bounded.
    pub intervals: Vec<KeyInterval>,
    /// The bounds on the leading fields used (the fields after them are unbounded).
    pub bounds: Vec<FieldBounds>,
    /// Leading fields fixed by points.
    pub point_fields: usize,
    /// Leading fields fixed by a single point each.
    pub single_point_fields: usize,
    /// The field after the points is bounded by a range.
    pub has_range: bool,
}

impl KeyIntervals {
    /// Whether the filter bounds the key at all.
    pub fn bounded(&self) -> bool {
        self.point_fields > 0 || self.has_range
    }
}

/// The intervals `filter` allows for a key made of `parts`. On a multikey index bounds are not
/// intersected (see [`field_bounds`]). `None` when a point cannot be hashed.
pub fn key_intervals(
    parts: &[KeyPart<'_>],
    filter: &Document,
    multikey: bool,
) -> Option<KeyIntervals> {
    let mut prefixes: Vec<Vec<u8>> = vec![Vec::new()];
    let mut point_fields = 0;
    let mut single_point_fields = 0;
    let mut range: Option<(FieldBounds, bool)> = None;
    let mut bounds = Vec::new();
    for part in parts {
        match field_bounds(filter, part.path, multikey) {
            Some(FieldBounds::Points(points)) => {
                if prefixes.len() * points.len().max(1) > MAX_INTERVALS {
                    break;
                }
                bounds.push(FieldBounds::Points(points.clone()));
                let mut next = Vec::with_capacity(prefixes.len() * points.len());
                for prefix in &prefixes {
                    for point in &points {
                        let mut key = prefix.clone();
                        let value = match part.order {
                            KeyOrder::Hashed => Bson::Int64(hashed::hash_value(point).ok()?),
                            _ => point.clone(),
                        };
                        keystring::encode_value(
                            &value,
                            part.order == KeyOrder::Descending,
                            &mut key,
                        );
                        next.push(key);
                    }
                }
                prefixes = next;
                point_fields += 1;
                if points.len() == 1 && single_point_fields + 1 == point_fields {
                    single_point_fields += 1;
                }
            }
            Some(field_range @ FieldBounds::Range { .. }) if part.order != KeyOrder::Hashed => {
                bounds.push(field_range.clone());
                range = Some((field_range, part.order == KeyOrder::Descending));
                break;
            }
            _ => break,
        }
    }
    let has_range = range.is_some();
    let mut intervals: Vec<KeyInterval> = match &range {
        Some((FieldBounds::Range { low, high }, descending)) => prefixes
            .iter()
            .filter_map(|p| range_interval(p, low.as_ref(), high.as_ref(), *descending))
            .collect(),
        _ => prefixes
            .into_iter()
            .map(|p| KeyInterval {
                high: if p.is_empty() {
                    None
                } else {
                    keystring::successor(&p)
                },
                low: p,
            })
            .collect(),
    };
    intervals.sort_by(|a, b| a.low.cmp(&b.low));
    Some(KeyIntervals {
        intervals,
        bounds,
        point_fields,
        single_point_fields,
        has_range,
    })
}

/// `[low, high)` for a range on the component after `prefix`. A missing side runs to the end
/// of the bound's type (all components of one type start with the same tag byte).
fn range_interval(
    prefix: &[u8],
    low: Option<&(Bson, bool)>,
    high: Option<&(Bson, bool)>,
    descending: bool,
) -> Option<KeyInterval> {
    let bracket_value = low.or(high).map(|(v, _)| v)?;
    let mut tag = Vec::new();
    keystring::encode_value(bracket_value, descending, &mut tag);
    let bracket: Vec<u8> = prefix
        .iter()
        .copied()
        .chain(std::iter::once(tag[0]))
        .collect();
    let key = |v: &Bson| {
        let mut k = prefix.to_vec();
        keystring::encode_value(v, descending, &mut k);
        k
    };
    // In a descending component larger values have smaller encodings: the sides swap.
    let (start, end) = if descending { (high, low) } else { (low, high) };
    let lower = match start {
        Some((v, true)) => key(v),
        Some((v, false)) => keystring::successor(&key(v))?,
        None => bracket.clone(),
    };
    let upper = match end {
        Some((v, true)) => keystring::successor(&key(v)),
        Some((v, false)) => Some(key(v)),
        None => keystring::successor(&bracket),
    };
    if upper.as_ref().is_some_and(|u| *u <= lower) {
        return None;
    }
    Some(KeyInterval {
        low: lower,
        high: upper,
    })
}
