//! Tests of `command_request!` and the unknown-field check.

use super::*;
use crate::command::CommandRequest;
use bson::rawdoc;

fn request(body: bson::RawDocumentBuf) -> CommandRequest {
    CommandRequest::new("db", body).unwrap()
}

#[test]
fn unknown_field_is_refused_with_idl_message() {
    let req = request(rawdoc! {"find": "c", "filterr": {}});
    let err = check_known_fields(&req, FindRequest::COMMAND, FindRequest::FIELDS).unwrap_err();
    assert_eq!(err.code(), ErrorCode::IDLUnknownField);
    assert_eq!(err.code().name(), "IDLUnknownField");
    assert_eq!(
        err.message(),
        "BSON field 'find.filterr' is an unknown field."
    );
}

#[test]
fn generic_and_declared_fields_pass() {
    let req = request(rawdoc! {
        "find": "c", "filter": {}, "limit": 3, "hint": {"a": 1}, "$db": "db",
        "lsid": {"id": 1}, "$clusterTime": {}, "$readPreference": {"mode": "primary"},
        "maxTimeMS": 5, "readConcern": {}, "comment": "x", "apiVersion": "1",
        "txnNumber": 1_i64, "shardVersion": {}, "databaseVersion": {}
    });
    check_known_fields(&req, FindRequest::COMMAND, FindRequest::FIELDS).unwrap();
    let parsed = FindRequest::parse(&req).unwrap();
    assert_eq!(parsed.limit, Some(3));
    assert!(parsed.filter.is_some());
    assert!(parsed.sort.is_none());
}

#[test]
fn document_sequences_are_fields() {
    let req = request(rawdoc! {"insert": "c"}).with_sequence("documents", vec![rawdoc! {}]);
    check_known_fields(&req, InsertRequest::COMMAND, InsertRequest::FIELDS).unwrap();
    let req = request(rawdoc! {"insert": "c"}).with_sequence("docs", vec![rawdoc! {}]);
    let err = check_known_fields(&req, InsertRequest::COMMAND, InsertRequest::FIELDS).unwrap_err();
    assert_eq!(
        err.message(),
        "BSON field 'insert.docs' is an unknown field."
    );
}

#[test]
fn wrong_type_has_mongodb_type_mismatch() {
    let req = request(rawdoc! {"find": "c", "singleBatch": "yes"});
    let err = FindRequest::parse(&req).unwrap_err();
    assert_eq!(err.code(), ErrorCode::TypeMismatch);
    assert!(
        err.message()
            .starts_with("BSON field 'find.singleBatch' is the wrong type 'string'"),
        "{}",
        err.message()
    );
}

#[test]
fn negative_limit_is_the_idl_validator_error() {
    let req = request(rawdoc! {"find": "c", "limit": -1});
    let err = FindRequest::parse(&req).unwrap_err();
    assert_eq!(err.code().code(), 51024);
    assert_eq!(err.code().name(), "Location51024");
    assert_eq!(
        err.message(),
        "BSON field 'limit' value must be >= 0, actual value '-1'"
    );
}

#[test]
fn empty_batch_is_invalid_length() {
    let req = request(rawdoc! {"insert": "c", "documents": []});
    let err = check_batch_size(&req, "documents").unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidLength);
    assert_eq!(
        err.message(),
        "Write batch sizes must be between 1 and 100000. Got 0 operations."
    );
}

#[test]
fn duplicate_fields_are_left_to_the_generic_check() {
    // The generic check (`command::generic`) refuses duplicates before any parser runs; the
    // declared-field check accepts a duplicate known field as known.
    let mut body = rawdoc! {"find": "c", "filter": {}};
    body.append("filter", rawdoc! {});
    let req = request(body);
    check_known_fields(&req, FindRequest::COMMAND, FindRequest::FIELDS).unwrap();
    let info = crate::command::generic::CommandInfo {
        name: "find",
        requested: "find",
        takes_write_concern: false,
        internal: false,
        router: false,
    };
    let err = crate::command::generic::check(&req, &info).unwrap_err();
    assert_eq!(err.code(), ErrorCode::IDLDuplicateField);
}

#[test]
fn fields_list_typed_then_known() {
    assert_eq!(FindRequest::COMMAND, "find");
    assert!(FindRequest::FIELDS.contains(&"filter"));
    assert!(FindRequest::FIELDS.contains(&"hint"));
    assert!(!FindRequest::FIELDS.contains(&"maxTimeMS"));
    assert!(is_generic_argument("maxTimeMS"));
    assert!(!is_generic_argument("filterr"));
}

/// The server, session, transaction, `dbStats` and `bulkWrite` declarations: name and fields.
fn strict_commands() -> Vec<(&'static str, &'static [&'static str])> {
    vec![
        (PingRequest::COMMAND, PingRequest::FIELDS),
        (BuildInfoRequest::COMMAND, BuildInfoRequest::FIELDS),
        (HostInfoRequest::COMMAND, HostInfoRequest::FIELDS),
        (
            GetCmdLineOptsRequest::COMMAND,
            GetCmdLineOptsRequest::FIELDS,
        ),
        (GetLogRequest::COMMAND, GetLogRequest::FIELDS),
        (
            ConnectionStatusRequest::COMMAND,
            ConnectionStatusRequest::FIELDS,
        ),
        (EndSessionsRequest::COMMAND, EndSessionsRequest::FIELDS),
        (
            RefreshSessionsRequest::COMMAND,
            RefreshSessionsRequest::FIELDS,
        ),
        (
            CommitTransactionRequest::COMMAND,
            CommitTransactionRequest::FIELDS,
        ),
        (
            AbortTransactionRequest::COMMAND,
            AbortTransactionRequest::FIELDS,
        ),
        (DbStatsRequest::COMMAND, DbStatsRequest::FIELDS),
        (BulkWriteRequest::COMMAND, BulkWriteRequest::FIELDS),
    ]
}

#[test]
fn newly_declared_commands_refuse_unknown_fields() {
    for (command, fields) in strict_commands() {
        let mut body = bson::RawDocumentBuf::new();
        body.append(command, 1);
        body.append("bogus", 1);
        let err = check_known_fields(&request(body), command, fields).unwrap_err();
        assert_eq!(err.code(), ErrorCode::IDLUnknownField, "{command}");
        assert_eq!(
            err.message(),
            format!("BSON field '{command}.bogus' is an unknown field."),
        );
    }
}

#[test]
fn newly_declared_commands_accept_generic_arguments() {
    // What drivers and mongosh add to every command.
    for (command, fields) in strict_commands() {
        let mut body = bson::RawDocumentBuf::new();
        body.append(command, 1);
        for (name, value) in rawdoc! {
            "$db": "admin", "lsid": {"id": 1}, "$clusterTime": {}, "apiVersion": "1",
            "apiStrict": false, "$readPreference": {"mode": "primaryPreferred"},
            "comment": "c", "maxTimeMS": 10, "txnNumber": 1_i64, "autocommit": false,
            "writeConcern": {"w": 1}, "readConcern": {}, "recoveryToken": {},
        }
        .iter()
        .map(Result::unwrap)
        {
            body.append(name, value.to_raw_bson());
        }
        check_known_fields(&request(body), command, fields)
            .unwrap_or_else(|e| panic!("{command}: {}", e.message()));
    }
}

#[test]
fn newly_declared_fields_are_typed() {
    let req = request(rawdoc! {"dbStats": 1, "scale": 1024, "freeStorage": 1});
    check_known_fields(&req, DbStatsRequest::COMMAND, DbStatsRequest::FIELDS).unwrap();
    let parsed = DbStatsRequest::parse(&req).unwrap();
    assert_eq!(parsed.scale, Some(1024));
    assert_eq!(parsed.free_storage, Some(true));
    let err = DbStatsRequest::parse(&request(rawdoc! {"dbStats": 1, "scale": "x"})).unwrap_err();
    assert_eq!(err.code(), ErrorCode::TypeMismatch);

    let req = request(rawdoc! {"connectionStatus": 1, "showPrivileges": true});
    check_known_fields(
        &req,
        ConnectionStatusRequest::COMMAND,
        ConnectionStatusRequest::FIELDS,
    )
    .unwrap();
    assert_eq!(
        ConnectionStatusRequest::parse(&req)
            .unwrap()
            .show_privileges,
        Some(true)
    );

    let req = request(rawdoc! {
        "bulkWrite": 1, "ops": [], "nsInfo": [], "ordered": false, "errorsOnly": true,
        "bypassDocumentValidation": true, "let": {}, "cursor": {},
    });
    check_known_fields(&req, BulkWriteRequest::COMMAND, BulkWriteRequest::FIELDS).unwrap();
    let parsed = BulkWriteRequest::parse(&req).unwrap();
    assert_eq!(parsed.ordered, Some(false));
    assert_eq!(parsed.errors_only, Some(true));
    assert_eq!(parsed.bypass_document_validation, Some(true));
    // Operations and namespaces may come as document sequences.
    let req = request(rawdoc! {"bulkWrite": 1})
        .with_sequence("ops", vec![rawdoc! {"insert": 0, "document": {}}])
        .with_sequence("nsInfo", vec![rawdoc! {"ns": "d.c"}]);
    check_known_fields(&req, BulkWriteRequest::COMMAND, BulkWriteRequest::FIELDS).unwrap();

    let req = request(
        rawdoc! {"commitTransaction": 1, "commitTimestamp": bson::Timestamp {time: 1, increment: 1}},
    );
    check_known_fields(
        &req,
        CommitTransactionRequest::COMMAND,
        CommitTransactionRequest::FIELDS,
    )
    .unwrap();
}
