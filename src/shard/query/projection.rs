//! INTERIM: replaced by the query-engine branch.
use crate::error::Result;
use bson::Document;

#[derive(Clone, Debug)]
pub struct Projection {
    spec: Document,
}

impl Projection {
    pub fn parse(spec: &Document) -> Result<Projection> {
        Ok(Projection { spec: spec.clone() })
    }
    pub fn apply(&self, doc: &Document) -> Document {
        let include = self
            .spec
            .iter()
            .any(|(k, v)| k != "_id" && v.as_i32().unwrap_or(1) != 0);
        let mut out = Document::new();
        for (k, v) in doc {
            let flag = self
                .spec
                .get(k)
                .map(|f| f.as_i32().map(|x| x != 0).or(f.as_bool()).unwrap_or(true));
            let keep = match flag {
                Some(f) => f,
                None => !include || k == "_id",
            };
            if keep {
                out.insert(k.clone(), v.clone());
            }
        }
        out
    }
}
