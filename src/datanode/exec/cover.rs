//! Covered queries: whether one index scan's keys hold everything a find needs (its filter,
//! projection, sort key and the shard's ownership check), and the document of index fields
//! each entry stands for, read from the key and its type bits or, when they do not determine a
//! value (entries written before type bits existed; see `document::key_decode`), from the
//! document itself.

use super::plan::{AccessPath, IndexScanPlan, fields_of};
use crate::catalog::OwnershipFilter;
use crate::datanode::index::FieldKind;
use crate::document::key_decode::{KeyValue, decode_key};
use crate::document::path::get_path;
use crate::query::sort::SortSpec;
use bson::{Bson, Document};

/// What a find asks beyond its access path, as far as covering goes.
pub struct CoverRequest<'a> {
    pub filter: &'a Document,
    /// The projection specification (without a router's `$sortKey`).
    pub projection: Option<&'a Document>,
    pub sort: Option<&'a SortSpec>,
    pub return_key: bool,
    pub show_record_id: bool,
    pub ownership: Option<&'a OwnershipFilter>,
}

/// A scan whose entries answer the query without their documents.
#[derive(Clone, Debug, PartialEq)]
pub struct Covered {
    /// Per key component: its path when the query needs it, and whether it is descending.
    components: Vec<(Option<String>, bool)>,
}

impl Covered {
    /// Whether `path` covers the query `req`; `Err` says why not (for tests and reasoning).
    pub fn analyze(path: &AccessPath, req: &CoverRequest<'_>) -> Result<Covered, &'static str> {
        let AccessPath::IndexScan(plan) = path else {
            return Err("only a single index scan can cover");
        };
        Self::for_scan(plan, req)
    }

    fn for_scan(plan: &IndexScanPlan, req: &CoverRequest<'_>) -> Result<Covered, &'static str> {
        if plan.index.multikey {
            return Err("a multikey index holds array elements, not the arrays");
        }
        if plan.wildcard.is_some() {
            return Err("a wildcard index holds leaves, not the documents above them");
        }
        if super::plan::index_collation(&plan.index).is_some() {
            return Err("an index with a collation holds collation keys, not the strings");
        }
        if req.return_key || req.show_record_id {
            return Err("returnKey and showRecordId are not covered projections");
        }
        let fields = fields_of(&plan.index);
        let paths: Vec<&str> = fields
            .iter()
            .filter(|f| f.kind.holds_value())
            .map(|f| f.path.as_str())
            .collect();
        for (i, a) in paths.iter().enumerate() {
            if a.split('.').any(|part| part.parse::<usize>().is_ok()) {
                return Err("a positional path may run through an array");
            }
            for b in &paths[i + 1..] {
                if a == b || a.starts_with(&format!("{b}.")) || b.starts_with(&format!("{a}.")) {
                    return Err("overlapping index paths");
                }
            }
        }
        let mut needed: Vec<String> = Vec::new();
        needed.extend(projected_fields(req.projection)?);
        filter_paths(req.filter, &mut needed)?;
        if let Some(sort) = req.sort.filter(|s| !s.is_empty()) {
            if !plan.provides_sort {
                return Err("a blocking sort reads documents");
            }
            needed.extend(sort.fields().map(|(path, _)| path.to_string()));
        }
        if let Some(ownership) = req.ownership {
            needed.extend(
                ownership
                    .key_pattern()
                    .fields()
                    .iter()
                    .map(|f| f.path.clone()),
            );
        }
        if needed.iter().any(|n| !paths.contains(&n.as_str())) {
            return Err("a needed field is not in the index");
        }
        let components = fields
            .iter()
            .map(|f| {
                let used = f.kind.holds_value() && needed.contains(&f.path);
                (
                    used.then(|| f.path.clone()),
                    f.kind == FieldKind::Descending,
                )
            })
            .collect();
        Ok(Covered { components })
    }

    /// The document of needed index fields an entry's key and type bits (`None`: not
    /// recorded) stand for, in key-pattern order, without the fields the document lacks;
    /// `None` when a needed value is not determined.
    pub fn from_key(&self, key: &[u8], types: Option<&[u8]>) -> Option<Document> {
        let descending: Vec<bool> = self.components.iter().map(|(_, d)| *d).collect();
        let values = decode_key(key, &descending, types)?;
        let mut doc = Document::new();
        for ((path, _), value) in self.components.iter().zip(values) {
            if let Some(path) = path {
                match value {
                    KeyValue::Value(value) => set_path(&mut doc, path, value),
                    KeyValue::Missing => {}
                    KeyValue::Unknown => return None,
                }
            }
        }
        Some(doc)
    }

    /// The same document, taken from the entry's full document.
    pub fn from_document(&self, full: &Document) -> Document {
        let mut doc = Document::new();
        for (path, _) in &self.components {
            if let Some(path) = path {
                if let Some(value) = get_path(full, path) {
                    set_path(&mut doc, path, value.clone());
                }
            }
        }
        doc
    }
}

/// The fields a simple inclusion projection keeps (`_id` unless excluded); `Err` for any other
/// projection (exclusions, dotted paths, operators, computed fields), which MongoDB does not
/// answer with PROJECTION_COVERED.
fn projected_fields(projection: Option<&Document>) -> Result<Vec<String>, &'static str> {
    let Some(projection) = projection else {
        return Err("without a projection the whole document is returned");
    };
    let mut fields = Vec::new();
    let mut id = true;
    for (name, value) in projection {
        let included = match value {
            Bson::Boolean(b) => *b,
            Bson::Int32(n) => *n != 0,
            Bson::Int64(n) => *n != 0,
            Bson::Double(n) => *n != 0.0,
            _ => return Err("a projection operator or computed field"),
        };
        if name.contains('.') || name.starts_with('$') {
            return Err("a dotted or operator projection path");
        }
        if name == "_id" {
            id = included;
        } else if included {
            fields.push(name.clone());
        } else {
            return Err("an exclusion projection returns unindexed fields");
        }
    }
    if id {
        fields.push("_id".to_string());
    }
    if fields.is_empty() {
        return Err("an exclusion projection returns unindexed fields");
    }
    Ok(fields)
}

/// The paths a filter reads, refusing operators that read beyond their own path.
fn filter_paths(filter: &Document, out: &mut Vec<String>) -> Result<(), &'static str> {
    for (key, value) in filter {
        match key.as_str() {
            "$comment" => {}
            "$and" | "$or" | "$nor" => {
                let Bson::Array(branches) = value else {
                    return Err("malformed logical operator");
                };
                for branch in branches {
                    let Bson::Document(branch) = branch else {
                        return Err("malformed logical operator");
                    };
                    filter_paths(branch, out)?;
                }
            }
            k if k.starts_with('$') => return Err("an operator that reads the whole document"),
            path => out.push(path.to_string()),
        }
    }
    Ok(())
}

/// Sets a dotted path, creating the documents on the way (the index paths never overlap).
pub(super) fn set_path(doc: &mut Document, path: &str, value: Bson) {
    match path.split_once('.') {
        None => {
            doc.insert(path, value);
        }
        Some((head, rest)) => {
            if !matches!(doc.get(head), Some(Bson::Document(_))) {
                doc.insert(head, Document::new());
            }
            if let Some(Bson::Document(inner)) = doc.get_mut(head) {
                set_path(inner, rest, value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::datanode::exec::plan::QueryShape;
    use crate::datanode::storage::CollectionMeta;
    use crate::document::keystring::encode_key;
    use crate::document::type_bits::TypeBits;
    use bson::{DateTime, doc, oid::ObjectId};

    use crate::datanode::exec::test_catalog::{collection as coll, index};

    fn analyze(
        coll: &CollectionMeta,
        filter: Document,
        projection: Option<Document>,
        sort: Option<Document>,
        hint: Option<Bson>,
    ) -> Result<Covered, &'static str> {
        let sort = sort.map(|s| SortSpec::parse(&s).unwrap());
        let path = AccessPath::choose(
            coll,
            &QueryShape {
                sort: sort.as_ref(),
                hint: hint.as_ref(),
                ..QueryShape::filter(&filter)
            },
        )
        .unwrap();
        Covered::analyze(
            &path,
            &CoverRequest {
                filter: &filter,
                projection: projection.as_ref(),
                sort: sort.as_ref(),
                return_key: false,
                show_record_id: false,
                ownership: None,
            },
        )
    }

    #[test]
    fn index_fields_alone_are_covered() {
        let c = coll(vec![index(doc! {"a": 1, "b": -1}, 2, false)]);
        let proj = Some(doc! {"b": 1, "_id": 0});
        assert!(analyze(&c, doc! {"a": {"$gt": 1}}, proj.clone(), None, None).is_ok());
        // Every filter path in the index, inside logical operators too.
        let filter = doc! {"a": 1, "$or": [{"b": "x"}, {"b": {"$exists": false}}]};
        assert!(analyze(&c, filter, proj.clone(), None, None).is_ok());
        // A sort the index delivers.
        let sorted = analyze(&c, doc! {"a": 1}, proj, Some(doc! {"b": -1}), None);
        assert!(sorted.is_ok());
        // The `_id` index covers `_id`.
        let ids = analyze(
            &c,
            doc! {},
            Some(doc! {"_id": 1}),
            None,
            Some(Bson::from(doc! {"_id": 1})),
        );
        assert!(ids.is_ok());
    }

    #[test]
    fn what_needs_the_document_is_not_covered() {
        let c = coll(vec![index(doc! {"a": 1, "b": 1}, 2, false)]);
        let filter = doc! {"a": 1};
        let why = |projection: Document| analyze(&c, filter.clone(), Some(projection), None, None);
        // `_id` is returned by default and is not in the index.
        assert_eq!(
            why(doc! {"a": 1}),
            Err("a needed field is not in the index")
        );
        assert_eq!(
            why(doc! {"a": 1, "c": 1, "_id": 0}),
            Err("a needed field is not in the index")
        );
        assert_eq!(
            why(doc! {"b": 0}),
            Err("an exclusion projection returns unindexed fields")
        );
        assert_eq!(
            why(doc! {"_id": 0}),
            Err("an exclusion projection returns unindexed fields")
        );
        assert_eq!(
            why(doc! {"a.x": 1, "_id": 0}),
            Err("a dotted or operator projection path")
        );
        assert_eq!(
            why(doc! {"a": {"$slice": 1}, "_id": 0}),
            Err("a projection operator or computed field")
        );
        assert_eq!(
            why(doc! {"x": "$a", "_id": 0}),
            Err("a projection operator or computed field")
        );
        assert_eq!(
            analyze(&c, filter.clone(), None, None, None),
            Err("without a projection the whole document is returned")
        );
        let proj = Some(doc! {"a": 1, "_id": 0});
        // A filter on an unindexed field, or reading the whole document.
        assert!(analyze(&c, doc! {"a": 1, "z": 2}, proj.clone(), None, None).is_err());
        assert_eq!(
            analyze(
                &c,
                doc! {"a": 1, "$expr": {"$eq": ["$a", 1]}},
                proj.clone(),
                None,
                None
            ),
            Err("an operator that reads the whole document")
        );
        // A sort the index does not deliver is a blocking sort over documents.
        assert_eq!(
            analyze(
                &c,
                doc! {"a": {"$gt": 1}},
                proj.clone(),
                Some(doc! {"b": 1}),
                None
            ),
            Err("a blocking sort reads documents")
        );
        // A collection scan, and a union of scans.
        assert!(analyze(&c, doc! {"z": 1}, proj.clone(), None, None).is_err());
    }

    #[test]
    fn multikey_hashed_and_positional_indexes_do_not_cover() {
        let proj = Some(doc! {"a": 1, "_id": 0});
        let multikey = coll(vec![index(doc! {"a": 1}, 2, true)]);
        assert_eq!(
            analyze(&multikey, doc! {"a": 1}, proj.clone(), None, None),
            Err("a multikey index holds array elements, not the arrays")
        );
        let hashed = coll(vec![index(doc! {"a": "hashed"}, 2, false)]);
        assert_eq!(
            analyze(&hashed, doc! {"a": 1}, proj.clone(), None, None),
            Err("a needed field is not in the index")
        );
        let positional = coll(vec![index(doc! {"a.0": 1, "a": 1}, 2, false)]);
        assert!(analyze(&positional, doc! {"a.0": 1}, proj, None, None).is_err());
    }

    fn ownership(key: Document) -> OwnershipFilter {
        crate::catalog::owning_every_chunk(key, "s0")
    }

    #[test]
    fn shard_key_fields_must_be_in_the_index() {
        let c = coll(vec![index(doc! {"a": 1, "k": 1}, 2, false)]);
        let filter = doc! {"a": 1};
        let projection = doc! {"a": 1, "_id": 0};
        let path = AccessPath::choose(&c, &QueryShape::filter(&filter)).unwrap();
        let covers = |key: Document| {
            let owner = ownership(key);
            Covered::analyze(
                &path,
                &CoverRequest {
                    filter: &filter,
                    projection: Some(&projection),
                    sort: None,
                    return_key: false,
                    show_record_id: false,
                    ownership: Some(&owner),
                },
            )
        };
        // The shard filters orphans by the shard key: it must come from the keys too.
        assert!(covers(doc! {"k": 1}).is_ok());
        assert!(covers(doc! {"k": "hashed"}).is_ok());
        assert_eq!(
            covers(doc! {"z": 1}),
            Err("a needed field is not in the index")
        );
    }

    #[test]
    fn documents_come_from_keys_in_key_pattern_order() {
        let c = coll(vec![index(doc! {"d": -1, "o.id": 1, "n": 1}, 2, false)]);
        let covered = analyze(
            &c,
            doc! {"o.id": {"$exists": true}},
            Some(doc! {"d": 1, "_id": 0}),
            None,
            Some(Bson::String("d_-1_o.id_1_n_1".into())),
        )
        .unwrap();
        let oid = ObjectId::from_bytes([3; 12]);
        let date = DateTime::from_millis(77);
        let key = encode_key([
            (&Bson::DateTime(date), true),
            (&Bson::ObjectId(oid), false),
            (&Bson::Int32(5), false),
        ]);
        // `n` is not needed, so its number (whose type the key loses) does not matter.
        assert_eq!(
            covered.from_key(&key, None),
            Some(doc! {"d": date, "o": {"id": oid}})
        );
        // Without type bits a needed number or a null (maybe a missing field) is unknown.
        let bits = |values: [(&Bson, bool); 3]| {
            let mut bits = TypeBits::new();
            for (value, missing) in values {
                bits.push_component(value, missing);
            }
            bits.into_bytes()
        };
        let number = [
            (&Bson::Double(-0.0), true),
            (&Bson::ObjectId(oid), false),
            (&Bson::Int32(5), false),
        ];
        let key = encode_key(number);
        assert_eq!(covered.from_key(&key, None), None);
        // With them, the exact value.
        let types = bits(number.map(|(v, _)| (v, false)));
        let back = covered.from_key(&key, Some(&types)).unwrap();
        assert!(matches!(back.get("d"), Some(Bson::Double(d)) if d.is_sign_negative()));
        let null = [
            (&Bson::DateTime(date), true),
            (&Bson::Null, false),
            (&Bson::Int32(5), false),
        ];
        let key = encode_key(null);
        assert_eq!(covered.from_key(&key, None), None);
        let present = bits(null.map(|(v, _)| (v, false)));
        assert_eq!(
            covered.from_key(&key, Some(&present)),
            Some(doc! {"d": date, "o": {"id": null}})
        );
        // A missing field stays missing, as in the document.
        let missing = bits([(null[0].0, false), (&Bson::Null, true), (null[2].0, false)]);
        assert_eq!(
            covered.from_key(&key, Some(&missing)),
            Some(doc! {"d": date})
        );
        let full = doc! {"_id": 1, "n": 5, "o": {"x": 1, "id": oid}, "d": 1.5};
        assert_eq!(
            covered.from_document(&full),
            doc! {"d": 1.5, "o": {"id": oid}}
        );
        assert_eq!(covered.from_document(&doc! {"_id": 1}), doc! {});
    }
}
