//! A text index's specification (MongoDB's `FTSSpec`, version 3): its key pattern as MongoDB
//! rewrites it (`{_fts: "text", _ftsx: 1}` between the fields before and after the text
//! fields), weights, default language and language override field, with MongoDB's errors;
//! the strings of a document it indexes and the score of each term in them.

use super::language::Language;
use super::tokenizer::{Sensitivity, terms};
use crate::error::{ErrorCode, MongoError, Result};
use bson::{Bson, Document, doc};
use std::collections::BTreeMap;

/// The version of text indexes this server builds (and the only one it reads).
pub const TEXT_INDEX_VERSION: i32 = 3;
/// The wildcard "field" of `weights`: every string in the document.
pub const WILDCARD: &str = "$**";
/// Weights are in (0, MAX_WORD_WEIGHT).
const MAX_WORD_WEIGHT: i64 = 100_000;

/// A validated text index specification.
#[derive(Clone, Debug, PartialEq)]
pub struct TextIndex {
    /// Weight of each path (with `$**` for the wildcard), in path order as MongoDB shows them.
    pub weights: BTreeMap<String, i32>,
    pub default_language: Language,
    pub language_override: String,
    /// Key fields before the text fields (queries must give each an equality) and after them.
    pub prefix: Vec<String>,
    pub suffix: Vec<String>,
}

fn cannot_create(message: impl Into<String>) -> MongoError {
    MongoError::new(ErrorCode::CannotCreateIndex, message)
}

/// Whether an index's key pattern makes a text index: a `"text"` field, or MongoDB's own
/// `_fts` form.
pub fn is_text_key(key: &Document) -> bool {
    key.iter()
        .any(|(k, v)| k == "_fts" || matches!(v, Bson::String(s) if s == "text"))
}

fn reserved(path: &str) -> Result<()> {
    if path == "_fts" || path == "_ftsx" {
        return Err(cannot_create(
            "text index with reserved fields _fts/_ftsx not allowed",
        ));
    }
    Ok(())
}

fn integer_of(value: &Bson) -> Option<i64> {
    crate::document::numeric::Number::from_bson(value).map(|n| n.to_f64() as i64)
}

impl TextIndex {
    /// Parses a text index's key pattern and options (`spec` is the whole index
    /// specification); returns the key pattern MongoDB stores and the index.
    pub fn parse(key: &Document, spec: &Document) -> Result<(Document, TextIndex)> {
        let mut weights: BTreeMap<String, i64> = BTreeMap::new();
        let mut stored = Document::new();
        let (mut prefix, mut suffix) = (Vec::new(), Vec::new());
        // 0: before the text fields, 1: in them, 2: after them.
        let mut stage = 0;
        let mut fixed = false;
        for (path, value) in key {
            let is_text = matches!(value, Bson::String(s) if s == "text");
            if path == "_fts" {
                if !is_text {
                    return Err(cannot_create("expecting _fts:\"text\""));
                }
                fixed = true;
                stage = 1;
                stored.insert("_fts", "text");
                stored.insert("_ftsx", 1);
                continue;
            }
            if path == "_ftsx" {
                if !fixed || integer_of(value) != Some(1) {
                    return Err(cannot_create(if fixed {
                        "expecting _ftsx:1"
                    } else {
                        "expected _ftsx after _fts"
                    }));
                }
                stage = 2;
                continue;
            }
            reserved(path)?;
            if is_text {
                if stage == 2 || fixed {
                    return Err(cannot_create("'text' fields in index must all be adjacent"));
                }
                if stage == 0 {
                    stored.insert("_fts", "text");
                    stored.insert("_ftsx", 1);
                }
                stage = 1;
                weights.insert(path.clone(), 1);
                continue;
            }
            if !matches!(integer_of(value), Some(1 | -1)) || matches!(value, Bson::String(_)) {
                return Err(cannot_create(
                    "expected value 1 or -1 for non-text key in compound index",
                ));
            }
            if stage == 0 {
                prefix.push(path.clone());
            } else {
                stage = 2;
                suffix.push(path.clone());
            }
            stored.insert(path.clone(), value.clone());
        }
        if fixed && stage == 1 {
            return Err(cannot_create("expected _ftsx after _fts"));
        }
        match spec.get("weights") {
            None => {}
            Some(Bson::Document(given)) => {
                for (path, weight) in given {
                    let Some(weight) = integer_of(weight) else {
                        return Err(cannot_create("weight for text index needs numeric type"));
                    };
                    weights.insert(path.clone(), weight);
                }
            }
            Some(Bson::String(s)) if s == WILDCARD => {
                weights.insert(WILDCARD.into(), 1);
            }
            Some(_) => {
                return Err(cannot_create(
                    "text index option 'weights' must be an object",
                ));
            }
        }
        if weights.is_empty() {
            return Err(cannot_create(
                "text index option 'weights' must specify fields or the wildcard",
            ));
        }
        for (path, weight) in &weights {
            if *weight <= 0 || *weight >= MAX_WORD_WEIGHT {
                return Err(cannot_create(format!(
                    "text index weight must be in the exclusive interval (0,{MAX_WORD_WEIGHT}) but found: {weight}"
                )));
            }
            if path == WILDCARD {
                continue;
            }
            if path.is_empty() {
                return Err(cannot_create("weight cannot be on an empty field"));
            }
            for part in path.split('.') {
                if part.is_empty() {
                    return Err(cannot_create("weight cannot have empty path component"));
                }
                if part.starts_with('$') {
                    return Err(cannot_create(
                        "weight cannot have path component with $ prefix",
                    ));
                }
            }
        }
        let default_language = match spec.get("default_language") {
            None => Language::English,
            Some(Bson::String(name)) => Language::from_name(name)
                .ok_or_else(|| cannot_create("default_language is not valid"))?,
            Some(_) => return Err(cannot_create("default_language needs a string type")),
        };
        let language_override = match spec.get("language_override") {
            None => "language".to_string(),
            Some(Bson::String(field))
                if !field.is_empty() && !field.starts_with('$') && !field.contains('.') =>
            {
                field.clone()
            }
            Some(Bson::String(_)) => return Err(cannot_create("language_override is not valid")),
            Some(_) => return Err(cannot_create("language_override must be a string")),
        };
        match spec.get("textIndexVersion") {
            None => {}
            Some(v) => match integer_of(v) {
                None => {
                    return Err(cannot_create(
                        "text index option 'textIndexVersion' must be a number",
                    ));
                }
                Some(3) => {}
                Some(2) => {
                    return Err(MongoError::new(
                        ErrorCode::NotImplemented,
                        "text indexes of textIndexVersion 2 are not supported; use 3",
                    ));
                }
                Some(n) => return Err(cannot_create(format!("bad textIndexVersion: {n}"))),
            },
        }
        let index = TextIndex {
            weights: weights
                .into_iter()
                .map(|(path, weight)| (path, weight as i32))
                .collect(),
            default_language,
            language_override,
            prefix,
            suffix,
        };
        Ok((stored, index))
    }

    /// The options `listIndexes` shows after the key and name, as MongoDB orders them.
    pub fn options(&self) -> Document {
        let weights: Document = self
            .weights
            .iter()
            .map(|(path, weight)| (path.clone(), Bson::Int32(*weight)))
            .collect();
        doc! {
            "weights": weights,
            "default_language": self.default_language.name(),
            "language_override": &self.language_override,
            "textIndexVersion": TEXT_INDEX_VERSION,
        }
    }

    fn wildcard(&self) -> bool {
        self.weights.contains_key(WILDCARD)
    }

    /// The language of a (sub)document: its language override field, else `inherited`.
    fn language_of(&self, doc: &Document, inherited: Language) -> Result<Language> {
        match doc.get(&self.language_override) {
            None => Ok(inherited),
            Some(Bson::String(name)) => Language::from_name(name).ok_or_else(|| {
                MongoError::location(17262, format!("language override unsupported: {name}"))
            }),
            Some(_) => Err(MongoError::location(
                17261,
                "found language override field in document with non-string type",
            )),
        }
    }

    /// The strings of `doc` the index reads, each with its language and weight: strings (and
    /// strings in arrays) at weighted paths, or anywhere with the wildcard; a sub-document's
    /// language override field changes the language below it.
    pub fn strings<'a>(&self, doc: &'a Document) -> Result<Vec<(&'a str, Language, f64)>> {
        let mut out = Vec::new();
        let language = self.language_of(doc, self.default_language)?;
        self.walk_document(doc, "", language, &mut out)?;
        Ok(out)
    }

    fn walk_document<'a>(
        &self,
        doc: &'a Document,
        prefix: &str,
        language: Language,
        out: &mut Vec<(&'a str, Language, f64)>,
    ) -> Result<()> {
        for (field, value) in doc {
            let path = if prefix.is_empty() {
                field.clone()
            } else {
                format!("{prefix}.{field}")
            };
            self.walk_value(value, &path, language, out)?;
        }
        Ok(())
    }

    fn walk_value<'a>(
        &self,
        value: &'a Bson,
        path: &str,
        language: Language,
        out: &mut Vec<(&'a str, Language, f64)>,
    ) -> Result<()> {
        crate::depth::recurse(|| {
            let weight = self.weights.get(path).map(|w| *w as f64);
            let exact = weight.is_some() || self.wildcard();
            let partial = self.wildcard()
                || self.weights.keys().any(|w| {
                    w.len() > path.len() && w.starts_with(path) && w.as_bytes()[path.len()] == b'.'
                });
            match value {
                Bson::String(s) if exact => out.push((s, language, weight.unwrap_or(1.0))),
                Bson::Array(items) if exact || partial => {
                    for item in items {
                        self.walk_value(item, path, language, out)?;
                    }
                }
                Bson::Document(sub) if partial => {
                    let language = self.language_of(sub, language)?;
                    self.walk_document(sub, path, language, out)?;
                }
                _ => {}
            }
            Ok(())
        })
    }

    /// Each term of `doc` with its score, as MongoDB's `scoreDocument` (version 2 and 3)
    /// computes it: per string, a term seen n times among its N non-stop-word tokens scores
    /// `weight × (Σ_{i<n} 2^-i) × (0.5 + 0.5·n/N)`, × 1.1 when the term is the whole string;
    /// the strings' scores add up.
    pub fn scores(&self, doc: &Document) -> Result<BTreeMap<String, f64>> {
        let mut scores = BTreeMap::new();
        for (raw, language, weight) in self.strings(doc)? {
            let tokens = terms(raw, language, Sensitivity::default(), true);
            // term -> (count, freq, exp)
            let mut seen: BTreeMap<&str, (f64, f64, f64)> = BTreeMap::new();
            for term in &tokens {
                let entry = seen.entry(term.as_str()).or_insert((0.0, 0.0, 0.0));
                entry.2 = if entry.2 == 0.0 { 1.0 } else { entry.2 * 2.0 };
                entry.0 += 1.0;
                entry.1 += 1.0 / entry.2;
            }
            let n = tokens.len() as f64;
            for (term, (count, freq, _)) in seen {
                let coeff = 0.5 * count / n + 0.5;
                let adjustment = if raw.len() == term.len() && raw.eq_ignore_ascii_case(term) {
                    1.1
                } else {
                    1.0
                };
                *scores.entry(term.to_string()).or_insert(0.0) +=
                    weight * freq * coeff * adjustment;
            }
        }
        Ok(scores)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(key: Document, spec: Document) -> Result<(Document, TextIndex)> {
        TextIndex::parse(&key, &spec)
    }

    #[test]
    fn key_patterns_and_options_as_mongodb_stores_them() {
        let (key, index) =
            parse(doc! {"a": 1, "b": "text", "c": "text", "d": -1}, doc! {}).unwrap();
        assert_eq!(key, doc! {"a": 1, "_fts": "text", "_ftsx": 1, "d": -1});
        assert_eq!(index.prefix, ["a"]);
        assert_eq!(index.suffix, ["d"]);
        assert_eq!(
            index.options(),
            doc! {"weights": {"b": 1, "c": 1}, "default_language": "english",
            "language_override": "language", "textIndexVersion": 3}
        );
        // The stored form parses to itself.
        let spec = doc! {"weights": {"b": 1, "c": 1}};
        assert_eq!(parse(key.clone(), spec).unwrap().0, key);
        let (_, index) = parse(
            doc! {"$**": "text"},
            doc! {"weights": {"title": 10}, "default_language": "Spanish", "language_override": "idioma"},
        )
        .unwrap();
        assert_eq!(index.weights.get("$**"), Some(&1));
        assert_eq!(index.weights.get("title"), Some(&10));
        assert_eq!(index.default_language, Language::Spanish);
        assert_eq!(index.language_override, "idioma");
    }

    #[test]
    fn mongodb_errors() {
        let message =
            |key: Document, spec: Document| parse(key, spec).unwrap_err().message().to_string();
        assert_eq!(
            message(doc! {"a": "text", "b": 1, "c": "text"}, doc! {}),
            "'text' fields in index must all be adjacent"
        );
        assert_eq!(
            message(doc! {"a": "text", "b": "hashed"}, doc! {}),
            "expected value 1 or -1 for non-text key in compound index"
        );
        assert_eq!(
            message(doc! {"a": "text"}, doc! {"weights": {"a": 0}}),
            "text index weight must be in the exclusive interval (0,100000) but found: 0"
        );
        assert_eq!(
            message(doc! {"a": "text"}, doc! {"default_language": "klingon"}),
            "default_language is not valid"
        );
        assert_eq!(
            message(doc! {"a": "text"}, doc! {"language_override": "a.b"}),
            "language_override is not valid"
        );
        assert_eq!(
            message(doc! {"a": "text"}, doc! {"textIndexVersion": 9}),
            "bad textIndexVersion: 9"
        );
        assert_eq!(
            message(doc! {"_fts": "text", "_ftsx": 1}, doc! {}),
            "text index option 'weights' must specify fields or the wildcard"
        );
        assert_eq!(
            parse(doc! {"a": "text"}, doc! {"weights": {"a.$b": 1}})
                .unwrap_err()
                .code()
                .code(),
            67
        );
    }

    #[test]
    fn strings_languages_and_scores() {
        let (_, index) = parse(
            doc! {"title": "text", "tags": "text", "sub.body": "text"},
            doc! {"weights": {"title": 2}},
        )
        .unwrap();
        let doc = doc! {
            "title": "Coffee", "tags": ["cafe", 5, "coffee shop"], "other": "coffee",
            "sub": [{"body": "el café", "language": "es"}],
        };
        let strings = index.strings(&doc).unwrap();
        assert_eq!(
            strings,
            vec![
                ("Coffee", Language::English, 2.0),
                ("cafe", Language::English, 1.0),
                ("coffee shop", Language::English, 1.0),
                ("el café", Language::Spanish, 1.0),
            ]
        );
        let scores = index.scores(&doc).unwrap();
        // "Coffee", one token stemmed to "coffe" (not the whole field): 2 × 1 × 1;
        // "coffee shop": 1 × 1 × 0.75.
        assert!((scores["coffe"] - 2.75).abs() < 1e-9, "{scores:?}");
        // "cafe" is the whole field: × 1.1; "el café" in Spanish: a stop word, then "caf".
        assert!((scores["cafe"] - 1.1).abs() < 1e-9, "{scores:?}");
        assert!((scores["caf"] - 1.0).abs() < 1e-9, "{scores:?}");
        // Repeats count less each time: 1 + 1/2 + 1/4, × (0.5 + 0.5·3/4).
        let (_, plain) = parse(doc! {"t": "text"}, doc! {}).unwrap();
        let scores = plain.scores(&doc! {"t": "tea tea tea cake"}).unwrap();
        assert!((scores["tea"] - 1.75 * 0.875).abs() < 1e-9);
        assert_eq!(
            plain
                .strings(&doc! {"t": "x", "language": 1})
                .unwrap_err()
                .code()
                .code(),
            17261
        );
        assert_eq!(
            plain
                .strings(&doc! {"t": "x", "language": "xx"})
                .unwrap_err()
                .code()
                .code(),
            17262
        );
    }
}
