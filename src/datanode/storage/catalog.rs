//! The per-database catalog: collections (name, table ident, UUID, options) and their indexes,
//! persisted in the database file itself so that catalog and data change atomically.

use super::sql_error;
use crate::datanode::index::{IndexKeys, IndexSpec};
use crate::document::collation::Collation;
use crate::error::Result;
use bson::{Bson, Document, doc};
use sqlx::{Executor, Row, SqliteConnection};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use uuid::Uuid;

/// A collection as the catalog records it.
#[derive(Clone, Debug)]
pub struct CollectionMeta {
    pub name: String,
    /// Suffix of the collection's table (`c<ident>`); stable across renames.
    pub ident: i64,
    pub uuid: Uuid,
    pub options: Document,
    pub indexes: Vec<IndexMeta>,
}

/// An index as the catalog records it.
#[derive(Clone, Debug)]
pub struct IndexMeta {
    pub name: String,
    /// Suffix of the index's table (`x<ident>`).
    pub ident: i64,
    /// The spec `listIndexes` shows (`{v, key, name, ...}`).
    pub spec: Document,
    /// The parsed spec of a secondary index (`None` for `_id_`, whose keys are just `_id`).
    pub parsed: Option<Arc<IndexSpec>>,
    /// Some document produced several keys: range bounds on it may not be intersected.
    pub multikey: bool,
    /// A wildcard index's paths some document holds an array at (MongoDB's multikey metadata
    /// keys): each queried path is planned by its own. Never shrinks until the index is
    /// rebuilt. Empty on a multikey wildcard index recorded before paths were: every path
    /// then counts as multikey.
    pub multikey_paths: Arc<BTreeSet<String>>,
    /// Built over all existing documents (queries may use it). Writes maintain an index from
    /// the moment it exists, built or not.
    pub ready: bool,
    /// The `_id` index's collation: its collection's default, as in MongoDB, so that `"a"` and
    /// `"A"` are one `_id` case-insensitively (secondary indexes carry theirs in `parsed`).
    pub id_collation: Option<Arc<Collation>>,
}

impl IndexMeta {
    pub fn key_pattern(&self) -> Document {
        self.spec.get_document("key").cloned().unwrap_or_default()
    }

    pub fn is_unique(&self) -> bool {
        self.name == "_id_" || matches!(self.spec.get("unique"), Some(Bson::Boolean(true)))
    }

    pub fn is_id(&self) -> bool {
        self.parsed.is_none()
    }

    /// The collation the index's keys are in (`None`: simple).
    pub fn collation(&self) -> Option<&Collation> {
        match &self.parsed {
            Some(spec) => spec.collation.as_deref(),
            None => self.id_collation.as_deref(),
        }
    }

    pub fn table(&self) -> String {
        format!("x{}", self.ident)
    }

    /// A wildcard index (`$**` in its key): its multikey paths are recorded one by one.
    pub fn is_wildcard(&self) -> bool {
        self.parsed.as_ref().is_some_and(|p| p.wildcard.is_some())
    }

    /// The prefixes of `path` (itself included) a wildcard index holds arrays at, as
    /// `explain`'s `multiKeyPaths` lists them; `None` when the index is multikey but its paths
    /// are unknown (every path then counts as multikey).
    pub fn multikey_prefixes(&self, path: &str) -> Option<Vec<String>> {
        if !self.multikey {
            return Some(Vec::new());
        }
        if self.multikey_paths.is_empty() {
            return None;
        }
        let mut prefixes = Vec::new();
        for (at, _) in path.match_indices('.').chain([(path.len(), "")]) {
            let prefix = &path[..at];
            if self.multikey_paths.contains(prefix) {
                prefixes.push(prefix.to_string());
            }
        }
        Some(prefixes)
    }

    /// Whether a document may hold several keys at `path` of a wildcard index: an array at
    /// the path or at any prefix of it (an array at `a` makes `a.b` multikey).
    pub fn path_is_multikey(&self, path: &str) -> bool {
        self.multikey_prefixes(path).is_none_or(|p| !p.is_empty())
    }

    /// A multikey index without recorded paths: not a wildcard index, or one recorded
    /// multikey before paths were (it stays so until rebuilt: its paths are unknown).
    fn multikey_paths_unknown(&self) -> bool {
        self.multikey && self.multikey_paths.is_empty()
    }

    /// The multikey paths `keys` (a document's keys in this index) add to those recorded;
    /// `None` when they add nothing.
    pub fn new_multikey_paths(&self, keys: &IndexKeys) -> Option<BTreeSet<String>> {
        if !keys.multikey || self.multikey_paths_unknown() {
            return None;
        }
        let new: BTreeSet<String> = keys
            .multikey_paths
            .iter()
            .filter(|p| !self.multikey_paths.contains(*p))
            .cloned()
            .collect();
        (!self.multikey || !new.is_empty()).then_some(new)
    }

    /// Records that the index is multikey, at `paths` for a wildcard index whose paths are
    /// known.
    pub fn add_multikey_paths(&mut self, paths: &BTreeSet<String>) {
        if !self.multikey_paths_unknown() && !paths.is_subset(&self.multikey_paths) {
            let all = self.multikey_paths.union(paths).cloned().collect();
            self.multikey_paths = Arc::new(all);
        }
        self.multikey = true;
    }
}

/// The `multikey_paths` column's value: a `{paths: [...]}` document.
pub(super) fn multikey_paths_blob(paths: &BTreeSet<String>) -> Result<Vec<u8>> {
    let list: Vec<Bson> = paths.iter().cloned().map(Bson::String).collect();
    Ok(bson::to_vec(&doc! {"paths": list})?)
}

fn multikey_paths_of(blob: Option<Vec<u8>>) -> BTreeSet<String> {
    let doc: Document = blob
        .and_then(|b| bson::from_slice(&b).ok())
        .unwrap_or_default();
    match doc.get_array("paths") {
        Ok(list) => list
            .iter()
            .filter_map(|p| p.as_str().map(str::to_string))
            .collect(),
        Err(_) => BTreeSet::new(),
    }
}

impl CollectionMeta {
    pub fn table(&self) -> String {
        format!("c{}", self.ident)
    }

    pub fn id_index(&self) -> &IndexMeta {
        self.indexes
            .iter()
            .find(|i| i.name == "_id_")
            .expect("every collection has an _id index")
    }

    /// The specs of its indexes but `_id_`, as another node creates the collection again with
    /// them (`listIndexes`' shape).
    pub fn secondary_index_specs(&self) -> Vec<Bson> {
        self.indexes
            .iter()
            .filter(|i| !i.is_id())
            .map(|i| Bson::Document(i.spec.clone()))
            .collect()
    }

    pub fn uuid_bson(&self) -> Bson {
        Bson::Binary(bson::Binary {
            subtype: bson::spec::BinarySubtype::Uuid,
            bytes: self.uuid.as_bytes().to_vec(),
        })
    }
}

impl CollectionMeta {
    /// A new collection with its `_id` index: the collection's table takes `ident`, the index's
    /// `ident + 1`.
    pub(super) fn new(
        name: &str,
        ident: i64,
        uuid: Uuid,
        options: Document,
    ) -> Result<CollectionMeta> {
        let mut id_index = IndexMeta {
            name: "_id_".into(),
            ident: ident + 1,
            spec: id_index_spec(),
            parsed: None,
            multikey: false,
            multikey_paths: Default::default(),
            ready: true,
            id_collation: None,
        };
        with_default_collation(&mut id_index, &options)?;
        Ok(CollectionMeta {
            name: name.to_string(),
            ident,
            uuid,
            options,
            indexes: vec![id_index],
        })
    }
}

/// Gives the `_id` index its collection's default collation (stored normalized in `options`),
/// in its spec too, as listIndexes shows it.
fn with_default_collation(id_index: &mut IndexMeta, options: &Document) -> Result<()> {
    if let Ok(spec) = options.get_document("collation") {
        let collation = Collation::parse_stored(spec)?;
        if !collation.is_simple() {
            id_index.spec.insert("collation", collation.spec());
            id_index.id_collation = Some(Arc::new(collation));
        }
    }
    Ok(())
}

/// The `_id` index spec every collection gets.
pub fn id_index_spec() -> Document {
    doc! {"v": 2, "key": {"_id": 1}, "name": "_id_"}
}

pub(super) const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS docgrid_collections (
    name TEXT PRIMARY KEY,
    ident INTEGER NOT NULL UNIQUE,
    uuid BLOB NOT NULL,
    options BLOB NOT NULL,
    doc_count INTEGER NOT NULL DEFAULT 0,
    data_size INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE IF NOT EXISTS docgrid_indexes (
    collection_ident INTEGER NOT NULL,
    name TEXT NOT NULL,
    ident INTEGER NOT NULL UNIQUE,
    spec BLOB NOT NULL,
    multikey INTEGER NOT NULL DEFAULT 0,
    ready INTEGER NOT NULL DEFAULT 1,
    multikey_paths BLOB,
    PRIMARY KEY (collection_ident, name)
);
CREATE TABLE IF NOT EXISTS docgrid_clock (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    seconds INTEGER NOT NULL
);
";

/// Columns added after the first release of the catalog, added to older files on open.
const ADDED_INDEX_COLUMNS: [(&str, &str); 3] = [
    ("multikey", "INTEGER NOT NULL DEFAULT 0"),
    ("ready", "INTEGER NOT NULL DEFAULT 1"),
    ("multikey_paths", "BLOB"),
];

/// The SQL that creates an index's table: unique indexes key on the key alone (so SQLite
/// refuses a second document with the same key), others on (key, record id). `type_bits` holds
/// what the key's bytes leave out of its values (`document::type_bits`); NULL means unknown
/// (an entry written before the column existed).
pub(super) fn index_table_sql(index: &IndexMeta) -> String {
    let primary_key = if index.is_unique() { "key" } else { "key, rid" };
    format!(
        "CREATE TABLE {} (key BLOB NOT NULL, rid INTEGER NOT NULL, type_bits BLOB, PRIMARY KEY ({primary_key})) WITHOUT ROWID",
        index.table()
    )
}

/// Creates a new collection's tables (its records and each of its indexes) and catalog rows on
/// `conn`, inside the caller's SQLite transaction: a plain `create` and a multi-document
/// transaction's commit create collections alike.
pub(super) async fn create_collection_tables(
    conn: &mut SqliteConnection,
    meta: &CollectionMeta,
) -> std::result::Result<(), sqlx::Error> {
    conn.execute(sqlx::AssertSqlSafe(format!(
        "CREATE TABLE {} (rid INTEGER PRIMARY KEY, doc BLOB NOT NULL)",
        meta.table()
    )))
    .await?;
    sqlx::query("INSERT INTO docgrid_collections (name, ident, uuid, options) VALUES (?, ?, ?, ?)")
        .bind(&meta.name)
        .bind(meta.ident)
        .bind(meta.uuid.as_bytes().as_slice())
        .bind(bson::to_vec(&meta.options).map_err(|e| sqlx::Error::Encode(Box::new(e)))?)
        .execute(&mut *conn)
        .await?;
    for index in &meta.indexes {
        conn.execute(sqlx::AssertSqlSafe(index_table_sql(index)))
            .await?;
        sqlx::query(
            "INSERT INTO docgrid_indexes (collection_ident, name, ident, spec, multikey, ready, multikey_paths) VALUES (?, ?, ?, ?, ?, ?, ?)",
        )
        .bind(meta.ident)
        .bind(&index.name)
        .bind(index.ident)
        .bind(bson::to_vec(&index.spec).map_err(|e| sqlx::Error::Encode(Box::new(e)))?)
        .bind(index.multikey)
        .bind(index.ready)
        .bind(
            multikey_paths_blob(&index.multikey_paths)
                .map_err(|e| sqlx::Error::Encode(Box::new(e)))?,
        )
        .execute(&mut *conn)
        .await?;
    }
    Ok(())
}

/// Adds the `type_bits` column to index tables made before it existed: their entries keep
/// NULL (a covered query reads their documents) until rewritten or the index is rebuilt.
async fn add_type_bits_columns(conn: &mut SqliteConnection) -> Result<()> {
    let tables: Vec<String> = sqlx::query(
        "SELECT m.name FROM sqlite_schema m WHERE m.type = 'table' AND m.name GLOB 'x[0-9]*' \
         AND NOT EXISTS (SELECT 1 FROM pragma_table_info(m.name) p WHERE p.name = 'type_bits')",
    )
    .fetch_all(&mut *conn)
    .await
    .map_err(|e| sql_error("reading the index tables' columns", e))?
    .into_iter()
    .map(|row| row.get(0))
    .collect();
    for table in tables {
        let sql = format!("ALTER TABLE {table} ADD COLUMN type_bits BLOB");
        conn.execute(sqlx::AssertSqlSafe(sql))
            .await
            .map_err(|e| sql_error("adding type bits to an index table", e))?;
    }
    Ok(())
}

/// Document count and data size of a collection, kept exact in the same transactions as the
/// writes that change them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CollectionStats {
    pub count: i64,
    pub data_size: i64,
}

pub(super) struct LoadedCatalog {
    pub collections: BTreeMap<String, CollectionMeta>,
    pub stats: BTreeMap<i64, CollectionStats>,
    pub next_ident: i64,
    /// The latest second a committed write of this file was timestamped in (0: none).
    pub clock_seconds: u32,
}

pub(super) async fn load(conn: &mut SqliteConnection) -> Result<LoadedCatalog> {
    let rows = sqlx::query(
        "SELECT name, ident, uuid, options, doc_count, data_size FROM docgrid_collections",
    )
    .fetch_all(&mut *conn)
    .await
    .map_err(|e| sql_error("loading the catalog", e))?;
    let mut collections = BTreeMap::new();
    let mut stats = BTreeMap::new();
    let mut next_ident = 1;
    for row in rows {
        let name: String = row.get(0);
        let ident: i64 = row.get(1);
        let uuid_bytes: Vec<u8> = row.get(2);
        let options: Vec<u8> = row.get(3);
        stats.insert(
            ident,
            CollectionStats {
                count: row.get(4),
                data_size: row.get(5),
            },
        );
        next_ident = next_ident.max(ident + 1);
        collections.insert(
            name.clone(),
            CollectionMeta {
                name,
                ident,
                uuid: Uuid::from_slice(&uuid_bytes).unwrap_or_default(),
                options: bson::from_slice(&options).unwrap_or_default(),
                indexes: Vec::new(),
            },
        );
    }
    let existing: Vec<String> =
        sqlx::query("SELECT name FROM pragma_table_info('docgrid_indexes')")
            .fetch_all(&mut *conn)
            .await
            .map_err(|e| sql_error("reading the index catalog's columns", e))?
            .into_iter()
            .map(|row| row.get(0))
            .collect();
    for (column, definition) in ADDED_INDEX_COLUMNS {
        if !existing.iter().any(|c| c == column) {
            let sql = format!("ALTER TABLE docgrid_indexes ADD COLUMN {column} {definition}");
            conn.execute(sqlx::AssertSqlSafe(sql))
                .await
                .map_err(|e| sql_error("upgrading the index catalog", e))?;
        }
    }
    add_type_bits_columns(conn).await?;
    // An index build a crash interrupted is dropped; its createIndexes was never acknowledged.
    let unfinished: Vec<i64> = sqlx::query("SELECT ident FROM docgrid_indexes WHERE ready = 0")
        .fetch_all(&mut *conn)
        .await
        .map_err(|e| sql_error("loading the index catalog", e))?
        .into_iter()
        .map(|row| row.get(0))
        .collect();
    for ident in unfinished {
        conn.execute(sqlx::AssertSqlSafe(format!(
            "DROP TABLE IF EXISTS x{ident}"
        )))
        .await
        .map_err(|e| sql_error("dropping an unfinished index", e))?;
        sqlx::query("DELETE FROM docgrid_indexes WHERE ident = ?")
            .bind(ident)
            .execute(&mut *conn)
            .await
            .map_err(|e| sql_error("dropping an unfinished index", e))?;
    }
    let rows = sqlx::query(
        "SELECT collection_ident, name, ident, spec, multikey, multikey_paths FROM docgrid_indexes ORDER BY ident",
    )
    .fetch_all(&mut *conn)
    .await
    .map_err(|e| sql_error("loading the index catalog", e))?;
    for row in rows {
        let coll: i64 = row.get(0);
        let name: String = row.get(1);
        let ident: i64 = row.get(2);
        next_ident = next_ident.max(ident + 1);
        let spec: Document = bson::from_slice(&row.get::<Vec<u8>, _>(3)).unwrap_or_default();
        let parsed = if name == "_id_" {
            None
        } else {
            Some(Arc::new(IndexSpec::from_catalog(&spec)?))
        };
        let mut index = IndexMeta {
            name,
            ident,
            spec,
            parsed,
            multikey: row.get::<i64, _>(4) != 0,
            multikey_paths: Arc::new(multikey_paths_of(row.get(5))),
            ready: true,
            id_collation: None,
        };
        if let Some(meta) = collections.values_mut().find(|c| c.ident == coll) {
            if index.is_id() {
                with_default_collation(&mut index, &meta.options)?;
            }
            meta.indexes.push(index);
        }
    }
    let clock_seconds: Option<i64> = sqlx::query("SELECT seconds FROM docgrid_clock")
        .fetch_optional(&mut *conn)
        .await
        .map_err(|e| sql_error("reading the clock's high-water mark", e))?
        .map(|row| row.get(0));
    Ok(LoadedCatalog {
        collections,
        stats,
        next_ident,
        clock_seconds: clock_seconds.unwrap_or(0).clamp(0, i64::from(u32::MAX)) as u32,
    })
}
