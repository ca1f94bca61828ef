//! Targeting: where a request goes under a [`Placement`] — the one place that decides that an
//! unsharded collection's request goes to the database's primary shard, and for a sharded
//! collection which shards it must reach, from its shard key pattern and chunk map: an
//! inserted document's shard key finds one chunk; a query's bounds on the shard key find the
//! chunks they overlap (every owning shard when it bounds nothing). Each lookup is
//! O(log chunks) per key or interval. Every routed path (reads, writes and write batches,
//! explain, forwarded commands) asks [`Placement::target`] and gets one [`Target`].

use super::catalog_cache::CollectionRouting;
use super::forward::Placement;
use crate::catalog::ChunkVersion;
use crate::document::collation::Collation;
use crate::error::{ErrorCode, MongoError, Result};
use crate::query::bounds::without_string_comparisons;
use bson::{Document, RawDocument};
use std::borrow::Cow;
use std::sync::Arc;

/// A request's filter: converted from the request only when a sharded collection's routing
/// needs it, so that an unsharded read goes to its primary without the router holding a copy
/// of a filter of up to 16 MB (hundreds of megabytes as a document) while the shard works.
#[derive(Clone, Copy)]
pub(super) enum Filter<'a> {
    Document(&'a Document),
    Raw(Option<&'a RawDocument>),
}

impl<'a> From<&'a Document> for Filter<'a> {
    fn from(filter: &'a Document) -> Self {
        Filter::Document(filter)
    }
}

impl<'a> Filter<'a> {
    fn to_document(self) -> Result<Cow<'a, Document>> {
        Ok(match self {
            Filter::Document(filter) => Cow::Borrowed(filter),
            Filter::Raw(raw) => Cow::Owned(match raw {
                Some(raw) => Document::try_from(raw)?,
                None => Document::new(),
            }),
        })
    }
}

/// What decides a request's shards when its collection is sharded.
#[derive(Clone, Copy)]
pub(super) enum By<'a> {
    /// A query's filter (reads, explain, multi-document writes): the owners of the chunks its
    /// shard key bounds overlap.
    Filter(Filter<'a>),
    /// A single-document write's filter: the one shard its exact shard key selects
    /// ([`Target::One`]), otherwise as [`By::Filter`].
    Key(Filter<'a>),
    /// An inserted document: the owner of its shard key's chunk (missing shard key fields
    /// count as null).
    Document(&'a RawDocument),
    /// Every shard owning chunks (collection-level commands reaching all the data).
    AllOwners,
    /// One owner: the primary when it owns chunks (its catalog is the reference), otherwise
    /// the first.
    OneOwner,
    /// The one shard owning every chunk, for commands that are not (yet) merged across
    /// shards: NotImplemented when the chunks are on several shards.
    SoleOwner,
}

/// Where a request goes.
#[derive(Debug, PartialEq)]
pub(super) enum Target {
    /// The collection is not sharded (or the request is about the database): the database's
    /// primary shard, sent the database version.
    Primary(String),
    /// Sharded; the request's shard key (or the owners) fixes this one shard, sent its shard
    /// version.
    One(String),
    /// Sharded; these shards (never empty, in name order), each sent its shard version.
    Some(Vec<String>),
}

impl Target {
    /// The shards to send to.
    pub fn shards(&self) -> &[String] {
        match self {
            Target::Primary(shard) | Target::One(shard) => std::slice::from_ref(shard),
            Target::Some(shards) => shards,
        }
    }

    pub fn into_shards(self) -> Vec<String> {
        match self {
            Target::Primary(shard) | Target::One(shard) => vec![shard],
            Target::Some(shards) => shards,
        }
    }

    /// The first shard to send to (the only one, but for [`Target::Some`]).
    pub fn first(&self) -> &str {
        &self.shards()[0]
    }
}

impl Placement {
    /// The collation a request asking for `requested` (`None`: not given) compares strings by
    /// on this placement: its own, else the sharded collection's default; `None` for the
    /// simple one.
    pub fn collation_for(
        &self,
        requested: Option<Arc<Collation>>,
    ) -> Result<Option<Arc<Collation>>> {
        let default = self
            .routing
            .as_ref()
            .and_then(|routing| routing.entry.default_collation.as_ref());
        let chosen = match (requested, default) {
            (Some(requested), _) => Some(requested),
            (None, Some(spec)) => Some(Arc::new(Collation::parse(spec)?)),
            (None, None) => None,
        };
        Ok(chosen.filter(|c| !c.is_simple()))
    }

    /// [`Placement::target`] for a request comparing strings by `collation`: chunks hold
    /// shard keys in the simple collation, so under another one a string predicate on the key
    /// narrows nothing and the request goes to every shard whose chunks its other predicates
    /// allow, as mongos does.
    pub fn target_under(&self, by: By<'_>, collation: Option<&Collation>) -> Result<Target> {
        let (By::Filter(filter) | By::Key(filter)) = by else {
            return self.target(by);
        };
        if collation.is_none_or(Collation::is_simple) || self.routing.is_none() {
            return self.target(by);
        }
        let widened = without_string_comparisons(filter.to_document()?.as_ref());
        let filter = Filter::Document(&widened);
        self.target(match by {
            By::Key(_) => By::Key(filter),
            _ => By::Filter(filter),
        })
    }

    /// Where a request goes under this placement: the database's primary when the collection
    /// is not sharded, otherwise the shards `by` selects.
    pub fn target(&self, by: By<'_>) -> Result<Target> {
        let Some(routing) = &self.routing else {
            return Ok(Target::Primary(self.db.primary.clone()));
        };
        Ok(match by {
            By::Filter(filter) => {
                Target::Some(routing.shards_for_filter(filter.to_document()?.as_ref()))
            }
            By::Key(filter) => {
                let filter = filter.to_document()?;
                match routing.shard_for_exact_key(&filter) {
                    Some(shard) => Target::One(shard),
                    None => Target::Some(routing.shards_for_filter(&filter)),
                }
            }
            By::Document(doc) => {
                Target::One(routing.shard_for_document(&Document::try_from(doc)?)?)
            }
            By::AllOwners => Target::Some(routing.owners()),
            By::OneOwner => {
                let owners = routing.owners();
                match owners.iter().find(|o| **o == self.db.primary) {
                    Some(primary) => Target::One(primary.clone()),
                    None => Target::One(owners.into_iter().next().ok_or_else(|| {
                        MongoError::internal("a sharded collection without chunks")
                    })?),
                }
            }
            By::SoleOwner => {
                let mut owners = routing.owners().into_iter();
                match (owners.next(), owners.next()) {
                    (Some(owner), None) => Target::One(owner),
                    _ => {
                        return Err(MongoError::new(
                            ErrorCode::NotImplemented,
                            format!(
                                "this command is not supported yet on {}, whose chunks are on several shards",
                                routing.entry.ns
                            ),
                        ));
                    }
                }
            }
        })
    }
}

impl CollectionRouting {
    /// The version of the collection on `shard`, as attached to requests sent there.
    pub fn version_on(&self, shard: &str) -> ChunkVersion {
        self.chunks.shard_version(shard, self.entry.generation)
    }

    /// Every shard owning at least one chunk, in name order.
    pub fn owners(&self) -> Vec<String> {
        self.chunks.shards().into_iter().collect()
    }

    /// The shard an inserted document belongs to (missing shard key fields count as null).
    pub fn shard_for_document(&self, doc: &Document) -> Result<String> {
        let key = self.entry.key.extract(doc)?;
        self.chunks
            .chunk_for(&self.entry.key.encode(&key))
            .map(|c| c.shard.clone())
            .ok_or_else(|| MongoError::internal("the chunk map does not cover a shard key"))
    }

    /// The shards a query must reach: the owners of the chunks its shard key bounds overlap,
    /// in name order; never empty.
    pub fn shards_for_filter(&self, filter: &Document) -> Vec<String> {
        let intervals = self.entry.key.target_intervals(filter);
        let shards: Vec<String> = self.chunks.shards_for(&intervals).into_iter().collect();
        if shards.is_empty() {
            // An empty interval set (a contradiction such as `{a: {$in: []}}`) matches nothing;
            // any one shard answers that correctly.
            return self.owners().into_iter().take(1).collect();
        }
        shards
    }

    /// The one shard that can hold a document matching `filter`, when the filter fixes every
    /// shard key field by equality (single-document writes are targeted by it).
    pub fn shard_for_exact_key(&self, filter: &Document) -> Option<String> {
        let key = self.entry.key.equality_key(filter)?;
        self.chunks
            .chunk_for(&self.entry.key.encode(&key))
            .map(|c| c.shard.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::catalog::{Chunk, ChunkMap, CollectionEntry, CollectionGeneration, ShardKeyPattern};
    use bson::{Timestamp, doc};

    fn routing(key: Document) -> CollectionRouting {
        let pattern = ShardKeyPattern::parse(&key).unwrap();
        let generation = CollectionGeneration::new(Timestamp {
            time: 1,
            increment: 0,
        });
        let mut bounds = vec![pattern.global_min()];
        if pattern.has_hashed_prefix() {
            bounds.extend(pattern.hashed_split_points(2));
        } else {
            bounds.push(doc! {"a": 10});
        }
        bounds.push(pattern.global_max());
        let chunks = bounds
            .windows(2)
            .enumerate()
            .map(|(i, w)| {
                Chunk::new(
                    &pattern,
                    w[0].clone(),
                    w[1].clone(),
                    format!("shard{i}"),
                    ChunkVersion::new(generation, 1, i as u32),
                )
            })
            .collect();
        CollectionRouting {
            chunks: ChunkMap::new(&pattern, chunks).unwrap(),
            entry: CollectionEntry {
                ns: "db.c".into(),
                generation,
                uuid: bson::Binary {
                    subtype: bson::spec::BinarySubtype::Uuid,
                    bytes: vec![0; 16],
                },
                key: pattern,
                unique: false,
                last_modified: bson::DateTime::now(),
                no_balance: false,
                permit_migrations: true,
                default_collation: None,
            },
        }
    }

    #[test]
    fn range_keys_target_by_bounds() {
        let r = routing(doc! {"a": 1});
        assert_eq!(r.shard_for_document(&doc! {"a": 3}).unwrap(), "shard0");
        assert_eq!(r.shard_for_document(&doc! {"a": 10}).unwrap(), "shard1");
        assert_eq!(r.shard_for_document(&doc! {"b": 1}).unwrap(), "shard0");
        assert_eq!(r.shards_for_filter(&doc! {"a": {"$gt": 20}}), ["shard1"]);
        assert_eq!(r.shards_for_filter(&doc! {"b": 1}).len(), 2);
        assert_eq!(r.shards_for_filter(&doc! {"a": {"$in": [1, 11]}}).len(), 2);
        assert_eq!(
            r.shard_for_exact_key(&doc! {"a": 12}).as_deref(),
            Some("shard1")
        );
        assert_eq!(r.shard_for_exact_key(&doc! {"a": {"$gt": 12}}), None);
        assert_eq!(r.version_on("shard1").minor, 1);
        assert!(r.version_on("shard7").is_unset());
    }

    #[test]
    fn hashed_keys_target_equalities_only() {
        let r = routing(doc! {"a": "hashed"});
        let shard = r.shard_for_document(&doc! {"a": "x"}).unwrap();
        assert_eq!(
            r.shards_for_filter(&doc! {"a": "x"}),
            std::slice::from_ref(&shard)
        );
        assert_eq!(r.shard_for_exact_key(&doc! {"a": "x"}), Some(shard));
        assert_eq!(r.shards_for_filter(&doc! {"a": {"$gt": 5}}).len(), 2);
        let spread: std::collections::BTreeSet<String> = (0..50)
            .map(|i| r.shard_for_document(&doc! {"a": i}).unwrap())
            .collect();
        assert_eq!(spread.len(), 2, "hashed values spread over both chunks");
        assert!(r.shard_for_document(&doc! {"a": [1]}).is_err());
    }
}
