//! Reading test data: Extended JSON files into BSON, typed access to operation arguments (with the
//! spec's "unknown argument is an error" rule), and the common options (read/write concern, read
//! preference) the format spells in its own way.

use mongodb::bson::{self, Bson, Document};
use mongodb::options::{
    Acknowledgment, ReadConcern, ReadPreference, ReadPreferenceOptions, SelectionCriteria,
    WriteConcern,
};
use std::collections::BTreeSet;
use std::path::Path;
use std::time::Duration;

/// Loads a test file. The files are canonical or relaxed Extended JSON; `serde_json` keeps key
/// order here (the `bson` crate enables `preserve_order`), which matters for command documents,
/// sort and index specifications.
pub fn load_file(path: &Path) -> Result<Document, String> {
    let text =
        std::fs::read_to_string(path).map_err(|e| format!("read {}: {e}", path.display()))?;
    let json: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| format!("parse {}: {e}", path.display()))?;
    match Bson::try_from(json) {
        Ok(Bson::Document(d)) => Ok(d),
        Ok(other) => Err(format!("top level is {other:?}, not a document")),
        Err(e) => Err(format!("extended JSON in {}: {e}", path.display())),
    }
}

/// The `$type` alias of a value, as the query operator names it.
pub fn type_name(value: &Bson) -> &'static str {
    match value {
        Bson::Double(_) => "double",
        Bson::String(_) => "string",
        Bson::Document(_) => "object",
        Bson::Array(_) => "array",
        Bson::Binary(_) => "binData",
        Bson::Undefined => "undefined",
        Bson::ObjectId(_) => "objectId",
        Bson::Boolean(_) => "bool",
        Bson::DateTime(_) => "date",
        Bson::Null => "null",
        Bson::RegularExpression(_) => "regex",
        Bson::DbPointer(_) => "dbPointer",
        Bson::JavaScriptCode(_) => "javascript",
        Bson::Symbol(_) => "symbol",
        Bson::JavaScriptCodeWithScope(_) => "javascriptWithScope",
        Bson::Int32(_) => "int",
        Bson::Timestamp(_) => "timestamp",
        Bson::Int64(_) => "long",
        Bson::Decimal128(_) => "decimal",
        Bson::MinKey => "minKey",
        Bson::MaxKey => "maxKey",
    }
}

/// A number as f64 (int32, int64, double); decimal128 is deliberately excluded, as the spec's
/// flexible numeric comparisons exclude it.
pub fn as_f64(value: &Bson) -> Option<f64> {
    match value {
        Bson::Int32(i) => Some(f64::from(*i)),
        Bson::Int64(i) => Some(*i as f64),
        Bson::Double(d) => Some(*d),
        _ => None,
    }
}

pub fn as_i64(value: &Bson) -> Option<i64> {
    match value {
        Bson::Int32(i) => Some(i64::from(*i)),
        Bson::Int64(i) => Some(*i),
        Bson::Double(d) if d.fract() == 0.0 => Some(*d as i64),
        _ => None,
    }
}

/// Operation arguments with bookkeeping: every argument a handler does not take is reported as
/// an unsupported argument (the spec requires an error rather than silently ignoring it).
pub struct Args {
    doc: Document,
    taken: BTreeSet<String>,
    op: String,
}

impl Args {
    pub fn new(op: &str, doc: Document) -> Args {
        Args {
            doc,
            taken: BTreeSet::new(),
            op: op.to_string(),
        }
    }

    pub fn has(&self, key: &str) -> bool {
        self.doc.contains_key(key)
    }

    /// A string argument, without taking it.
    pub fn peek_str(&self, key: &str) -> Option<&str> {
        self.doc.get_str(key).ok()
    }

    pub fn raw(&mut self, key: &str) -> Option<Bson> {
        self.taken.insert(key.to_string());
        self.doc.get(key).cloned()
    }

    pub fn req(&mut self, key: &str) -> Result<Bson, String> {
        self.raw(key)
            .ok_or_else(|| format!("{}: missing required argument `{key}`", self.op))
    }

    pub fn doc(&mut self, key: &str) -> Result<Option<Document>, String> {
        match self.raw(key) {
            None => Ok(None),
            Some(Bson::Document(d)) => Ok(Some(d)),
            Some(other) => Err(format!(
                "{}: `{key}` must be a document, got {other}",
                self.op
            )),
        }
    }

    pub fn req_doc(&mut self, key: &str) -> Result<Document, String> {
        self.doc(key)?
            .ok_or_else(|| format!("{}: missing required argument `{key}`", self.op))
    }

    pub fn str(&mut self, key: &str) -> Result<Option<String>, String> {
        match self.raw(key) {
            None => Ok(None),
            Some(Bson::String(s)) => Ok(Some(s)),
            Some(other) => Err(format!(
                "{}: `{key}` must be a string, got {other}",
                self.op
            )),
        }
    }

    pub fn req_str(&mut self, key: &str) -> Result<String, String> {
        self.str(key)?
            .ok_or_else(|| format!("{}: missing required argument `{key}`", self.op))
    }

    pub fn bool(&mut self, key: &str) -> Result<Option<bool>, String> {
        match self.raw(key) {
            None => Ok(None),
            Some(Bson::Boolean(b)) => Ok(Some(b)),
            Some(other) => Err(format!(
                "{}: `{key}` must be a boolean, got {other}",
                self.op
            )),
        }
    }

    pub fn i64(&mut self, key: &str) -> Result<Option<i64>, String> {
        match self.raw(key) {
            None => Ok(None),
            Some(v) => as_i64(&v)
                .map(Some)
                .ok_or_else(|| format!("{}: `{key}` must be an integer, got {v}", self.op)),
        }
    }

    pub fn array(&mut self, key: &str) -> Result<Option<Vec<Bson>>, String> {
        match self.raw(key) {
            None => Ok(None),
            Some(Bson::Array(a)) => Ok(Some(a)),
            Some(other) => Err(format!(
                "{}: `{key}` must be an array, got {other}",
                self.op
            )),
        }
    }

    pub fn docs(&mut self, key: &str) -> Result<Option<Vec<Document>>, String> {
        match self.array(key)? {
            None => Ok(None),
            Some(items) => items
                .into_iter()
                .map(|b| match b {
                    Bson::Document(d) => Ok(d),
                    other => Err(format!(
                        "{}: `{key}` must hold documents, got {other}",
                        self.op
                    )),
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
        }
    }

    pub fn millis(&mut self, key: &str) -> Result<Option<Duration>, String> {
        Ok(self
            .i64(key)?
            .map(|ms| Duration::from_millis(ms.max(0) as u64)))
    }

    pub fn write_concern(&mut self, key: &str) -> Result<Option<WriteConcern>, String> {
        self.doc(key)?.map(|d| write_concern(&d)).transpose()
    }

    pub fn read_concern(&mut self, key: &str) -> Result<Option<ReadConcern>, String> {
        self.doc(key)?.map(|d| read_concern(&d)).transpose()
    }

    pub fn read_preference(&mut self, key: &str) -> Result<Option<SelectionCriteria>, String> {
        self.doc(key)?.map(|d| read_preference(&d)).transpose()
    }

    /// The named arguments as one document, for option structs the driver deserializes.
    pub fn options(&mut self, keys: &[&str]) -> Document {
        let mut out = Document::new();
        for key in keys {
            if let Some(v) = self.raw(key) {
                out.insert(*key, v);
            }
        }
        out
    }

    /// Fails on any argument no handler took.
    pub fn finish(&self) -> Result<(), String> {
        let unknown: Vec<&str> = self
            .doc
            .keys()
            .filter(|k| !self.taken.contains(*k))
            .map(String::as_str)
            .collect();
        if unknown.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "{}: unsupported argument(s) {}",
                self.op,
                unknown.join(", ")
            ))
        }
    }
}

/// Deserializes a driver option struct from the arguments the test gave.
pub fn options<T: serde::de::DeserializeOwned>(op: &str, doc: Document) -> Result<T, String> {
    bson::from_document(doc).map_err(|e| format!("{op}: options: {e}"))
}

pub fn write_concern(doc: &Document) -> Result<WriteConcern, String> {
    let mut wc = WriteConcern::default();
    for (k, v) in doc {
        match k.as_str() {
            "w" => {
                wc.w = Some(match v {
                    Bson::String(s) if s == "majority" => Acknowledgment::Majority,
                    Bson::String(s) => Acknowledgment::Custom(s.clone()),
                    other => Acknowledgment::Nodes(
                        as_i64(other)
                            .and_then(|n| u32::try_from(n).ok())
                            .ok_or_else(|| format!("writeConcern.w: {other}"))?,
                    ),
                })
            }
            "journal" | "j" => {
                wc.journal = Some(
                    v.as_bool()
                        .ok_or_else(|| format!("writeConcern.journal: {v}"))?,
                )
            }
            "wtimeoutMS" | "wtimeout" => {
                wc.w_timeout = Some(Duration::from_millis(
                    as_i64(v)
                        .and_then(|n| u64::try_from(n).ok())
                        .ok_or_else(|| format!("writeConcern.wtimeoutMS: {v}"))?,
                ))
            }
            other => return Err(format!("writeConcern: unknown field `{other}`")),
        }
    }
    Ok(wc)
}

pub fn read_concern(doc: &Document) -> Result<ReadConcern, String> {
    match doc.get_str("level") {
        Ok(level) => Ok(ReadConcern::custom(level)),
        Err(_) => Err(format!("readConcern without a level: {doc}")),
    }
}

pub fn read_preference(doc: &Document) -> Result<SelectionCriteria, String> {
    let mode = doc
        .get_str("mode")
        .map_err(|_| format!("readPreference without a mode: {doc}"))?;
    let mut options = ReadPreferenceOptions::default();
    let mut any = false;
    for (k, v) in doc {
        match k.as_str() {
            "mode" => {}
            "maxStalenessSeconds" => {
                let secs = as_i64(v).ok_or_else(|| format!("maxStalenessSeconds: {v}"))?;
                options.max_staleness = Some(Duration::from_secs(secs.max(0) as u64));
                any = true;
            }
            "tagSets" => {
                let sets: Vec<mongodb::options::TagSet> =
                    bson::from_bson(v.clone()).map_err(|e| format!("tagSets: {e}"))?;
                options.tag_sets = Some(sets);
                any = true;
            }
            other => return Err(format!("readPreference: unsupported field `{other}`")),
        }
    }
    let options = any.then_some(options);
    let pref = match mode.to_ascii_lowercase().as_str() {
        "primary" => ReadPreference::Primary,
        "secondary" => ReadPreference::Secondary { options },
        "primarypreferred" => ReadPreference::PrimaryPreferred { options },
        "secondarypreferred" => ReadPreference::SecondaryPreferred { options },
        "nearest" => ReadPreference::Nearest { options },
        other => return Err(format!("readPreference: unknown mode `{other}`")),
    };
    Ok(SelectionCriteria::ReadPreference(pref))
}

/// A short rendering of a value for messages (long values are cut).
pub fn short(value: &Bson) -> String {
    let s = value.to_string();
    if s.len() > 400 {
        let mut end = 400;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        format!("{}…", &s[..end])
    } else {
        s
    }
}
