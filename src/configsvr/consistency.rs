//! `checkMetadataConsistency`'s checks, pure: the routing table against itself (chunks tiling
//! the shard key space with bounds shaped like the key) and against what each shard holds
//! (collections where they belong, with the routing table's UUID, a shard key index where chunks
//! are owned or orphaned ranges still wait for deletion, the same indexes on every shard owning
//! chunks), reported with MongoDB's inconsistency types.

use crate::catalog::ShardKeyPattern;
use bson::{Bson, Document, doc};
use std::collections::{BTreeMap, BTreeSet};

/// The routing table as the config server stores it, for the namespaces checked.
pub struct RoutingView {
    /// `config.databases` documents.
    pub databases: Vec<Document>,
    /// `config.collections` documents, each with its `config.chunks` documents.
    pub collections: Vec<(Document, Vec<Document>)>,
}

/// What one shard holds, for the namespaces checked.
pub struct ShardCatalog {
    pub shard: String,
    pub collections: Vec<LocalCollection>,
}

pub struct LocalCollection {
    pub ns: String,
    pub uuid: Option<Bson>,
    /// `listIndexes` documents.
    pub indexes: Vec<Document>,
    /// Whether the shard has `config.rangeDeletions` tasks for this namespace: orphaned ranges
    /// it deletes through the shard key index.
    pub range_deletions: bool,
}

fn inconsistency(kind: &str, description: &str, details: Document) -> Document {
    doc! {"type": kind, "description": description, "details": details}
}

/// Every inconsistency between `routing` and `shards`, in a stable order.
pub fn check(routing: &RoutingView, shards: &[ShardCatalog], check_indexes: bool) -> Vec<Document> {
    let mut found = Vec::new();
    let primaries: BTreeMap<&str, &str> = routing
        .databases
        .iter()
        .filter_map(|d| Some((d.get_str("_id").ok()?, d.get_str("primary").ok()?)))
        .collect();
    let mut sharded: BTreeMap<&str, (&Document, &[Document])> = BTreeMap::new();
    for (entry, chunks) in &routing.collections {
        if let Ok(ns) = entry.get_str("_id") {
            sharded.insert(ns, (entry, chunks));
        }
    }
    for (ns, (entry, chunks)) in &sharded {
        let db = ns.split_once('.').map_or(*ns, |(db, _)| db);
        if !primaries.contains_key(db) {
            found.push(inconsistency(
                "HiddenShardedCollection",
                "Found sharded collection but relative database does not exist",
                doc! {"namespace": *ns, "collection": (*entry).clone()},
            ));
        }
        found.extend(check_chunks(ns, entry, chunks));
    }
    for shard in shards {
        for local in &shard.collections {
            let db = local
                .ns
                .split_once('.')
                .map_or(local.ns.as_str(), |(db, _)| db);
            match sharded.get(local.ns.as_str()) {
                None if primaries.get(db) != Some(&shard.shard.as_str()) => {
                    found.push(inconsistency(
                        "MisplacedCollection",
                        "Unsharded collection found on shard different from database primary shard",
                        doc! {
                            "namespace": &local.ns,
                            "shard": &shard.shard,
                            "localUUID": local.uuid.clone().unwrap_or(Bson::Null),
                        },
                    ));
                }
                None => {}
                Some((entry, chunks)) => {
                    let uuid = entry.get("uuid").cloned().unwrap_or(Bson::Null);
                    if local.uuid.as_ref().is_some_and(|u| *u != uuid) {
                        found.push(inconsistency(
                            "CollectionUUIDMismatch",
                            "Found collection on non primary shard with mismatching UUID",
                            doc! {
                                "namespace": &local.ns,
                                "shard": &shard.shard,
                                "localUUID": local.uuid.clone().unwrap_or(Bson::Null),
                                "uuid": uuid,
                            },
                        ));
                    }
                    let owns_chunks = chunks
                        .iter()
                        .any(|c| c.get_str("shard") == Ok(shard.shard.as_str()));
                    let key = entry.get_document("key").cloned().unwrap_or_default();
                    let indexed = local.indexes.iter().any(|i| serves_shard_key(i, &key));
                    // A shard without chunks still needs the index while its range deleter
                    // has orphans to remove: it finds them through it.
                    let missing = match (indexed, owns_chunks, local.range_deletions) {
                        (true, _, _) | (false, false, false) => None,
                        (false, true, _) => Some((
                            "MissingShardKeyIndex",
                            "Found sharded collection without a shard key index",
                        )),
                        (false, false, true) => Some((
                            "RangeDeletionMissingShardKeyIndex",
                            "Found sharded collection with an outstanding range deletion task without a shard key index",
                        )),
                    };
                    if let Some((kind, description)) = missing {
                        found.push(inconsistency(
                            kind,
                            description,
                            doc! {"namespace": &local.ns, "shard": &shard.shard, "shardKey": key},
                        ));
                    }
                }
            }
        }
    }
    if check_indexes {
        for (ns, (_, chunks)) in &sharded {
            found.extend(check_indexes_of(ns, chunks, shards));
        }
    }
    found
}

/// Whether an index can serve the shard key: its key starts with the shard key's fields, in
/// order and of the same kind, and it covers every document (not sparse, partial, hidden or
/// wildcard).
fn serves_shard_key(index: &Document, key: &Document) -> bool {
    let Ok(pattern) = index.get_document("key") else {
        return false;
    };
    let prefixed = key.len() <= pattern.len()
        && key.iter().zip(pattern.iter()).all(|((kf, kv), (pf, pv))| {
            kf == pf
                && match (kv, pv) {
                    (Bson::String(a), Bson::String(b)) => a == b,
                    (Bson::String(_), _) | (_, Bson::String(_)) => false,
                    _ => true,
                }
        });
    let wildcard = pattern.keys().any(|k| k == "$**" || k.ends_with(".$**"));
    prefixed
        && !wildcard
        && !matches!(index.get("sparse"), Some(Bson::Boolean(true)))
        && !matches!(index.get("hidden"), Some(Bson::Boolean(true)))
        && !index.contains_key("partialFilterExpression")
}

fn check_chunks(ns: &str, entry: &Document, chunks: &[Document]) -> Vec<Document> {
    let mut found = Vec::new();
    let uuid = entry.get("uuid").cloned().unwrap_or(Bson::Null);
    let key_doc = entry.get_document("key").cloned().unwrap_or_default();
    let Ok(key) = ShardKeyPattern::parse(&key_doc) else {
        return found;
    };
    if chunks.is_empty() {
        found.push(inconsistency(
            "MissingRoutingTable",
            "Found sharded collection without any chunk",
            doc! {"namespace": ns, "collectionUUID": uuid},
        ));
        return found;
    }
    let bound =
        |chunk: &Document, field: &str| chunk.get_document(field).cloned().unwrap_or_default();
    let mut ordered: Vec<&Document> = chunks.iter().collect();
    ordered.sort_by_key(|c| key.encode(&bound(c, "min")));
    for chunk in &ordered {
        if !key.is_key_shaped(&bound(chunk, "min")) || !key.is_key_shaped(&bound(chunk, "max")) {
            found.push(inconsistency(
                "CorruptedChunkShardKey",
                "Found chunk with a shard key pattern violation",
                doc! {
                    "namespace": ns,
                    "collectionUUID": uuid.clone(),
                    "chunk": (*chunk).clone(),
                    "shardKeyPattern": key_doc.clone(),
                },
            ));
        }
    }
    for pair in ordered.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let (kind, description) = match key
            .encode(&bound(a, "max"))
            .cmp(&key.encode(&bound(b, "min")))
        {
            std::cmp::Ordering::Less => (
                "RoutingTableRangeGap",
                "Found a gap between two consecutive chunks",
            ),
            std::cmp::Ordering::Greater => (
                "RoutingTableRangeOverlap",
                "Found two overlapping consecutive chunks",
            ),
            std::cmp::Ordering::Equal => continue,
        };
        found.push(inconsistency(
            kind,
            description,
            doc! {"namespace": ns, "collectionUUID": uuid.clone(), "chunkA": a.clone(), "chunkB": b.clone()},
        ));
    }
    let first_min = bound(ordered[0], "min");
    if key.encode(&first_min) != key.encode(&key.global_min()) {
        found.push(inconsistency(
            "RoutingTableMissingMinKey",
            "Routing table has a gap because first chunk does not start from MinKey",
            doc! {"namespace": ns, "collectionUUID": uuid.clone(), "minKeyObj": first_min, "globalMin": key.global_min()},
        ));
    }
    let last_max = bound(ordered[ordered.len() - 1], "max");
    if key.encode(&last_max) != key.encode(&key.global_max()) {
        found.push(inconsistency(
            "RoutingTableMissingMaxKey",
            "Routing table has a gap because last chunk boundary does not reach MaxKey",
            doc! {"namespace": ns, "collectionUUID": uuid, "maxKeyObj": last_max, "globalMax": key.global_max()},
        ));
    }
    found
}

/// The indexes of a sharded collection on the shards owning its chunks: each index present on
/// all of them, with the same specification.
fn check_indexes_of(ns: &str, chunks: &[Document], shards: &[ShardCatalog]) -> Vec<Document> {
    let owners: BTreeSet<&str> = chunks
        .iter()
        .filter_map(|c| c.get_str("shard").ok())
        .collect();
    let mut by_name: BTreeMap<String, BTreeMap<&str, Document>> = BTreeMap::new();
    let mut present: Vec<&str> = Vec::new();
    for shard in shards.iter().filter(|s| owners.contains(s.shard.as_str())) {
        let Some(local) = shard.collections.iter().find(|c| c.ns == ns) else {
            continue;
        };
        present.push(&shard.shard);
        for index in &local.indexes {
            if let Ok(name) = index.get_str("name") {
                let mut spec = index.clone();
                spec.remove("v");
                spec.remove("ns");
                by_name
                    .entry(name.to_string())
                    .or_default()
                    .insert(&shard.shard, spec);
            }
        }
    }
    let mut found = Vec::new();
    for (name, specs) in by_name {
        let missing: Vec<&str> = present
            .iter()
            .copied()
            .filter(|s| !specs.contains_key(s))
            .collect();
        let properties: BTreeSet<&String> = specs.values().flat_map(|s| s.keys()).collect();
        let mut inconsistent = Vec::new();
        for property in properties {
            let values: Vec<Bson> = specs
                .values()
                .map(|spec| spec.get(property).cloned().unwrap_or(Bson::Null))
                .collect();
            if values.windows(2).any(|w| w[0] != w[1]) {
                let per_shard: Document = specs
                    .iter()
                    .map(|(shard, spec)| {
                        (
                            shard.to_string(),
                            spec.get(property).cloned().unwrap_or(Bson::Null),
                        )
                    })
                    .collect();
                inconsistent.push(doc! {"k": property, "v": per_shard});
            }
        }
        if missing.is_empty() && inconsistent.is_empty() {
            continue;
        }
        found.push(inconsistency(
            "InconsistentIndex",
            "Found an index of a sharded collection that is inconsistent between different shards",
            doc! {
                "namespace": ns,
                "info": {
                    "missingFromShards": missing,
                    "inconsistentProperties": inconsistent,
                    "indexName": name,
                },
            },
        ));
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::spec::BinarySubtype;

    fn uuid(n: u8) -> Bson {
        Bson::Binary(bson::Binary {
            subtype: BinarySubtype::Uuid,
            bytes: vec![n; 16],
        })
    }

    fn chunk(min: Bson, max: Bson, shard: &str) -> Document {
        doc! {"uuid": uuid(1), "min": {"a": min}, "max": {"a": max}, "shard": shard}
    }

    fn routing(chunks: Vec<Document>) -> RoutingView {
        RoutingView {
            databases: vec![doc! {"_id": "db", "primary": "s0"}],
            collections: vec![(
                doc! {"_id": "db.c", "uuid": uuid(1), "key": {"a": 1}},
                chunks,
            )],
        }
    }

    fn local(ns: &str, uuid_byte: u8, indexes: Vec<Document>) -> LocalCollection {
        LocalCollection {
            ns: ns.to_string(),
            uuid: Some(uuid(uuid_byte)),
            indexes,
            range_deletions: false,
        }
    }

    fn types(found: &[Document]) -> Vec<&str> {
        found.iter().map(|i| i.get_str("type").unwrap()).collect()
    }

    fn shard_key_index() -> Document {
        doc! {"v": 2, "key": {"a": 1}, "name": "a_1"}
    }

    #[test]
    fn a_shard_deleting_orphans_needs_the_shard_key_index() {
        let table = routing(vec![chunk(Bson::MinKey, Bson::MaxKey, "s0")]);
        let orphans = |range_deletions| ShardCatalog {
            shard: "s1".into(),
            collections: vec![LocalCollection {
                range_deletions,
                ..local("db.c", 1, vec![])
            }],
        };
        let owner = ShardCatalog {
            shard: "s0".into(),
            collections: vec![local("db.c", 1, vec![shard_key_index()])],
        };
        // Without chunks nor orphans to delete, a shard needs no shard key index.
        assert!(check(&table, &[owner, orphans(false)], false).is_empty());
        let owner = ShardCatalog {
            shard: "s0".into(),
            collections: vec![local("db.c", 1, vec![shard_key_index()])],
        };
        let found = check(&table, &[owner, orphans(true)], false);
        assert_eq!(types(&found), vec!["RangeDeletionMissingShardKeyIndex"]);
        assert_eq!(
            found[0].get_document("details").unwrap(),
            &doc! {"namespace": "db.c", "shard": "s1", "shardKey": {"a": 1}}
        );
    }

    #[test]
    fn a_tiling_routing_table_and_matching_shards_are_consistent() {
        let tiled = routing(vec![
            chunk(Bson::MinKey, Bson::Int32(0), "s0"),
            chunk(Bson::Int32(0), Bson::MaxKey, "s1"),
        ]);
        let shards = vec![
            ShardCatalog {
                shard: "s0".into(),
                collections: vec![
                    local("db.c", 1, vec![shard_key_index()]),
                    local("db.u", 9, vec![]),
                ],
            },
            ShardCatalog {
                shard: "s1".into(),
                collections: vec![local("db.c", 1, vec![shard_key_index()])],
            },
        ];
        assert!(check(&tiled, &shards, true).is_empty());
    }

    #[test]
    fn holes_overlaps_and_bad_bounds_in_the_routing_table() {
        let broken = routing(vec![
            chunk(Bson::Int32(-5), Bson::Int32(0), "s0"),
            chunk(Bson::Int32(1), Bson::Int32(10), "s0"),
            chunk(Bson::Int32(5), Bson::Int32(20), "s1"),
        ]);
        assert_eq!(
            types(&check(&broken, &[], false)),
            vec![
                "RoutingTableRangeGap",
                "RoutingTableRangeOverlap",
                "RoutingTableMissingMinKey",
                "RoutingTableMissingMaxKey"
            ]
        );
        let mut corrupt = routing(vec![chunk(Bson::MinKey, Bson::MaxKey, "s0")]);
        corrupt.collections[0].1[0].insert("max", doc! {"b": Bson::MaxKey});
        assert!(types(&check(&corrupt, &[], false)).contains(&"CorruptedChunkShardKey"));
        assert_eq!(
            types(&check(&routing(vec![]), &[], false)),
            vec!["MissingRoutingTable"]
        );
        let mut hidden = routing(vec![chunk(Bson::MinKey, Bson::MaxKey, "s0")]);
        hidden.databases.clear();
        assert_eq!(
            types(&check(&hidden, &[], false)),
            vec!["HiddenShardedCollection"]
        );
    }

    #[test]
    fn shards_holding_what_the_routing_table_does_not_say() {
        let table = routing(vec![
            chunk(Bson::MinKey, Bson::Int32(0), "s0"),
            chunk(Bson::Int32(0), Bson::MaxKey, "s1"),
        ]);
        let sparse = doc! {"v": 2, "key": {"a": 1, "b": 1}, "name": "a_1_b_1", "sparse": true};
        let shards = vec![
            ShardCatalog {
                shard: "s0".into(),
                collections: vec![local(
                    "db.c",
                    1,
                    vec![
                        shard_key_index(),
                        doc! {"v": 2, "key": {"x": 1}, "name": "x_1"},
                    ],
                )],
            },
            ShardCatalog {
                shard: "s1".into(),
                collections: vec![local("db.c", 2, vec![sparse]), local("db.stray", 3, vec![])],
            },
        ];
        let found = check(&table, &shards, true);
        assert_eq!(
            types(&found),
            vec![
                "CollectionUUIDMismatch",
                "MissingShardKeyIndex",
                "MisplacedCollection",
                "InconsistentIndex",
                "InconsistentIndex",
                "InconsistentIndex"
            ]
        );
        let info = |name: &str| {
            found
                .iter()
                .filter_map(|i| i.get_document("details").ok()?.get_document("info").ok())
                .find(|info| info.get_str("indexName") == Ok(name))
                .unwrap()
                .clone()
        };
        assert_eq!(
            info("x_1").get_array("missingFromShards").unwrap(),
            &vec![Bson::String("s1".into())]
        );
        assert_eq!(
            info("a_1").get_array("missingFromShards").unwrap(),
            &vec![Bson::String("s1".into())]
        );
    }
}
