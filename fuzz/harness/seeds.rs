//! Seeds: the real messages drivers send, generated at run time (nothing from `shared/` is
//! committed) — the wire golden files (`src/wire/testdata`), the commands the unified spec
//! tests expect drivers to send (`commandStartedEvent`s and `runCommand`s in
//! `../shared/compat-data/unified-spec/unified`, with each file's `initialData` as the
//! documents to evaluate them on), and a few built-in commands per target, which are all
//! the short run has when the spec tests are not there.

use super::targets::{DOCS_FIELD, Input, Target};
use bson::{Bson, Document, RawDocumentBuf, doc};
use docgrid::wire::{Compressor, HEADER_LEN, OpMsg, ReplyTo, encode_reply};
use serde_json::Value;
use std::path::{Path, PathBuf};

const GOLDEN: &[&str] = &[
    include_str!("../../src/wire/testdata/mongosh-ismaster-op-query.hex"),
    include_str!("../../src/wire/testdata/mongosh-end-sessions-more-to-come.hex"),
    include_str!("../../src/wire/testdata/pymongo-hello-op-msg.hex"),
    include_str!("../../src/wire/testdata/pymongo-insert-document-sequence.hex"),
];

/// Documents from a spec file's `initialData` attached to each of its commands, at most.
const DOCS_PER_COMMAND: usize = 8;

/// Where the unified spec tests are: `DOCGRID_UNIFIED_SPEC`, or `shared/` beside the checkout.
pub fn unified_dir() -> PathBuf {
    std::env::var_os("DOCGRID_UNIFIED_SPEC")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/compat-data/unified-spec/unified")
        })
}

/// One command a driver sends, with its database and the documents its collection holds.
#[derive(Clone, Debug)]
pub struct SeedCommand {
    pub db: String,
    pub body: Document,
    pub docs: Vec<Document>,
}

impl SeedCommand {
    pub fn name(&self) -> &str {
        self.body.keys().next().map_or("", String::as_str)
    }

    /// The command as a target's input: `$db` for the dispatcher, the documents appended.
    fn input(&self, with_db: bool) -> Option<Vec<u8>> {
        let mut body = self.body.clone();
        if with_db {
            body.insert("$db", self.db.clone());
        }
        if !self.docs.is_empty() {
            let docs: Vec<Bson> = self.docs.iter().cloned().map(Bson::Document).collect();
            body.insert(DOCS_FIELD, docs);
        }
        Some(RawDocumentBuf::from_document(&body).ok()?.into_bytes())
    }
}

/// Every seed of `target`, deduplicated, in a stable order.
pub fn seeds(target: &Target, unified: Option<&Path>) -> Vec<Vec<u8>> {
    let mut commands = builtin();
    commands.extend(golden_commands());
    if let Some(dir) = unified {
        commands.extend(unified_commands(dir));
    }
    let mut out: Vec<Vec<u8>> = match (target.input, target.name) {
        (Input::Message, _) => {
            let mut messages: Vec<Vec<u8>> = GOLDEN.iter().map(|h| hex(h)).collect();
            for c in &commands {
                if let Some(body) = c.input(true) {
                    messages.push(op_msg(body));
                }
            }
            messages.iter().flat_map(|m| variants(m)).collect()
        }
        (_, "bson") => commands.iter().filter_map(|c| c.input(true)).collect(),
        (_, "dispatch") => commands.iter().filter_map(|c| c.input(true)).collect(),
        (_, name) => {
            let wanted: &[&str] = match name {
                "find" => &["find"],
                "aggregate" => &["aggregate"],
                "update" => &["update", "findAndModify"],
                "bulk_write" => &["bulkWrite"],
                _ => &[],
            };
            commands
                .iter()
                .filter(|c| wanted.contains(&c.name()))
                .filter_map(|c| c.input(false))
                .collect()
        }
    };
    let mut seen = std::collections::HashSet::new();
    out.retain(|s| seen.insert(s.clone()));
    out
}

fn hex(text: &str) -> Vec<u8> {
    let text = text.trim();
    (0..text.len() / 2)
        .filter_map(|i| u8::from_str_radix(&text[2 * i..2 * i + 2], 16).ok())
        .collect()
}

fn op_msg(body: Vec<u8>) -> Vec<u8> {
    let mut out = Vec::new();
    if let Ok(body) = RawDocumentBuf::from_bytes(body) {
        OpMsg::new(body).encode(1, 0, &mut out);
    }
    out
}

/// A message as sent, with a checksum, and compressed with each compressor MongoDB knows.
fn variants(message: &[u8]) -> Vec<Vec<u8>> {
    let mut out = vec![message.to_vec(), noop_compressed(message)];
    let Some(frame) = docgrid::wire::Frame::from_bytes(message.to_vec()) else {
        return out;
    };
    let Ok(docgrid::wire::Request::Msg { msg, .. }) = docgrid::wire::decode_request(&frame) else {
        return out;
    };
    if !msg.sequences.is_empty() {
        return out;
    }
    for (checksum, compressor) in [
        (true, None),
        (false, Some(Compressor::Snappy)),
        (false, Some(Compressor::Zlib)),
        (true, Some(Compressor::Zstd)),
    ] {
        let to = ReplyTo {
            request_id: 0,
            legacy: false,
            checksum,
            compressor,
        };
        out.push(encode_reply(&to, &msg.body, 7, true));
    }
    out
}

/// The message inside OP_COMPRESSED with the noop compressor (id 0): any message kind,
/// document sequences included.
pub fn noop_compressed(message: &[u8]) -> Vec<u8> {
    if message.len() < HEADER_LEN {
        return message.to_vec();
    }
    let body = &message[HEADER_LEN..];
    let mut out = Vec::with_capacity(message.len() + 9);
    out.extend_from_slice(&((HEADER_LEN + 9 + body.len()) as i32).to_le_bytes());
    out.extend_from_slice(&message[4..12]);
    out.extend_from_slice(&2012_i32.to_le_bytes());
    out.extend_from_slice(&message[12..16]);
    out.extend_from_slice(&(body.len() as i32).to_le_bytes());
    out.push(0);
    out.extend_from_slice(body);
    out
}

/// The golden messages' commands (document sequences merged into the body, as the server
/// merges them).
fn golden_commands() -> Vec<SeedCommand> {
    let mut out = Vec::new();
    for text in GOLDEN {
        let Some(frame) = docgrid::wire::Frame::from_bytes(hex(text)) else {
            continue;
        };
        let (db, body, sequences) = match docgrid::wire::decode_request(&frame) {
            Ok(docgrid::wire::Request::Msg { msg, .. }) => {
                let db = msg.body.get_str("$db").unwrap_or("admin").to_string();
                (db, msg.body, msg.sequences)
            }
            Ok(docgrid::wire::Request::Query { query, .. }) => {
                ("admin".into(), query.query, Vec::new())
            }
            Err(_) => continue,
        };
        let Ok(mut body) = body.to_document() else {
            continue;
        };
        body.remove("$db");
        for seq in sequences {
            let docs: Vec<Bson> = seq
                .documents
                .iter()
                .filter_map(|d| d.to_document().ok().map(Bson::Document))
                .collect();
            body.insert(seq.identifier, docs);
        }
        out.push(SeedCommand {
            db,
            body,
            docs: Vec::new(),
        });
    }
    out
}

/// The commands the unified spec tests expect drivers to send.
pub fn unified_commands(dir: &Path) -> Vec<SeedCommand> {
    let mut files = Vec::new();
    let mut pending = vec![dir.to_path_buf()];
    while let Some(d) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                pending.push(path);
            } else if path.extension().is_some_and(|e| e == "json") {
                files.push(path);
            }
        }
    }
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let Ok(text) = std::fs::read_to_string(&file) else {
            continue;
        };
        let Ok(spec) = serde_json::from_str::<Value>(&text) else {
            continue;
        };
        let docs: Vec<Document> = spec["initialData"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|c| c["documents"].as_array().cloned().unwrap_or_default())
            .take(DOCS_PER_COMMAND)
            .filter_map(|d| match to_bson(d) {
                Some(Bson::Document(d)) => Some(d),
                _ => None,
            })
            .collect();
        collect_commands(&spec, &docs, &mut out);
    }
    out
}

/// Finds `commandStartedEvent`s and `runCommand` operations anywhere in a spec file.
fn collect_commands(value: &Value, docs: &[Document], out: &mut Vec<SeedCommand>) {
    match value {
        Value::Object(map) => {
            let found = if let Some(event) = map.get("commandStartedEvent") {
                Some((&event["command"], event["databaseName"].as_str()))
            } else if map.get("name").and_then(Value::as_str) == Some("runCommand") {
                Some((&map["arguments"]["command"], None))
            } else {
                None
            };
            if let Some((command, db)) = found {
                if let Some(Bson::Document(body)) = to_bson(command.clone()) {
                    if !body.is_empty() {
                        out.push(SeedCommand {
                            db: db.unwrap_or("test").to_string(),
                            body,
                            docs: docs.to_vec(),
                        });
                    }
                }
            }
            for v in map.values() {
                collect_commands(v, docs, out);
            }
        }
        Value::Array(items) => {
            for v in items {
                collect_commands(v, docs, out);
            }
        }
        _ => {}
    }
}

/// Extended JSON to BSON, with the unified format's matchers resolved to a value they
/// accept (`$$unsetOrMatches`, `$$type`) or dropped (`$$exists`, `$$sessionLsid`, ...).
fn to_bson(value: Value) -> Option<Bson> {
    Bson::try_from(clean(value)?).ok()
}

fn clean(value: Value) -> Option<Value> {
    match value {
        Value::Object(map) => {
            if let Some((key, inner)) = map.iter().next().filter(|_| map.len() == 1) {
                match key.as_str() {
                    "$$unsetOrMatches" => return clean(inner.clone()),
                    "$$type" => {
                        let name = inner.as_str().or_else(|| inner[0].as_str()).unwrap_or("");
                        return match name {
                            "int" | "long" | "number" => Some(Value::from(1)),
                            "string" => Some(Value::from("s")),
                            "bool" => Some(Value::from(true)),
                            "object" => Some(Value::Object(Default::default())),
                            "array" => Some(Value::Array(Vec::new())),
                            _ => None,
                        };
                    }
                    k if k.starts_with("$$") => return None,
                    _ => {}
                }
            }
            Some(Value::Object(
                map.into_iter()
                    .filter_map(|(k, v)| Some((k, clean(v)?)))
                    .collect(),
            ))
        }
        Value::Array(items) => Some(Value::Array(items.into_iter().filter_map(clean).collect())),
        other => Some(other),
    }
}

/// A few commands per target, so that every target has seeds without the spec tests.
fn builtin() -> Vec<SeedCommand> {
    let docs = vec![
        doc! {"_id": 1, "a": 1, "b": [1, 2, {"c": 3}], "s": "x"},
        doc! {"_id": 2, "a": {"b": [{"c": 1}, {"c": 2}]}, "d": 2.5},
    ];
    let commands = [
        doc! {"hello": 1, "client": {"driver": {"name": "nodejs", "version": "6.0"}, "os": {"type": "Linux"}}, "compression": ["snappy", "zstd"]},
        doc! {"find": "c", "filter": {"a": {"$gt": 0}, "$or": [{"b": {"$elemMatch": {"c": 3}}}, {"s": {"$regex": "^x", "$options": "i"}}]}, "projection": {"a": 1, "b.$": 1}, "sort": {"a": -1, "_id": 1}, "limit": 5},
        doc! {"find": "c", "filter": {"$expr": {"$gt": [{"$add": ["$a", "$$x"]}, 1]}}, "projection": {"total": {"$sum": "$b"}, "b": {"$slice": [1, 2]}}, "let": {"x": 1}},
        doc! {"find": "c", "filter": {"a": {"$not": {"$in": [1, 2]}}, "b": {"$all": [1], "$size": 3}, "$jsonSchema": {"bsonType": "object", "required": ["a"], "properties": {"a": {"minimum": 0}}}}},
        doc! {"aggregate": "c", "pipeline": [{"$match": {"a": {"$gte": 1}}}, {"$group": {"_id": "$s", "n": {"$sum": 1}, "top": {"$topN": {"n": 2, "sortBy": {"a": -1}, "output": "$a"}}}}, {"$sort": {"n": -1}}], "cursor": {}},
        doc! {"aggregate": "c", "pipeline": [{"$project": {"x": {"$cond": [{"$isArray": "$b"}, {"$reduce": {"input": "$b", "initialValue": 0, "in": {"$add": ["$$value", 1]}}}, {"$literal": "$no"}]}, "d": {"$dateToString": {"date": "$$NOW", "format": "%Y"}}}}, {"$unwind": {"path": "$b", "preserveNullAndEmptyArrays": true}}], "cursor": {}},
        doc! {"aggregate": "c", "pipeline": [{"$facet": {"a": [{"$bucketAuto": {"groupBy": "$a", "buckets": 2}}], "b": [{"$setWindowFields": {"sortBy": {"a": 1}, "output": {"r": {"$rank": {}}}}}]}}, {"$lookup": {"from": "d", "localField": "a", "foreignField": "a", "as": "j"}}], "cursor": {}},
        doc! {"aggregate": 1, "pipeline": [{"$documents": [{"x": 1}, {"x": [2, 3]}]}, {"$densify": {"field": "x", "range": {"step": 1, "bounds": "full"}}}], "cursor": {}},
        doc! {"update": "c", "updates": [{"q": {"a": 1}, "u": {"$set": {"b.$[e].c": 9}, "$inc": {"n": 1}, "$push": {"l": {"$each": [1, 2], "$sort": -1, "$slice": 3}}}, "arrayFilters": [{"e.c": {"$gt": 1}}], "upsert": true}]},
        doc! {"update": "c", "updates": [{"q": {"_id": 2}, "u": [{"$set": {"x": {"$concat": ["$s", "$$c"]}}}, {"$unset": "d"}], "c": {"c": "!"}, "multi": true}], "let": {"v": 1}},
        doc! {"update": "c", "updates": [{"q": {"a": {"$lt": 5}}, "u": {"a": 7, "z": [1]}}, {"q": {"b": 1}, "u": {"$rename": {"a": "aa"}, "$currentDate": {"t": true}, "$bit": {"n": {"and": 5}}}}]},
        doc! {"findAndModify": "c", "query": {"a": 1}, "update": {"$setOnInsert": {"x": 1}, "$max": {"a": 3}}, "upsert": true, "new": true, "sort": {"a": 1}, "fields": {"a": 1}},
        doc! {"bulkWrite": 1, "ops": [{"insert": 0, "document": {"_id": 3, "a": 4}}, {"update": 0, "filter": {"a": 4}, "updateMods": {"$inc": {"a": 1}}, "multi": true}, {"update": 0, "filter": {"_id": 9}, "updateMods": [{"$set": {"b": "$$c"}}], "constants": {"c": 1}, "upsert": true}, {"delete": 0, "filter": {"a": {"$exists": false}}, "multi": true}], "nsInfo": [{"ns": "test.c"}], "ordered": false},
        doc! {"insert": "c", "documents": [{"_id": 5, "a": [1, {"b": 2}]}], "ordered": true},
        doc! {"createIndexes": "c", "indexes": [{"key": {"a": 1, "b": -1}, "name": "a_1_b_-1", "partialFilterExpression": {"a": {"$gt": 1}}}]},
        doc! {"delete": "c", "deletes": [{"q": {"a": {"$mod": [2, 0]}}, "limit": 0}]},
        doc! {"count": "c", "query": {"a": {"$type": "number"}}},
        doc! {"distinct": "c", "key": "a.b", "query": {}},
    ];
    commands
        .into_iter()
        .map(|body| SeedCommand {
            // bulkWrite runs on admin, naming its namespaces.
            db: if body.contains_key("bulkWrite") {
                "admin"
            } else {
                "test"
            }
            .into(),
            body,
            docs: docs.clone(),
        })
        .collect()
}
