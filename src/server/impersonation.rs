//! Whom a command runs for: the connection's authenticated user, or, on a shard or config
//! server, the user a router names in `$audit` (MongoDB's impersonation metadata), which the
//! profiler's `user`/`allUsers` show. Every command a node sends while it runs one carries
//! that user in `$audit`, as mongos sends its client's; a client's own `$audit` never passes
//! a router.

use super::RequestContext;
use super::auth::privileges::{Privilege, Resource, allows};
use super::auth::{RoleName, UserName, current_user};
use super::dispatch::NodeState;
use crate::command::CommandRequest;
use crate::command::generic::audit::Impersonation;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::node::Role;
use std::sync::Arc;

/// The user a command runs for, with that user's roles.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunsAs {
    pub user: UserName,
    pub roles: Vec<RoleName>,
    /// The member that named the user in `$audit` (`$currentOp`'s `runBy`), when the
    /// connection is authenticated.
    pub run_by: Option<UserName>,
}

impl RunsAs {
    fn of(impersonation: &Impersonation, run_by: Option<UserName>) -> Option<RunsAs> {
        let (user, db) = impersonation.user.as_ref()?;
        Some(RunsAs {
            run_by,
            user: UserName::new(user, db),
            roles: impersonation
                .roles
                .iter()
                .map(|(role, db)| RoleName {
                    role: role.clone(),
                    db: db.clone(),
                })
                .collect(),
        })
    }

    fn impersonation(&self) -> Impersonation {
        Impersonation {
            user: Some((self.user.user.clone(), self.user.db.clone())),
            roles: self
                .roles
                .iter()
                .map(|r| (r.role.clone(), r.db.clone()))
                .collect(),
        }
    }
}

/// Whom the command of `ctx` runs for. A data node takes the user `$audit` names when the
/// caller may name one (a member, or any caller while authorization is off), and otherwise
/// answers MongoDB's Unauthorized; a router always runs for its client's own user.
pub async fn runs_as<S: NodeState>(
    state: &S,
    ctx: &RequestContext,
    named: Option<&Impersonation>,
) -> Result<Option<Arc<RunsAs>>> {
    let node = state.node();
    if let Some(named) = named.filter(|_| node.role != Role::Router) {
        if node.authorization && !ctx.in_process() {
            let impersonate = [Privilege::new(Resource::Cluster, &["impersonate"])];
            let user = current_user(state, ctx).await?;
            if !user.is_some_and(|u| allows(&u.privileges, &impersonate)) {
                return Err(MongoError::new(
                    ErrorCode::Unauthorized,
                    "Unauthorized use of impersonation metadata.",
                ));
            }
        }
        let run_by = ctx.auth().user.as_ref().map(|u| u.name.clone());
        return Ok(RunsAs::of(named, run_by).map(Arc::new));
    }
    let user = ctx.auth().user.clone();
    Ok(user.map(|u| {
        Arc::new(RunsAs {
            user: u.name.clone(),
            roles: u.roles.clone(),
            run_by: None,
        })
    }))
}

/// Makes `request`, which a node sends to another, name `runs_as` in its `$audit` (and
/// nothing else: a `$audit` it had, as a client's forwarded body may, is dropped).
pub fn attach(request: &mut CommandRequest, runs_as: Option<&RunsAs>) -> Result<()> {
    let named = runs_as.map(|r| bson::RawBson::Document(r.impersonation().to_raw()));
    if named.is_some() || request.body.get(AUDIT)?.is_some() {
        request.replace_field(AUDIT, named);
    }
    Ok(())
}

const AUDIT: &str = "$audit";

#[cfg(test)]
mod tests {
    use super::*;
    use bson::rawdoc;

    #[test]
    fn a_sent_request_names_only_the_user_it_runs_for() {
        let runs_as = RunsAs {
            user: UserName::new("ann", "admin"),
            roles: vec![RoleName {
                role: "readWrite".into(),
                db: "app".into(),
            }],
            run_by: None,
        };
        let forged = rawdoc! {"$impersonatedUser": {"user": "root", "db": "admin"}, "$impersonatedRoles": []};
        let mut request =
            CommandRequest::new("app", rawdoc! {"find": "c", "$audit": forged.clone()}).unwrap();
        attach(&mut request, Some(&runs_as)).unwrap();
        let named = crate::command::generic::audit::of_body(&request.body).unwrap();
        assert_eq!(named.and_then(|n| RunsAs::of(&n, None)), Some(runs_as));
        assert_eq!(request.body.get_str("find").unwrap(), "c");
        // Without a user the forged one is dropped; a request without either is untouched.
        let mut request =
            CommandRequest::new("app", rawdoc! {"find": "c", "$audit": forged}).unwrap();
        attach(&mut request, None).unwrap();
        assert_eq!(request.body, rawdoc! {"find": "c"});
    }
}
