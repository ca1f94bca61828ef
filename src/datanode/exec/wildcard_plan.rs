//! Scans of a wildcard index, as MongoDB plans them: one path per scan, its keys bounded to
//! `$_path` = that path and the values the filter allows there. A path qualifies through an
//! equality (to a non-null scalar or `{}`), `$in` of such values, a range, a regex (a prefix
//! regex as its string range) or `$exists: true` (which also scans the paths below it); never
//! through `null`, `$exists: false`, equality to an object or array, `$ne` or `$nin`, which
//! documents without keys could satisfy. Positional paths are not planned.

use super::plan::{Candidate, IndexScanPlan, QueryShape, bounding_filter, index_collation};
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
    pub path: String,
    pub descending: bool,
    /// `$exists: true`: the paths below `path` are scanned too.
    pub subpaths: bool,
    /// A regex: the value intervals as `explain` prints them.
    pub regex_bounds: Option<Vec<String>>,
}

impl WildcardPath {
    /// The key fields a scan of this path reads: `$_path`, then the path's value.
    pub fn fields(&self) -> Vec<KeyField> {
        vec![
            KeyField {
                path: "$_path".into(),
                kind: FieldKind::Ascending,
            },
            KeyField {
                path: self.path.clone(),
                kind: if self.descending {
                    FieldKind::Descending
                } else {
                    FieldKind::Ascending
                },
            },
        ]
    }

    /// The key pattern `explain` shows: `{$_path: 1, <path>: ±1}`.
    pub fn key_pattern(&self) -> Document {
        let mut pattern = doc! {"$_path": 1};
        pattern.insert(self.path.clone(), if self.descending { -1 } else { 1 });
        pattern
    }

    /// The `$_path` intervals `explain` shows.
    pub fn path_bounds(&self) -> Vec<String> {
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

/// Intervals of one value component, each prefixed by the path's key.
fn prefixed(path_key: &[u8], intervals: Vec<KeyInterval>) -> Vec<KeyInterval> {
    intervals
        .into_iter()
        .map(|iv| KeyInterval {
            low: [path_key, &iv.low].concat(),
            high: match iv.high {
                Some(high) => Some([path_key, &high].concat()),
                None => keystring::successor(path_key),
            },
        })
        .collect()
}

fn value_intervals(
    path: &str,
    order: KeyOrder,
    filter: &Document,
    multikey: bool,
) -> Option<Vec<KeyInterval>> {
    let part = KeyPart { path, order };
    Some(key_intervals(&[part], filter, multikey)?.intervals)
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

/// The best scan of the wildcard index `index` (whose paths are `spec`) for the query: the
/// path whose predicates bound it most.
pub(super) fn wildcard_scan(
    index: &IndexMeta,
    spec: &WildcardSpec,
    shape: &QueryShape<'_>,
) -> Option<(IndexScanPlan, Candidate)> {
    let filter = bounding_filter(shape.filter, shape.collation, index_collation(index));
    let mut paths = Vec::new();
    predicate_paths(&filter, &mut paths);
    let order = if spec.descending {
        KeyOrder::Descending
    } else {
        KeyOrder::Ascending
    };
    let mut best: Option<(IndexScanPlan, Candidate)> = None;
    for path in paths {
        let positional = path.split('.').any(|part| part.parse::<usize>().is_ok());
        if positional || !spec.covers(path) {
            continue;
        }
        let Some(candidate) = path_scan(index, spec, shape, &filter, path, order) else {
            continue;
        };
        if best.as_ref().is_none_or(|(_, score)| candidate.1 > *score) {
            best = Some(candidate);
        }
    }
    best
}

fn path_scan(
    index: &IndexMeta,
    spec: &WildcardSpec,
    shape: &QueryShape<'_>,
    filter: &Document,
    path: &str,
    order: KeyOrder,
) -> Option<(IndexScanPlan, Candidate)> {
    let path_key = keystring::encode_one(&Bson::String(path.to_string()));
    let mut scan = WildcardPath {
        path: path.to_string(),
        descending: spec.descending,
        subpaths: false,
        regex_bounds: None,
    };
    let mut bounds = vec![FieldBounds::Points(vec![Bson::String(path.to_string())])];
    let bounded = field_bounds(filter, path, index.multikey).filter(indexable);
    let (intervals, score) = if let Some(values) = bounded {
        let points = matches!(values, FieldBounds::Points(_));
        let intervals = value_intervals(path, order, filter, index.multikey)?;
        bounds.push(values);
        let sorted = sort_order(index, &scan, shape);
        (
            prefixed(&path_key, intervals),
            (usize::from(points), !points, sorted.is_some(), false),
        )
    } else if let Some((pattern, options)) =
        regex_of(filter, path).filter(|_| index_collation(index).is_none())
    {
        let prefix = regex_prefix(&pattern, &options);
        let mut strings = Document::new();
        let range = match prefix
            .as_deref()
            .and_then(|p| after_prefix(p).map(|a| (p, a)))
        {
            Some((low, high)) if !low.is_empty() => doc! {"$gte": low, "$lt": &high},
            _ => doc! {"$gte": ""},
        };
        strings.insert(path, range);
        let mut intervals = value_intervals(path, order, &strings, false)?;
        let regex = Bson::RegularExpression(bson::Regex {
            pattern: pattern.clone(),
            options: options.clone(),
        });
        let mut low = Vec::new();
        keystring::encode_value(&regex, spec.descending, &mut low);
        intervals.push(KeyInterval {
            high: keystring::successor(&low),
            low,
        });
        let text = |s: &str| format!("\"{s}\"");
        let string_bounds = match prefix
            .as_deref()
            .and_then(|p| after_prefix(p).map(|a| (p, a)))
        {
            Some((low, high)) if !low.is_empty() => format!("[{}, {})", text(low), text(&high)),
            _ => "[\"\", {})".to_string(),
        };
        let regex_text = format!("/{pattern}/{options}");
        scan.regex_bounds = Some(vec![string_bounds, format!("[{regex_text}, {regex_text}]")]);
        (prefixed(&path_key, intervals), (0, true, false, false))
    } else if exists(filter, path) {
        scan.subpaths = true;
        let below = |s: String| keystring::encode_one(&Bson::String(s));
        let intervals = vec![
            KeyInterval {
                high: keystring::successor(&path_key),
                low: path_key.clone(),
            },
            KeyInterval {
                low: below(format!("{path}.")),
                high: Some(below(format!("{path}/"))),
            },
        ];
        (intervals, (0, false, false, false))
    } else {
        return None;
    };
    let mut intervals = intervals;
    intervals.sort_by(|a, b| a.low.cmp(&b.low));
    let provides_sort = score.2;
    let reverse = provides_sort && sort_order(index, &scan, shape).unwrap_or(false);
    let plan = IndexScanPlan {
        index: index.clone(),
        intervals,
        reverse,
        provides_sort,
        bounds,
        wildcard: Some(Arc::new(scan)),
    };
    Some((plan, score))
}

/// Whether a scan of `path` yields the query's sort (`Some(reverse)`): a sort on the path
/// alone, the path's own keys only, and no array met on any path (each document then has one
/// key there).
fn sort_order(index: &IndexMeta, scan: &WildcardPath, shape: &QueryShape<'_>) -> Option<bool> {
    let sort = shape.sort?;
    if index.multikey || scan.subpaths || shape.collation != index_collation(index) {
        return None;
    }
    let mut fields = sort.fields();
    let (path, ascending) = fields.next()?;
    if fields.next().is_some() || path != scan.path {
        return None;
    }
    Some(ascending == scan.descending)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datanode::exec::plan::AccessPath;
    use crate::datanode::exec::test_catalog::{collection, index};
    use crate::datanode::index::wildcard_key;
    use crate::query::sort::SortSpec;

    fn plan(
        key: Document,
        multikey: bool,
        filter: Document,
        sort: Option<Document>,
    ) -> Option<IndexScanPlan> {
        let coll = collection(vec![index(key, 2, multikey)]);
        let sort = sort.map(|s| SortSpec::parse(&s).unwrap());
        let shape = QueryShape {
            sort: sort.as_ref(),
            ..QueryShape::filter(&filter)
        };
        match AccessPath::choose(&coll, &shape).unwrap() {
            AccessPath::IndexScan(plan) => Some((*plan).clone()),
            _ => None,
        }
    }

    fn finds(plan: &IndexScanPlan, path: &str, value: Bson) -> bool {
        let descending = plan.wildcard.as_ref().unwrap().descending;
        let key = wildcard_key(path, &value, descending);
        plan.intervals.iter().any(|iv| iv.contains(&key))
    }

    #[test]
    fn one_path_per_scan() {
        let all = doc! {"$**": 1};
        let eq = plan(all.clone(), false, doc! {"a": 5, "z": {"$ne": 1}}, None).unwrap();
        assert_eq!(eq.key_pattern(), doc! {"$_path": 1, "a": 1});
        assert!(finds(&eq, "a", Bson::Int64(5)));
        assert!(!finds(&eq, "a", Bson::Int32(6)) && !finds(&eq, "b", Bson::Int32(5)));
        assert!(!finds(&eq, "a.b", Bson::Int32(5)));
        let range = plan(
            all.clone(),
            true,
            doc! {"b": {"$gt": 1}, "a": {"$exists": true}},
            None,
        )
        .unwrap();
        assert_eq!(range.wildcard.as_ref().unwrap().path, "b");
        assert!(
            finds(&range, "b", Bson::Double(1.5)) && !finds(&range, "b", Bson::String("x".into()))
        );
        let exists = plan(all.clone(), false, doc! {"a": {"$exists": true}}, None).unwrap();
        for (path, value) in [
            ("a", Bson::Null),
            ("a.b", Bson::Int32(1)),
            ("a", Bson::Document(doc! {})),
        ] {
            assert!(finds(&exists, path, value), "{path}");
        }
        assert!(!finds(&exists, "ab", Bson::Int32(1)) && !finds(&exists, "b", Bson::Int32(1)));
        let regex = plan(all.clone(), false, doc! {"s": {"$regex": "^ab"}}, None).unwrap();
        assert!(finds(&regex, "s", Bson::String("abc".into())));
        assert!(!finds(&regex, "s", Bson::String("b".into())));
        for unplanned in [
            doc! {"a": null},
            doc! {"a": {"$exists": false}},
            doc! {"a": {"$ne": 1}},
            doc! {"a": {"$nin": [1]}},
            doc! {"a": {"b": 1}},
            doc! {"a": [1]},
            doc! {"a.0": 1},
            doc! {"a": {"$in": [1, null]}},
        ] {
            assert!(
                plan(all.clone(), false, unplanned.clone(), None).is_none(),
                "{unplanned}"
            );
        }
        assert!(plan(all, false, doc! {"a": {}}, None).is_some());
    }

    #[test]
    fn projections_sorts_and_directions() {
        let sub = doc! {"a.$**": -1};
        assert!(plan(sub.clone(), false, doc! {"b": 1}, None).is_none());
        let desc = plan(
            sub.clone(),
            false,
            doc! {"a.c": {"$in": [1, 2]}},
            Some(doc! {"a.c": 1}),
        )
        .unwrap();
        assert!(finds(&desc, "a.c", Bson::Int32(2)) && desc.provides_sort && desc.reverse);
        assert!(desc.intervals[0].low < desc.intervals[1].low);
        let multikey = plan(sub, true, doc! {"a.c": 1}, Some(doc! {"a.c": 1})).unwrap();
        assert!(!multikey.provides_sort);
    }

    #[test]
    fn simple_regex_prefixes() {
        assert_eq!(regex_prefix("^abc", ""), Some("abc".into()));
        assert_eq!(regex_prefix("^ab*c", ""), Some("a".into()));
        assert_eq!(regex_prefix("^a\\.b.*", ""), Some("a.b".into()));
        assert_eq!(regex_prefix("^abc", "i"), None);
        assert_eq!(regex_prefix("abc", ""), None);
        assert_eq!(regex_prefix("^a|b", ""), None);
        assert_eq!(after_prefix("abc"), Some("abd".into()));
    }
}
