//! Users as `admin.system.users` stores them (`{_id: "db.user", userId, user, db,
//! credentials, roles, customData?}`), the privileges their roles grant, and the node's
//! cache of them, invalidated by a generation number.

use super::privileges::Privilege;
use super::roles;
use super::scram::{Credentials, Mechanism};
use bson::{Bson, Document, doc};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// `user@db`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct UserName {
    pub user: String,
    pub db: String,
}

impl UserName {
    pub fn new(user: &str, db: &str) -> UserName {
        UserName {
            user: user.into(),
            db: db.into(),
        }
    }

    /// The `_id` of the user's document: `db.user`.
    pub fn id(&self) -> String {
        format!("{}.{}", self.db, self.user)
    }

    pub fn to_document(&self) -> Document {
        doc! {"user": &self.user, "db": &self.db}
    }
}

impl std::fmt::Display for UserName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}", self.user, self.db)
    }
}

/// `role@db`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct RoleName {
    pub role: String,
    pub db: String,
}

impl RoleName {
    pub fn to_document(&self) -> Document {
        doc! {"role": &self.role, "db": &self.db}
    }

    /// The `_id` of a user-defined role's document: `db.role`.
    pub fn id(&self) -> String {
        format!("{}.{}", self.db, self.role)
    }

    /// `{role, db}` of a stored role entry.
    pub fn from_bson(value: &Bson) -> Option<RoleName> {
        let role = value.as_document()?;
        Some(RoleName {
            role: role.get_str("role").ok()?.into(),
            db: role.get_str("db").ok()?.into(),
        })
    }
}

impl std::fmt::Display for RoleName {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}@{}", self.role, self.db)
    }
}

/// A user as stored.
#[derive(Clone, Debug)]
pub struct StoredUser {
    pub name: UserName,
    pub credentials: HashMap<&'static str, Credentials>,
    pub roles: Vec<RoleName>,
    /// What the roles grant, resolved through user-defined roles where the document was read
    /// with them (`usersInfo`'s `inheritedPrivileges`); `None`: only built-in roles count.
    pub inherited: Option<Vec<Privilege>>,
}

impl StoredUser {
    /// Reads a stored user document; `None` when it is not one.
    pub fn from_document(doc: &Document) -> Option<StoredUser> {
        let name = UserName::new(doc.get_str("user").ok()?, doc.get_str("db").ok()?);
        let mut credentials = HashMap::new();
        if let Ok(stored) = doc.get_document("credentials") {
            for mechanism in Mechanism::ALL {
                if let Some(c) = stored
                    .get_document(mechanism.name())
                    .ok()
                    .and_then(Credentials::from_document)
                {
                    credentials.insert(mechanism.name(), c);
                }
            }
        }
        let roles = doc
            .get_array("roles")
            .map(|roles| roles.iter().filter_map(RoleName::from_bson).collect())
            .unwrap_or_default();
        let inherited = match doc.get_array("inheritedPrivileges") {
            Ok(granted) => Some(super::privilege_documents::parse_privileges(granted).ok()?),
            Err(_) => None,
        };
        Some(StoredUser {
            name,
            credentials,
            roles,
            inherited,
        })
    }

    /// The mechanisms the user has credentials for, in MongoDB's order.
    pub fn mechanisms(&self) -> Vec<&'static str> {
        Mechanism::ALL
            .into_iter()
            .map(Mechanism::name)
            .filter(|m| self.credentials.contains_key(m))
            .collect()
    }

    /// What the user's roles grant: as resolved when it was read, or its built-in roles' (a
    /// role unknown here grants nothing).
    pub fn privileges(&self) -> Vec<Privilege> {
        if let Some(inherited) = &self.inherited {
            return inherited.clone();
        }
        self.roles
            .iter()
            .filter_map(|r| roles::privileges(&r.role, &r.db))
            .flatten()
            .collect()
    }
}

/// A node's cache of stored users. `invalidate` empties it and moves its generation on; a
/// connection's authenticated user, resolved at some generation, is looked up again when the
/// generation has moved (a user-management command ran, or the config server's user cache
/// generation changed).
#[derive(Debug, Default)]
pub struct UserCache {
    users: Mutex<HashMap<UserName, Arc<StoredUser>>>,
    generation: AtomicU64,
}

impl UserCache {
    pub fn generation(&self) -> u64 {
        self.generation.load(Ordering::SeqCst)
    }

    pub fn get(&self, name: &UserName) -> Option<Arc<StoredUser>> {
        self.users.lock().expect("poisoned").get(name).cloned()
    }

    /// Keeps `user`, read at `generation`, unless the cache was invalidated meanwhile.
    pub fn insert(&self, user: Arc<StoredUser>, generation: u64) {
        let mut users = self.users.lock().expect("poisoned");
        if self.generation() == generation {
            users.insert(user.name.clone(), user);
        }
    }

    pub fn invalidate(&self) {
        let mut users = self.users.lock().expect("poisoned");
        users.clear();
        self.generation.fetch_add(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_stored_user_and_its_privileges() {
        let credentials = Credentials::generate(Mechanism::Sha256, "pw", 4096);
        let doc = doc! {
            "_id": "app.u", "user": "u", "db": "app",
            "credentials": {"SCRAM-SHA-256": credentials.to_document()},
            "roles": [{"role": "read", "db": "app"}, {"role": "nope", "db": "app"}],
        };
        let user = StoredUser::from_document(&doc).unwrap();
        assert_eq!(user.name.id(), "app.u");
        assert_eq!(user.mechanisms(), vec!["SCRAM-SHA-256"]);
        assert_eq!(user.roles.len(), 2);
        assert!(!user.privileges().is_empty());
    }

    #[test]
    fn invalidation_moves_the_generation_and_drops_late_loads() {
        let cache = UserCache::default();
        let user = Arc::new(StoredUser {
            name: UserName::new("u", "admin"),
            credentials: HashMap::new(),
            roles: Vec::new(),
            inherited: None,
        });
        let before = cache.generation();
        cache.insert(user.clone(), before);
        assert!(cache.get(&user.name).is_some());
        cache.invalidate();
        assert!(cache.get(&user.name).is_none());
        cache.insert(user.clone(), before);
        assert!(cache.get(&user.name).is_none());
    }
}
