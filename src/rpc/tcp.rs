//! The TCP transport: a bounded pool of OP_MSG connections to one host, one request at a time
//! per connection. Idle connections are checked before reuse — a closed one is dropped, one
//! idle past the refresh requirement must answer `hello` first — and closed once idle past the
//! host timeout, as MongoDB's ShardingTaskExecutorPool does. A new connection speaks TLS when
//! the node's mode says members do, and authenticates as `__system` with the cluster's key, or
//! with MONGODB-X509 and its cluster certificate, before its first request.

use super::{Membership, connection_lost, unreachable};
use crate::command::CommandRequest;
use crate::error::{ErrorCode, MongoError, Result};
use crate::server::Parameters;
use crate::server::auth::cluster_auth_mode::ClusterAuthMode;
use crate::server::auth::keyfile::{SYSTEM_DB, SYSTEM_USER};
use crate::server::auth::scram::Mechanism;
use crate::server::auth::x509::EXTERNAL_DB;
use crate::server::auth::{ClusterKey, scram_client};
use crate::server::commands::MAX_WIRE_VERSION;
use crate::wire::{DEFAULT_MAX_BSON_DEPTH, MAX_MESSAGE_SIZE, OpCode, OpMsg, read_frame};
use bson::spec::BinarySubtype;
use bson::{Binary, RawDocumentBuf, rawdoc};
use std::sync::atomic::{AtomicI32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use tokio::io::{AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio_util::either::Either;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

type Conn = BufReader<Stream>;

/// A connection to another member, over TLS (right) or not (left).
type Stream = Either<TcpStream, Box<tokio_rustls::client::TlsStream<TcpStream>>>;

/// The socket under a connection, TLS or not.
fn tcp(stream: &Stream) -> &TcpStream {
    match stream {
        Either::Left(tcp) => tcp,
        Either::Right(tls) => tls.get_ref().0,
    }
}

/// The limits of each host's pool (MongoDB's `ShardingTaskExecutorPool*` parameters).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PoolLimits {
    /// Connections open to one host at most; more requests wait for one to be returned.
    pub max_size: usize,
    /// How long a request waits for a connection (and a health check for its answer).
    pub refresh_timeout: Duration,
    /// A connection idle this long answers `hello` before it is used again.
    pub refresh_requirement: Duration,
    /// A connection idle this long is closed.
    pub host_timeout: Duration,
    /// `maxBSONDepth`: replies from the peer are validated as requests are, so that a
    /// corrupt or hostile peer cannot crash this node.
    pub max_bson_depth: usize,
}

impl Default for PoolLimits {
    fn default() -> Self {
        PoolLimits {
            max_size: 64,
            refresh_timeout: Duration::from_secs(20),
            refresh_requirement: Duration::from_secs(60),
            host_timeout: Duration::from_secs(300),
            max_bson_depth: DEFAULT_MAX_BSON_DEPTH,
        }
    }
}

impl PoolLimits {
    /// The limits a node's startup parameters set.
    pub fn from_params(params: &Parameters) -> Self {
        let defaults = PoolLimits::default();
        let millis = |name: &str, default: Duration| {
            params
                .get_i64(name)
                .and_then(|ms| u64::try_from(ms).ok())
                .map_or(default, Duration::from_millis)
        };
        PoolLimits {
            max_size: params
                .get_i64("ShardingTaskExecutorPoolMaxSize")
                .and_then(|n| usize::try_from(n).ok())
                .filter(|n| *n > 0)
                .unwrap_or(defaults.max_size),
            refresh_timeout: millis(
                "ShardingTaskExecutorPoolRefreshTimeoutMS",
                defaults.refresh_timeout,
            ),
            refresh_requirement: millis(
                "ShardingTaskExecutorPoolRefreshRequirementMS",
                defaults.refresh_requirement,
            ),
            host_timeout: millis(
                "ShardingTaskExecutorPoolHostTimeoutMS",
                defaults.host_timeout,
            ),
            max_bson_depth: params
                .get_i64("maxBSONDepth")
                .and_then(|n| usize::try_from(n).ok())
                .unwrap_or(defaults.max_bson_depth),
        }
    }
}

struct Idle {
    conn: Conn,
    since: Instant,
}

/// A connection lent to one request, with its place in the pool's bound.
struct Lease {
    conn: Conn,
    _permit: OwnedSemaphorePermit,
}

pub(super) struct Pool {
    host: String,
    limits: PoolLimits,
    idle: Mutex<Vec<Idle>>,
    /// One permit per connection that may be open.
    permits: Arc<Semaphore>,
    next_request_id: AtomicI32,
    membership: Membership,
}

impl Pool {
    pub fn new(host: &str, limits: PoolLimits, membership: Membership) -> Self {
        Pool {
            host: host.to_string(),
            limits,
            membership,
            idle: Mutex::new(Vec::new()),
            permits: Arc::new(Semaphore::new(limits.max_size.max(1))),
            next_request_id: AtomicI32::new(1),
        }
    }

    pub async fn call(&self, request: CommandRequest) -> Result<RawDocumentBuf> {
        let mut lease = self.checkout().await?;
        let reply = self.round_trip(&mut lease.conn, &request).await?;
        self.checkin(lease.conn);
        Ok(reply)
    }

    /// A healthy idle connection, or a new one once the pool has room.
    async fn checkout(&self) -> Result<Lease> {
        let permit = tokio::time::timeout(
            self.limits.refresh_timeout,
            Arc::clone(&self.permits).acquire_owned(),
        )
        .await
        .map_err(|_| {
            MongoError::new(
                ErrorCode::NetworkInterfaceExceededTimeLimit,
                format!(
                    "Couldn't get a connection to {} within the time limit of {}ms: all {} are in use",
                    self.host,
                    self.limits.refresh_timeout.as_millis(),
                    self.limits.max_size
                ),
            )
        })?
        .map_err(|_| MongoError::internal("connection pool closed"))?;
        while let Some(idle) = self.take_idle() {
            if let Some(conn) = self.healthy(idle).await {
                return Ok(Lease {
                    conn,
                    _permit: permit,
                });
            }
        }
        Ok(Lease {
            conn: self.connect().await?,
            _permit: permit,
        })
    }

    /// The most recently used idle connection; those idle past the host timeout are closed.
    fn take_idle(&self) -> Option<Idle> {
        let mut idle = self.idle.lock().expect("poisoned");
        let timeout = self.limits.host_timeout;
        idle.retain(|c| c.since.elapsed() < timeout);
        idle.pop()
    }

    /// The connection if it is still usable: not closed by the peer, and — idle past the
    /// refresh requirement — answering `hello` in time.
    async fn healthy(&self, idle: Idle) -> Option<Conn> {
        let mut conn = idle.conn;
        let mut probe = [0u8; 1];
        match tcp(conn.get_ref()).try_read(&mut probe) {
            // No data and not closed: the connection is idle and alive.
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            _ => return None,
        }
        if idle.since.elapsed() >= self.limits.refresh_requirement {
            let ping = CommandRequest::new("admin", rawdoc! {"hello": 1}).ok()?;
            let answered = tokio::time::timeout(
                self.limits.refresh_timeout,
                self.round_trip(&mut conn, &ping),
            )
            .await;
            if !matches!(answered, Ok(Ok(_))) {
                tracing::debug!(host = %self.host, "an idle connection failed its health check");
                return None;
            }
        }
        Some(conn)
    }

    fn checkin(&self, conn: Conn) {
        self.idle.lock().expect("poisoned").push(Idle {
            conn,
            since: Instant::now(),
        });
    }

    async fn connect(&self) -> Result<Conn> {
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(&self.host))
            .await
            .map_err(|_| unreachable(&self.host, "connection timed out"))?
            .map_err(|e| unreachable(&self.host, e))?;
        let _ = stream.set_nodelay(true);
        let stream = match self
            .membership
            .tls
            .as_ref()
            .and_then(|t| t.member_connector())
        {
            Some(connector) => {
                let name = crate::server::tls::server_name(&self.host)?;
                let tls = tokio::time::timeout(CONNECT_TIMEOUT, connector.connect(name, stream))
                    .await
                    .map_err(|_| unreachable(&self.host, "TLS handshake timed out"))?
                    .map_err(|e| unreachable(&self.host, e))?;
                Either::Right(Box::new(tls))
            }
            None => Either::Left(stream),
        };
        let mut conn = BufReader::with_capacity(64 * 1024, stream);
        self.handshake(&mut conn).await?;
        Ok(conn)
    }

    /// Sends one command on `conn` and reads its reply.
    async fn round_trip(
        &self,
        conn: &mut Conn,
        request: &CommandRequest,
    ) -> Result<RawDocumentBuf> {
        let request_id = self.next_request_id.fetch_add(1, Ordering::Relaxed);
        let mut bytes = Vec::new();
        request.to_op_msg().encode(request_id, 0, &mut bytes);
        if bytes.len() > MAX_MESSAGE_SIZE {
            // The peer would close the connection on it: refuse it here, with the reason.
            return Err(MongoError::new(
                ErrorCode::BSONObjectTooLarge,
                format!(
                    "the {} request to {} would be a message of {} bytes, over maxMessageSizeBytes ({MAX_MESSAGE_SIZE})",
                    request.name(),
                    self.host,
                    bytes.len()
                ),
            ));
        }
        conn.get_mut()
            .write_all(&bytes)
            .await
            .map_err(|e| connection_lost(&self.host, e))?;
        let frame = match read_frame(conn).await {
            Ok(Some(frame)) => frame,
            Ok(None) => return Err(connection_lost(&self.host, "connection closed by peer")),
            Err(e) => return Err(connection_lost(&self.host, e)),
        };
        if frame.header.op_code != OpCode::Msg.as_i32() {
            return Err(MongoError::internal(format!(
                "bad reply from {}: opcode {}",
                self.host, frame.header.op_code
            )));
        }
        let reply = OpMsg::decode_with(&frame.bytes, self.limits.max_bson_depth)?;
        Ok(reply.body)
    }

    /// A new connection introduces itself as a cluster node (`internalClient`), as MongoDB's
    /// nodes do; with the cluster's key, its `hello` starts the `__system` conversation
    /// (`speculativeAuthenticate`), which the next messages finish; with `x509`, it carries
    /// the MONGODB-X509 authentication of the cluster certificate the handshake presented.
    async fn handshake(&self, conn: &mut Conn) -> Result<()> {
        let mut hello = rawdoc! {
            "hello": 1,
            "internalClient": {"minWireVersion": MAX_WIRE_VERSION, "maxWireVersion": MAX_WIRE_VERSION},
        };
        let x509 = self
            .membership
            .mode
            .get()
            .is_some_and(ClusterAuthMode::sends_x509);
        let first = match &self.membership.key {
            Some(_) if !x509 => Some(scram_client::start(MECHANISM, SYSTEM_USER)),
            _ => None,
        };
        if x509 {
            let mut authenticate = x509_authenticate();
            authenticate.append("db", EXTERNAL_DB);
            hello.append("speculativeAuthenticate", authenticate);
        } else if let Some(first) = &first {
            let mut start = sasl_start(first);
            start.append("db", SYSTEM_DB);
            hello.append("speculativeAuthenticate", start);
        }
        let request = CommandRequest::new("admin", hello)?;
        let reply = self
            .round_trip(conn, &request)
            .await
            .map_err(|e| unreachable(&self.host, e))?;
        let speculative = match reply.get("speculativeAuthenticate")? {
            Some(bson::RawBsonRef::Document(started)) => Some(started),
            _ => None,
        };
        let authenticated = match (&self.membership.key, first) {
            _ if x509 && speculative.is_some() => Ok(()),
            _ if x509 => self.authenticate_x509(conn).await,
            (Some(key), Some(first)) => {
                let started = match speculative {
                    Some(started) => Some((first, SaslReply::of(started)?)),
                    None => None,
                };
                self.authenticate(conn, key, started).await
            }
            _ => return Ok(()),
        };
        authenticated.map_err(|e| {
            let e = match e.code() {
                ErrorCode::AuthenticationFailed => e,
                _ => MongoError::new(ErrorCode::AuthenticationFailed, e.message()),
            };
            MongoError::new(
                e.code(),
                format!(
                    "Error connecting to {} :: caused by :: {}",
                    self.host,
                    e.message()
                ),
            )
        })
    }

    /// Authenticates `conn` with MONGODB-X509 (`authenticate` on `$external`): the peer
    /// recognizes the cluster certificate this connection presented as a member's.
    async fn authenticate_x509(&self, conn: &mut Conn) -> Result<()> {
        let request = CommandRequest::new(EXTERNAL_DB, x509_authenticate())?;
        succeeded(self.round_trip(conn, &request).await?).map(|_| ())
    }

    /// Authenticates `conn` as `__system` with SCRAM-SHA-256 (MongoDB's internal
    /// authentication with a key file), from the conversation `hello` started or from the
    /// start, checking the peer's signature too: a process without the key is not a member
    /// either way.
    async fn authenticate(
        &self,
        conn: &mut Conn,
        key: &ClusterKey,
        started: Option<(scram_client::ClientFirst, SaslReply)>,
    ) -> Result<()> {
        let (first, reply) = match started {
            Some(started) => started,
            None => {
                let first = scram_client::start(MECHANISM, SYSTEM_USER);
                let reply = self.sasl_step(conn, sasl_start(&first)).await?;
                (first, reply)
            }
        };
        let last = first
            .finish(&reply.payload, |salt, iterations| {
                key.salted_password(MECHANISM, salt, iterations)
            })
            .map_err(failed)?;
        let proof = rawdoc! {
            "saslContinue": 1,
            "conversationId": reply.conversation_id,
            "payload": binary(last.message.as_bytes()),
        };
        let reply = self.sasl_step(conn, proof).await?;
        last.verify(&reply.payload).map_err(failed)?;
        if reply.done {
            return Ok(());
        }
        // A server that does not skip the empty exchange wants one more message, and is done.
        let empty = rawdoc! {
            "saslContinue": 1,
            "conversationId": reply.conversation_id,
            "payload": binary(b""),
        };
        match self.sasl_step(conn, empty).await? {
            SaslReply { done: true, .. } => Ok(()),
            _ => Err(failed("the SCRAM conversation does not end".into())),
        }
    }

    /// One message of the conversation: its reply's payload, or the error it carries.
    async fn sasl_step(&self, conn: &mut Conn, command: RawDocumentBuf) -> Result<SaslReply> {
        let request = CommandRequest::new(SYSTEM_DB, command)?;
        let reply = succeeded(self.round_trip(conn, &request).await?)?;
        SaslReply::of(&reply)
    }
}

/// A reply of the authentication exchange, or the error it carries.
fn succeeded(reply: RawDocumentBuf) -> Result<RawDocumentBuf> {
    if crate::error::raw_reply_ok(&reply) {
        return Ok(reply);
    }
    let doc = reply.to_document()?;
    Err(MongoError::from_reply(&doc)
        .unwrap_or_else(|| MongoError::internal("a failed reply without its error")))
}

/// The mechanism members authenticate with, as MongoDB's do by default.
const MECHANISM: Mechanism = Mechanism::Sha256;

/// MONGODB-X509 as members send it: no user, the certificate names it.
fn x509_authenticate() -> RawDocumentBuf {
    rawdoc! {"authenticate": 1, "mechanism": "MONGODB-X509"}
}

/// The `saslStart` of a conversation as `__system`.
fn sasl_start(first: &scram_client::ClientFirst) -> RawDocumentBuf {
    rawdoc! {
        "saslStart": 1,
        "mechanism": MECHANISM.name(),
        "payload": binary(first.message.as_bytes()),
        "options": {"skipEmptyExchange": true},
    }
}

struct SaslReply {
    conversation_id: i32,
    done: bool,
    payload: Vec<u8>,
}

impl SaslReply {
    fn of(reply: &bson::RawDocument) -> Result<SaslReply> {
        let payload = match reply.get("payload")? {
            Some(bson::RawBsonRef::Binary(b)) => b.bytes.to_vec(),
            _ => return Err(failed("the SASL reply has no payload".into())),
        };
        Ok(SaslReply {
            conversation_id: reply.get_i32("conversationId").unwrap_or(1),
            done: reply.get_bool("done").unwrap_or(false),
            payload,
        })
    }
}

fn binary(bytes: &[u8]) -> Binary {
    Binary {
        subtype: BinarySubtype::Generic,
        bytes: bytes.to_vec(),
    }
}

/// A conversation the peer got wrong: logged with why, reported as MongoDB reports it.
fn failed(why: String) -> MongoError {
    tracing::warn!(error = %why, "internal authentication failed");
    crate::server::auth::sasl::authentication_failed()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::AtomicUsize;
    use tokio::net::TcpListener;

    /// A peer answering every command `{ok: 1}` after `delay`, counting its connections and
    /// closing each after `replies_per_connection` replies.
    async fn peer(delay: Duration, replies_per_connection: usize) -> (String, Arc<AtomicUsize>) {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let host = listener.local_addr().unwrap().to_string();
        let accepted = Arc::new(AtomicUsize::new(0));
        let counter = Arc::clone(&accepted);
        tokio::spawn(async move {
            loop {
                let (stream, _) = listener.accept().await.unwrap();
                counter.fetch_add(1, Ordering::SeqCst);
                tokio::spawn(async move {
                    let mut conn = BufReader::new(stream);
                    // The handshake's reply does not count.
                    for _ in 0..=replies_per_connection {
                        let Ok(Some(frame)) = read_frame(&mut conn).await else {
                            return;
                        };
                        tokio::time::sleep(delay).await;
                        let mut out = Vec::new();
                        OpMsg::new(rawdoc! {"ok": 1.0}).encode(
                            1,
                            frame.header.request_id,
                            &mut out,
                        );
                        if conn.get_mut().write_all(&out).await.is_err() {
                            return;
                        }
                    }
                });
            }
        });
        (host, accepted)
    }

    fn ping() -> CommandRequest {
        CommandRequest::new("admin", rawdoc! {"ping": 1}).unwrap()
    }

    #[tokio::test]
    async fn the_pool_never_opens_more_than_its_size() {
        let (host, accepted) = peer(Duration::from_millis(20), usize::MAX).await;
        let limits = PoolLimits {
            max_size: 2,
            ..PoolLimits::default()
        };
        let pool = Arc::new(Pool::new(&host, limits, Membership::default()));
        let calls: Vec<_> = (0..10)
            .map(|_| {
                let pool = Arc::clone(&pool);
                tokio::spawn(async move { pool.call(ping()).await })
            })
            .collect();
        for call in calls {
            call.await.unwrap().unwrap();
        }
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    #[tokio::test]
    async fn a_full_pool_times_out_with_mongodbs_error() {
        let (host, _) = peer(Duration::from_millis(300), usize::MAX).await;
        let limits = PoolLimits {
            max_size: 1,
            refresh_timeout: Duration::from_millis(50),
            ..PoolLimits::default()
        };
        let pool = Arc::new(Pool::new(&host, limits, Membership::default()));
        let busy = {
            let pool = Arc::clone(&pool);
            tokio::spawn(async move { pool.call(ping()).await })
        };
        tokio::time::sleep(Duration::from_millis(20)).await;
        let err = pool.call(ping()).await.unwrap_err();
        assert_eq!(err.code(), ErrorCode::NetworkInterfaceExceededTimeLimit);
        busy.await.unwrap().unwrap();
    }

    #[tokio::test]
    async fn closed_and_stale_connections_are_replaced() {
        // The peer closes each connection after one reply: the next call notices and
        // reconnects instead of failing.
        let (host, accepted) = peer(Duration::ZERO, 1).await;
        let pool = Pool::new(&host, PoolLimits::default(), Membership::default());
        pool.call(ping()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        pool.call(ping()).await.unwrap();
        assert_eq!(accepted.load(Ordering::SeqCst), 2);

        // With no refresh requirement, an idle connection answers `hello` before reuse. This
        // peer closes after three replies: the first call, the health check and the second
        // call use them up, so the third call needs a new connection (without health checks
        // it would still have had one).
        let (host, accepted) = peer(Duration::ZERO, 3).await;
        let limits = PoolLimits {
            refresh_requirement: Duration::ZERO,
            ..PoolLimits::default()
        };
        let pool = Pool::new(&host, limits, Membership::default());
        pool.call(ping()).await.unwrap();
        pool.call(ping()).await.unwrap();
        assert_eq!(
            accepted.load(Ordering::SeqCst),
            1,
            "ping and call on one connection"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
        pool.call(ping()).await.unwrap();
        assert_eq!(accepted.load(Ordering::SeqCst), 2);

        // Connections idle past the host timeout are closed, not reused.
        let (host, accepted) = peer(Duration::ZERO, usize::MAX).await;
        let limits = PoolLimits {
            host_timeout: Duration::from_millis(10),
            ..PoolLimits::default()
        };
        let pool = Pool::new(&host, limits, Membership::default());
        pool.call(ping()).await.unwrap();
        tokio::time::sleep(Duration::from_millis(30)).await;
        pool.call(ping()).await.unwrap();
        assert_eq!(accepted.load(Ordering::SeqCst), 2);
    }

    /// A member sending certificates: its `hello` asks for MONGODB-X509 on `$external`; a
    /// peer that does not answer it there gets `authenticate`, and a refusal is
    /// AuthenticationFailed.
    #[tokio::test]
    async fn members_sending_certificates_authenticate_with_x509() {
        use crate::server::auth::cluster_auth_mode::{ClusterAuthMode, ClusterAuthModeCell};
        for accepted in [true, false] {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let host = listener.local_addr().unwrap().to_string();
            let seen = Arc::new(Mutex::new(Vec::<String>::new()));
            let names = Arc::clone(&seen);
            tokio::spawn(async move {
                let (stream, _) = listener.accept().await.unwrap();
                let mut conn = BufReader::new(stream);
                while let Ok(Some(frame)) = read_frame(&mut conn).await {
                    let body = OpMsg::decode_with(&frame.bytes, 100).unwrap().body;
                    let name = body.iter().next().unwrap().unwrap().0.to_string();
                    let reply = match name.as_str() {
                        "hello" => {
                            let asked = body.get_document("speculativeAuthenticate").unwrap();
                            assert_eq!(asked.get_str("mechanism").unwrap(), "MONGODB-X509");
                            assert_eq!(asked.get_str("db").unwrap(), "$external");
                            rawdoc! {"ok": 1.0}
                        }
                        "authenticate" if accepted => {
                            assert_eq!(body.get_str("$db").unwrap(), "$external");
                            rawdoc! {"ok": 1.0, "dbname": "$external", "user": "CN=member"}
                        }
                        "authenticate" => rawdoc! {
                            "ok": 0.0, "errmsg": "Authentication failed.", "code": 18,
                            "codeName": "AuthenticationFailed",
                        },
                        _ => rawdoc! {"ok": 1.0},
                    };
                    names.lock().unwrap().push(name);
                    let mut out = Vec::new();
                    OpMsg::new(reply).encode(1, frame.header.request_id, &mut out);
                    conn.get_mut().write_all(&out).await.unwrap();
                }
            });
            let membership = Membership {
                mode: ClusterAuthModeCell::new(Some(ClusterAuthMode::X509)),
                ..Membership::default()
            };
            let pool = Pool::new(&host, PoolLimits::default(), membership);
            let outcome = pool.call(ping()).await;
            if accepted {
                outcome.unwrap();
                assert_eq!(*seen.lock().unwrap(), ["hello", "authenticate", "ping"]);
            } else {
                let err = outcome.unwrap_err();
                assert_eq!(err.code(), ErrorCode::AuthenticationFailed);
                assert!(err.message().starts_with("Error connecting to"), "{err}");
            }
        }
    }

    /// A member with the key: its `hello` carries the conversation's start, so a connection
    /// costs `hello`, one `saslContinue` and then serves requests; a peer whose signature is
    /// wrong is refused.
    #[tokio::test]
    async fn members_authenticate_speculatively_and_check_the_peer() {
        use crate::server::auth::scram::{self, Mechanism};
        let key = Arc::new(ClusterKey::from_contents("k", b"abcdefgh", |_| 4096).unwrap());
        for honest in [true, false] {
            let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
            let host = listener.local_addr().unwrap().to_string();
            let credentials = key.system_user().credentials[Mechanism::Sha256.name()].clone();
            let seen = Arc::new(Mutex::new(Vec::<String>::new()));
            let names = Arc::clone(&seen);
            tokio::spawn(async move {
                let (stream, _) = listener.accept().await.unwrap();
                let mut conn = BufReader::new(stream);
                let mut server = None;
                while let Ok(Some(frame)) = read_frame(&mut conn).await {
                    let body = OpMsg::decode_with(&frame.bytes, 100).unwrap().body;
                    let name = body.iter().next().unwrap().unwrap().0.to_string();
                    names.lock().unwrap().push(name.clone());
                    let reply = match name.as_str() {
                        "hello" => {
                            let start = body.get_document("speculativeAuthenticate").unwrap();
                            let payload = start.get_binary("payload").unwrap().bytes;
                            let client = scram::parse_client_first(payload).unwrap();
                            let first = scram::server_first(
                                Mechanism::Sha256,
                                &client,
                                credentials.clone(),
                            );
                            let reply = rawdoc! {"ok": 1.0, "speculativeAuthenticate": {
                                "conversationId": 1, "done": false,
                                "payload": binary(first.message.as_bytes()),
                            }};
                            server = Some(first);
                            reply
                        }
                        "saslContinue" => {
                            let payload = body.get_binary("payload").unwrap().bytes;
                            let mut last = server.as_ref().unwrap().finish(payload).unwrap();
                            if !honest {
                                last = "v=AAAA".into();
                            }
                            rawdoc! {"ok": 1.0, "conversationId": 1, "done": true, "payload": binary(last.as_bytes())}
                        }
                        _ => rawdoc! {"ok": 1.0},
                    };
                    let mut out = Vec::new();
                    OpMsg::new(reply).encode(1, frame.header.request_id, &mut out);
                    conn.get_mut().write_all(&out).await.unwrap();
                }
            });
            let membership = Membership {
                key: Some(Arc::clone(&key)),
                ..Membership::default()
            };
            let pool = Pool::new(&host, PoolLimits::default(), membership);
            let outcome = pool.call(ping()).await;
            if honest {
                outcome.unwrap();
                assert_eq!(*seen.lock().unwrap(), ["hello", "saslContinue", "ping"]);
            } else {
                assert_eq!(outcome.unwrap_err().code(), ErrorCode::AuthenticationFailed);
            }
        }
    }
}
