//! What `explain` shows for a query: the stage tree MongoDB's classic engine reports for the
//! chosen access path (COLLSCAN; IXSCAN under FETCH; EXPRESS_IXSCAN or IDHACK for `_id`
//! lookups; SORT, SKIP, LIMIT and PROJECTION_* above), the query as the planner parsed it, and
//! what each stage produced when the query ran for `executionStats`.

mod text_geo;

use super::plan::{AccessPath, IndexScanPlan};
use super::position::Examined;
use crate::datanode::index::FieldKind;
use crate::datanode::storage::IndexMeta;
use crate::document::display::render;
use crate::query::bounds::FieldBounds;
use bson::{Bson, Document, doc};

/// MongoDB's limit on a blocking sort's memory, which SORT stages show.
const SORT_MEMORY_LIMIT: i64 = 100 * 1024 * 1024;

/// A count as explain output carries it: an int32 when it fits, as MongoDB appends numbers.
pub fn number(n: u64) -> Bson {
    i32::try_from(n)
        .map(Bson::Int32)
        .unwrap_or(Bson::Int64(n as i64))
}

/// The query being explained.
pub struct ExplainedQuery<'a> {
    pub path: &'a AccessPath,
    pub filter: &'a Document,
    pub sort: Option<&'a Document>,
    /// The sort is done in memory (the access path does not deliver it).
    pub blocking_sort: bool,
    pub skip: u64,
    pub limit: Option<u64>,
    pub projection: Option<&'a Document>,
    /// A router versioned the query for a sharded collection: the shard filters orphans out
    /// (SHARDING_FILTER above the fetch).
    pub sharded: bool,
    /// The index scan covers the query: no FETCH, the filter runs on the index keys and the
    /// projection is PROJECTION_COVERED.
    pub covered: bool,
}

/// What running the query's access path and filter produced.
#[derive(Clone, Debug, Default)]
pub struct Execution {
    pub examined: Examined,
    /// Keys read by each scan of a union.
    pub keys_per_scan: Vec<u64>,
    /// Documents that passed the filter.
    pub matched: u64,
    /// Documents a blocking sort has passed up so far, skipped ones included, when a cursor
    /// stopped before its end (`None`: all it keeps).
    pub sorted_out: Option<u64>,
    pub millis: u64,
}

/// A COUNT stage's statistics: of `total` matches, those counted under `skip` and `limit`.
pub fn count_stats(total: u64, skip: u64, limit: Option<u64>) -> Document {
    let skipped = total.min(skip);
    let counted = limit.map_or(total - skipped, |l| (total - skipped).min(l));
    doc! {"nCounted": number(counted), "nSkipped": number(skipped)}
}

/// A write's stage above its read (`UPDATE`, `DELETE`...), with its statistics.
pub struct WriteStage {
    pub stage: &'static str,
    /// The stage replacing the plan of a single-document write by `_id`.
    pub express: &'static str,
    pub single: bool,
    pub stats: Document,
}

struct Stage {
    name: &'static str,
    fields: Document,
    returned: u64,
    stats: Document,
    /// Several inputs (`inputStages`), each as the plan shows it and with its statistics.
    inputs: Vec<(Document, Document)>,
}

/// A plan's stages from the leaf up, with what each returned.
pub struct StageTree {
    stages: Vec<Stage>,
    millis: u64,
}

impl StageTree {
    /// The stages of a query, with each stage's output derived from `run`.
    pub fn for_query(query: &ExplainedQuery<'_>, run: &Execution) -> StageTree {
        let mut tree = StageTree {
            stages: Vec::new(),
            millis: run.millis,
        };
        let keys = doc! {"keysExamined": number(run.examined.keys)};
        let docs = doc! {"docsExamined": number(run.examined.docs)};
        // What the fetch passed up: the matches, orphans included (the filter above drops them).
        let fetched = run.matched + run.examined.chunk_skips;
        match query.path {
            AccessPath::CollScan { reverse } => {
                let mut fields = Document::new();
                let parsed = parsed_query(query.filter);
                if !parsed.is_empty() {
                    fields.insert("filter", parsed);
                }
                fields.insert("direction", if *reverse { "backward" } else { "forward" });
                tree.push("COLLSCAN", fields, fetched, docs);
            }
            AccessPath::IdPoint(_) if only_id(query.filter) => {
                // The express path is for unsharded collections, as in MongoDB.
                let express =
                    !query.sharded && query.skip == 0 && query.limit.is_none_or(|l| l <= 1);
                let mut stats = keys;
                stats.extend(docs);
                if express {
                    let fields = doc! {"keyPattern": "{ _id: 1 }", "indexName": "_id_"};
                    tree.push("EXPRESS_IXSCAN", fields, fetched, stats);
                } else {
                    tree.push("IDHACK", Document::new(), fetched, stats);
                }
            }
            AccessPath::IdPoint(id) => {
                let bounds = doc! {"_id": [point_interval(id)]};
                let fields = index_fields(None, &doc! {"_id": 1}, "forward", bounds);
                tree.push("IXSCAN", fields, run.examined.docs, keys);
                tree.push_fetch(query.filter, &["_id".to_string()], false, run, docs);
            }
            AccessPath::Union(plans) => {
                let mut inputs = Vec::with_capacity(plans.len());
                for (i, plan) in plans.iter().enumerate() {
                    let plain = doc! {"stage": "IXSCAN"}
                        .into_iter()
                        .chain(scan_fields(plan))
                        .collect::<Document>();
                    let keys = run.keys_per_scan.get(i).copied().unwrap_or(0);
                    let mut stats = doc! {
                        "stage": "IXSCAN",
                        "nReturned": number(keys),
                        "executionTimeMillisEstimate": number(run.millis),
                        "keysExamined": number(keys),
                    };
                    stats.extend(scan_fields(plan));
                    inputs.push((plain, stats));
                }
                tree.push("OR", Document::new(), run.examined.docs, Document::new());
                tree.stages.last_mut().expect("just pushed").inputs = inputs;
                let exact = or_branches_exact(plans, query.filter);
                let mut fields = Document::new();
                let residual = residual_filter(query.filter, &[], false);
                let residual = if exact {
                    without_or(residual)
                } else {
                    residual
                };
                if !residual.is_empty() {
                    fields.insert("filter", residual);
                }
                tree.push("FETCH", fields, fetched, docs);
            }
            AccessPath::IndexScan(plan) if query.covered => {
                let mut fields = Document::new();
                let residual = residual_filter(query.filter, &tight_paths(plan), false);
                if !residual.is_empty() {
                    fields.insert("filter", residual);
                }
                fields.extend(scan_fields(plan));
                tree.push("IXSCAN", fields, fetched, keys);
            }
            AccessPath::IndexScan(plan) if text_geo::push_text(&mut tree, plan, query, run) => {}
            AccessPath::IndexScan(plan) => {
                tree.push("IXSCAN", scan_fields(plan), run.examined.docs, keys);
                tree.push_fetch(query.filter, &tight_paths(plan), plan.multikey(), run, docs);
            }
        }
        tree.push_above(query, run);
        tree
    }

    /// The stages above the access path: the shard's filter of orphans, a blocking sort,
    /// skip, limit and projection.
    fn push_above(&mut self, query: &ExplainedQuery<'_>, run: &Execution) {
        let tree = self;
        if query.sharded {
            let stats = doc! {"chunkSkips": number(run.examined.chunk_skips)};
            tree.push("SHARDING_FILTER", Document::new(), run.matched, stats);
        }
        let mut n = run.matched;
        if query.blocking_sort {
            let keep = query.limit.map(|l| query.skip + l);
            n = keep.map_or(n, |k| n.min(k));
            n = run.sorted_out.map_or(n, |out| n.min(out));
            let mut fields = doc! {
                "sortPattern": query.sort.cloned().unwrap_or_default(),
                "memLimit": SORT_MEMORY_LIMIT as i32,
            };
            if let Some(keep) = keep {
                fields.insert("limitAmount", number(keep));
            }
            fields.insert("type", "simple");
            tree.push("SORT", fields, n, Document::new());
        }
        if query.skip > 0 {
            n = n.saturating_sub(query.skip);
            let fields = doc! {"skipAmount": number(query.skip)};
            tree.push("SKIP", fields, n, Document::new());
        }
        if let Some(limit) = query.limit.filter(|_| !query.blocking_sort) {
            n = n.min(limit);
            tree.push(
                "LIMIT",
                doc! {"limitAmount": number(limit)},
                n,
                Document::new(),
            );
        }
        if let Some(projection) = query.projection {
            let name = if query.covered {
                "PROJECTION_COVERED"
            } else if simple_projection(projection) {
                "PROJECTION_SIMPLE"
            } else {
                "PROJECTION_DEFAULT"
            };
            tree.push(
                name,
                doc! {"transformBy": projection.clone()},
                n,
                Document::new(),
            );
        }
    }

    fn push_fetch(
        &mut self,
        filter: &Document,
        tight: &[String],
        multikey: bool,
        run: &Execution,
        stats: Document,
    ) {
        let mut fields = Document::new();
        let residual = residual_filter(filter, tight, multikey);
        if !residual.is_empty() {
            fields.insert("filter", residual);
        }
        self.push(
            "FETCH",
            fields,
            run.matched + run.examined.chunk_skips,
            stats,
        );
    }

    /// A tree with no stages yet.
    pub fn empty() -> StageTree {
        StageTree {
            stages: Vec::new(),
            millis: 0,
        }
    }

    /// The plan is the express `_id` lookup, which single-document writes replace with their
    /// own express stage.
    pub fn is_express(&self) -> bool {
        matches!(self.stages.as_slice(), [only] if only.name == "EXPRESS_IXSCAN")
    }

    /// Puts a write's stage on top of its read plan, or, for a single-document write whose
    /// plan is the express `_id` lookup, replaces the plan by the write's express stage, as
    /// MongoDB does. `examined` is what the read examined.
    pub fn push_write(&mut self, write: WriteStage, examined: Examined) {
        if write.single && self.is_express() {
            let mut stats = doc! {
                "keysExamined": number(examined.keys),
                "docsExamined": number(examined.docs),
            };
            stats.extend(write.stats);
            *self = StageTree::empty();
            let fields = doc! {"keyPattern": "{ _id: 1 }", "indexName": "_id_"};
            self.push(write.express, fields, 0, stats);
        } else {
            self.push(write.stage, Document::new(), 0, write.stats);
        }
    }

    /// Adds a stage above the current top.
    pub fn push(&mut self, name: &'static str, fields: Document, returned: u64, stats: Document) {
        self.stages.push(Stage {
            name,
            fields,
            returned,
            stats,
            inputs: Vec::new(),
        });
    }

    /// Gives the top stage several inputs (`inputStages`), each as the plan shows it and
    /// with its statistics.
    fn set_inputs(&mut self, inputs: Vec<(Document, Document)>) {
        if let Some(top) = self.stages.last_mut() {
            top.inputs = inputs;
        }
    }

    /// The stages of a `$near` query on `index` (on the sphere or the plane), the filter's
    /// other predicates checked above it.
    /// (`query.path` is not read: the search is the index's.)
    pub fn for_near(
        index: &IndexMeta,
        spherical: bool,
        query: &ExplainedQuery<'_>,
        run: &Execution,
    ) -> StageTree {
        let mut tree = StageTree {
            stages: Vec::new(),
            millis: run.millis,
        };
        text_geo::push_near(&mut tree, index, spherical, query.filter, run);
        tree.push_above(query, run);
        tree
    }

    /// What the top stage returned.
    pub fn returned(&self) -> u64 {
        self.stages.last().map_or(0, |s| s.returned)
    }

    /// The tree as `winningPlan` (`with_stats: false`) or `executionStages` shows it.
    pub fn to_document(&self, with_stats: bool) -> Document {
        let mut below: Option<Document> = None;
        for stage in &self.stages {
            let mut out = doc! {"stage": stage.name};
            if with_stats {
                out.insert("nReturned", number(stage.returned));
                out.insert("executionTimeMillisEstimate", number(self.millis));
                out.extend(stage.stats.clone());
            }
            out.extend(stage.fields.clone());
            if let Some(input) = below.take() {
                out.insert("inputStage", input);
            }
            if !stage.inputs.is_empty() {
                let inputs: Vec<Bson> = stage
                    .inputs
                    .iter()
                    .map(|(plain, stats)| {
                        Bson::Document(if with_stats { stats } else { plain }.clone())
                    })
                    .collect();
                out.insert("inputStages", inputs);
            }
            below = Some(out);
        }
        below.unwrap_or_else(|| doc! {"stage": "EOF"})
    }
}

/// The `IXSCAN` fields of one scan.
fn scan_fields(plan: &IndexScanPlan) -> Document {
    let direction = if plan.reverse { "backward" } else { "forward" };
    index_fields_with(
        Some(&plan.index),
        &plan.key_pattern(),
        direction,
        index_bounds(plan),
        scan_multikey(plan),
    )
}

/// Whether each `$or` branch is expressed exactly by its scan's bounds (so FETCH need not
/// check the `$or` again).
fn or_branches_exact(plans: &[std::sync::Arc<IndexScanPlan>], filter: &Document) -> bool {
    let Some(Bson::Array(branches)) = filter.get("$or") else {
        return false;
    };
    branches.len() == plans.len()
        && branches.iter().zip(plans).all(|(branch, plan)| {
            let tight = tight_paths(plan);
            matches!(branch, Bson::Document(d) if residual_filter(d, &tight, plan.multikey()).is_empty())
        })
}

/// A filter without its `$or` conjunct.
fn without_or(filter: Document) -> Document {
    let conjuncts: Vec<Document> = match filter.get("$and") {
        Some(Bson::Array(items)) if filter.len() == 1 => items
            .iter()
            .filter_map(|i| i.as_document().cloned())
            .collect(),
        _ => vec![filter],
    };
    let kept: Vec<Document> = conjuncts
        .into_iter()
        .filter(|c| !c.contains_key("$or"))
        .collect();
    match kept.len() {
        0 => Document::new(),
        1 => kept.into_iter().next().expect("one conjunct"),
        _ => doc! {"$and": kept.into_iter().map(Bson::Document).collect::<Vec<_>>()},
    }
}

/// The `IXSCAN` fields describing an index.
fn index_fields(
    index: Option<&IndexMeta>,
    key_pattern: &Document,
    direction: &str,
    bounds: Document,
) -> Document {
    let multikey = index_multikey(index, key_pattern);
    index_fields_with(index, key_pattern, direction, bounds, multikey)
}

/// `isMultiKey` and `multiKeyPaths` of a whole index: which of its paths hold the arrays is
/// tracked only for wildcard indexes; MongoDB omits the field for such indexes too.
fn index_multikey(index: Option<&IndexMeta>, key_pattern: &Document) -> (bool, Option<Document>) {
    if index.is_some_and(|i| i.multikey) {
        return (true, None);
    }
    let paths = key_pattern
        .keys()
        .map(|k| (k.clone(), Bson::Array(Vec::new())))
        .collect();
    (false, Some(paths))
}

/// `isMultiKey` and `multiKeyPaths` of a scan: a wildcard scan's are its path's, as MongoDB's
/// expanded index entry shows them (`{$_path: [], "a.b": ["a"]}` with an array at `a`); a
/// scan of a compound wildcard index's regular fields alone is not multikey.
fn scan_multikey(plan: &IndexScanPlan) -> (bool, Option<Document>) {
    let key_pattern = plan.key_pattern();
    let Some(scan) = &plan.wildcard else {
        return index_multikey(Some(&plan.index), &key_pattern);
    };
    let prefixes = match scan.path.as_str() {
        "" => Some(Vec::new()),
        path => plan.index.multikey_prefixes(path),
    };
    let Some(prefixes) = prefixes else {
        return (true, None);
    };
    let multikey = !prefixes.is_empty();
    let paths = key_pattern
        .keys()
        .map(|k| {
            let listed = if *k == scan.path {
                prefixes.clone()
            } else {
                Vec::new()
            };
            (k.clone(), Bson::from(listed))
        })
        .collect();
    (multikey, Some(paths))
}

/// The `IXSCAN` fields describing an index, multikey as `multikey` says.
fn index_fields_with(
    index: Option<&IndexMeta>,
    key_pattern: &Document,
    direction: &str,
    bounds: Document,
    (multikey, multikey_paths): (bool, Option<Document>),
) -> Document {
    let parsed = index.and_then(|i| i.parsed.as_ref());
    let mut fields = doc! {
        "keyPattern": key_pattern.clone(),
        "indexName": index.map_or("_id_", |i| i.name.as_str()),
        "isMultiKey": multikey,
    };
    if let Some(paths) = multikey_paths {
        fields.insert("multiKeyPaths", paths);
    }
    fields.insert("isUnique", index.is_none_or(IndexMeta::is_unique));
    fields.insert("isSparse", parsed.is_some_and(|p| p.sparse));
    fields.insert(
        "isPartial",
        parsed.is_some_and(|p| p.partial_filter.is_some()),
    );
    fields.insert("indexVersion", 2);
    fields.insert("direction", direction);
    fields.insert("indexBounds", bounds);
    fields
}

/// One side of an interval as explain prints it.
#[derive(Clone)]
struct End {
    text: String,
    inclusive: bool,
}

struct Interval {
    start: End,
    end: End,
}

impl Interval {
    fn render(&self) -> String {
        format!(
            "{}{}, {}{}",
            if self.start.inclusive { '[' } else { '(' },
            self.start.text,
            self.end.text,
            if self.end.inclusive { ']' } else { ')' },
        )
    }

    fn flipped(self) -> Interval {
        Interval {
            start: self.end,
            end: self.start,
        }
    }
}

fn point_interval(value: &Bson) -> String {
    let text = render(value);
    format!("[{text}, {text}]")
}

/// `indexBounds`: each index field's intervals in scan order.
fn index_bounds(plan: &IndexScanPlan) -> Document {
    let mut out = Document::new();
    for (i, field) in plan.fields().iter().enumerate() {
        if let Some(rendered) = wildcard_bounds(plan, i) {
            out.insert(field.path.clone(), rendered);
            continue;
        }
        let descending = field.kind == FieldKind::Descending;
        let mut intervals: Vec<Interval> = match plan.bounds.get(i) {
            Some(FieldBounds::Points(points)) if field.kind == FieldKind::Hashed => {
                let mut hashes: Vec<i64> = points
                    .iter()
                    .filter_map(|p| crate::document::hashed::hash_value(p).ok())
                    .collect();
                hashes.sort_unstable();
                hashes.into_iter().map(|h| point(&Bson::Int64(h))).collect()
            }
            Some(FieldBounds::Points(points)) => {
                let mut list: Vec<Interval> = points.iter().map(point).collect();
                if descending {
                    list.reverse();
                }
                list
            }
            Some(FieldBounds::Range { low, high }) => vec![range(low, high, descending)],
            None => vec![whole(descending)],
        };
        if plan.reverse {
            intervals.reverse();
            intervals = intervals.into_iter().map(Interval::flipped).collect();
        }
        let rendered: Vec<Bson> = intervals
            .iter()
            .map(|iv| Bson::String(iv.render()))
            .collect();
        out.insert(field.path.clone(), rendered);
    }
    out
}

/// A wildcard scan's `$_path` intervals, and a regex's value intervals, which no
/// [`FieldBounds`] describes.
fn wildcard_bounds(plan: &IndexScanPlan, field: usize) -> Option<Vec<Bson>> {
    let scan = plan.wildcard.as_ref()?;
    let at = scan.path_field();
    let list = match field {
        f if f == at => scan.path_bounds(),
        f if f == at + 1 && !scan.path.is_empty() => scan.regex_bounds.clone()?,
        _ => return None,
    };
    Some(list.into_iter().map(Bson::String).collect())
}

fn point(value: &Bson) -> Interval {
    let end = End {
        text: render(value),
        inclusive: true,
    };
    Interval {
        start: end.clone(),
        end,
    }
}

fn whole(descending: bool) -> Interval {
    let min = End {
        text: "MinKey".into(),
        inclusive: true,
    };
    let max = End {
        text: "MaxKey".into(),
        inclusive: true,
    };
    let iv = Interval {
        start: min,
        end: max,
    };
    if descending { iv.flipped() } else { iv }
}

fn range(low: &Option<(Bson, bool)>, high: &Option<(Bson, bool)>, descending: bool) -> Interval {
    let typed = low.as_ref().or(high.as_ref()).map(|(v, _)| v);
    let (type_min, type_max) = type_bracket(typed);
    let side = |bound: &Option<(Bson, bool)>, default: End| match bound {
        Some((v, inclusive)) => End {
            text: render(v),
            inclusive: *inclusive,
        },
        None => default,
    };
    let iv = Interval {
        start: side(low, type_min),
        end: side(high, type_max),
    };
    if descending { iv.flipped() } else { iv }
}

/// The ends of the type a range stays within (MongoDB's type bracketing).
fn type_bracket(value: Option<&Bson>) -> (End, End) {
    let end = |text: &str, inclusive: bool| End {
        text: text.to_string(),
        inclusive,
    };
    match value {
        Some(Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_)) => {
            (end("-inf.0", true), end("inf.0", true))
        }
        Some(Bson::String(_) | Bson::Symbol(_)) => (end("\"\"", true), end("{}", false)),
        Some(Bson::ObjectId(_)) => (
            end("ObjectId('000000000000000000000000')", true),
            end("ObjectId('ffffffffffffffffffffffff')", true),
        ),
        Some(Bson::Boolean(_)) => (end("false", true), end("true", true)),
        Some(Bson::DateTime(_)) => (
            end(&format!("new Date({})", i64::MIN), true),
            end(&format!("new Date({})", i64::MAX), true),
        ),
        Some(Bson::Timestamp(_)) => (
            end("Timestamp(0, 0)", true),
            end("Timestamp(4294967295, 4294967295)", true),
        ),
        _ => (end("MinKey", true), end("MaxKey", true)),
    }
}

/// The paths whose predicates the scan's bounds express exactly (hashed keys collide, so
/// their predicates always stay in the filter).
fn tight_paths(plan: &IndexScanPlan) -> Vec<String> {
    plan.fields()
        .into_iter()
        .zip(&plan.bounds)
        .filter(|(f, bounds)| f.kind.holds_value() && !bounds.is_every_value())
        .map(|(f, _)| f.path)
        .collect()
}

/// Whether `filter` is exactly an equality on `_id`.
fn only_id(filter: &Document) -> bool {
    filter.len() == 1
        && match filter.get("_id") {
            Some(Bson::Document(d)) => d.len() == 1 && d.contains_key("$eq"),
            Some(_) => true,
            None => false,
        }
}

/// Inclusions or exclusions of top-level fields only.
fn simple_projection(projection: &Document) -> bool {
    projection.iter().all(|(k, v)| {
        !k.contains('.')
            && !k.starts_with('$')
            && matches!(
                v,
                Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Boolean(_)
            )
    })
}

/// The filter as MongoDB's planner shows it: each predicate as `{path: {$op: value}}`, several
/// predicates under one `$and`, `$comment` dropped.
pub fn parsed_query(filter: &Document) -> Document {
    let conjuncts = conjuncts(filter);
    match conjuncts.len() {
        0 => Document::new(),
        1 => conjuncts.into_iter().next().expect("one conjunct"),
        _ => doc! {"$and": conjuncts.into_iter().map(Bson::Document).collect::<Vec<_>>()},
    }
}

fn conjuncts(filter: &Document) -> Vec<Document> {
    let mut out = Vec::new();
    for (key, value) in filter {
        match (key.as_str(), value) {
            ("$comment", _) => {}
            ("$and", Bson::Array(items)) => {
                for item in items {
                    if let Bson::Document(d) = item {
                        out.extend(conjuncts(d));
                    }
                }
            }
            ("$or" | "$nor", Bson::Array(items)) => {
                let branches: Vec<Bson> = items
                    .iter()
                    .map(|item| match item {
                        Bson::Document(d) => Bson::Document(parsed_query(d)),
                        other => other.clone(),
                    })
                    .collect();
                match (key.as_str(), branches.as_slice()) {
                    ("$or", [Bson::Document(only)]) => out.extend(conjuncts(only)),
                    _ => out.push(doc! {key.clone(): branches}),
                }
            }
            (k, _) if k.starts_with('$') => out.push(doc! {k: value.clone()}),
            (path, Bson::Document(ops))
                if ops.keys().next().is_some_and(|k| k.starts_with('$')) =>
            {
                let options = ops.get("$options").cloned();
                for (op, arg) in ops {
                    match op.as_str() {
                        "$options" => {}
                        "$regex" => {
                            let mut pred = doc! {"$regex": arg.clone()};
                            if let Some(o) = &options {
                                pred.insert("$options", o.clone());
                            }
                            out.push(doc! {path: pred});
                        }
                        _ => out.push(doc! {path: {op.clone(): arg.clone()}}),
                    }
                }
            }
            (path, Bson::RegularExpression(re)) => {
                let mut pred = doc! {"$regex": re.pattern.clone()};
                if !re.options.is_empty() {
                    pred.insert("$options", re.options.clone());
                }
                out.push(doc! {path: pred});
            }
            (path, v) => out.push(doc! {path: {"$eq": v.clone()}}),
        }
    }
    out
}

/// The predicates an index scan's bounds do not already guarantee: what FETCH still checks.
/// Equalities and `$in` lists of plain values on a bounded path are exact; so are ranges,
/// unless the index is multikey (its bounds then come from one predicate only).
fn residual_filter(filter: &Document, tight: &[String], multikey: bool) -> Document {
    let remaining: Vec<Document> = conjuncts(filter)
        .into_iter()
        .filter(|pred| !exact(pred, tight, multikey))
        .collect();
    match remaining.len() {
        0 => Document::new(),
        1 => remaining.into_iter().next().expect("one predicate"),
        _ => doc! {"$and": remaining.into_iter().map(Bson::Document).collect::<Vec<_>>()},
    }
}

fn exact(pred: &Document, tight: &[String], multikey: bool) -> bool {
    let Some((path, Bson::Document(op))) = pred.iter().next() else {
        return false;
    };
    if !tight.contains(path) || op.len() != 1 {
        return false;
    }
    let plain = |v: &Bson| {
        !matches!(
            v,
            Bson::Null
                | Bson::Undefined
                | Bson::Array(_)
                | Bson::RegularExpression(_)
                | Bson::MinKey
                | Bson::MaxKey
        )
    };
    match op.iter().next() {
        Some((name, value)) => match name.as_str() {
            "$eq" => plain(value),
            "$in" => matches!(value, Bson::Array(items) if items.iter().all(plain)),
            "$gt" | "$gte" | "$lt" | "$lte" => {
                !multikey && plain(value) && !matches!(value, Bson::Document(_))
            }
            _ => false,
        },
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parsed_queries_spell_out_operators() {
        assert_eq!(parsed_query(&doc! {}), doc! {});
        assert_eq!(parsed_query(&doc! {"a": 1}), doc! {"a": {"$eq": 1}});
        assert_eq!(
            parsed_query(&doc! {"a": {"$gt": 1, "$lt": 5}, "$comment": "x"}),
            doc! {"$and": [{"a": {"$gt": 1}}, {"a": {"$lt": 5}}]}
        );
        assert_eq!(
            parsed_query(&doc! {"$or": [{"a": 1}]}),
            doc! {"a": {"$eq": 1}}
        );
        assert_eq!(
            parsed_query(&doc! {"a": {"$regex": "^x", "$options": "i"}}),
            doc! {"a": {"$regex": "^x", "$options": "i"}}
        );
    }

    #[test]
    fn bounds_render_like_mongodb() {
        let gt = range(&Some((Bson::Int32(100), false)), &None, false);
        assert_eq!(gt.render(), "(100, inf.0]");
        let lt_desc = range(&None, &Some((Bson::Double(200.0), false)), true);
        assert_eq!(lt_desc.render(), "(200.0, -inf.0]");
        let s = range(&Some((Bson::String("m".into()), true)), &None, false);
        assert_eq!(s.render(), "[\"m\", {})");
        assert_eq!(whole(false).render(), "[MinKey, MaxKey]");
        assert_eq!(whole(false).flipped().render(), "[MaxKey, MinKey]");
    }

    #[test]
    fn residual_keeps_what_bounds_cannot_express() {
        let tight = vec!["a".to_string()];
        let filter = doc! {"a": {"$gte": 1, "$lt": 9}, "b": 2};
        assert_eq!(
            residual_filter(&filter, &tight, false),
            doc! {"b": {"$eq": 2}}
        );
        assert_eq!(
            residual_filter(&filter, &tight, true),
            doc! {"$and": [{"a": {"$gte": 1}}, {"a": {"$lt": 9}}, {"b": {"$eq": 2}}]}
        );
        assert_eq!(
            residual_filter(&doc! {"a": null}, &tight, false),
            doc! {"a": {"$eq": null}}
        );
    }
}
