//! The fuzz targets: each takes one input (bytes) and drives one layer of the server with it.
//! A target may return early on input its layer would refuse; it must never panic, hang or
//! overflow the stack — any of those is a finding.

mod bson_doc;
mod bulk_write;
mod dispatch;
mod find;
mod pipeline;
mod update;
mod wire;

use bson::{Bson, Document, RawBsonRef, RawDocument, RawDocumentBuf, doc};

/// What a target's input is, which decides how it is seeded and mutated.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Input {
    /// One or more wire messages, as read off a socket.
    Message,
    /// One BSON document (a command, for the command targets).
    Document,
}

pub struct Target {
    pub name: &'static str,
    pub about: &'static str,
    pub input: Input,
    pub run: fn(&[u8]),
}

pub const TARGETS: &[Target] = &[
    Target {
        name: "wire",
        about: "read_frame + decode_request over arbitrary bytes (OP_MSG, OP_QUERY, OP_COMPRESSED), then the command a message carries",
        input: Input::Message,
        run: wire::run,
    },
    Target {
        name: "bson",
        about: "what the server does with a received document: validation, decoding, conversion, comparison, key encoding, display",
        input: Input::Document,
        run: bson_doc::run,
    },
    Target {
        name: "find",
        about: "find's parser, filter, projection and sort parsers, evaluated against documents",
        input: Input::Document,
        run: find::run,
    },
    Target {
        name: "aggregate",
        about: "aggregate's parser, pipelines and expressions, run over documents, and the router's split",
        input: Input::Document,
        run: pipeline::run,
    },
    Target {
        name: "update",
        about: "update and findAndModify statements: operators, replacements, pipelines, arrayFilters, upserts, applied",
        input: Input::Document,
        run: update::run,
    },
    Target {
        name: "bulk_write",
        about: "bulkWrite's parser and each operation's statement, applied",
        input: Input::Document,
        run: bulk_write::run,
    },
    Target {
        name: "dispatch",
        about: "a whole in-process cluster (config server, two shards, router) executing the command through Service::execute",
        input: Input::Document,
        run: dispatch::run,
    },
];

pub fn target(name: &str) -> Option<&'static Target> {
    TARGETS.iter().find(|t| t.name == name)
}

/// The field of a command input holding the documents the command is evaluated against
/// (removed from the command before parsing; the dispatch target inserts them first).
pub const DOCS_FIELD: &str = "$fuzzDocs";

/// A command input: the command as a client sends it, and the documents to evaluate it on.
pub struct Command {
    pub body: RawDocumentBuf,
    pub docs: Vec<Document>,
    /// Whether the input named its documents (otherwise `docs` are [`sample_documents`]).
    pub docs_given: bool,
}

/// Splits a command input; `None` when the wire layer would refuse the document before any
/// parser saw it (`wire::validate_document` with the process's `maxBSONDepth`, what every
/// incoming document goes through; the `bson` and `wire` targets cover that layer).
pub fn command(data: &[u8]) -> Option<Command> {
    docgrid::wire::validate_document(data, docgrid::depth::max_bson_depth()).ok()?;
    let raw = RawDocument::from_bytes(data).ok()?;
    let mut body = RawDocumentBuf::new();
    let mut docs = None;
    for element in raw.iter() {
        let (key, value) = element.ok()?;
        if key == DOCS_FIELD {
            docs = Some(value);
        } else {
            body.append_ref(key, value);
        }
    }
    let docs_given = docs.is_some();
    let docs = match docs {
        Some(RawBsonRef::Array(items)) => items
            .into_iter()
            .filter_map(|item| match item {
                Ok(RawBsonRef::Document(d)) => d.to_owned().to_document().ok(),
                _ => None,
            })
            .collect(),
        _ => sample_documents(),
    };
    Some(Command {
        body,
        docs,
        docs_given,
    })
}

/// Documents of every shape a filter or pipeline cares about: nested documents and arrays,
/// every numeric type, strings, dates, nulls and missing fields.
pub fn sample_documents() -> Vec<Document> {
    vec![
        doc! {
            "_id": 1, "a": 1, "b": "x", "c": [1, 2, {"d": 3}], "e": {"f": Bson::Null, "g": [[1], []]},
            "h": bson::DateTime::from_millis(1_700_000_000_000), "i": 1.5, "j": Bson::Int64(-7),
            "k": bson::oid::ObjectId::from_bytes([1; 12]),
        },
        doc! {"_id": 2, "a": [1, {"b": 2}, [3]], "x": {"y": {"z": [{"w": 1}, {"w": "s"}]}}, "s": "héllo"},
        doc! {"_id": "s", "a": {"b": [{"c": 1}, {"c": 2.5}]}, "t": true, "n": Bson::Null, "d": -0.0},
        doc! {},
    ]
}
