//! The requests of the shared server commands (ping, buildInfo, hostInfo, getCmdLineOpts,
//! getLog, connectionStatus), the session and transaction commands (endSessions,
//! refreshSessions, commitTransaction, abortTransaction) and dbStats, each a strict IDL command
//! in MongoDB 8.0 (`generic.idl`, `buildinfo_common.idl`, `generic_servers.idl`,
//! `connection_status.idl`, `sessions_commands.idl`, `txn_cmds.idl`, dbStats'
//! `DBStatsCommand`): an IDL command is strict unless it says `strict: false`.

use super::command_request;

command_request! {
    /// `ping` (`strict: true`).
    pub struct PingRequest("ping") {
    }
    known: []
}

command_request! {
    /// `buildInfo`.
    pub struct BuildInfoRequest("buildInfo") {
    }
    known: []
}

command_request! {
    /// `hostInfo`.
    pub struct HostInfoRequest("hostInfo") {
    }
    known: []
}

command_request! {
    /// `getCmdLineOpts`.
    pub struct GetCmdLineOptsRequest("getCmdLineOpts") {
    }
    known: []
}

command_request! {
    /// `getLog` (the log's name is the command's value).
    pub struct GetLogRequest("getLog") {
    }
    known: []
}

command_request! {
    /// `connectionStatus`.
    pub struct ConnectionStatusRequest("connectionStatus") {
        show_privileges: Option<bool> = "showPrivileges" via bool,
    }
    known: []
}

command_request! {
    /// `endSessions` (the sessions are the command's value; `strict: true`).
    pub struct EndSessionsRequest("endSessions") {
    }
    known: []
}

command_request! {
    /// `killSessions` (the sessions are the command's value; `strict: false` in
    /// `kill_sessions.idl`, so not refused for unknown fields).
    pub struct KillSessionsRequest("killSessions") {
    }
    known: []
}

command_request! {
    /// `killAllSessions` (the users are the command's value; `strict: false`).
    pub struct KillAllSessionsRequest("killAllSessions") {
    }
    known: []
}

command_request! {
    /// `killAllSessionsByPattern` (the patterns are the command's value; `strict: false`).
    pub struct KillAllSessionsByPatternRequest("killAllSessionsByPattern") {
    }
    known: []
}

command_request! {
    /// `refreshSessions` (the sessions are the command's value; `strict: true`).
    pub struct RefreshSessionsRequest("refreshSessions") {
    }
    known: []
}

command_request! {
    /// `commitTransaction` (`recoveryToken` is also a generic argument here).
    pub struct CommitTransactionRequest("commitTransaction") {
    }
    known: ["commitTimestamp", "recoveryToken"]
}

command_request! {
    /// `coordinateCommitTransaction` (a router to a transaction's coordinator shard).
    pub struct CoordinateCommitTransactionRequest("coordinateCommitTransaction") {
    }
    known: ["participants"]
}

command_request! {
    /// `abortTransaction`.
    pub struct AbortTransactionRequest("abortTransaction") {
    }
    known: ["recoveryToken"]
}

command_request! {
    /// `dbStats`.
    pub struct DbStatsRequest("dbStats") {
        scale: Option<i64> = "scale" via i64,
        free_storage: Option<bool> = "freeStorage" via bool,
    }
    known: []
}
