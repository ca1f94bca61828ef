//! The entity map of one test: clients (with their event observers), databases, collections,
//! sessions, cursors, change streams and saved BSON values, and how `createEntities` builds them
//! from the test file's descriptions.

use crate::events::Observer;
use crate::matching::Lookup;
use crate::values::{read_concern, read_preference, write_concern};
use mongodb::bson::{Bson, Document, Timestamp};
use mongodb::change_stream::ChangeStream;
use mongodb::options::{
    ClientOptions, CollectionOptions, DatabaseOptions, ServerApi, ServerApiVersion, SessionOptions,
    TransactionOptions,
};
use mongodb::{Client, ClientSession, Collection, Cursor, Database, SessionCursor};
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

pub struct ClientEntity {
    pub client: Client,
    pub observer: Arc<Observer>,
    /// The `retryReads` / `retryWrites` URI options (true unless the test turns them off), for
    /// the operations the runner retries itself (`commands`, `bulk`).
    pub retry_reads: bool,
    pub retry_writes: bool,
}

pub struct SessionEntity {
    /// `None` while `withTransaction` has lent the session to its callback.
    pub session: Option<ClientSession>,
    pub lsid: Document,
    /// A transaction started by `startTransaction` and not yet committed or aborted (the
    /// driver keeps this state private).
    pub in_transaction: bool,
    /// The session is causally consistent (`causalConsistency`, true unless `snapshot`): its
    /// commands read after the operation time it has seen.
    pub causal: bool,
}

pub enum CursorEntity {
    Plain(Cursor<Document>),
    /// A cursor opened in a session: iterating it needs that session entity.
    InSession(SessionCursor<Document>, String),
}

pub enum Entity {
    Client(ClientEntity),
    Database(Database),
    Collection(Collection<Document>),
    Session(Box<SessionEntity>),
    /// GridFS buckets are created but their operations are not run (see `runner`).
    Bucket,
    ChangeStream(Box<ChangeStream<Document>>),
    Cursor(Box<CursorEntity>),
    Bson(Bson),
}

impl Entity {
    pub fn kind(&self) -> &'static str {
        match self {
            Entity::Client(_) => "client",
            Entity::Database(_) => "database",
            Entity::Collection(_) => "collection",
            Entity::Session(_) => "session",
            Entity::Bucket => "bucket",
            Entity::ChangeStream(_) => "change stream",
            Entity::Cursor(_) => "cursor",
            Entity::Bson(_) => "BSON value",
        }
    }
}

#[derive(Default)]
pub struct Entities {
    map: HashMap<String, Entity>,
    /// The client entity each database and collection entity was created from.
    owners: HashMap<String, String>,
}

impl Entities {
    pub fn insert(&mut self, name: &str, entity: Entity) -> Result<(), String> {
        if self.map.contains_key(name) {
            return Err(format!("entity `{name}` already exists"));
        }
        self.map.insert(name.to_string(), entity);
        Ok(())
    }

    pub fn get(&self, name: &str) -> Result<&Entity, String> {
        self.map
            .get(name)
            .ok_or_else(|| format!("no entity named `{name}`"))
    }

    pub fn get_mut(&mut self, name: &str) -> Result<&mut Entity, String> {
        self.map
            .get_mut(name)
            .ok_or_else(|| format!("no entity named `{name}`"))
    }

    pub fn remove(&mut self, name: &str) -> Option<Entity> {
        self.map.remove(name)
    }

    /// The client entity a database or collection entity comes from.
    pub fn client_of(&self, name: &str) -> Option<&ClientEntity> {
        self.client(self.owners.get(name)?).ok()
    }

    pub fn client(&self, name: &str) -> Result<&ClientEntity, String> {
        match self.get(name)? {
            Entity::Client(c) => Ok(c),
            other => Err(format!("`{name}` is a {}, not a client", other.kind())),
        }
    }

    pub fn database(&self, name: &str) -> Result<Database, String> {
        match self.get(name)? {
            Entity::Database(d) => Ok(d.clone()),
            other => Err(format!("`{name}` is a {}, not a database", other.kind())),
        }
    }

    pub fn collection(&self, name: &str) -> Result<Collection<Document>, String> {
        match self.get(name)? {
            Entity::Collection(c) => Ok(c.clone()),
            other => Err(format!("`{name}` is a {}, not a collection", other.kind())),
        }
    }

    pub fn session_entity(&mut self, name: &str) -> Result<&mut SessionEntity, String> {
        match self.get_mut(name)? {
            Entity::Session(s) => Ok(s.as_mut()),
            other => Err(format!("`{name}` is a {}, not a session", other.kind())),
        }
    }

    pub fn session(&mut self, name: &str) -> Result<&mut ClientSession, String> {
        self.session_entity(name)?
            .session
            .as_mut()
            .ok_or_else(|| format!("session `{name}` is in use by withTransaction"))
    }

    pub fn names(&self) -> Vec<String> {
        self.map.keys().cloned().collect()
    }

    /// Ends sessions, closes cursors and change streams, then shuts clients down, in that
    /// order (sessions and cursors keep their client alive).
    pub async fn close(mut self) {
        let names = self.names();
        let mut clients = Vec::new();
        for name in names {
            match self.map.remove(&name) {
                Some(Entity::Client(c)) => clients.push(c.client),
                Some(other) => drop(other),
                None => {}
            }
        }
        for client in clients {
            client.shutdown().immediate(true).await;
        }
    }
}

impl Lookup for Entities {
    fn bson_entity(&self, name: &str) -> Result<Bson, String> {
        match self.get(name)? {
            Entity::Bson(b) => Ok(b.clone()),
            other => Err(format!("`{name}` is a {}, not a BSON value", other.kind())),
        }
    }

    fn session_lsid(&self, name: &str) -> Result<Document, String> {
        match self.get(name)? {
            Entity::Session(s) => Ok(s.lsid.clone()),
            other => Err(format!("`{name}` is a {}, not a session", other.kind())),
        }
    }
}

pub enum CreateError {
    Unsupported(String),
    Failed(String),
}

impl From<String> for CreateError {
    fn from(s: String) -> Self {
        CreateError::Failed(s)
    }
}

/// Builds the entities of a `createEntities` list into `entities`.
pub async fn create_entities(
    entities: &mut Entities,
    list: &[Bson],
    router: SocketAddr,
) -> Result<(), CreateError> {
    for item in list {
        let Bson::Document(item) = item else {
            return Err(format!("entity description is not a document: {item}").into());
        };
        let Some((kind, Bson::Document(spec))) = item.iter().next() else {
            return Err(format!("malformed entity description: {item}").into());
        };
        if item.len() != 1 {
            return Err(format!("an entity description needs exactly one key: {item}").into());
        }
        let id = spec
            .get_str("id")
            .map_err(|_| format!("entity without an id: {item}"))?
            .to_string();
        let entity = match kind.as_str() {
            "client" => Entity::Client(create_client(spec, router).await?),
            "database" => {
                let owner = spec.get_str("client").unwrap_or_default();
                entities.owners.insert(id.clone(), owner.to_string());
                let client = entities.client(owner)?;
                let name = spec
                    .get_str("databaseName")
                    .map_err(|_| format!("database {id} without databaseName"))?;
                let options = match spec.get_document("databaseOptions") {
                    Ok(o) => {
                        let (rc, wc, rp) = concern_options(o)?;
                        let mut options = DatabaseOptions::default();
                        options.read_concern = rc;
                        options.write_concern = wc;
                        options.selection_criteria = rp;
                        options
                    }
                    Err(_) => DatabaseOptions::default(),
                };
                Entity::Database(client.client.database_with_options(name, options))
            }
            "collection" => {
                let db_id = spec.get_str("database").unwrap_or_default();
                if let Some(owner) = entities.owners.get(db_id).cloned() {
                    entities.owners.insert(id.clone(), owner);
                }
                let db = entities.database(db_id)?;
                let name = spec
                    .get_str("collectionName")
                    .map_err(|_| format!("collection {id} without collectionName"))?;
                let options = match spec.get_document("collectionOptions") {
                    Ok(o) => {
                        let (rc, wc, rp) = concern_options(o)?;
                        let mut options = CollectionOptions::default();
                        options.read_concern = rc;
                        options.write_concern = wc;
                        options.selection_criteria = rp;
                        options
                    }
                    Err(_) => CollectionOptions::default(),
                };
                Entity::Collection(db.collection_with_options(name, options))
            }
            "session" => {
                let client = entities
                    .client(spec.get_str("client").unwrap_or_default())?
                    .client
                    .clone();
                let options = match spec.get_document("sessionOptions") {
                    Ok(o) => session_options(o, entities)?,
                    Err(_) => SessionOptions::default(),
                };
                let causal = options
                    .causal_consistency
                    .unwrap_or(options.snapshot != Some(true));
                let session = client
                    .start_session()
                    .with_options(options)
                    .await
                    .map_err(|e| format!("startSession for {id}: {e}"))?;
                let lsid = session.id().clone();
                Entity::Session(Box::new(SessionEntity {
                    session: Some(session),
                    lsid,
                    in_transaction: false,
                    causal,
                }))
            }
            "bucket" => Entity::Bucket,
            other => {
                return Err(CreateError::Unsupported(format!(
                    "{other} entities are not supported by this runner"
                )));
            }
        };
        entities.insert(&id, entity)?;
    }
    Ok(())
}

type Concerns = (
    Option<mongodb::options::ReadConcern>,
    Option<mongodb::options::WriteConcern>,
    Option<mongodb::options::SelectionCriteria>,
);

fn concern_options(doc: &Document) -> Result<Concerns, String> {
    let mut out: Concerns = (None, None, None);
    for (k, v) in doc {
        let Bson::Document(d) = v else {
            return Err(format!("{k} is not a document"));
        };
        match k.as_str() {
            "readConcern" => out.0 = Some(read_concern(d)?),
            "writeConcern" => out.1 = Some(write_concern(d)?),
            "readPreference" => out.2 = Some(read_preference(d)?),
            other => return Err(format!("unsupported database/collection option `{other}`")),
        }
    }
    Ok(out)
}

pub fn transaction_options(doc: &Document) -> Result<TransactionOptions, String> {
    let mut options = TransactionOptions::default();
    for (k, v) in doc {
        match (k.as_str(), v) {
            ("readConcern", Bson::Document(d)) => options.read_concern = Some(read_concern(d)?),
            ("writeConcern", Bson::Document(d)) => options.write_concern = Some(write_concern(d)?),
            ("readPreference", Bson::Document(d)) => {
                options.selection_criteria = Some(read_preference(d)?)
            }
            ("maxCommitTimeMS", v) => {
                let ms = crate::values::as_i64(v).ok_or_else(|| format!("maxCommitTimeMS: {v}"))?;
                options.max_commit_time = Some(std::time::Duration::from_millis(ms.max(0) as u64));
            }
            (other, _) => return Err(format!("unsupported transaction option `{other}`")),
        }
    }
    Ok(options)
}

fn session_options(doc: &Document, entities: &Entities) -> Result<SessionOptions, String> {
    let mut options = SessionOptions::default();
    for (k, v) in doc {
        match (k.as_str(), v) {
            ("causalConsistency", Bson::Boolean(b)) => options.causal_consistency = Some(*b),
            ("snapshot", Bson::Boolean(b)) => options.snapshot = Some(*b),
            ("snapshotTime", Bson::String(name)) => {
                // The name of an entity saved by getSnapshotTime.
                match entities.bson_entity(name)? {
                    Bson::Timestamp(ts) => options.snapshot_time = Some(ts),
                    other => return Err(format!("snapshotTime entity {name} is {other}")),
                }
            }
            ("snapshotTime", Bson::Timestamp(ts)) => {
                options.snapshot_time = Some(Timestamp {
                    time: ts.time,
                    increment: ts.increment,
                })
            }
            ("defaultTransactionOptions", Bson::Document(d)) => {
                options.default_transaction_options = Some(transaction_options(d)?)
            }
            (other, _) => return Err(format!("unsupported session option `{other}` = {v}")),
        }
    }
    Ok(options)
}

fn uri_value(value: &Bson) -> Result<String, CreateError> {
    match value {
        Bson::String(s) => Ok(s.clone()),
        Bson::Boolean(b) => Ok(b.to_string()),
        Bson::Int32(i) => Ok(i.to_string()),
        Bson::Int64(i) => Ok(i.to_string()),
        Bson::Double(d) => Ok(d.to_string()),
        Bson::Document(d) if d.contains_key("$$placeholder") => Err(CreateError::Unsupported(
            "a $$placeholder URI option needs a value from the test environment, which this \
             runner has none of"
                .into(),
        )),
        other => Err(CreateError::Failed(format!(
            "unsupported URI option value {other}"
        ))),
    }
}

async fn create_client(spec: &Document, router: SocketAddr) -> Result<ClientEntity, CreateError> {
    let mut query = Vec::new();
    let (mut retry_reads, mut retry_writes) = (true, true);
    if let Ok(uri_options) = spec.get_document("uriOptions") {
        for (k, v) in uri_options {
            let off = matches!(v, Bson::Boolean(false))
                || v.as_str().is_some_and(|s| s.eq_ignore_ascii_case("false"));
            match k.as_str() {
                "retryReads" => retry_reads = !off,
                "retryWrites" => retry_writes = !off,
                _ => {}
            }
            if k == "readPreferenceTags" {
                return Err(CreateError::Unsupported(
                    "readPreferenceTags URI option".into(),
                ));
            }
            query.push(format!("{k}={}", uri_value(v)?));
        }
    }
    // docgrid has one router: `useMultipleMongoses: true` still connects to that one.
    let uri = if query.is_empty() {
        format!("mongodb://{router}/")
    } else {
        format!("mongodb://{router}/?{}", query.join("&"))
    };
    let mut options = ClientOptions::parse(&uri).await.map_err(|e| {
        match e.kind.as_ref() {
            // A URI option this driver refuses by design (e.g. socketTimeoutMS).
            mongodb::error::ErrorKind::InvalidArgument { message, .. }
                if message.contains("does not support") =>
            {
                CreateError::Unsupported(message.clone())
            }
            _ => CreateError::Failed(format!("client URI {uri}: {e}")),
        }
    })?;
    if let Ok(api) = spec.get_document("serverApi") {
        let version = match api.get_str("version") {
            Ok("1") => ServerApiVersion::V1,
            other => {
                return Err(CreateError::Failed(format!(
                    "serverApi version {other:?} is not supported by the driver"
                )));
            }
        };
        let mut server_api = ServerApi::builder().version(version).build();
        server_api.strict = api.get_bool("strict").ok();
        server_api.deprecation_errors = api.get_bool("deprecationErrors").ok();
        options.server_api = Some(server_api);
    }
    let strings = |key: &str| -> Vec<String> {
        spec.get_array(key)
            .map(|a| {
                a.iter()
                    .filter_map(|s| s.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    for key in spec.keys() {
        match key.as_str() {
            "id"
            | "uriOptions"
            | "useMultipleMongoses"
            | "observeEvents"
            | "ignoreCommandMonitoringEvents"
            | "observeSensitiveCommands"
            | "serverApi" => {}
            other => {
                return Err(CreateError::Unsupported(format!(
                    "client option `{other}` is not supported by this runner"
                )));
            }
        }
    }
    let observer = Observer::new(
        strings("observeEvents"),
        strings("ignoreCommandMonitoringEvents"),
        spec.get_bool("observeSensitiveCommands").unwrap_or(false),
    );
    observer.install(&mut options);
    let client = Client::with_options(options)
        .map_err(|e| CreateError::Failed(format!("client from {uri}: {e}")))?;
    Ok(ClientEntity {
        client,
        observer,
        retry_reads,
        retry_writes,
    })
}
