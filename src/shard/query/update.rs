//! INTERIM: replaced by the query-engine branch.
use super::filter::Filter;
use crate::error::{MongoError, Result};
use bson::{Bson, Document};

#[derive(Clone, Debug)]
pub struct UpdateSpec {
    doc: Document,
    replacement: bool,
}

pub struct UpdateContext<'a> {
    pub is_upsert_insert: bool,
    pub now: bson::DateTime,
    pub matched_filter: Option<&'a Filter>,
}

impl UpdateSpec {
    pub fn parse(update: &Bson, _array_filters: Option<&[Document]>) -> Result<UpdateSpec> {
        match update {
            Bson::Document(d) => Ok(UpdateSpec {
                doc: d.clone(),
                replacement: !d.keys().any(|k| k.starts_with('$')),
            }),
            _ => Err(MongoError::bad_value("pipeline updates unsupported")),
        }
    }
    pub fn is_replacement(&self) -> bool {
        self.replacement
    }
    pub fn apply(&self, doc: &mut Document, _ctx: &UpdateContext) -> Result<bool> {
        let before = doc.clone();
        if self.replacement {
            let id = doc.get("_id").cloned();
            *doc = self.doc.clone();
            if let Some(id) = id {
                doc.insert("_id", id);
            }
        } else {
            for (op, args) in &self.doc {
                let Bson::Document(args) = args else { continue };
                for (k, v) in args {
                    match op.as_str() {
                        "$set" => {
                            doc.insert(k.clone(), v.clone());
                        }
                        "$unset" => {
                            doc.remove(k);
                        }
                        "$inc" => {
                            let cur = doc.get(k).and_then(|x| x.as_i32()).unwrap_or(0);
                            doc.insert(k.clone(), cur + v.as_i32().unwrap_or(0));
                        }
                        _ => {}
                    }
                }
            }
        }
        Ok(*doc != before)
    }
}

pub fn upsert_seed(filter: &Document) -> Result<Document> {
    Ok(filter
        .iter()
        .filter(|(k, _)| !k.starts_with('$'))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect())
}
