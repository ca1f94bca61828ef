//! `runOnRequirements` evaluated against what the router really reports: topology from `hello`
//! (`msg: "isdbgrid"` means a sharded cluster), the version from `buildInfo.versionArray`, server
//! parameters from `getParameter` (cached). docgrid is not serverless and runs without auth or
//! client-side encryption.

use crate::values::as_f64;
use mongodb::Client;
use mongodb::bson::{Bson, Document, doc};
use std::collections::HashMap;
use std::sync::Mutex;

pub struct ServerInfo {
    pub version: [u64; 3],
    pub topology: &'static str,
    /// `hello`'s `maxBsonObjectSize` and `maxWriteBatchSize`: the limits the collection-level
    /// bulk write of the runner splits its commands by.
    pub max_bson_object_size: usize,
    pub max_write_batch_size: usize,
    parameters: Mutex<HashMap<String, Option<Bson>>>,
}

/// The schema versions this runner implements (files with a higher minor are refused).
pub const SCHEMA_MAJOR: u64 = 1;
pub const SCHEMA_MINOR: u64 = 21;

pub fn parse_version(s: &str) -> Result<[u64; 3], String> {
    let mut out = [0u64; 3];
    for (i, part) in s.split('.').take(3).enumerate() {
        // Pre-release suffixes ("4.9.0-alpha4") are discarded before comparing.
        let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
        out[i] = digits
            .parse()
            .map_err(|_| format!("malformed version string `{s}`"))?;
    }
    Ok(out)
}

impl ServerInfo {
    pub async fn discover(client: &Client) -> Result<ServerInfo, String> {
        let admin = client.database("admin");
        let hello = admin
            .run_command(doc! {"hello": 1})
            .await
            .map_err(|e| format!("hello: {e}"))?;
        let build = admin
            .run_command(doc! {"buildInfo": 1})
            .await
            .map_err(|e| format!("buildInfo: {e}"))?;
        let topology = if hello.get_str("msg") == Ok("isdbgrid") {
            "sharded"
        } else if hello.contains_key("setName") {
            "replicaset"
        } else {
            "single"
        };
        let array = build
            .get_array("versionArray")
            .map_err(|_| format!("buildInfo has no versionArray: {build}"))?;
        let mut version = [0u64; 3];
        for (i, v) in array.iter().take(3).enumerate() {
            version[i] = crate::values::as_i64(v).unwrap_or(0).max(0) as u64;
        }
        let limit = |key: &str, default: usize| {
            hello
                .get(key)
                .and_then(crate::values::as_i64)
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(default)
        };
        Ok(ServerInfo {
            version,
            topology,
            max_bson_object_size: limit("maxBsonObjectSize", 16 * 1024 * 1024),
            max_write_batch_size: limit("maxWriteBatchSize", 100_000),
            parameters: Mutex::default(),
        })
    }

    async fn parameter(&self, client: &Client, name: &str) -> Option<Bson> {
        if let Ok(cache) = self.parameters.lock() {
            if let Some(v) = cache.get(name) {
                return v.clone();
            }
        }
        let mut command = doc! {"getParameter": 1};
        command.insert(name, 1);
        // An error fetching one parameter means "not supported": the requirement is unmet.
        let value = client
            .database("admin")
            .run_command(command)
            .await
            .ok()
            .and_then(|reply| reply.get(name).cloned());
        if let Ok(mut cache) = self.parameters.lock() {
            cache.insert(name.to_string(), value.clone());
        }
        value
    }

    /// `Ok(None)` when the requirement list is satisfied (or absent), `Ok(Some(reason))` when
    /// none of its entries is.
    pub async fn check(
        &self,
        client: &Client,
        requirements: Option<&Bson>,
    ) -> Result<Option<String>, String> {
        let Some(requirements) = requirements else {
            return Ok(None);
        };
        let Bson::Array(list) = requirements else {
            return Err(format!("runOnRequirements is not an array: {requirements}"));
        };
        let mut reasons = Vec::new();
        for item in list {
            let Bson::Document(req) = item else {
                return Err(format!("runOnRequirement is not a document: {item}"));
            };
            match self.unmet(client, req).await? {
                None => return Ok(None),
                Some(reason) => reasons.push(reason),
            }
        }
        Ok(Some(reasons.join("; or ")))
    }

    /// Why this one requirement is not met, if it is not.
    async fn unmet(&self, client: &Client, req: &Document) -> Result<Option<String>, String> {
        let mut why = Vec::new();
        for (key, value) in req {
            match key.as_str() {
                "minServerVersion" => {
                    let min = parse_version(value.as_str().unwrap_or_default())?;
                    if self.version < min {
                        why.push(format!("server {} < {value}", self.version_string()));
                    }
                }
                "maxServerVersion" => {
                    let max = parse_version(value.as_str().unwrap_or_default())?;
                    if self.version > max {
                        why.push(format!("server {} > {value}", self.version_string()));
                    }
                }
                "topologies" => {
                    let Bson::Array(topologies) = value else {
                        return Err(format!("topologies is not an array: {value}"));
                    };
                    // "sharded" accepts any sharded cluster; "sharded-replicaset" needs
                    // replica-set shards, which docgrid's shards are not.
                    let ok = topologies.iter().any(|t| t.as_str() == Some(self.topology));
                    if !ok {
                        why.push(format!("topology {} not in {value}", self.topology));
                    }
                }
                "serverless" => {
                    if value.as_str() == Some("require") {
                        why.push("requires serverless".into());
                    }
                }
                "auth" => {
                    if value.as_bool() == Some(true) {
                        why.push("requires authentication".into());
                    }
                }
                "authMechanism" => why.push(format!("requires auth mechanism {value}")),
                "csfle" => {
                    if value.as_bool() == Some(true) {
                        why.push("requires client-side encryption".into());
                    }
                }
                "serverParameters" => {
                    let Bson::Document(params) = value else {
                        return Err(format!("serverParameters is not a document: {value}"));
                    };
                    for (name, want) in params {
                        let got = self.parameter(client, name).await;
                        let equal = match (&got, as_f64(want)) {
                            (Some(g), Some(w)) => as_f64(g) == Some(w),
                            (Some(g), None) => g == want,
                            (None, _) => false,
                        };
                        if !equal {
                            why.push(format!(
                                "server parameter {name} is {}, wanted {want}",
                                got.map(|g| g.to_string())
                                    .unwrap_or_else(|| "unsupported".into())
                            ));
                        }
                    }
                }
                other => return Err(format!("unknown runOnRequirement field `{other}`")),
            }
        }
        Ok((!why.is_empty()).then(|| why.join(", ")))
    }

    pub fn version_string(&self) -> String {
        format!(
            "{}.{}.{}",
            self.version[0], self.version[1], self.version[2]
        )
    }
}
