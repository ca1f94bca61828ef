//! Pipeline stages: the table of stage names, parsing one stage specification into the
//! [`Stage`]s it stands for (`$count` and `$sortByCount` are shorthands for two stages), and
//! running stages: `stream` feeds them batches, within the memory limits of the
//! [`RunContext`]; stages that reach other collections run through a [`Host`] (`run_all`).

mod basic;
mod bucket;
mod bucket_auto;
mod densify;
#[cfg(test)]
mod densify_tests;
mod documents;
mod facet;
mod fill;
pub mod geo_near;
mod granularity;
mod group;
mod group_run;
mod keyed_sort;
mod redact;
mod sample;
mod shape;
mod stream;
#[cfg(test)]
mod stream_tests;
mod time_unit;
mod unwind;
mod window;
mod window_functions;
mod window_math;
#[cfg(test)]
mod window_n_tests;
#[cfg(test)]
mod window_tests;

use crate::aggregate::foreign::{self, GraphLookup, Host, Lookup, Merge, Out, UnionWith};
use crate::error::{ErrorCode, MongoError, Result};
use crate::expression::{LetVariables, Variables};
use crate::query::filter::Filter;
use crate::query::sort::SortSpec;
use bson::{Bson, Document};
use futures::future::BoxFuture;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use stream::{Flow, run_counted, run_stages};

pub enum Stage {
    Match(Filter),
    Shape(shape::Shape),
    Group(group::Group),
    Sort(SortSpec),
    Skip(u64),
    Limit(u64),
    Unwind(unwind::Unwind),
    ReplaceRoot(basic::ReplaceRoot),
    BucketAuto(bucket_auto::BucketAuto),
    Facet(facet::Facet),
    Sample(u64),
    Redact(redact::Redact),
    SetWindowFields(window::SetWindowFields),
    Densify(densify::Densify),
    Documents(documents::Documents),
    Lookup(Lookup),
    GraphLookup(GraphLookup),
    UnionWith(UnionWith),
    Out(Out),
    Merge(Merge),
}

/// Parses a stage's value (the stage name is passed for messages and aliases); its expressions
/// may read the command's variables.
type Parser = fn(&str, &Bson, &Arc<LetVariables>) -> Result<Vec<Stage>>;

static STAGES: &[(&str, Parser)] = &[
    ("$addFields", shape::parse_add_fields),
    ("$bucket", bucket::parse),
    ("$bucketAuto", bucket_auto::parse),
    ("$count", group::parse_count),
    ("$densify", densify::parse),
    ("$documents", documents::parse),
    ("$facet", facet::parse),
    ("$fill", fill::parse),
    ("$graphLookup", foreign::parse_graph_lookup),
    ("$group", group::parse_group),
    ("$limit", basic::parse_limit),
    ("$lookup", foreign::parse_lookup),
    ("$match", basic::parse_match),
    ("$merge", foreign::parse_merge),
    ("$out", foreign::parse_out),
    ("$geoNear", parse_geo_near_elsewhere),
    ("$project", shape::parse_project),
    ("$redact", redact::parse),
    ("$replaceRoot", basic::parse_replace_root),
    ("$replaceWith", basic::parse_replace_with),
    ("$sample", sample::parse),
    ("$set", shape::parse_add_fields),
    ("$setWindowFields", window::parse),
    ("$skip", basic::parse_skip),
    ("$sort", basic::parse_sort),
    ("$sortByCount", group::parse_sort_by_count),
    ("$unionWith", foreign::parse_union_with),
    ("$unset", shape::parse_unset),
    ("$unwind", unwind::parse),
];

/// Stages MongoDB has that this server does not run yet: reported as such rather than as
/// unrecognized names.
const NOT_YET_SUPPORTED: &[&str] = &[
    "$changeStream",
    "$collStats",
    "$search",
    "$searchMeta",
    "$vectorSearch",
];

/// `$geoNear` anywhere but first ([`crate::aggregate::Pipeline`] takes a first one apart).
fn parse_geo_near_elsewhere(_: &str, _: &Bson, _: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    Err(MongoError::location(
        40603,
        "$geoNear was not the first stage in the pipeline.",
    ))
}

/// Parses one element of the `pipeline` array.
pub fn parse(spec: &Document, vars: &Arc<LetVariables>) -> Result<Vec<Stage>> {
    let mut fields = spec.iter();
    let (Some((name, value)), None) = (fields.next(), fields.next()) else {
        return Err(MongoError::location(
            40323,
            "A pipeline stage specification object must contain exactly one field.",
        ));
    };
    if let Some((_, parser)) = STAGES.iter().find(|(known, _)| known == name) {
        return parser(name, value, vars);
    }
    if NOT_YET_SUPPORTED.contains(&name.as_str()) {
        return Err(MongoError::new(
            ErrorCode::NotImplemented,
            format!("The {name} aggregation stage is not supported yet"),
        ));
    }
    Err(MongoError::location(
        40324,
        format!("Unrecognized pipeline stage name: '{name}'"),
    ))
}

/// Whether `name` is a stage MongoDB has that this server does not run yet.
pub fn is_not_yet_supported(name: &str) -> bool {
    NOT_YET_SUPPORTED.contains(&name)
}

/// What stays the same for every document of one run: the command's `let` variables and its
/// `$$NOW`, and how much memory and disk its blocking stages may use.
pub struct RunContext {
    pub vars: Arc<LetVariables>,
    pub limits: MemoryLimits,
}

/// How much memory the blocking stages of a run may hold, and whether and where they may
/// spill past it.
#[derive(Clone, Debug)]
pub struct MemoryLimits {
    /// A `$sort`'s documents (`internalQueryMaxBlockingSortMemoryUsageBytes`).
    pub max_sort_bytes: usize,
    /// A `$group`'s keys and accumulator states (`internalDocumentSourceGroupMaxMemoryBytes`).
    pub max_group_bytes: usize,
    /// The documents `$bucketAuto` sorts by their `groupBy` value
    /// (`internalDocumentSourceBucketAutoMaxMemoryBytes`).
    pub max_bucket_auto_bytes: usize,
    /// One `$setWindowFields` partition with its computed outputs
    /// (`internalDocumentSourceSetWindowFieldsMaxMemoryBytes`).
    pub max_window_bytes: usize,
    /// `$densify`'s table of partitions (`internalDocumentSourceDensifyMaxMemoryBytes`).
    pub max_densify_bytes: usize,
    /// The results one `$facet` document holds (`internalQueryFacetMaxOutputDocSizeBytes`).
    pub max_facet_output_bytes: usize,
    /// The command's `allowDiskUse` (default `allowDiskUseByDefault`).
    pub allow_disk_use: bool,
    /// Where spilled runs go; `None` where the process keeps no data.
    pub spill_dir: Option<PathBuf>,
}

/// `internalQueryFacetMaxOutputDocSizeBytes`' default.
pub const DEFAULT_FACET_OUTPUT_BYTES: usize = 100 * 1024 * 1024;

impl MemoryLimits {
    /// No memory limits: what a pure evaluation (tests, a node's small source stages) uses.
    /// A `$facet` document stays bounded all the same: its 100 MB is a limit on what a
    /// document may be, not on memory.
    pub fn unlimited() -> MemoryLimits {
        MemoryLimits {
            max_sort_bytes: usize::MAX,
            max_group_bytes: usize::MAX,
            max_bucket_auto_bytes: usize::MAX,
            max_window_bytes: usize::MAX,
            max_densify_bytes: usize::MAX,
            max_facet_output_bytes: DEFAULT_FACET_OUTPUT_BYTES,
            allow_disk_use: false,
            spill_dir: None,
        }
    }

    /// The directory to spill to, when spilling is allowed and possible.
    pub fn disk(&self) -> Option<&Path> {
        self.spill_dir.as_deref().filter(|_| self.allow_disk_use)
    }

    /// A blocking sort's limits, `max_bytes` in memory.
    fn sort_limits(&self, max_bytes: usize) -> crate::spill::SortLimits {
        crate::spill::SortLimits {
            max_bytes,
            allow_disk_use: self.disk().is_some(),
            spill_dir: self.spill_dir.clone().unwrap_or_default(),
        }
    }
}

impl Default for MemoryLimits {
    fn default() -> Self {
        MemoryLimits::unlimited()
    }
}

impl RunContext {
    pub fn new(vars: Arc<LetVariables>, limits: MemoryLimits) -> RunContext {
        RunContext { vars, limits }
    }

    /// What an expression is evaluated against for `doc`.
    pub fn variables<'a>(&'a self, doc: &'a Document) -> Variables<'a> {
        self.vars.variables(doc)
    }
}

impl Stage {
    pub fn as_match(&self) -> Option<&Filter> {
        match self {
            Stage::Match(filter) => Some(filter),
            _ => None,
        }
    }

    /// The name MongoDB reports when refusing this stage in a pipeline-style update (its
    /// `getSourceName`, so `$count` and `$sortByCount` answer with the `$group` they expand
    /// into), or `None` for the single-document transformations an update may use.
    pub fn name_if_refused_in_update(&self) -> Option<&'static str> {
        match self {
            Stage::Shape(_) | Stage::ReplaceRoot(_) => None,
            Stage::Match(_) => Some("$match"),
            Stage::Group(_) => Some("$group"),
            Stage::Sort(_) => Some("$sort"),
            Stage::Skip(_) => Some("$skip"),
            Stage::Limit(_) => Some("$limit"),
            Stage::Unwind(_) => Some("$unwind"),
            Stage::BucketAuto(_) => Some("$bucketAuto"),
            Stage::Facet(_) => Some("$facet"),
            Stage::Sample(_) => Some("$sample"),
            Stage::Redact(_) => Some("$redact"),
            Stage::SetWindowFields(_) => Some("$setWindowFields"),
            Stage::Densify(_) => Some("$densify"),
            Stage::Documents(_) => Some("$documents"),
            Stage::Lookup(_) => Some("$lookup"),
            Stage::GraphLookup(_) => Some("$graphLookup"),
            Stage::UnionWith(_) => Some("$unionWith"),
            Stage::Out(_) => Some("$out"),
            Stage::Merge(_) => Some("$merge"),
        }
    }

    /// Whether the stage reads or writes other collections (itself or inside a `$facet`),
    /// so that it runs only where a [`Host`] reaches them.
    pub fn reaches_other_collections(&self) -> bool {
        match self {
            Stage::Lookup(_)
            | Stage::GraphLookup(_)
            | Stage::UnionWith(_)
            | Stage::Out(_)
            | Stage::Merge(_) => true,
            Stage::Facet(facet) => facet.reaches_other_collections(),
            _ => false,
        }
    }

    /// Runs the stage over all of its input.
    pub fn run(&self, docs: Vec<Document>, ctx: &RunContext) -> Result<Vec<Document>> {
        run_stages(std::slice::from_ref(self), docs, ctx)
    }

    /// Whether the stage turns each document into zero or more documents on its own, so that
    /// it may run over its input in parts: no stage that holds its input, counts across it
    /// (`$skip`, `$limit`), adds other documents (`$unionWith`) or writes (`$out`, `$merge`).
    pub fn is_per_document(&self) -> bool {
        matches!(
            self,
            Stage::Match(_)
                | Stage::Shape(_)
                | Stage::ReplaceRoot(_)
                | Stage::Unwind(_)
                | Stage::Redact(_)
                | Stage::Lookup(_)
                | Stage::GraphLookup(_)
        )
    }

    /// Whether the stage builds documents that may nest deeper than its input.
    fn builds_documents(&self) -> bool {
        matches!(
            self,
            Stage::Shape(_)
                | Stage::ReplaceRoot(_)
                | Stage::Group(_)
                | Stage::BucketAuto(_)
                | Stage::Facet(_)
                | Stage::SetWindowFields(_)
                | Stage::Documents(_)
                | Stage::Lookup(_)
                | Stage::GraphLookup(_)
        )
    }

    /// Runs a per-document stage over a batch, or another stage over its whole input (the
    /// stream runs the blocking stages and `$skip` and `$limit` itself).
    fn run_batch(&self, docs: Vec<Document>, ctx: &RunContext) -> Result<Vec<Document>> {
        match self {
            Stage::Match(filter) => {
                let mut kept = Vec::with_capacity(docs.len());
                for doc in docs {
                    if filter.try_matches(&doc)? {
                        kept.push(doc);
                    }
                }
                Ok(kept)
            }
            Stage::Shape(shape) => docs.iter().map(|doc| shape.apply(doc, ctx)).collect(),
            Stage::Group(_)
            | Stage::Sort(_)
            | Stage::Skip(_)
            | Stage::Limit(_)
            | Stage::BucketAuto(_)
            | Stage::Facet(_)
            | Stage::Sample(_)
            | Stage::SetWindowFields(_)
            | Stage::Densify(_) => self.run(docs, ctx),
            Stage::Unwind(unwind) => Ok(unwind.run(docs)),
            Stage::ReplaceRoot(replace) => docs.iter().map(|doc| replace.apply(doc, ctx)).collect(),
            Stage::Redact(redact) => redact.run(docs, ctx),
            Stage::Documents(documents) => documents.run(ctx),
            Stage::Lookup(_)
            | Stage::GraphLookup(_)
            | Stage::UnionWith(_)
            | Stage::Out(_)
            | Stage::Merge(_) => Err(MongoError::new(
                ErrorCode::NotImplemented,
                "this stage reads or writes other collections, which is not possible here",
            )),
        }
    }
}

/// Documents a stage that reaches other collections built, within BSON's depth.
fn built(docs: Vec<Document>) -> Result<Vec<Document>> {
    stream::check_depth(&docs)?;
    Ok(docs)
}

/// The documents without their metadata (what `$out` and `$merge` write).
/// [`without_metadata`] when the run's documents carry metadata fields; otherwise fields of
/// those names are the documents' own.
fn without_metadata_in(docs: Vec<Document>, ctx: &RunContext) -> Vec<Document> {
    if ctx.vars.carries_metadata() {
        without_metadata(docs)
    } else {
        docs
    }
}

pub fn without_metadata(mut docs: Vec<Document>) -> Vec<Document> {
    docs.iter_mut().for_each(crate::expression::meta::strip);
    docs
}

/// Runs `stages` in order over `docs`; stages that reach other collections do it through
/// `host` (without one they fail), the stretches between them as a stream.
pub fn run_all<'a>(
    stages: &'a [Stage],
    mut docs: Vec<Document>,
    ctx: &'a RunContext,
    host: Option<&'a Host<'a>>,
) -> BoxFuture<'a, Result<Vec<Document>>> {
    Box::pin(async move {
        let mut rest = stages;
        while !rest.is_empty() {
            let local = match host {
                Some(_) => rest
                    .iter()
                    .position(Stage::reaches_other_collections)
                    .unwrap_or(rest.len()),
                None => rest.len(),
            };
            if local > 0 {
                docs = run_stages(&rest[..local], docs, ctx)?;
                rest = &rest[local..];
                continue;
            }
            let (Some(host), [stage, after @ ..]) = (host, rest) else {
                break;
            };
            rest = after;
            docs = match stage {
                Stage::Lookup(lookup) => built(lookup.run(docs, ctx, host).await?)?,
                Stage::GraphLookup(graph) => built(graph.run(docs, ctx, host).await?)?,
                Stage::UnionWith(union) => union.run(docs, ctx, host).await?,
                Stage::Facet(facet) => built(facet.run_with(docs, ctx, host).await?)?,
                Stage::Out(out) => {
                    out.run(without_metadata_in(docs, ctx), host).await?;
                    Vec::new()
                }
                Stage::Merge(merge) => {
                    merge.run(without_metadata_in(docs, ctx), ctx, host).await?;
                    Vec::new()
                }
                other => other.run(docs, ctx)?,
            };
        }
        Ok(docs)
    })
}

#[cfg(test)]
impl MemoryLimits {
    /// No limits, spilling under `dir` when `allow_disk_use` (a test lowers the limits it
    /// exercises; `dir/_tmp` exists once a stage has spilled).
    pub fn spilling_to(dir: &Path, allow_disk_use: bool) -> MemoryLimits {
        MemoryLimits {
            allow_disk_use,
            spill_dir: Some(dir.join("_tmp")),
            ..MemoryLimits::unlimited()
        }
    }
}

#[cfg(test)]
impl RunContext {
    /// A run without user variables and with `$$NOW` at the epoch.
    pub fn at_epoch() -> RunContext {
        RunContext::new(no_variables(), MemoryLimits::unlimited())
    }
}

/// No user variables and `$$NOW` at the epoch, for parsing in tests.
#[cfg(test)]
pub fn no_variables() -> Arc<LetVariables> {
    Arc::new(LetVariables::empty(bson::DateTime::from_millis(0)))
}

/// Adds the context MongoDB prefixes to an error (`Invalid $project :: caused by :: ...`).
pub(crate) fn with_context(err: MongoError, context: &str) -> MongoError {
    // A sub-pipeline's error (run as a command of its own) already says it once.
    if err
        .message()
        .strip_prefix(context)
        .is_some_and(|rest| rest.starts_with(" :: caused by :: "))
    {
        return err;
    }
    let wrapped = MongoError::new(
        err.code(),
        format!("{context} :: caused by :: {}", err.message()),
    );
    match err.extra() {
        Some(extra) => wrapped.with_extra(extra.clone()),
        None => wrapped,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::doc;

    fn parse(spec: &Document) -> Result<Vec<Stage>> {
        super::parse(spec, &Arc::new(LetVariables::empty(bson::DateTime::now())))
    }

    fn code(spec: Document) -> i32 {
        match parse(&spec) {
            Ok(_) => 0,
            Err(err) => err.code().code(),
        }
    }

    #[test]
    fn stage_specifications_have_one_known_field() {
        assert_eq!(code(doc! {}), 40323);
        assert_eq!(code(doc! {"$match": {}, "$limit": 1}), 40323);
        let err = parse(&doc! {"$foo": 1}).err().unwrap();
        assert_eq!(
            (err.code().code(), err.code().name().to_string()),
            (40324, "Location40324".to_string())
        );
        assert_eq!(err.message(), "Unrecognized pipeline stage name: '$foo'");
        assert_eq!(code(doc! {"match": {}}), 40324);
        assert_eq!(code(doc! {"$search": {}}), 238);
        assert_eq!(code(doc! {"$lookup": {}}), 9);
        assert_eq!(code(doc! {"$match": {}}), 0);
    }

    #[test]
    fn context_wraps_the_message_and_keeps_the_code() {
        let err = with_context(
            MongoError::location(31254, "Cannot do exclusion"),
            "Invalid $project",
        );
        assert_eq!(err.code().code(), 31254);
        assert_eq!(
            err.message(),
            "Invalid $project :: caused by :: Cannot do exclusion"
        );
    }
}
