//! Scans of a wildcard index, as MongoDB plans them: one path per scan, its keys bounded to
//! `$_path` = that path and the values the filter allows there. A path qualifies through an
//! equality (to a non-null scalar or `{}`), `$in` of such values, a range, a regex (a prefix
//! regex as its string range) or `$exists: true` (which also scans the paths below it); never
//! through `null`, `$exists: false`, equality to an object or array, `$ne` or `$nin`, which
//! documents without keys could satisfy. Positional paths are not planned.
//!
//! A compound wildcard index's scan reads its key pattern with the wildcard field expanded to
//! `$_path` and the path, every field bounded on its own (`wildcard_bounds`): the first regular
//! field must be bounded, and not to a null a document without keys could stand for (a hinted
//! index is also scanned whole on one only `$exists: true` bounds, as MongoDB does). Without a
//! queried path the scan covers every `$_path` under the regular fields' bounds. A sort comes
//! from the scan as MongoDB's provided sorts have it (`provided_sort`).

use super::plan::{Candidate, IndexScanPlan, QueryShape, bounding_filter, index_collation};
use super::wildcard_bounds::{Component, KeyChecks, compose};
use crate::datanode::index::wildcard::WildcardSpec;
use crate::datanode::index::{FieldKind, KeyField};
use crate::datanode::storage::IndexMeta;
use crate::document::keystring;
use crate::query::bounds::{FieldBounds, field_bounds};
use crate::query::key_intervals::{KeyInterval, KeyOrder, KeyPart, key_intervals};
use bson::{Bson, Document, doc};
use std::sync::Arc;

/// The path a wildcard scan reads and how its bounds were made.
#[derive(Clone, Debug, PartialEq)]
pub struct WildcardPath {
    /// Empty when no path is queried: a compound index's scan of every `$_path`.
    pub path: String,
    pub descending: bool,
    /// `$exists: true`: the paths below `path` are scanned too.
    pub subpaths: bool,
    /// A regex: the value intervals as `explain` prints them.
    pub regex_bounds: Option<Vec<String>>,
    /// A compound wildcard index's regular fields before and after the wildcard field.
    pub before: Vec<KeyField>,
    pub after: Vec<KeyField>,
    /// The bounds the scan's intervals leave to check on each key it reads.
    pub checks: Option<KeyChecks>,
}

impl WildcardPath {
    /// The key fields a scan of this path reads: the regular fields before the wildcard field,
    /// `$_path`, the path's value (when a path is queried), the regular fields after.
    pub fn fields(&self) -> Vec<KeyField> {
        let mut fields = self.before.clone();
        fields.push(KeyField {
            path: "$_path".into(),
            kind: FieldKind::Ascending,
        });
        if !self.path.is_empty() {
            fields.push(KeyField {
                path: self.path.clone(),
                kind: if self.descending {
                    FieldKind::Descending
                } else {
                    FieldKind::Ascending
                },
            });
        }
        fields.extend(self.after.iter().cloned());
        fields
    }

    /// The key pattern `explain` shows: `{$_path: 1, <path>: ±1}` among the regular fields.
    pub fn key_pattern(&self) -> Document {
        let mut pattern = Document::new();
        for field in self.fields() {
            let direction = if field.kind == FieldKind::Descending {
                -1
            } else {
                1
            };
            pattern.insert(field.path, direction);
        }
        pattern
    }

    /// Where `$_path` stands among the key fields.
    pub fn path_field(&self) -> usize {
        self.before.len()
    }

    /// The `$_path` intervals `explain` shows.
    pub fn path_bounds(&self) -> Vec<String> {
        if self.path.is_empty() {
            // Documents without a leaf under the wildcard are keyed with `MinKey`.
            return vec!["[MinKey, MinKey]".into(), "[\"\", {})".into()];
        }
        let mut out = vec![format!("[\"{0}\", \"{0}\"]", self.path)];
        if self.subpaths {
            out.push(format!("[\"{0}.\", \"{0}/\")", self.path));
        }
        out
    }
}

/// Every path the filter's top level and its `$and`s put a predicate on.
fn predicate_paths<'a>(filter: &'a Document, out: &mut Vec<&'a str>) {
    for (key, value) in filter {
        if key == "$and" {
            if let Bson::Array(branches) = value {
                for branch in branches.iter().filter_map(Bson::as_document) {
                    predicate_paths(branch, out);
                }
            }
        } else if !key.starts_with('$') && !out.contains(&key.as_str()) {
            out.push(key);
        }
    }
}

/// The predicates on `path` (top level and under `$and`s).
fn predicates<'a>(filter: &'a Document, path: &str, out: &mut Vec<&'a Bson>) {
    for (key, value) in filter {
        if key == path {
            out.push(value);
        } else if key == "$and" {
            if let Bson::Array(branches) = value {
                for branch in branches.iter().filter_map(Bson::as_document) {
                    predicates(branch, path, out);
                }
            }
        }
    }
}

/// The first regex among `path`'s predicates: its pattern and options.
fn regex_of(filter: &Document, path: &str) -> Option<(String, String)> {
    let mut found = Vec::new();
    predicates(filter, path, &mut found);
    found.into_iter().find_map(|value| match value {
        Bson::RegularExpression(re) => Some((re.pattern.clone(), re.options.clone())),
        Bson::Document(ops) => match (ops.get("$regex"), ops.get("$options")) {
            (Some(Bson::RegularExpression(re)), _) => {
                Some((re.pattern.clone(), re.options.clone()))
            }
            (Some(Bson::String(p)), Some(Bson::String(o))) => Some((p.clone(), o.clone())),
            (Some(Bson::String(p)), None) => Some((p.clone(), String::new())),
            _ => None,
        },
        _ => None,
    })
}

/// Whether `path` has `$exists: true` among its predicates.
fn exists(filter: &Document, path: &str) -> bool {
    let mut found = Vec::new();
    predicates(filter, path, &mut found);
    found.into_iter().any(|value| match value {
        Bson::Document(ops) => ops.get("$exists").is_some_and(|e| match e {
            Bson::Boolean(b) => *b,
            Bson::Null | Bson::Undefined => false,
            other => crate::document::numeric::Number::from_bson(other)
                .is_some_and(|n| n.to_f64() != 0.0),
        }),
        _ => false,
    })
}

/// The literal prefix every match of a regex starts with (MongoDB's "simple regex"), when it
/// is anchored and case-sensitive.
pub(super) fn regex_prefix(pattern: &str, options: &str) -> Option<String> {
    if options.contains(['i', 'm', 'x']) || pattern.contains('|') {
        return None;
    }
    let rest = pattern
        .strip_prefix('^')
        .or_else(|| pattern.strip_prefix("\\A"))?;
    let mut prefix = String::new();
    let mut chars = rest.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '\\' => match chars.next() {
                Some(e) if !e.is_ascii_alphanumeric() => prefix.push(e),
                _ => break,
            },
            '*' | '?' | '{' => {
                // The last literal may be absent.
                prefix.pop();
                break;
            }
            '+' | '.' | '(' | ')' | '[' | ']' | '$' | '^' | '}' => break,
            c => prefix.push(c),
        }
    }
    Some(prefix)
}

/// The smallest string above every string that starts with `prefix` (`None`: no such string).
fn after_prefix(prefix: &str) -> Option<String> {
    let mut chars: Vec<char> = prefix.chars().collect();
    while let Some(last) = chars.pop() {
        if let Some(next) = char::from_u32(last as u32 + 1) {
            chars.push(next);
            return Some(chars.into_iter().collect());
        }
    }
    None
}

/// How a regular field of a compound wildcard index orders its values.
fn key_order(field: &KeyField) -> KeyOrder {
    if field.kind == FieldKind::Descending {
        KeyOrder::Descending
    } else {
        KeyOrder::Ascending
    }
}

/// Whether the bounds on a path are values a wildcard index holds keys for.
fn indexable(bounds: &FieldBounds) -> bool {
    match bounds {
        FieldBounds::Points(points) => points.iter().all(|p| match p {
            Bson::Null | Bson::Undefined => false,
            Bson::Document(d) => d.is_empty(),
            _ => true,
        }),
        FieldBounds::Range { .. } => true,
    }
}

/// A compound wildcard index's regular fields, and what the filter allows for each of those
/// before the wildcard field.
struct Leading {
    before: Vec<KeyField>,
    after: Vec<KeyField>,
    components: Vec<Component>,
    /// What `explain` shows for each (`None`: every value).
    bounds: Vec<Option<FieldBounds>>,
    /// The bounds leave out documents missing every regular field, which may have no key.
    excludes_missing: bool,
}

/// Whether a field's bounds allow the null a missing field matches.
fn admits_null(bounds: &FieldBounds) -> bool {
    let null = |v: &Bson| {
        matches!(
            v,
            Bson::Null | Bson::Undefined | Bson::MinKey | Bson::MaxKey
        )
    };
    match bounds {
        FieldBounds::Points(points) => points.iter().any(null),
        FieldBounds::Range { low, high } => {
            low.as_ref().is_some_and(|(v, _)| null(v))
                || high.as_ref().is_some_and(|(v, _)| null(v))
        }
    }
}

/// The regular fields of `index` and the filter's bounds on those before the wildcard field;
/// `None` when there are some and no predicate the index can serve is on the first (no scan
/// may start there). A hinted index is also scanned whole on a first field only
/// `$exists: true` bounds, as MongoDB does (`[MinKey, MaxKey]`).
fn leading(index: &IndexMeta, filter: &Document, hinted: bool) -> Option<Leading> {
    let fields = super::plan::fields_of(index);
    let at = fields.iter().position(|f| f.kind == FieldKind::Wildcard)?;
    let before = fields[..at].to_vec();
    let after = fields[at + 1..].to_vec();
    let mut components = Vec::with_capacity(before.len());
    let mut bounds = Vec::with_capacity(before.len());
    let mut excludes_missing = false;
    for field in &before {
        // Regular fields never hold arrays (their documents are refused): bounds intersect.
        let (component, field_bounds) =
            Component::of_field(&field.path, key_order(field), filter, false);
        excludes_missing |= match &field_bounds {
            Some(b) => !admits_null(b),
            None => exists(filter, &field.path),
        };
        components.push(component);
        bounds.push(field_bounds);
    }
    if let Some(first) = before.first() {
        let served = bounds[0].is_some() || (hinted && exists(filter, &first.path));
        if !served {
            return None;
        }
    }
    Some(Leading {
        before,
        after,
        components,
        bounds,
        excludes_missing,
    })
}

/// The best scan of the wildcard index `index` (whose paths are `spec`) for the query (the
/// index `hinted` or not): the path whose predicates bound it most, or, for a compound index,
/// its regular fields alone.
pub(super) fn wildcard_scan(
    index: &IndexMeta,
    spec: &WildcardSpec,
    shape: &QueryShape<'_>,
    hinted: bool,
) -> Option<(IndexScanPlan, Candidate)> {
    let filter = bounding_filter(shape.filter, shape.collation, index_collation(index));
    let lead = leading(index, &filter, hinted)?;
    let mut paths = Vec::new();
    predicate_paths(&filter, &mut paths);
    let mut best: Option<(IndexScanPlan, Candidate)> = None;
    for path in paths {
        let positional = path.split('.').any(|part| part.parse::<usize>().is_ok());
        if positional || !spec.covers(path) {
            continue;
        }
        let Some(candidate) = path_scan(index, spec, shape, &filter, path, &lead) else {
            continue;
        };
        if best.as_ref().is_none_or(|(_, score)| candidate.1 > *score) {
            best = Some(candidate);
        }
    }
    if best.is_none() && lead.excludes_missing {
        best = Some(regular_scan(index, spec, &lead, shape));
    }
    best
}

/// Whether the scan yields the query's sort (`Some(reverse)`), as MongoDB's provided sorts
/// have it: the key fields in order (forwards or backwards), each field one point fixes
/// dropped from both; `$_path` only as one point (several intervals, `$exists`'s subpaths or
/// every path, end the order there), and the path's value not where an array holds several
/// of a document's values. Keys in another collation than the query's sort nothing.
fn provided_sort(
    index: &IndexMeta,
    scan: &WildcardPath,
    components: &[Component],
    shape: &QueryShape<'_>,
) -> Option<bool> {
    let sort = shape.sort?;
    if sort.natural().is_some() || shape.collation != index_collation(index) {
        return None;
    }
    let multikey_value = !scan.path.is_empty() && index.path_is_multikey(&scan.path);
    let fields = scan.fields();
    let mut order: Vec<(&str, bool)> = Vec::new();
    let mut fixed: Vec<&str> = Vec::new();
    for (i, (field, component)) in fields.iter().zip(components).enumerate() {
        let single = component.single_point();
        if i == scan.path_field() {
            if single {
                continue;
            }
            break;
        }
        if single {
            fixed.push(&field.path);
            continue;
        }
        if multikey_value && i == scan.path_field() + 1 {
            break;
        }
        order.push((&field.path, field.kind != FieldKind::Descending));
    }
    let wanted: Vec<(&str, bool)> = sort.fields().filter(|(p, _)| !fixed.contains(p)).collect();
    if wanted.len() > order.len() {
        return None;
    }
    let mut reverse = None;
    for ((path, ascending), (field, field_ascending)) in wanted.iter().zip(&order) {
        let against = ascending != field_ascending;
        if path != field || reverse.is_some_and(|r| r != against) {
            return None;
        }
        reverse = Some(against);
    }
    Some(reverse.unwrap_or(false))
}

/// A scan whose key fields are bounded by `components` (and shown as `bounds`): its
/// intervals, the checks on each key, and how good it is (leading points and whether a range
/// follows, the `$_path` field at `path_field` not counted).
fn composed_scan(
    scan: &mut WildcardPath,
    components: &[Component],
) -> (Vec<KeyInterval>, usize, bool) {
    let descending: Vec<bool> = scan
        .fields()
        .iter()
        .map(|f| f.kind == FieldKind::Descending)
        .collect();
    let composed = compose(components, &descending);
    scan.checks = composed.checks;
    let enforced = components
        .iter()
        .enumerate()
        .take(composed.enforced)
        .filter(|(i, _)| *i != scan.path_field());
    let (mut points, mut range) = (0, false);
    for (_, component) in enforced {
        match component {
            Component::Points(_) => points += 1,
            Component::Ranges(_) => range = true,
            Component::Whole => {}
        }
    }
    (composed.intervals, points, range)
}

/// `explain`'s bounds of each key field: those the filter sets, every value (`[MinKey,
/// MaxKey]`) on a field between them that it leaves unbounded.
fn shown_bounds(bounds: Vec<Option<FieldBounds>>) -> Vec<FieldBounds> {
    let last = bounds
        .iter()
        .rposition(Option::is_some)
        .map_or(0, |i| i + 1);
    bounds
        .into_iter()
        .take(last)
        .map(|b| b.unwrap_or_else(FieldBounds::every_value))
        .collect()
}

/// A compound wildcard index's scan bounded by its regular fields alone: every `$_path`.
fn regular_scan(
    index: &IndexMeta,
    spec: &WildcardSpec,
    lead: &Leading,
    shape: &QueryShape<'_>,
) -> (IndexScanPlan, Candidate) {
    let mut scan = WildcardPath {
        path: String::new(),
        descending: spec.descending,
        subpaths: false,
        regex_bounds: None,
        before: lead.before.clone(),
        after: lead.after.clone(),
        checks: None,
    };
    let mut components = lead.components.clone();
    components.push(Component::Whole);
    components.extend(lead.after.iter().map(|_| Component::Whole));
    let (intervals, points, range) = composed_scan(&mut scan, &components);
    let sorted = provided_sort(index, &scan, &components, shape);
    let plan = IndexScanPlan {
        index: index.clone(),
        intervals,
        reverse: sorted == Some(true),
        provides_sort: sorted.is_some(),
        bounds: shown_bounds(lead.bounds.clone()),
        wildcard: Some(Arc::new(scan)),
    };
    (plan, (points, range, sorted.is_some(), false))
}

/// The value intervals of a regex on `path` (its prefix's string range, or every string, and
/// the regex itself), with `explain`'s rendering of them.
fn regex_component(
    pattern: &str,
    options: &str,
    path: &str,
    order: KeyOrder,
    descending: bool,
) -> Option<(Component, Vec<String>)> {
    let prefix = regex_prefix(pattern, options);
    let range = prefix
        .as_deref()
        .and_then(|p| after_prefix(p).map(|a| (p, a)))
        .filter(|(low, _)| !low.is_empty());
    let mut strings = Document::new();
    strings.insert(
        path,
        match &range {
            Some((low, high)) => doc! {"$gte": *low, "$lt": high},
            None => doc! {"$gte": ""},
        },
    );
    let part = KeyPart { path, order };
    let mut intervals = key_intervals(&[part], &strings, false)?.intervals;
    let regex = Bson::RegularExpression(bson::Regex {
        pattern: pattern.to_string(),
        options: options.to_string(),
    });
    let mut low = Vec::new();
    keystring::encode_value(&regex, descending, &mut low);
    intervals.push(KeyInterval {
        high: keystring::successor(&low),
        low,
    });
    intervals.sort_by(|a, b| a.low.cmp(&b.low));
    let text = |s: &str| format!("\"{s}\"");
    let string_bounds = match &range {
        Some((low, high)) => format!("[{}, {})", text(low), text(high)),
        None => "[\"\", {})".to_string(),
    };
    let regex_text = format!("/{pattern}/{options}");
    let shown = vec![string_bounds, format!("[{regex_text}, {regex_text}]")];
    Some((Component::Ranges(intervals), shown))
}

fn path_scan(
    index: &IndexMeta,
    spec: &WildcardSpec,
    shape: &QueryShape<'_>,
    filter: &Document,
    path: &str,
    lead: &Leading,
) -> Option<(IndexScanPlan, Candidate)> {
    let order = if spec.descending {
        KeyOrder::Descending
    } else {
        KeyOrder::Ascending
    };
    let mut scan = WildcardPath {
        path: path.to_string(),
        descending: spec.descending,
        subpaths: false,
        regex_bounds: None,
        before: lead.before.clone(),
        after: lead.after.clone(),
        checks: None,
    };
    let path_point = Component::point(&Bson::String(path.to_string()));
    let mut bounds = lead.bounds.clone();
    bounds.push(Some(FieldBounds::Points(vec![Bson::String(
        path.to_string(),
    )])));
    // Only an array at the path (or above it) keeps its predicates from intersecting; the
    // regular fields never hold arrays.
    let multikey = index.path_is_multikey(path);
    let values = field_bounds(filter, path, multikey).filter(indexable);
    let (path_component, value_component) = if values.is_some() {
        let (component, value_bounds) = Component::of_field(path, order, filter, multikey);
        bounds.push(value_bounds);
        (path_point, component)
    } else if let Some((pattern, options)) =
        regex_of(filter, path).filter(|_| index_collation(index).is_none())
    {
        let (component, shown) = regex_component(&pattern, &options, path, order, spec.descending)?;
        scan.regex_bounds = Some(shown);
        bounds.push(None);
        (path_point, component)
    } else if exists(filter, path) {
        scan.subpaths = true;
        let below = |s: String| keystring::encode_one(&Bson::String(s));
        let path_key = keystring::encode_one(&Bson::String(path.to_string()));
        let paths = vec![
            KeyInterval {
                high: keystring::successor(&path_key),
                low: path_key,
            },
            KeyInterval {
                low: below(format!("{path}.")),
                high: Some(below(format!("{path}/"))),
            },
        ];
        bounds.push(None);
        (Component::Ranges(paths), Component::Whole)
    } else {
        return None;
    };
    let mut components = lead.components.clone();
    components.push(path_component);
    components.push(value_component);
    for field in &lead.after {
        let (component, after_bounds) =
            Component::of_field(&field.path, key_order(field), filter, false);
        components.push(component);
        bounds.push(after_bounds);
    }
    let (intervals, points, range) = composed_scan(&mut scan, &components);
    let sorted = provided_sort(index, &scan, &components, shape);
    let plan = IndexScanPlan {
        index: index.clone(),
        intervals,
        reverse: sorted == Some(true),
        provides_sort: sorted.is_some(),
        bounds: shown_bounds(bounds),
        wildcard: Some(Arc::new(scan)),
    };
    Some((plan, (points, range, sorted.is_some(), false)))
}

#[cfg(test)]
#[path = "wildcard_plan_tests.rs"]
mod tests;
