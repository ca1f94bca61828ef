//! What an aggregation pipeline's stages need beyond reading the collection it runs on, as
//! MongoDB's stages declare it: `find` on every collection `$lookup`, `$graphLookup` and
//! `$unionWith` read (their sub-pipelines and `$facet`'s included), and the writes of `$out`
//! or `$merge` on their target.

use super::privileges::{Privilege, Resource};
use bson::{RawArray, RawBsonRef, RawDocument};

/// Adds what `stages` (run in database `db`) need to `needed`.
pub fn add(db: &str, stages: &RawArray, needed: &mut Vec<Privilege>) {
    for stage in stages.into_iter().flatten().filter_map(|s| s.as_document()) {
        let Some(Ok((name, spec))) = stage.iter().next() else {
            continue;
        };
        match (name, spec) {
            ("$lookup" | "$graphLookup", RawBsonRef::Document(spec)) => {
                let foreign_db = match spec.get("from") {
                    Ok(Some(from)) => read(db, from, needed),
                    _ => db.to_string(),
                };
                if let Ok(Some(RawBsonRef::Array(pipeline))) = spec.get("pipeline") {
                    add(&foreign_db, pipeline, needed);
                }
            }
            ("$unionWith", RawBsonRef::String(_)) => {
                read(db, spec, needed);
            }
            ("$unionWith", RawBsonRef::Document(spec)) => {
                if let Ok(Some(coll)) = spec.get("coll") {
                    read(db, coll, needed);
                }
                if let Ok(Some(RawBsonRef::Array(pipeline))) = spec.get("pipeline") {
                    add(db, pipeline, needed);
                }
            }
            ("$facet", RawBsonRef::Document(facets)) => {
                for (_, pipeline) in facets.iter().flatten() {
                    if let RawBsonRef::Array(pipeline) = pipeline {
                        add(db, pipeline, needed);
                    }
                }
            }
            ("$out" | "$merge", _) => {
                if let Some(target) = write_target(db, name, spec) {
                    needed.push(Privilege::new(target, &["insert", "remove", "update"]));
                }
            }
            _ => {}
        }
    }
}

/// `find` on the collection `named` (a name in `db`, or `{db, coll}`); returns its database.
fn read(db: &str, named: RawBsonRef<'_>, needed: &mut Vec<Privilege>) -> String {
    let (db, coll) = match named {
        RawBsonRef::String(coll) => (db, coll),
        RawBsonRef::Document(d) => match (string(d, "db"), string(d, "coll")) {
            (Some(db), Some(coll)) => (db, coll),
            _ => return db.to_string(),
        },
        _ => return db.to_string(),
    };
    needed.push(Privilege::new(Resource::collection(db, coll), &["find"]));
    db.to_string()
}

/// The collection `$out` or `$merge` writes.
fn write_target(db: &str, stage: &str, spec: RawBsonRef<'_>) -> Option<Resource> {
    match spec {
        RawBsonRef::String(coll) => Some(Resource::collection(db, coll)),
        RawBsonRef::Document(d) => {
            let field = if stage == "$out" { "coll" } else { "into" };
            let db = string(d, "db").unwrap_or(db);
            match d.get(field) {
                Ok(Some(RawBsonRef::String(coll))) => Some(Resource::collection(db, coll)),
                Ok(Some(RawBsonRef::Document(into))) => Some(Resource::collection(
                    string(into, "db")?,
                    string(into, "coll")?,
                )),
                _ => None,
            }
        }
        _ => None,
    }
}

fn string<'a>(doc: &'a RawDocument, field: &str) -> Option<&'a str> {
    match doc.get(field) {
        Ok(Some(RawBsonRef::String(s))) => Some(s),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    fn needed(pipeline: bson::RawArrayBuf) -> Vec<(Resource, Vec<&'static str>)> {
        let mut needed = Vec::new();
        add("app", &pipeline, &mut needed);
        needed
            .into_iter()
            .map(|p| (p.resource, p.actions))
            .collect()
    }

    #[test]
    fn foreign_collections_are_read() {
        let find = |db: &str, coll: &str| (Resource::collection(db, coll), vec!["find"]);
        let pipeline = rawdoc! {"p": [
            {"$match": {}},
            {"$lookup": {"from": "a", "as": "x", "pipeline": [{"$unionWith": "b"}]}},
            {"$graphLookup": {"from": "c", "startWith": "$x", "connectFromField": "x",
                "connectToField": "y", "as": "z"}},
            {"$unionWith": {"coll": "d", "pipeline": [{"$lookup": {"from": "e", "as": "q"}}]}},
            {"$unionWith": {"pipeline": [{"$documents": [{}]}]}},
            {"$facet": {"f": [{"$lookup": {"from": {"db": "other", "coll": "g"}, "as": "r",
                "pipeline": [{"$unionWith": "h"}]}}]}},
        ]};
        let pipeline = pipeline.get_array("p").unwrap().to_owned();
        assert_eq!(
            needed(pipeline),
            [
                find("app", "a"),
                find("app", "b"),
                find("app", "c"),
                find("app", "d"),
                find("app", "e"),
                find("other", "g"),
                find("other", "h"),
            ]
        );
    }

    #[test]
    fn out_and_merge_write_their_target() {
        let writes = |db: &str, coll: &str| {
            (
                Resource::collection(db, coll),
                vec!["insert", "remove", "update"],
            )
        };
        let pipeline = rawdoc! {"p": [{"$out": "o"}]};
        let out = needed(pipeline.get_array("p").unwrap().to_owned());
        assert_eq!(out, [writes("app", "o")]);
        let pipeline = rawdoc! {"p": [{"$merge": {"into": {"db": "x", "coll": "m"}}}]};
        let merge = needed(pipeline.get_array("p").unwrap().to_owned());
        assert_eq!(merge, [writes("x", "m")]);
    }
}
