//! Choosing how to find a query's documents: a point lookup in the `_id` index, a scan of key
//! intervals in one index (from the filter's bounds, honouring `hint`, and in the query's sort
//! order when the index provides it), or a collection scan.

pub use super::wildcard_plan::WildcardPath;
use crate::datanode::index::{FieldKind, KeyField};
use crate::datanode::storage::{CollectionMeta, IndexMeta};
use crate::document::collation::Collation;
use crate::document::keystring;
use crate::error::{ErrorCode, MongoError, Result};
use crate::query::bounds::{
    FieldBounds, field_bounds, in_collation_keys, without_string_comparisons,
};
pub use crate::query::key_intervals::KeyInterval;
use crate::query::key_intervals::{KeyIntervals, KeyOrder, KeyPart, key_intervals};
use crate::query::sort::SortSpec;
use bson::{Bson, Document};
use std::borrow::Cow;
use std::sync::Arc;

/// What a query asks, as far as choosing an access path goes.
pub struct QueryShape<'a> {
    pub filter: &'a Document,
    pub sort: Option<&'a SortSpec>,
    pub hint: Option<&'a Bson>,
    /// find's `min` and `max`: an inclusive lower and an exclusive upper bound in the hinted
    /// index's key order.
    pub min: Option<&'a Document>,
    pub max: Option<&'a Document>,
    /// The query's collation (`None`: simple): indexes, whose keys are in the simple
    /// collation, then bound no string comparison and deliver no sort.
    pub collation: Option<&'a Collation>,
}

impl<'a> QueryShape<'a> {
    /// A query that is just a filter.
    pub fn filter(filter: &'a Document) -> QueryShape<'a> {
        QueryShape {
            filter,
            sort: None,
            hint: None,
            min: None,
            max: None,
            collation: None,
        }
    }
}

/// A scan of one index.
#[derive(Clone, Debug)]
pub struct IndexScanPlan {
    pub index: IndexMeta,
    /// In ascending key order.
    pub intervals: Vec<KeyInterval>,
    /// Scan the intervals from the highest key down.
    pub reverse: bool,
    /// The documents come out in the query's sort order.
    pub provides_sort: bool,
    /// The filter's bounds on the leading index fields the scan uses (the fields after them
    /// are scanned whole), for `explain`.
    pub bounds: Vec<FieldBounds>,
    /// A wildcard index's scan: the one path it reads (its key fields are then `$_path` and
    /// that path).
    pub wildcard: Option<Arc<WildcardPath>>,
}

impl IndexScanPlan {
    /// The fields of the keys scanned.
    pub fn fields(&self) -> Vec<KeyField> {
        match &self.wildcard {
            Some(scan) => scan.fields(),
            None => fields_of(&self.index),
        }
    }

    /// Whether a document may hold several of the keys the scan's bounds are on: for a
    /// wildcard scan, an array at its path or above it (the regular fields never hold one).
    pub fn multikey(&self) -> bool {
        match &self.wildcard {
            Some(scan) => !scan.path.is_empty() && self.index.path_is_multikey(&scan.path),
            None => self.index.multikey,
        }
    }

    /// Whether a key the scan's intervals hold is within the bounds they leave to check (a
    /// wildcard scan's fields after those its intervals bound).
    pub fn admits(&self, key: &[u8]) -> bool {
        self.wildcard
            .as_ref()
            .and_then(|scan| scan.checks.as_ref())
            .is_none_or(|checks| checks.admits(key))
    }

    /// The key pattern the scan reads, as `explain` and `planSummary` show it.
    pub fn key_pattern(&self) -> Document {
        match &self.wildcard {
            Some(scan) => scan.key_pattern(),
            None => self.index.key_pattern(),
        }
    }
}

/// How documents are located.
#[derive(Clone, Debug)]
pub enum AccessPath {
    /// One lookup in the `_id` index, of the value as the index keys it (a string as its
    /// collation key when the index has the collection's non-simple default collation).
    IdPoint(Bson),
    IndexScan(Arc<IndexScanPlan>),
    /// A top-level `$or` whose every branch an index answers: the branches' scans one after
    /// another, each document returned once.
    Union(Arc<Vec<Arc<IndexScanPlan>>>),
    /// Every document in record-id (insertion) order, newest first when `reverse`
    /// (`$natural: -1`).
    CollScan {
        reverse: bool,
    },
}

impl AccessPath {
    /// The output is already in the order of the query's sort.
    pub fn provides_sort(&self) -> bool {
        matches!(self, AccessPath::IndexScan(plan) if plan.provides_sort)
    }

    /// The indexes this path reads, each once (what `$indexStats` counts as an access).
    pub fn indexes_used<'a>(&'a self, coll: &'a CollectionMeta) -> Vec<&'a IndexMeta> {
        let mut used: Vec<&IndexMeta> = match self {
            AccessPath::IdPoint(_) => coll.indexes.iter().filter(|i| i.name == "_id_").collect(),
            AccessPath::IndexScan(plan) => vec![&plan.index],
            AccessPath::Union(plans) => plans.iter().map(|plan| &plan.index).collect(),
            AccessPath::CollScan { .. } => Vec::new(),
        };
        used.sort_by_key(|index| index.ident);
        used.dedup_by_key(|index| index.ident);
        used
    }

    /// The plan as a profile entry's `planSummary` names it: `COLLSCAN`, `IDHACK`,
    /// `IXSCAN { a: 1 }` (one per branch of a union, comma-separated).
    pub fn summary(&self) -> String {
        let scan = |plan: &IndexScanPlan| {
            format!(
                "IXSCAN {}",
                crate::document::display::render_doc(&plan.key_pattern())
            )
        };
        match self {
            AccessPath::IdPoint(_) => "IDHACK".to_string(),
            AccessPath::IndexScan(plan) => scan(plan),
            AccessPath::Union(plans) => plans
                .iter()
                .map(|plan| scan(plan))
                .collect::<Vec<_>>()
                .join(", "),
            AccessPath::CollScan { .. } => "COLLSCAN".to_string(),
        }
    }

    /// Chooses the access path for a query on `coll`.
    pub fn choose(coll: &CollectionMeta, shape: &QueryShape<'_>) -> Result<AccessPath> {
        let Some(filter) = or_of_equalities_as_in(shape.filter) else {
            return Self::choose_for(coll, shape);
        };
        Self::choose_for(
            coll,
            &QueryShape {
                filter: &filter,
                ..*shape
            },
        )
    }

    fn choose_for(coll: &CollectionMeta, shape: &QueryShape<'_>) -> Result<AccessPath> {
        if let Some(text) = super::text::text_scan(coll, shape)? {
            return Ok(text);
        }
        if shape.min.is_some() || shape.max.is_some() {
            return min_max(coll, shape);
        }
        if let Some(hint) = shape.hint {
            return hinted(coll, shape, hint);
        }
        // A `$natural` sort asks for storage order: a collection scan, as in MongoDB.
        if let Some(forward) = shape.sort.and_then(SortSpec::natural) {
            return Ok(AccessPath::CollScan { reverse: !forward });
        }
        // The point is in the `_id` index's keys: its collation's, when the query's is the same.
        let id_collation = index_collation(coll.id_index());
        let id_filter = bounding_filter(shape.filter, shape.collation, id_collation);
        if let Some(FieldBounds::Points(ids)) = field_bounds(&id_filter, "_id", false) {
            if let [id] = ids.as_slice() {
                return Ok(AccessPath::IdPoint(id.clone()));
            }
        }
        let best = best_index_scan(coll, shape);
        // A geo index, unless another one fixes a field by equality.
        if !best
            .as_ref()
            .is_some_and(|p| matches!(p.bounds.first(), Some(FieldBounds::Points(_))))
        {
            if let Some(plan) = super::geo_plan::sphere_scan(coll, shape.filter) {
                return Ok(AccessPath::IndexScan(Arc::new(plan)));
            }
        }
        if let Some(plan) = best {
            return Ok(AccessPath::IndexScan(Arc::new(plan)));
        }
        if let Some(plans) = union_of_branches(coll, shape.filter, shape.collation) {
            return Ok(AccessPath::Union(Arc::new(plans)));
        }
        // No index narrows the filter; one may still deliver the sort order.
        if shape.sort.is_some() {
            for index in coll
                .indexes
                .iter()
                .filter(|i| usable(i) && can_scan_whole(i))
            {
                if let Some((plan, _)) = plan_index(index, shape, true) {
                    if plan.provides_sort {
                        return Ok(AccessPath::IndexScan(Arc::new(plan)));
                    }
                }
            }
        }
        Ok(AccessPath::CollScan {
            reverse: shape.sort.and_then(SortSpec::natural) == Some(false),
        })
    }
}

/// The most selective scan of one index the filter's bounds allow.
pub(super) fn best_index_scan(
    coll: &CollectionMeta,
    shape: &QueryShape<'_>,
) -> Option<IndexScanPlan> {
    let mut best: Option<(Candidate, IndexScanPlan)> = None;
    for index in coll.indexes.iter().filter(|i| usable(i)) {
        let scan = match index.parsed.as_ref().and_then(|p| p.wildcard.as_ref()) {
            Some(wildcard) => super::wildcard_plan::wildcard_scan(index, wildcard, shape, false),
            None => plan_index(index, shape, false),
        };
        let Some((plan, score)) = scan else {
            continue;
        };
        if best.as_ref().is_none_or(|(b, _)| score > *b) {
            best = Some((score, plan));
        }
    }
    best.map(|(_, plan)| plan)
}

/// The filter with a top-level `$or` whose branches are each one equality on the same path
/// planned as that path's `$in` (MongoDB rewrites them so): one scan of the values' points in
/// one index rather than one scan per branch, which for 100,000 branches is 100,000 plans and
/// statements. Only the access path is chosen from it; the filter still runs as written.
fn or_of_equalities_as_in(filter: &Document) -> Option<Document> {
    let Some(Bson::Array(branches)) = filter.get("$or") else {
        return None;
    };
    let mut path: Option<&str> = None;
    let mut values = Vec::with_capacity(branches.len());
    for branch in branches {
        let Bson::Document(branch) = branch else {
            return None;
        };
        let mut fields = branch.iter();
        let (Some((key, value)), None) = (fields.next(), fields.next()) else {
            return None;
        };
        if key.starts_with('$') || path.is_some_and(|p| p != key) {
            return None;
        }
        path = Some(key);
        let value = match value {
            Bson::Document(ops) if ops.keys().next().is_some_and(|k| k.starts_with('$')) => {
                match (ops.len(), ops.get("$eq")) {
                    (1, Some(value)) => value,
                    _ => return None,
                }
            }
            value => value,
        };
        // A regex or an array as the value of an equality matches more than as one point.
        if matches!(value, Bson::RegularExpression(_) | Bson::Array(_)) {
            return None;
        }
        values.push(value.clone());
    }
    let mut rewritten = Document::new();
    for (key, value) in filter {
        if key == "$or" {
            rewritten.insert(path?, bson::doc! {"$in": std::mem::take(&mut values)});
        } else if Some(key.as_str()) == path {
            // `{a: 1, $or: [{a: 2}]}`: both predicates hold, so keep them apart in an `$and`.
            return None;
        } else {
            rewritten.insert(key.clone(), value.clone());
        }
    }
    Some(rewritten)
}

/// One index scan per branch of the filter's top-level `$or`, when every branch has one.
fn union_of_branches(
    coll: &CollectionMeta,
    filter: &Document,
    collation: Option<&Collation>,
) -> Option<Vec<Arc<IndexScanPlan>>> {
    let Some(Bson::Array(branches)) = filter.get("$or") else {
        return None;
    };
    let mut plans = Vec::with_capacity(branches.len());
    for branch in branches {
        let Bson::Document(branch) = branch else {
            return None;
        };
        let shape = QueryShape {
            collation,
            ..QueryShape::filter(branch)
        };
        plans.push(Arc::new(best_index_scan(coll, &shape)?));
    }
    (!plans.is_empty()).then_some(plans)
}

/// How good an index scan is: equality-bounded fields first, then a range, then whether it
/// delivers the sort, then a unique index.
pub(super) type Candidate = (usize, bool, bool, bool);

fn usable(index: &IndexMeta) -> bool {
    index.ready
        && index
            .parsed
            .as_ref()
            .is_none_or(|p| !p.hidden && p.partial_filter.is_none() && p.text.is_none())
}

/// Whether every document has at least one key in the index (so a whole-index scan sees them all).
fn can_scan_whole(index: &IndexMeta) -> bool {
    index.parsed.as_ref().is_none_or(|p| {
        !p.sparse
            && p.partial_filter.is_none()
            && p.sphere.is_none()
            && p.flat.is_none()
            && p.wildcard.is_none()
    })
}

/// The collation `index`'s keys are in (`None`: simple).
pub(super) fn index_collation(index: &IndexMeta) -> Option<&Collation> {
    index.collation()
}

/// What of `filter` (a query comparing strings by `query`) may bound a scan of keys in the
/// `index` collation: all of it in the index's keys when the collations are the same, no
/// string comparison when they differ.
pub(super) fn bounding_filter<'a>(
    filter: &'a Document,
    query: Option<&Collation>,
    index: Option<&Collation>,
) -> Cow<'a, Document> {
    match (query, index) {
        (None, None) => Cow::Borrowed(filter),
        (Some(query), Some(index)) if query == index => {
            Cow::Owned(in_collation_keys(filter, index))
        }
        _ => Cow::Owned(without_string_comparisons(filter)),
    }
}

pub(super) fn fields_of(index: &IndexMeta) -> Vec<KeyField> {
    match &index.parsed {
        Some(spec) => spec.fields.clone(),
        None => vec![KeyField {
            path: "_id".into(),
            kind: FieldKind::Ascending,
        }],
    }
}

/// The key parts of an index's fields, as key intervals are built over them.
/// The key parts of an index's fields; `None` when one is a geo field, whose keys are cells,
/// not values: no bounds on the value apply (geo scans are planned by `geo_plan`).
pub(super) fn key_parts(fields: &[KeyField]) -> Option<Vec<KeyPart<'_>>> {
    fields
        .iter()
        .map(|f| {
            Some(KeyPart {
                path: &f.path,
                order: match f.kind {
                    FieldKind::Ascending => KeyOrder::Ascending,
                    FieldKind::Descending => KeyOrder::Descending,
                    FieldKind::Hashed => KeyOrder::Hashed,
                    FieldKind::Sphere2d | FieldKind::Flat2d | FieldKind::Wildcard => return None,
                },
            })
        })
        .collect()
}

fn is_natural(hint: &Bson) -> bool {
    matches!(hint, Bson::Document(d) if d.keys().next().is_some_and(|k| k == "$natural"))
}

fn hinted(coll: &CollectionMeta, shape: &QueryShape<'_>, hint: &Bson) -> Result<AccessPath> {
    if is_natural(hint) {
        let reverse = match hint {
            Bson::Document(d) => d.values().next().is_some_and(|v| {
                matches!(v, Bson::Int32(n) if *n < 0)
                    || matches!(v, Bson::Int64(n) if *n < 0)
                    || matches!(v, Bson::Double(n) if *n < 0.0)
            }),
            _ => false,
        };
        return Ok(AccessPath::CollScan { reverse });
    }
    Ok(AccessPath::IndexScan(Arc::new(hinted_scan(
        coll, shape, hint,
    )?)))
}

fn hinted_scan(
    coll: &CollectionMeta,
    shape: &QueryShape<'_>,
    hint: &Bson,
) -> Result<IndexScanPlan> {
    let index = match hint {
        Bson::String(name) => coll.indexes.iter().find(|i| &i.name == name),
        Bson::Document(key) => coll.indexes.iter().find(|i| &i.key_pattern() == key),
        _ => None,
    };
    let index = index
        // A text index answers only `$text` (`datanode::exec::text`), never a key scan.
        .filter(|i| {
            i.ready
                && i.parsed
                    .as_ref()
                    .is_none_or(|p| !p.hidden && p.text.is_none())
        })
        .ok_or_else(|| MongoError::new(ErrorCode::BadValue, "error processing query: planner returned error :: caused by :: hint provided does not correspond to an existing index"))?;
    if let Some(wildcard) = index.parsed.as_ref().and_then(|p| p.wildcard.as_ref()) {
        // A wildcard index has no whole scan: the filter must bound one of its paths, or the
        // first of its regular fields.
        return super::wildcard_plan::wildcard_scan(index, wildcard, shape, true)
            .map(|(plan, _)| plan)
            .ok_or_else(|| {
                MongoError::new(
                    ErrorCode::NoQueryExecutionPlans,
                    "error processing query: planner returned error :: caused by :: No query solutions",
                )
            });
    }
    let (plan, _) = plan_index(index, shape, true).expect("a whole-index scan is always possible");
    Ok(plan)
}

/// A scan of the hinted index between `min` (inclusive) and `max` (exclusive), which name every
/// field of the index's key pattern in order.
fn min_max(coll: &CollectionMeta, shape: &QueryShape<'_>) -> Result<AccessPath> {
    let hint = shape.hint.filter(|h| !is_natural(h)).ok_or_else(|| {
        MongoError::location(
            51173,
            "When using min()/max() a hint of which index to use must be provided",
        )
    })?;
    // A wildcard index's keys are no key pattern's values: MongoDB refuses min/max on one.
    let wildcard = coll.indexes.iter().any(|i| {
        let named = match hint {
            Bson::String(name) => &i.name == name,
            Bson::Document(key) => &i.key_pattern() == key,
            _ => false,
        };
        named && i.parsed.as_ref().is_some_and(|p| p.wildcard.is_some())
    });
    if wildcard {
        return Err(MongoError::location(
            51174,
            "The index chosen is not compatible with min/max",
        ));
    }
    let mut plan = hinted_scan(coll, shape, hint)?;
    let fields = fields_of(&plan.index);
    let key_of = |bound: &Document| -> Result<Vec<u8>> {
        let names_match = bound.len() == fields.len()
            && bound
                .keys()
                .zip(&fields)
                .all(|(name, field)| *name == field.path);
        if !names_match {
            return Err(MongoError::location(
                51174,
                "The index chosen is not compatible with min/max",
            ));
        }
        let mut key = Vec::new();
        for (value, field) in bound.values().zip(&fields) {
            keystring::encode_value(value, field.kind == FieldKind::Descending, &mut key);
        }
        Ok(key)
    };
    let low = shape.min.map(key_of).transpose()?;
    let high = shape.max.map(key_of).transpose()?;
    if let (Some(l), Some(h)) = (&low, &high) {
        if l >= h {
            return Err(MongoError::location(
                51175,
                "The value provided for min() does not come before the value provided for max() in the hinted index",
            ));
        }
    }
    plan.intervals = plan
        .intervals
        .into_iter()
        .filter_map(|iv| {
            let lower = match &low {
                Some(l) if *l > iv.low => l.clone(),
                _ => iv.low,
            };
            let upper = match (&high, iv.high) {
                (Some(h), Some(u)) => Some(if *h < u { h.clone() } else { u }),
                (Some(h), None) => Some(h.clone()),
                (None, u) => u,
            };
            let empty = upper.as_ref().is_some_and(|u| *u <= lower);
            (!empty).then_some(KeyInterval {
                low: lower,
                high: upper,
            })
        })
        .collect();
    Ok(AccessPath::IndexScan(Arc::new(plan)))
}

/// The scan of `index` the query's bounds allow, with its score; `None` when the filter does
/// not bound the index's first field (unless `whole` asks for an unbounded scan).
fn plan_index(
    index: &IndexMeta,
    shape: &QueryShape<'_>,
    whole: bool,
) -> Option<(IndexScanPlan, Candidate)> {
    let fields = fields_of(index);
    if fields
        .iter()
        .any(|f| matches!(f.kind, FieldKind::Sphere2d | FieldKind::Flat2d))
    {
        return whole.then(|| {
            let plan = IndexScanPlan {
                index: index.clone(),
                intervals: vec![KeyInterval::all()],
                reverse: false,
                provides_sort: false,
                bounds: Vec::new(),
                wildcard: None,
            };
            (plan, (0, false, false, false))
        });
    }
    let parts = key_parts(&fields)?;
    let filter = bounding_filter(shape.filter, shape.collation, index_collation(index));
    let same_collation = shape.collation == index_collation(index);
    let KeyIntervals {
        intervals,
        bounds,
        point_fields,
        single_point_fields,
        has_range,
    } = key_intervals(&parts, &filter, index.multikey)?;
    if point_fields == 0 && !has_range && !whole {
        return None;
    }
    // Keys in another collation than the query's are not in the order it sorts strings by.
    let sort = shape.sort.filter(|_| same_collation);
    let (provides_sort, reverse) = sort_order(index, &fields, single_point_fields, sort);
    let all_points = point_fields == fields.len() && !has_range;
    let score = (
        point_fields,
        has_range,
        provides_sort,
        all_points && index.is_unique(),
    );
    Some((
        IndexScanPlan {
            index: index.clone(),
            intervals,
            reverse,
            provides_sort,
            bounds,
            wildcard: None,
        },
        score,
    ))
}

/// Whether scanning the index (forwards or backwards) yields the sort order: the sort fields
/// must be the index fields after those fixed by a single equality, all in the index's
/// direction or all against it. A multikey index cannot promise an order.
fn sort_order(
    index: &IndexMeta,
    fields: &[KeyField],
    fixed: usize,
    sort: Option<&SortSpec>,
) -> (bool, bool) {
    let Some(sort) = sort else {
        return (false, false);
    };
    if index.multikey {
        return (false, false);
    }
    fields_sort_order(fields, fixed, sort)
}

/// Whether keys of `fields` (after the `fixed` ones), each one value per document, come in the
/// sort's order (forwards or backwards).
pub(super) fn fields_sort_order(
    fields: &[KeyField],
    fixed: usize,
    sort: &SortSpec,
) -> (bool, bool) {
    if sort.natural().is_some() {
        return (false, false);
    }
    let wanted: Vec<(&str, bool)> = sort.fields().collect();
    if wanted.is_empty() || fixed + wanted.len() > fields.len() {
        return (false, false);
    }
    let mut direction = None;
    for ((path, ascending), field) in wanted.iter().zip(&fields[fixed..]) {
        if !field.kind.holds_value() || *path != field.path {
            return (false, false);
        }
        // Against the index: ascending wanted on a descending field, or the other way round.
        let reversed = *ascending == (field.kind == FieldKind::Descending);
        if direction.is_some_and(|d| d != reversed) {
            return (false, false);
        }
        direction = Some(reversed);
    }
    (true, direction.unwrap_or(false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    use crate::datanode::exec::test_catalog::collection as coll;

    fn index(key: Document, ident: i64) -> IndexMeta {
        crate::datanode::exec::test_catalog::index(key, ident, false)
    }

    fn choose(coll: &CollectionMeta, filter: Document, sort: Option<Document>) -> AccessPath {
        let sort = sort.map(|s| SortSpec::parse(&s).unwrap());
        AccessPath::choose(
            coll,
            &QueryShape {
                sort: sort.as_ref(),
                ..QueryShape::filter(&filter)
            },
        )
        .unwrap()
    }

    fn scan_of(path: AccessPath) -> Arc<IndexScanPlan> {
        match path {
            AccessPath::IndexScan(plan) => plan,
            other => panic!("expected an index scan, got {other:?}"),
        }
    }

    #[test]
    fn picks_the_most_bounded_index() {
        let c = coll(vec![
            index(doc! {"a": 1}, 2),
            index(doc! {"a": 1, "b": 1}, 3),
        ]);
        assert!(matches!(
            choose(&c, doc! {"_id": 5}, None),
            AccessPath::IdPoint(_)
        ));
        assert_eq!(
            scan_of(choose(&c, doc! {"a": 1, "b": 2}, None)).index.name,
            "a_1_b_1"
        );
        let plan = scan_of(choose(&c, doc! {"a": {"$in": [2, 1]}}, None));
        assert_eq!(plan.intervals.len(), 2);
        assert!(plan.intervals[0].low < plan.intervals[1].low);
        assert!(matches!(
            choose(&c, doc! {"z": 1}, None),
            AccessPath::CollScan { .. }
        ));
    }

    #[test]
    fn an_or_of_equalities_on_one_path_is_one_scan_of_points() {
        let c = coll(vec![index(doc! {"a": 1}, 2), index(doc! {"b": 1}, 3)]);
        let branches = |n: i32| -> Vec<Bson> {
            (0..n)
                .rev()
                .map(|i| Bson::Document(doc! {"a": i}))
                .collect()
        };
        let plan = scan_of(choose(&c, doc! {"$or": branches(1000)}, None));
        assert_eq!(
            (plan.index.name.as_str(), plan.intervals.len()),
            ("a_1", 1000)
        );
        assert!(plan.intervals[0].low < plan.intervals[1].low);
        // Past the intervals one scan may have, as for an `$in` of as many values: no index
        // bounds it, and no union of 100,000 scans either.
        assert!(matches!(
            choose(&c, doc! {"$or": branches(100_000)}, None),
            AccessPath::CollScan { .. }
        ));
        let eq = scan_of(choose(
            &c,
            doc! {"$or": [{"a": {"$eq": 2}}, {"a": 1}]},
            None,
        ));
        assert_eq!(eq.intervals.len(), 2);
        // Other paths, other operators, or the path beside the `$or`: a scan per branch.
        for filter in [
            doc! {"$or": [{"a": 1}, {"b": 2}]},
            doc! {"$or": [{"a": 1}, {"a": {"$gt": 5}}]},
            doc! {"a": 1, "$or": [{"a": 2}, {"a": 3}]},
        ] {
            let path = choose(&c, filter.clone(), None);
            assert!(
                !matches!(&path, AccessPath::IndexScan(p) if p.intervals.len() > 1),
                "{filter}: {path:?}"
            );
        }
    }

    #[test]
    fn ranges_cover_exactly_their_values() {
        let c = coll(vec![index(doc! {"a": 1}, 2)]);
        let plan = scan_of(choose(&c, doc! {"a": {"$gt": 5, "$lte": 9}}, None));
        let iv = &plan.intervals[0];
        let inside = |v: Bson| {
            let k = keystring::encode_one(&v);
            k >= iv.low && iv.high.as_ref().is_none_or(|h| &k < h)
        };
        assert!(!inside(Bson::Int32(5)));
        assert!(inside(Bson::Double(5.5)));
        assert!(inside(Bson::Int64(9)));
        assert!(!inside(Bson::Int32(10)));
        assert!(!inside(Bson::String("7".into())));
        let open = scan_of(choose(&c, doc! {"a": {"$gte": "m"}}, None));
        let iv = &open.intervals[0];
        let k = keystring::encode_one(&Bson::String("zz".into()));
        assert!(k >= iv.low && iv.high.as_ref().is_none_or(|h| &k < h));
        let doc_key = keystring::encode_one(&Bson::Document(doc! {}));
        assert!(
            iv.high.as_ref().is_some_and(|h| &doc_key >= h),
            "the range stays within strings"
        );
    }

    #[test]
    fn descending_components_swap_sides() {
        let c = coll(vec![index(doc! {"a": -1}, 2)]);
        let plan = scan_of(choose(&c, doc! {"a": {"$gte": 3, "$lt": 7}}, None));
        let iv = &plan.intervals[0];
        let inside = |v: i32| {
            let mut k = Vec::new();
            keystring::encode_value(&Bson::Int32(v), true, &mut k);
            k >= iv.low && iv.high.as_ref().is_none_or(|h| &k < h)
        };
        assert!(inside(3) && inside(6) && !inside(7) && !inside(2));
    }

    #[test]
    fn indexes_deliver_sort_orders() {
        let c = coll(vec![index(doc! {"a": 1, "b": -1}, 2)]);
        let plan = scan_of(choose(&c, doc! {"a": 3}, Some(doc! {"b": 1})));
        assert!(plan.provides_sort && plan.reverse);
        let plan = scan_of(choose(&c, doc! {}, Some(doc! {"a": -1, "b": 1})));
        assert!(plan.provides_sort && plan.reverse);
        assert!(matches!(
            choose(&c, doc! {}, Some(doc! {"b": 1})),
            AccessPath::CollScan { .. }
        ));
        let plan = scan_of(choose(&c, doc! {"a": {"$gt": 1}}, Some(doc! {"b": 1})));
        assert!(!plan.provides_sort);
    }
}
