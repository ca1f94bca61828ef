//! The SASL conversations of a connection (`saslStart`, `saslContinue`, and `hello`'s
//! `speculativeAuthenticate`): one at a time, id 1, SCRAM underneath. Every failure of the
//! exchange itself answers AuthenticationFailed "Authentication failed." whatever the cause
//! (unknown user, wrong password, malformed payload, a nonce that is not this conversation's),
//! as MongoDB's do; the log line says which.

use super::scram::{self, Mechanism, ServerFirst};
use super::{UserName, find_user, set_authenticated};
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::RequestContext;
use crate::server::dispatch::NodeState;
use base64::Engine;
use bson::spec::BinarySubtype;
use bson::{Binary, RawBsonRef, RawDocument, rawdoc};

/// MongoDB's log id of a successful authentication.
const LOG_SUCCESS: i32 = 5286306;
/// MongoDB's log id of a failed authentication.
const LOG_FAILURE: i32 = 5286307;

/// A conversation between its messages.
#[derive(Debug)]
pub struct Conversation {
    id: i32,
    user: UserName,
    mechanism: Mechanism,
    skip_empty_exchange: bool,
    stage: Stage,
}

#[derive(Debug)]
enum Stage {
    /// The server's first message was sent; the client's proof comes next.
    AwaitingProof(ServerFirst),
    /// The proof was right and the server's signature sent; an empty message ends it.
    AwaitingEmpty,
}

/// The error every failed exchange answers.
pub fn authentication_failed() -> MongoError {
    MongoError::new(ErrorCode::AuthenticationFailed, "Authentication failed.")
}

/// The bytes of a `payload` field: BinData, or a base64 string.
pub fn payload(args: &RawDocument) -> Result<Vec<u8>> {
    match args.get("payload")? {
        Some(RawBsonRef::Binary(b)) => Ok(b.bytes.to_vec()),
        Some(RawBsonRef::String(s)) => base64::engine::general_purpose::STANDARD
            .decode(s)
            .map_err(|_| MongoError::new(ErrorCode::BadValue, "Invalid base64 in SASL payload")),
        Some(_) => Err(MongoError::new(
            ErrorCode::TypeMismatch,
            "Wrong type for field; expected BinData or String for payload",
        )),
        None => Err(MongoError::new(
            ErrorCode::IDLFailedToParse,
            "BSON field 'payload' is missing but a required field",
        )),
    }
}

fn reply(id: i32, done: bool, payload: &[u8]) -> Result<bson::RawDocumentBuf> {
    Ok(rawdoc! {
        "conversationId": id,
        "done": done,
        "payload": Binary { subtype: BinarySubtype::Generic, bytes: payload.to_vec() },
    })
}

/// `saslStart` on database `db` (the user's authentication database).
pub async fn start<S: NodeState>(
    state: &S,
    ctx: &RequestContext,
    db: &str,
    mechanism: &str,
    payload: &[u8],
    skip_empty_exchange: bool,
) -> Result<bson::RawDocumentBuf> {
    let Some(scram_mechanism) = Mechanism::from_name(mechanism) else {
        return Err(MongoError::new(
            ErrorCode::MechanismUnavailable,
            format!(
                "Received authentication for mechanism {mechanism} which is unknown or not enabled"
            ),
        ));
    };
    // A new conversation replaces one left unfinished.
    ctx.auth().conversation = None;
    let client = match scram::parse_client_first(payload) {
        Ok(client) => client,
        Err(why) => return Err(failed(ctx, mechanism, &UserName::new("", db), &why)),
    };
    let name = UserName::new(&client.user, db);
    let credentials = find_user(state, &name)
        .await?
        .and_then(|user| user.credentials.get(scram_mechanism.name()).cloned());
    let Some(credentials) = credentials else {
        let why = format!(
            "UserNotFound: Could not find user \"{}\" for db \"{db}\"",
            name.user
        );
        return Err(failed(ctx, mechanism, &name, &why));
    };
    let first = scram::server_first(scram_mechanism, &client, credentials);
    let out = reply(1, false, first.message.as_bytes())?;
    ctx.auth().conversation = Some(Conversation {
        id: 1,
        user: name,
        mechanism: scram_mechanism,
        skip_empty_exchange,
        stage: Stage::AwaitingProof(first),
    });
    Ok(out)
}

/// `saslContinue`.
pub async fn step<S: NodeState>(
    state: &S,
    ctx: &RequestContext,
    conversation_id: i32,
    payload: &[u8],
) -> Result<bson::RawDocumentBuf> {
    let Some(conversation) = ctx.auth().conversation.take() else {
        return Err(MongoError::new(
            ErrorCode::ProtocolError,
            "No SASL session state found",
        ));
    };
    if conversation.id != conversation_id {
        return Err(MongoError::new(
            ErrorCode::ProtocolError,
            format!(
                "sasl: Mismatched conversation id; expected {}, got {conversation_id}",
                conversation.id
            ),
        ));
    }
    let mechanism = conversation.mechanism.name();
    match &conversation.stage {
        Stage::AwaitingProof(first) => {
            let last = match first.finish(payload) {
                Ok(last) => last,
                Err(why) => return Err(failed(ctx, mechanism, &conversation.user, &why)),
            };
            if conversation.skip_empty_exchange {
                succeed(state, ctx, &conversation).await?;
                return reply(conversation.id, true, last.as_bytes());
            }
            let out = reply(conversation.id, false, last.as_bytes())?;
            ctx.auth().conversation = Some(Conversation {
                stage: Stage::AwaitingEmpty,
                ..conversation
            });
            Ok(out)
        }
        Stage::AwaitingEmpty if payload.is_empty() => {
            succeed(state, ctx, &conversation).await?;
            reply(conversation.id, true, b"")
        }
        Stage::AwaitingEmpty => Err(failed(
            ctx,
            mechanism,
            &conversation.user,
            "SCRAM conversation already finished",
        )),
    }
}

async fn succeed<S: NodeState>(
    state: &S,
    ctx: &RequestContext,
    conversation: &Conversation,
) -> Result<()> {
    // The user as of now: dropped since the conversation began, it cannot authenticate.
    let Some(user) = find_user(state, &conversation.user).await? else {
        return Err(failed(
            ctx,
            conversation.mechanism.name(),
            &conversation.user,
            "user was dropped",
        ));
    };
    set_authenticated(state, ctx, &user);
    succeeded(ctx, conversation.mechanism.name(), &conversation.user);
    Ok(())
}

/// Logs a successful authentication.
pub fn succeeded(ctx: &RequestContext, mechanism: &str, user: &UserName) {
    tracing::info!(
        id = LOG_SUCCESS,
        mechanism,
        user = %user.user,
        db = %user.db,
        client = %client(ctx),
        "Successfully authenticated"
    );
}

/// Logs a failed authentication and returns the error the client sees.
pub fn failed(ctx: &RequestContext, mechanism: &str, user: &UserName, why: &str) -> MongoError {
    tracing::info!(
        id = LOG_FAILURE,
        mechanism,
        user = %user.user,
        db = %user.db,
        client = %client(ctx),
        error = why,
        "Failed to authenticate"
    );
    authentication_failed()
}

fn client(ctx: &RequestContext) -> String {
    ctx.peer
        .map(|p| p.to_string())
        .unwrap_or_else(|| "internal".into())
}

/// The `skipEmptyExchange` option of a `saslStart`.
pub fn skip_empty_exchange(args: &RawDocument) -> Result<bool> {
    match args.get("options")? {
        Some(RawBsonRef::Document(options)) => Ok(matches!(
            options.get("skipEmptyExchange")?,
            Some(RawBsonRef::Boolean(true))
        )),
        _ => Ok(false),
    }
}
