//! Index specifications as `createIndexes` takes them and `listIndexes` shows them: parsing,
//! validation with MongoDB's errors, default names, and what counts as "the same index".

use super::wildcard::{WildcardSpec, invalid_option, is_wildcard_field};
use crate::document::collation::Collation;
use crate::error::{ErrorCode, MongoError, Result};
use crate::query::filter::Filter;
use crate::query::geo::{FlatIndexParams, SphereIndexParams};
use crate::query::text::{TextIndex, is_text_key};
use bson::{Bson, Document, doc};
use std::sync::Arc;

/// How one field of a key pattern is indexed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FieldKind {
    Ascending,
    Descending,
    Hashed,
    /// `"2dsphere"`: S2 cells covering the geometry (`query::geo`).
    Sphere2d,
    /// `"2d"`: a legacy pair's cell in a plane grid (`query::geo::FlatIndexParams`).
    Flat2d,
    /// `$**` or `path.$**`: a `($_path, value)` key per leaf (`super::wildcard`).
    Wildcard,
}

impl FieldKind {
    /// Whether the key holds the field's value itself (in either direction), so that bounds
    /// on the value, sorts and covered projections may use it.
    pub fn holds_value(self) -> bool {
        matches!(self, FieldKind::Ascending | FieldKind::Descending)
    }
}

/// One field of a key pattern.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyField {
    pub path: String,
    pub kind: FieldKind,
}

/// A validated index specification.
#[derive(Clone, Debug)]
pub struct IndexSpec {
    pub name: String,
    pub key: Document,
    pub fields: Vec<KeyField>,
    pub unique: bool,
    pub sparse: bool,
    pub partial_filter: Option<(Document, Filter)>,
    pub expire_after_seconds: Option<i64>,
    pub hidden: bool,
    /// The collation the index's keys are in (`None`: simple): strings are stored as their
    /// collation keys, so equal strings are one key (a unique index refuses `"A"` beside `"a"`
    /// case-insensitively) and only a query of the same collation may bound them.
    pub collation: Option<Arc<Collation>>,
    /// A text index's specification; its key is then MongoDB's `{..., _fts: "text", _ftsx:
    /// 1, ...}` and `fields` name `_fts` and `_ftsx` for the term and its score.
    pub text: Option<Arc<TextIndex>>,
    /// A `2dsphere` index's covering parameters.
    pub sphere: Option<SphereIndexParams>,
    /// A `2d` index's grid.
    pub flat: Option<FlatIndexParams>,
    /// A wildcard index's paths.
    pub wildcard: Option<Arc<WildcardSpec>>,
    /// The document `listIndexes` shows.
    pub document: Document,
}

/// Options MongoDB accepts in an index specification; others are refused (InvalidIndexSpecificationOption).
const KNOWN_OPTIONS: [&str; 23] = [
    "key",
    "name",
    "v",
    "unique",
    "sparse",
    "partialFilterExpression",
    "expireAfterSeconds",
    "hidden",
    "background",
    "collation",
    "storageEngine",
    "wildcardProjection",
    "weights",
    "default_language",
    "language_override",
    "textIndexVersion",
    "2dsphereIndexVersion",
    "finestIndexedLevel",
    "coarsestIndexedLevel",
    "bits",
    "min",
    "max",
    "ns",
];

/// Most indexes a collection may have, as in MongoDB.
pub const MAX_INDEXES: usize = 64;

/// Largest key pattern, in bytes of BSON, MongoDB accepts.
const MAX_KEY_PATTERN_BYTES: usize = 2048;

fn cannot_create(message: impl Into<String>) -> MongoError {
    MongoError::new(ErrorCode::CannotCreateIndex, message)
}

/// The name MongoDB gives an index without one: `field_value` pairs joined by `_`.
pub fn default_name(key: &Document) -> String {
    let parts: Vec<String> = key
        .iter()
        .map(|(field, value)| {
            let value = match value {
                Bson::String(s) => s.clone(),
                Bson::Int32(n) => n.to_string(),
                Bson::Int64(n) => n.to_string(),
                Bson::Double(n) if n.fract() == 0.0 => (*n as i64).to_string(),
                other => crate::document::display::render(other),
            };
            format!("{field}_{value}")
        })
        .collect();
    parts.join("_")
}

fn parse_key(key: &Document) -> Result<Vec<KeyField>> {
    // MongoDB's first check of a key pattern: at most 2 KB of BSON.
    if bson::to_vec(key).map_or(true, |bytes| bytes.len() > MAX_KEY_PATTERN_BYTES) {
        return Err(cannot_create("Index key pattern too large."));
    }
    if key.is_empty() {
        return Err(cannot_create("Index keys cannot be an empty field."));
    }
    let mut fields = Vec::new();
    for (path, value) in key {
        if path.is_empty() || path.split('.').any(str::is_empty) {
            return Err(cannot_create(format!(
                "Index key contains an illegal field name: field name starts with '.'. {path}"
            )));
        }
        let wildcard_kind = is_wildcard_field(path) && !matches!(value, Bson::String(_));
        if (path.starts_with('$') || path.ends_with(".$**")) && !wildcard_kind {
            return Err(cannot_create(format!(
                "Index key contains an illegal field name: field name starts with '$'. {path}"
            )));
        }
        let kind = match value {
            Bson::Int32(_) | Bson::Int64(_) | Bson::Double(_) | Bson::Decimal128(_) => {
                let n = crate::document::numeric::Number::from_bson(value)
                    .map(|n| n.to_f64())
                    .unwrap_or(0.0);
                if n == 0.0 || n.is_nan() {
                    return Err(cannot_create(format!(
                        "Values in index key pattern can't be 0. Bad key: {path}: {}",
                        crate::document::display::render(value)
                    )));
                }
                if n > 0.0 {
                    FieldKind::Ascending
                } else {
                    FieldKind::Descending
                }
            }
            Bson::String(kind) => match kind.as_str() {
                "hashed" => FieldKind::Hashed,
                "2dsphere" => FieldKind::Sphere2d,
                "2d" => FieldKind::Flat2d,
                "text" | "geoHaystack" => {
                    return Err(cannot_create(format!(
                        "'{kind}' indexes are not supported yet (index key {path}: \"{kind}\")"
                    )));
                }
                other => return Err(cannot_create(format!("Unknown index plugin '{other}'"))),
            },
            other => {
                return Err(cannot_create(format!(
                    "Values in v:2 index key pattern cannot be of type {}. Only numbers > 0, numbers < 0, and strings are allowed.",
                    crate::document::types::type_name(other)
                )));
            }
        };
        let kind = if wildcard_kind {
            FieldKind::Wildcard
        } else {
            kind
        };
        fields.push(KeyField {
            path: path.clone(),
            kind,
        });
    }
    let wildcard = fields.iter().any(|f| f.kind == FieldKind::Wildcard);
    if wildcard && key.values().any(|v| matches!(v, Bson::String(_))) {
        return Err(cannot_create(
            "Can't use more than one index plugin for a single index.",
        ));
    }
    if fields
        .iter()
        .filter(|f| f.kind == FieldKind::Hashed)
        .count()
        > 1
    {
        return Err(cannot_create(
            "A maximum of one index field is allowed to be hashed",
        ));
    }
    Ok(fields)
}

/// The fields of a text index's stored key: `_fts` (the term) and `_ftsx` (its score) among
/// the others.
fn text_fields(key: &Document) -> Vec<KeyField> {
    key.iter()
        .map(|(path, value)| KeyField {
            path: path.clone(),
            kind: match value {
                Bson::Int32(n) if *n < 0 => FieldKind::Descending,
                Bson::Int64(n) if *n < 0 => FieldKind::Descending,
                Bson::Double(n) if *n < 0.0 => FieldKind::Descending,
                _ => FieldKind::Ascending,
            },
        })
        .collect()
}

/// A `2dsphere` index's version and levels (MongoDB's `initialize2dsphereParams`), or none
/// for another index, which may not carry them.
fn sphere_params(spec: &Document, fields: &[KeyField]) -> Result<Option<SphereIndexParams>> {
    let options = [
        "2dsphereIndexVersion",
        "finestIndexedLevel",
        "coarsestIndexedLevel",
    ];
    if !fields.iter().any(|f| f.kind == FieldKind::Sphere2d) {
        if let Some(option) = options.iter().find(|o| spec.contains_key(**o)) {
            return Err(MongoError::new(
                ErrorCode::InvalidIndexSpecificationOption,
                format!(
                    "The field '{option}' is not valid for an index specification. Specification: {spec}"
                ),
            ));
        }
        return Ok(None);
    }
    let integer = |option: &str| -> Result<Option<i64>> {
        match spec.get(option) {
            None => Ok(None),
            Some(v) => match crate::document::numeric::Number::from_bson(v).map(|n| n.to_f64()) {
                Some(n) if n.fract() == 0.0 && n.abs() < 1e15 => Ok(Some(n as i64)),
                _ => Err(MongoError::type_mismatch(format!(
                    "Expected field \"{option}\" to have numeric type, but found {}",
                    crate::document::types::type_name(v)
                ))),
            },
        }
    };
    let version = integer("2dsphereIndexVersion")?.unwrap_or(3);
    if !(1..=3).contains(&version) {
        return Err(cannot_create(format!(
            "unsupported geo index version {{ 2dsphereIndexVersion : {version} }}, only support versions: [1,2,3]"
        )));
    }
    if version == 1 {
        return Err(crate::query::values::not_implemented(
            "2dsphereIndexVersion 1 indexes are not supported",
        ));
    }
    let mut params = SphereIndexParams::defaults(version as i32);
    let finest = integer("finestIndexedLevel")?.unwrap_or(i64::from(params.finest_level));
    let coarsest = integer("coarsestIndexedLevel")?.unwrap_or(i64::from(params.coarsest_level));
    if coarsest < 0 {
        return Err(MongoError::location(
            16747,
            "coarsestIndexedLevel must be >= 0",
        ));
    }
    if finest > 30 {
        return Err(MongoError::location(
            16748,
            "finestIndexedLevel must be <= 30",
        ));
    }
    if finest < coarsest {
        return Err(MongoError::location(
            16749,
            "finestIndexedLevel must be >= coarsestIndexedLevel",
        ));
    }
    params.finest_level = finest as u8;
    params.coarsest_level = coarsest as u8;
    Ok(Some(params))
}

/// A `2d` index's grid (MongoDB's `GeoHashConverter` parameters: 26 bits over
/// `[-180, 180)` unless given), or none for another index, which may not carry them.
fn flat_params(spec: &Document, fields: &[KeyField]) -> Result<Option<FlatIndexParams>> {
    let flat_fields = fields
        .iter()
        .filter(|f| f.kind == FieldKind::Flat2d)
        .count();
    if flat_fields == 0 {
        if let Some(option) = ["bits", "min", "max"]
            .iter()
            .find(|o| spec.contains_key(**o))
        {
            return Err(MongoError::new(
                ErrorCode::InvalidIndexSpecificationOption,
                format!(
                    "The field '{option}' is not valid for an index specification. Specification: {spec}"
                ),
            ));
        }
        return Ok(None);
    }
    if flat_fields > 1 || fields.iter().any(|f| f.kind == FieldKind::Sphere2d) {
        return Err(MongoError::location(16800, "can't have 2 geo fields"));
    }
    if fields[0].kind != FieldKind::Flat2d {
        return Err(MongoError::location(16801, "2d has to be first in index"));
    }
    let number = |option: &str, default: f64| -> Result<f64> {
        match spec.get(option) {
            None => Ok(default),
            Some(v) => crate::query::geo::number(v).ok_or_else(|| {
                MongoError::type_mismatch(format!(
                    "geo index parameter '{option}' must be a number"
                ))
            }),
        }
    };
    let bits = number("bits", 26.0)?;
    if !(1.0..=32.0).contains(&bits) {
        return Err(MongoError::location(
            13028,
            "bits in geo index must be between 1 and 32",
        ));
    }
    let (min, max) = (number("min", -180.0)?, number("max", 180.0)?);
    if min >= max || !min.is_finite() || !max.is_finite() {
        return Err(MongoError::location(
            13067,
            "region for hashing must be valid",
        ));
    }
    Ok(Some(FlatIndexParams {
        bits: bits as u32,
        min,
        max,
    }))
}

impl IndexSpec {
    /// Parses one entry of `createIndexes.indexes`.
    pub fn parse(spec: &Document) -> Result<IndexSpec> {
        Self::parse_from(spec, false)
    }

    /// `stored`: the spec comes from this node's catalog (its collation is not checked
    /// against the locale table again: see `Collation::parse_stored`).
    fn parse_from(spec: &Document, stored: bool) -> Result<IndexSpec> {
        let key = match spec.get("key") {
            Some(Bson::Document(key)) => key.clone(),
            Some(_) => {
                return Err(MongoError::type_mismatch(
                    "The field 'key' must be an object",
                ));
            }
            None => {
                return Err(MongoError::new(
                    ErrorCode::FailedToParse,
                    "The 'key' field is a required property of an index specification",
                ));
            }
        };
        for option in spec.keys() {
            if !KNOWN_OPTIONS.contains(&option.as_str()) {
                return Err(MongoError::new(
                    ErrorCode::InvalidIndexSpecificationOption,
                    format!(
                        "The field '{option}' is not valid for an index specification. Specification: {spec}"
                    ),
                ));
            }
        }
        let text = match is_text_key(&key) {
            true => Some(TextIndex::parse(&key, spec)?),
            false => None,
        };
        let fields = match &text {
            Some((stored, _)) => text_fields(stored),
            None => parse_key(&key)?,
        };
        let name = match spec.get("name") {
            Some(Bson::String(name)) if !name.is_empty() => name.clone(),
            Some(Bson::String(_)) => return Err(cannot_create("The index name cannot be empty")),
            Some(_) => {
                return Err(MongoError::type_mismatch(
                    "The field 'name' must be a string",
                ));
            }
            None => default_name(&key),
        };
        let flag = |option: &str| -> Result<bool> {
            match spec.get(option) {
                None => Ok(false),
                Some(Bson::Boolean(b)) => Ok(*b),
                Some(Bson::Int32(n)) => Ok(*n != 0),
                Some(Bson::Int64(n)) => Ok(*n != 0),
                Some(Bson::Double(n)) => Ok(*n != 0.0),
                Some(_) => Err(MongoError::type_mismatch(format!(
                    "The field '{option}' must be a boolean"
                ))),
            }
        };
        let unique = flag("unique")?;
        let sparse = flag("sparse")?;
        let hidden = flag("hidden")?;
        let wildcard = match &text {
            None => WildcardSpec::parse(&key, spec)?.map(Arc::new),
            Some(_) => {
                // The text index's `$**` is not a wildcard key: no projection applies to it.
                WildcardSpec::parse(&Document::new(), spec)?;
                None
            }
        };
        if wildcard.is_some() {
            if sparse {
                return Err(invalid_option("sparse"));
            }
            if unique {
                return Err(invalid_option("unique"));
            }
            if spec.contains_key("expireAfterSeconds") {
                return Err(invalid_option("expireAfterSeconds"));
            }
        }
        let collation = match (stored, spec.get("collation")) {
            (true, Some(Bson::Document(stored))) => {
                Some(Arc::new(Collation::parse_stored(stored)?))
            }
            (_, given) => crate::command::parse_collation(given)?,
        }
        .filter(|collation| !collation.is_simple());
        if let (Some(collation), Some(_)) = (&collation, &text) {
            return Err(cannot_create(format!(
                "Index type 'text' does not support collation: {}",
                collation.spec()
            )));
        }
        let (key, text) = match text {
            Some((stored, text)) => (stored, Some(Arc::new(text))),
            None => (key, None),
        };
        let partial_filter = match spec.get("partialFilterExpression") {
            None => None,
            Some(Bson::Document(expr)) => {
                let filter = Filter::parse_restricted_under(expr, collation.clone())?;
                Some((expr.clone(), filter))
            }
            Some(_) => {
                return Err(MongoError::type_mismatch(
                    "The field 'partialFilterExpression' must be an object",
                ));
            }
        };
        if sparse && partial_filter.is_some() {
            return Err(cannot_create(
                "cannot mix \"partialFilterExpression\" and \"sparse\" options",
            ));
        }
        let expire_after_seconds = match spec.get("expireAfterSeconds") {
            None => None,
            Some(v) => match crate::document::numeric::Number::from_bson(v).map(|n| n.to_f64()) {
                Some(s) if s.is_finite() && s >= 0.0 && s <= i32::MAX as f64 => Some(s as i64),
                _ => {
                    return Err(cannot_create(
                        "TTL index 'expireAfterSeconds' option must be within an acceptable range, try a lower number",
                    ));
                }
            },
        };
        if expire_after_seconds.is_some() && fields.len() > 1 {
            return Err(cannot_create(
                "TTL indexes are single-field indexes, compound indexes do not support TTL.",
            ));
        }
        let is_id =
            key == doc! {"_id": 1} || key == doc! {"_id": 1.0} || key == doc! {"_id": 1_i64};
        if name == "_id_" && !is_id {
            return Err(MongoError::new(
                ErrorCode::BadValue,
                "The index name '_id_' is reserved for the _id index, which must have key pattern {_id: 1}",
            ));
        }
        if is_id && (sparse || partial_filter.is_some() || expire_after_seconds.is_some() || hidden)
        {
            return Err(MongoError::new(
                ErrorCode::InvalidIndexSpecificationOption,
                "The _id index cannot be sparse, partial, TTL or hidden",
            ));
        }
        // Checked where MongoDB meets it: once the spec is valid, when the key's ordering is
        // made (as a sort's is).
        if fields.len() > crate::query::sort::MAX_COMPOUND_KEYS {
            return Err(MongoError::location(13103, "too many compound keys"));
        }
        let sphere = sphere_params(spec, &fields)?;
        let flat = flat_params(spec, &fields)?;
        let mut document = doc! {"v": 2, "key": key.clone(), "name": &name};
        for option in ["unique", "sparse", "hidden"] {
            if flag(option)? {
                document.insert(option, true);
            }
        }
        if let Some((expr, _)) = &partial_filter {
            document.insert("partialFilterExpression", expr.clone());
        }
        if let Some(seconds) = expire_after_seconds {
            document.insert("expireAfterSeconds", seconds as i32);
        }
        if let Some(collation) = &collation {
            document.insert("collation", collation.spec());
        }
        if let Some(text) = &text {
            document.extend(text.options());
        }
        if let (Some(_), Some(projection)) = (&wildcard, spec.get("wildcardProjection")) {
            document.insert("wildcardProjection", projection.clone());
        }
        if flat.is_some() {
            for option in ["bits", "min", "max"] {
                if let Some(value) = spec.get(option) {
                    document.insert(option, value.clone());
                }
            }
        }
        if let Some(params) = &sphere {
            document.insert("2dsphereIndexVersion", params.version);
            for option in ["finestIndexedLevel", "coarsestIndexedLevel"] {
                if let Some(value) = spec.get(option) {
                    document.insert(option, value.clone());
                }
            }
        }
        Ok(IndexSpec {
            name,
            key,
            fields,
            unique,
            sparse,
            partial_filter,
            expire_after_seconds,
            hidden,
            collation,
            text,
            sphere,
            flat,
            wildcard,
            document,
        })
    }

    /// Rebuilds a spec from the document the catalog stored.
    pub fn from_catalog(document: &Document) -> Result<IndexSpec> {
        let mut spec = IndexSpec::parse_from(document, true)?;
        spec.document = document.clone();
        Ok(spec)
    }

    /// Whether `other` asks for this same index (same key and options), which `createIndexes`
    /// treats as already existing.
    pub fn same_index(&self, other: &IndexSpec) -> bool {
        self.key == other.key
            && self.unique == other.unique
            && self.sparse == other.sparse
            && self.partial_filter.as_ref().map(|p| &p.0)
                == other.partial_filter.as_ref().map(|p| &p.0)
            && self.expire_after_seconds == other.expire_after_seconds
            && self.hidden == other.hidden
            && self.collation == other.collation
            && self.text == other.text
            && self.sphere == other.sphere
            && self.flat == other.flat
            && self.wildcard == other.wildcard
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(spec: Document) -> i32 {
        IndexSpec::parse(&spec).unwrap_err().code().code()
    }

    #[test]
    fn names_and_kinds() {
        assert_eq!(default_name(&doc! {"a": 1, "b": -1}), "a_1_b_-1");
        assert_eq!(
            default_name(&doc! {"fieldA": 1, "fieldB": "hashed", "fieldC": -1}),
            "fieldA_1_fieldB_hashed_fieldC_-1"
        );
        let spec = IndexSpec::parse(&doc! {"key": {"a.b": -1, "c": "hashed"}}).unwrap();
        assert_eq!(spec.name, "a.b_-1_c_hashed");
        assert_eq!(spec.fields[0].kind, FieldKind::Descending);
        assert_eq!(spec.fields[1].kind, FieldKind::Hashed);
        assert_eq!(
            spec.document,
            doc! {"v": 2, "key": {"a.b": -1, "c": "hashed"}, "name": "a.b_-1_c_hashed"}
        );
    }

    #[test]
    fn mongodb_errors() {
        assert_eq!(code(doc! {"key": {}}), 67);
        assert_eq!(code(doc! {"key": {"a": 0}}), 67);
        assert_eq!(code(doc! {"key": {"a": 1}, "2dsphereIndexVersion": 3}), 197);
        assert_eq!(
            code(doc! {"key": {"a": "2dsphere"}, "2dsphereIndexVersion": 4}),
            67
        );
        assert_eq!(
            code(doc! {"key": {"a": "2dsphere"}, "finestIndexedLevel": 31}),
            16748
        );
        assert_eq!(
            code(
                doc! {"key": {"a": "2dsphere"}, "finestIndexedLevel": 3, "coarsestIndexedLevel": 5}
            ),
            16749
        );
        assert_eq!(code(doc! {"key": {"a": "bogus"}}), 67);
        assert_eq!(code(doc! {"key": {"a": 1}, "bogus": 1}), 197);
        assert_eq!(
            code(doc! {"key": {"a": 1}, "sparse": true, "partialFilterExpression": {"a": 1}}),
            67
        );
        assert_eq!(
            code(doc! {"key": {"a": 1, "b": 1}, "expireAfterSeconds": 10}),
            67
        );
        assert_eq!(code(doc! {"key": {"a": "hashed", "b": "hashed"}}), 67);
    }

    #[test]
    fn text_indexes_as_mongodb_shows_them() {
        let spec =
            IndexSpec::parse(&doc! {"key": {"a": 1, "b": "text"}, "weights": {"c": 5}}).unwrap();
        assert_eq!(spec.name, "a_1_b_text");
        assert_eq!(spec.key, doc! {"a": 1, "_fts": "text", "_ftsx": 1});
        assert_eq!(
            spec.document,
            doc! {"v": 2, "key": {"a": 1, "_fts": "text", "_ftsx": 1}, "name": "a_1_b_text",
            "weights": {"b": 1, "c": 5}, "default_language": "english",
            "language_override": "language", "textIndexVersion": 3}
        );
        let stored = IndexSpec::from_catalog(&spec.document).unwrap();
        assert!(stored.same_index(&spec));
        let other = IndexSpec::parse(&doc! {"key": {"a": 1, "b": "text"}}).unwrap();
        assert!(!other.same_index(&spec));
        assert_eq!(
            code(doc! {"key": {"b": "text"}, "collation": {"locale": "fr"}}),
            67
        );
    }

    #[test]
    fn sphere_indexes_record_their_version() {
        let spec = IndexSpec::parse(&doc! {"key": {"loc": "2dsphere", "a": 1}}).unwrap();
        assert_eq!(spec.fields[0].kind, FieldKind::Sphere2d);
        assert_eq!(
            spec.document,
            doc! {"v": 2, "key": {"loc": "2dsphere", "a": 1}, "name": "loc_2dsphere_a_1", "2dsphereIndexVersion": 3}
        );
        let v2 = IndexSpec::parse(&doc! {"key": {"loc": "2dsphere"}, "2dsphereIndexVersion": 2})
            .unwrap();
        assert_eq!(v2.sphere.unwrap().max_cells, 50);
    }

    #[test]
    fn flat_indexes_validate_their_grid() {
        let spec = IndexSpec::parse(&doc! {"key": {"p": "2d", "a": 1}, "bits": 20}).unwrap();
        assert_eq!(spec.fields[0].kind, FieldKind::Flat2d);
        assert_eq!(spec.flat.unwrap().bits, 20);
        assert_eq!(
            spec.document,
            doc! {"v": 2, "key": {"p": "2d", "a": 1}, "name": "p_2d_a_1", "bits": 20}
        );
        assert_eq!(code(doc! {"key": {"p": "2d"}, "bits": 0}), 13028);
        assert_eq!(code(doc! {"key": {"p": "2d"}, "min": 5, "max": 5}), 13067);
        assert_eq!(code(doc! {"key": {"p": "2d", "q": "2d"}}), 16800);
        assert_eq!(code(doc! {"key": {"a": 1, "p": "2d"}}), 16801);
        assert_eq!(code(doc! {"key": {"a": 1}, "bits": 3}), 197);
    }

    #[test]
    fn wildcard_indexes_as_mongodb_shows_them() {
        let spec =
            IndexSpec::parse(&doc! {"key": {"$**": 1}, "wildcardProjection": {"a": 0}}).unwrap();
        assert_eq!(spec.name, "$**_1");
        assert_eq!(spec.fields[0].kind, FieldKind::Wildcard);
        assert_eq!(
            spec.document,
            doc! {"v": 2, "key": {"$**": 1}, "name": "$**_1", "wildcardProjection": {"a": 0}}
        );
        let stored = IndexSpec::from_catalog(&spec.document).unwrap();
        assert!(stored.same_index(&spec));
        let other = IndexSpec::parse(&doc! {"key": {"$**": 1}}).unwrap();
        assert!(!other.same_index(&spec));
        assert!(IndexSpec::parse(&doc! {"key": {"a.$**": -1}, "hidden": true}).is_ok());
        assert!(
            IndexSpec::parse(&doc! {"key": {"$**": "text"}})
                .unwrap()
                .text
                .is_some()
        );
        for refused in [
            doc! {"key": {"$**": 1}, "unique": true},
            doc! {"key": {"$**": 1}, "sparse": true},
            doc! {"key": {"$**": 1}, "expireAfterSeconds": 5},
            doc! {"key": {"$**": 1, "a": "hashed"}},
            doc! {"key": {"$**": "hashed"}},
            doc! {"key": {"a.$**": "2dsphere"}},
        ] {
            assert_eq!(code(refused.clone()), 67, "{refused}");
        }
        assert_eq!(
            code(doc! {"key": {"t": "text"}, "wildcardProjection": {"a": 1}}),
            2
        );
    }

    #[test]
    fn key_pattern_limits() {
        let key = |n: usize, width: usize| -> Document {
            (0..n)
                .map(|i| (format!("f{i:0width$}"), Bson::Int32(1)))
                .collect()
        };
        assert!(IndexSpec::parse(&doc! {"key": key(32, 2)}).is_ok());
        let err = IndexSpec::parse(&doc! {"key": key(33, 2)}).unwrap_err();
        assert_eq!(
            (err.code().code(), err.message()),
            (13103, "too many compound keys")
        );
        // Past 2 KB of BSON, whatever the field count (and before any other check).
        let err = IndexSpec::parse(&doc! {"key": key(3, 1000)}).unwrap_err();
        assert_eq!(
            (err.code(), err.message()),
            (ErrorCode::CannotCreateIndex, "Index key pattern too large.")
        );
        let mut huge_and_bad = key(300, 2);
        huge_and_bad.insert("z", 0);
        let err = IndexSpec::parse(&doc! {"key": huge_and_bad}).unwrap_err();
        assert_eq!(err.message(), "Index key pattern too large.");
    }

    #[test]
    fn same_index_compares_key_and_options() {
        let a = IndexSpec::parse(&doc! {"key": {"a": 1}, "name": "x"}).unwrap();
        let b = IndexSpec::parse(&doc! {"key": {"a": 1}, "name": "y"}).unwrap();
        let c = IndexSpec::parse(&doc! {"key": {"a": 1}, "unique": true}).unwrap();
        assert!(a.same_index(&b));
        assert!(!a.same_index(&c));
    }
}
