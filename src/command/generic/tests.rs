//! Unit tests of the generic argument checks: what drivers send passes, and each bad field
//! gets MongoDB's code and message.

use super::*;
use bson::spec::BinarySubtype;
use bson::{Binary, RawDocumentBuf, Timestamp, rawdoc};

fn uuid() -> Binary {
    Binary {
        subtype: BinarySubtype::Uuid,
        bytes: vec![7; 16],
    }
}

fn info(name: &str) -> CommandInfo<'_> {
    CommandInfo {
        name,
        requested: name,
        takes_write_concern: matches!(
            name,
            "insert" | "update" | "delete" | "findAndModify" | "create" | "drop"
        ),
        internal: false,
        router: true,
    }
}

fn run(db: &str, body: RawDocumentBuf) -> Result<GenericArgs> {
    let request = CommandRequest::new(db, body).unwrap();
    let name = request.name().to_string();
    check(&request, &info(&name))
}

/// The error a body gets on `app`: (code, codeName, message).
fn error(body: RawDocumentBuf) -> (i32, String, String) {
    let err = run("app", body).unwrap_err();
    (
        err.code().code(),
        err.code().name().to_string(),
        err.message().to_string(),
    )
}

fn message(body: RawDocumentBuf) -> String {
    error(body).2
}

#[test]
fn what_drivers_send_passes() {
    let lsid = rawdoc! {"id": uuid()};
    for body in [
        rawdoc! {"ping": 1, "$db": "app"},
        rawdoc! {"find": "c", "filter": {}, "lsid": lsid.clone(), "$clusterTime": {
            "clusterTime": Timestamp {time: 1, increment: 1},
            "signature": {"hash": Binary {subtype: BinarySubtype::Generic, bytes: vec![0; 20]}, "keyId": 0_i64},
        }, "$readPreference": {"mode": "primaryPreferred"}, "$db": "app"},
        rawdoc! {"insert": "c", "documents": [], "lsid": lsid.clone(), "txnNumber": 1_i64,
        "writeConcern": {"w": "majority", "wtimeout": 1000}},
        rawdoc! {"aggregate": "c", "pipeline": [], "cursor": {}, "readConcern": {"level": "majority"},
        "apiVersion": "1", "apiStrict": true, "apiDeprecationErrors": false, "maxTimeMS": 100,
        "comment": {"any": "thing"}},
        rawdoc! {"count": "c", "readConcern": {"afterClusterTime": Timestamp {time: 5, increment: 1}}},
        rawdoc! {"hello": 1, "helloOk": true, "client": {}, "backpressure": "2"},
        rawdoc! {"endSessions": [], "writeConcern": {"w": 0}},
    ] {
        run("app", body.clone()).unwrap_or_else(|e| panic!("{body:?}: {e:?}"));
    }
}

#[test]
fn session_fields_have_their_types() {
    assert_eq!(
        error(rawdoc! {"insert": "c", "lsid": {"id": uuid()}, "txnNumber": 1}),
        (
            14,
            "TypeMismatch".into(),
            "BSON field 'OperationSessionInfo.txnNumber' is the wrong type 'int', expected type 'long'"
                .into()
        )
    );
    assert_eq!(
        message(rawdoc! {"find": "c", "lsid": 5}),
        "BSON field 'OperationSessionInfo.lsid' is the wrong type 'int', expected type 'object'"
    );
    assert_eq!(
        error(rawdoc! {"find": "c", "lsid": {}}),
        (
            40414,
            "IDLFailedToParse".into(),
            "BSON field 'OperationSessionInfo.lsid.id' is missing but a required field".into()
        )
    );
    assert_eq!(
        error(rawdoc! {"find": "c", "lsid": {"id": uuid(), "x": 1}}).0,
        40415
    );
    assert_eq!(
        message(
            rawdoc! {"find": "c", "lsid": {"id": Binary {subtype: BinarySubtype::Generic, bytes: vec![0; 16]}}}
        ),
        "BSON field 'OperationSessionInfo.lsid.id' is the wrong binData type 'general', expected type 'UUID'"
    );
    assert_eq!(
        error(rawdoc! {"find": "c", "lsid": {"id": Binary {subtype: BinarySubtype::Uuid, bytes: vec![0; 3]}}}).0,
        207
    );
    assert_eq!(
        message(
            rawdoc! {"find": "c", "lsid": {"id": uuid(), "uid": Binary {subtype: BinarySubtype::Generic, bytes: vec![0; 3]}}}
        ),
        "Unsupported SHA256Block hash length: 3"
    );
    assert_eq!(
        message(
            rawdoc! {"insert": "c", "lsid": {"id": uuid()}, "txnNumber": 1_i64, "autocommit": 0}
        ),
        "BSON field 'OperationSessionInfo.autocommit' is the wrong type 'int', expected type 'bool'"
    );
    // Null is absent, as in MongoDB's IDL.
    assert!(
        run(
            "app",
            rawdoc! {"find": "c", "lsid": bson::RawBson::Null, "txnNumber": bson::RawBson::Null}
        )
        .is_ok()
    );
}

#[test]
fn session_fields_combine_as_in_mongodb() {
    let lsid = rawdoc! {"id": uuid()};
    let invalid = |body| {
        let (code, _, message) = error(body);
        assert_eq!(code, 72, "{message}");
        message
    };
    assert_eq!(
        invalid(rawdoc! {"insert": "c", "txnNumber": 1_i64}),
        "Transaction number requires a session ID to also be specified"
    );
    assert_eq!(
        invalid(rawdoc! {"insert": "c", "lsid": lsid.clone(), "txnNumber": -1_i64}),
        "Transaction number cannot be negative"
    );
    assert_eq!(
        invalid(rawdoc! {"insert": "c", "lsid": lsid.clone(), "autocommit": false}),
        "'autocommit' field requires a transaction number to also be specified"
    );
    assert_eq!(
        invalid(
            rawdoc! {"insert": "c", "lsid": lsid.clone(), "txnNumber": 1_i64, "autocommit": true}
        ),
        "Specifying autocommit=true is not allowed."
    );
    assert_eq!(
        invalid(
            rawdoc! {"insert": "c", "lsid": lsid.clone(), "txnNumber": 1_i64, "startTransaction": true}
        ),
        "'startTransaction' field requires 'autocommit' field to also be specified"
    );
    assert_eq!(
        invalid(
            rawdoc! {"insert": "c", "lsid": lsid.clone(), "txnNumber": 1_i64, "autocommit": false, "startTransaction": false}
        ),
        "Specifying startTransaction=false is not allowed."
    );
    assert_eq!(
        invalid(rawdoc! {"find": "c", "lsid": {"id": uuid(), "txnUUID": uuid()}}),
        "Internal sessions are only allowed for internal clients"
    );
    assert_eq!(
        invalid(
            rawdoc! {"insert": "c", "lsid": lsid.clone(), "txnNumber": 1_i64, "txnRetryCounter": 0}
        ),
        "txnRetryCounter is only allowed for internal clients"
    );
    assert_eq!(
        error(rawdoc! {"find": "c", "lsid": lsid.clone(), "txnNumber": 1_i64}),
        (
            50768,
            "NotARetryableWriteCommand".into(),
            "txnNumber may only be provided for multi-document transactions and retryable write \
             commands. autocommit:false was not provided, and find is not a retryable write command."
                .into()
        )
    );
    assert_eq!(
        error(rawdoc! {"ping": 1, "lsid": lsid.clone(), "txnNumber": 1_i64}).0,
        50889
    );
    assert_eq!(
        error(
            rawdoc! {"commitTransaction": 1, "lsid": lsid.clone(), "txnNumber": 1_i64, "autocommit": false, "startTransaction": true}
        ),
        (
            263,
            "OperationNotSupportedInTransaction".into(),
            "Cannot start a transaction with a commit".into()
        )
    );
}

#[test]
fn transaction_statements_follow_mongodbs_rules() {
    let lsid = rawdoc! {"id": uuid()};
    let txn = |mut body: RawDocumentBuf| {
        body.append("lsid", lsid.clone());
        body.append("txnNumber", 1_i64);
        body.append("autocommit", false);
        body
    };
    // Allowed: the transaction's number and whether it starts, on every role.
    let mut first = txn(rawdoc! {"insert": "c", "documents": [{}]});
    first.append("startTransaction", true);
    first.append("readConcern", rawdoc! {"level": "snapshot"});
    let request = CommandRequest::new("app", first).unwrap();
    let args = check(&request, &info("insert")).unwrap();
    let transaction = args.transaction.unwrap();
    assert_eq!((transaction.txn_number, transaction.start), (1, true));
    assert_eq!(transaction.read_concern_level, Some("snapshot"));
    let abort = CommandRequest::new("admin", txn(rawdoc! {"abortTransaction": 1})).unwrap();
    assert!(check(&abort, &info("abortTransaction")).is_ok());

    let refused = |db: &str, body: RawDocumentBuf| {
        let request = CommandRequest::new(db, txn(body)).unwrap();
        let name = request.name().to_string();
        let err = check(&request, &info(&name)).unwrap_err();
        (err.code().code(), err.message().to_string())
    };
    assert_eq!(
        refused("app", rawdoc! {"count": "c"}),
        (
            263,
            "Cannot run 'count' in a multi-document transaction.".into()
        )
    );
    assert_eq!(refused("admin", rawdoc! {"find": "c"}).0, 263);
    assert_eq!(refused("config", rawdoc! {"find": "c"}).0, 263);
    assert_eq!(
        refused(
            "app",
            rawdoc! {"aggregate": "c", "pipeline": [{"$out": "d"}], "cursor": {}}
        )
        .0,
        263
    );
    assert_eq!(
        refused(
            "app",
            rawdoc! {"insert": "c", "documents": [{}], "writeConcern": {"w": 1}}
        ),
        (
            72,
            "Cannot set write concern after starting a transaction.".into()
        )
    );
    assert_eq!(
        refused(
            "app",
            rawdoc! {"find": "c", "readConcern": {"level": "local"}}
        ),
        (
            72,
            "Only the first command in a transaction may specify a readConcern".into()
        )
    );
}

#[test]
fn read_concern_is_parsed_as_mongodb_parses_it() {
    assert_eq!(
        error(rawdoc! {"find": "c", "readConcern": "majority"}),
        (
            9,
            "FailedToParse".into(),
            "readConcern field should be an object".into()
        )
    );
    assert_eq!(
        error(rawdoc! {"find": "c", "readConcern": {"level": "strong"}}),
        (
            2,
            "BadValue".into(),
            "Enumeration value 'strong' for field 'readConcern.level' is not a valid value.".into()
        )
    );
    assert_eq!(
        message(rawdoc! {"find": "c", "readConcern": {"level": 1}}),
        "BSON field 'readConcern.level' is the wrong type 'int', expected type 'string'"
    );
    assert_eq!(
        error(rawdoc! {"find": "c", "readConcern": {"level": "local", "fresh": true}}),
        (
            40415,
            "IDLUnknownField".into(),
            "BSON field 'readConcern.fresh' is an unknown field.".into()
        )
    );
    assert_eq!(
        message(rawdoc! {"find": "c", "readConcern": {"afterClusterTime": 5}}),
        "BSON field 'readConcern.afterClusterTime' is the wrong type 'int', expected type 'timestamp'"
    );
    assert_eq!(
        message(
            rawdoc! {"find": "c", "readConcern": {"level": "local", "atClusterTime": Timestamp {time: 1, increment: 0}}}
        ),
        "atClusterTime field can be set only if level is equal to snapshot"
    );
    assert_eq!(
        message(
            rawdoc! {"find": "c", "readConcern": {"level": "available", "afterClusterTime": Timestamp {time: 1, increment: 0}}}
        ),
        "afterClusterTime field can be set only if level is equal to majority, local, or snapshot"
    );
    assert_eq!(
        message(
            rawdoc! {"find": "c", "readConcern": {"afterClusterTime": Timestamp {time: 0, increment: 0}}}
        ),
        "afterClusterTime cannot be a null timestamp"
    );
    assert_eq!(
        message(
            rawdoc! {"find": "c", "readConcern": {"level": "local", "provenance": "customDefault"}}
        ),
        "readConcern provenance must be unset or \"clientSupplied\""
    );
}

#[test]
fn read_concern_levels_go_where_mongodb_takes_them() {
    for level in ["local", "majority", "linearizable", "available"] {
        for command in ["find", "aggregate", "count", "distinct"] {
            run(
                "app",
                rawdoc! {command: "c", "readConcern": {"level": level}},
            )
            .unwrap();
        }
    }
    // Snapshot reads outside transactions.
    for command in ["find", "aggregate", "distinct"] {
        let plain = rawdoc! {command: "c", "readConcern": {"level": "snapshot"}};
        let at = rawdoc! {command: "c", "readConcern": {"level": "snapshot", "atClusterTime": Timestamp {time: 9, increment: 1}}};
        for body in [plain, at] {
            let request = CommandRequest::new("app", body).unwrap();
            let args = check(&request, &info(command)).unwrap();
            assert_eq!(args.read_concern_level, Some("snapshot"));
        }
    }
    assert_eq!(
        error(rawdoc! {"insert": "c", "readConcern": {"level": "majority"}}),
        (
            72,
            "InvalidOptions".into(),
            "Command insert does not support { readConcern: { level: \"majority\", provenance: \"clientSupplied\" } } :: caused by :: read concern not supported".into()
        )
    );
    assert_eq!(
        message(rawdoc! {"count": "c", "readConcern": {"level": "snapshot"}}),
        "Command count does not support { readConcern: { level: \"snapshot\", provenance: \"clientSupplied\" } } :: caused by :: read concern not supported"
    );
    run(
        "app",
        rawdoc! {"insert": "c", "readConcern": {"level": "local"}},
    )
    .unwrap();
}

#[test]
fn write_concern_goes_only_to_commands_that_write() {
    assert_eq!(
        error(rawdoc! {"find": "c", "writeConcern": {"w": 1}}),
        (
            72,
            "InvalidOptions".into(),
            "Command does not support writeConcern".into()
        )
    );
    run("app", rawdoc! {"find": "c", "writeConcern": {}}).unwrap();
    run(
        "app",
        rawdoc! {"aggregate": "c", "pipeline": [{"$out": "d"}], "writeConcern": {"w": 1}},
    )
    .unwrap();
    assert_eq!(
        error(rawdoc! {"insert": "c", "writeConcern": {"w": 99}}).2,
        "w has to be a non-negative number and not greater than 50; found: 99"
    );
    assert_eq!(
        message(rawdoc! {"insert": "c", "writeConcern": {"w": 1, "provenance": "implicitDefault"}}),
        "writeConcern provenance must be unset or \"clientSupplied\""
    );
}

#[test]
fn unsatisfiable_write_concerns_are_reported_after_the_write() {
    let args = run("app", rawdoc! {"insert": "c", "writeConcern": {"w": 2}}).unwrap();
    let reply = args.complete_reply(rawdoc! {"n": 1}).unwrap();
    let wce = reply.get_document("writeConcernError").unwrap();
    assert_eq!(wce.get_i32("code").unwrap(), 100);
    // A reply that reports one already keeps its own.
    let reply = args
        .complete_reply(rawdoc! {"n": 1, "writeConcernError": {"code": 64}})
        .unwrap();
    assert_eq!(
        reply
            .get_document("writeConcernError")
            .unwrap()
            .get_i32("code")
            .unwrap(),
        64
    );
    let args = run("app", rawdoc! {"insert": "c", "writeConcern": {"w": 1}}).unwrap();
    assert!(
        args.complete_reply(rawdoc! {"n": 1})
            .unwrap()
            .get("writeConcernError")
            .unwrap()
            .is_none()
    );
}

#[test]
fn api_parameters() {
    assert_eq!(
        error(rawdoc! {"ping": 1, "apiVersion": 1}),
        (
            14,
            "TypeMismatch".into(),
            "BSON field 'APIParametersFromClient.apiVersion' is the wrong type 'int', expected type 'string'".into()
        )
    );
    assert_eq!(
        error(rawdoc! {"ping": 1, "apiVersion": "2"}),
        (
            322,
            "APIVersionError".into(),
            "Cannot accept API version 2".into()
        )
    );
    assert_eq!(
        message(rawdoc! {"ping": 1, "apiVersion": "x"}),
        "API version must be \"1\""
    );
    assert_eq!(
        error(rawdoc! {"ping": 1, "apiStrict": true}),
        (
            4886600,
            "Location4886600".into(),
            "Provided apiStrict and/or apiDeprecationErrors without passing apiVersion".into()
        )
    );
    assert_eq!(
        message(rawdoc! {"ping": 1, "apiVersion": "1", "apiStrict": "true"}),
        "BSON field 'APIParametersFromClient.apiStrict' is the wrong type 'string', expected type 'bool'"
    );
    let (code, _, message) =
        error(rawdoc! {"distinct": "c", "key": "a", "apiVersion": "1", "apiStrict": true});
    assert_eq!(code, 323);
    assert!(
        message.starts_with(
            "Provided apiStrict:true, but the command distinct is not in API Version 1."
        )
    );
    run(
        "app",
        rawdoc! {"distinct": "c", "key": "a", "apiVersion": "1", "apiStrict": false},
    )
    .unwrap();
    assert_eq!(
        error(
            rawdoc! {"aggregate": 1, "pipeline": [{"$listLocalSessions": {}}], "apiVersion": "1", "apiStrict": true}
        ),
        (
            323,
            "APIStrictError".into(),
            "$listLocalSessions is not allowed with 'apiStrict: true' in API Version 1".into()
        )
    );
}

#[test]
fn duplicate_fields() {
    assert_eq!(
        error(rawdoc! {"find": "c", "filter": {}, "filter": {"a": 1}}),
        (
            40413,
            "IDLDuplicateField".into(),
            "BSON field 'find.filter' is a duplicate field".into()
        )
    );
    assert_eq!(
        message(rawdoc! {"insert": "c", "lsid": {"id": uuid()}, "lsid": {"id": uuid()}}),
        "BSON field 'insert.lsid' is a duplicate field"
    );
    assert_eq!(
        message(rawdoc! {"find": "c", "readConcern": {"level": "local", "level": "local"}}),
        "BSON field 'readConcern.level' is a duplicate field"
    );
}

#[test]
fn read_preference_and_cluster_time() {
    assert_eq!(
        message(rawdoc! {"find": "c", "$readPreference": "secondary"}),
        "$readPreference has incorrect type: expected object but got string"
    );
    assert_eq!(
        error(rawdoc! {"find": "c", "$readPreference": {}}),
        (
            4,
            "NoSuchKey".into(),
            "Missing expected field \"mode\"".into()
        )
    );
    assert!(
        message(rawdoc! {"find": "c", "$readPreference": {"mode": "fastest"}})
            .starts_with("Could not parse $readPreference mode 'fastest'.")
    );
    assert_eq!(
        message(
            rawdoc! {"find": "c", "$readPreference": {"mode": "primary", "tags": [{"dc": "ny"}]}}
        ),
        "Only empty tags are allowed with primary read preference"
    );
    assert_eq!(
        error(
            rawdoc! {"find": "c", "$readPreference": {"mode": "secondary", "maxStalenessSeconds": 10}}
        ),
        (
            160,
            "MaxStalenessOutOfRange".into(),
            "maxStalenessSeconds value can not be less than 90".into()
        )
    );
    run(
        "app",
        rawdoc! {"find": "c", "$readPreference": {"mode": "secondary", "tags": [{}], "maxStalenessSeconds": 90}},
    )
    .unwrap();
    assert_eq!(
        error(rawdoc! {"find": "c", "$clusterTime": 1}),
        (
            10065,
            "Location10065".into(),
            "invalid parameter: expected an object ($clusterTime)".into()
        )
    );
    assert_eq!(
        message(rawdoc! {"find": "c", "$clusterTime": {"clusterTime": 1}}),
        "\"clusterTime\" had the wrong type. Expected timestamp, found int"
    );
    let far = Timestamp {
        time: u32::MAX,
        increment: 1,
    };
    let signature = rawdoc! {"hash": Binary {subtype: BinarySubtype::Generic, bytes: vec![0; 20]}, "keyId": 1_i64};
    assert_eq!(
        error(rawdoc! {"find": "c", "$clusterTime": {"clusterTime": far, "signature": signature}})
            .0,
        205
    );
}

#[test]
fn names_of_every_command() {
    let request = |db: &str, body| run(db, body).unwrap_err().message().to_string();
    assert_eq!(
        request("a b", rawdoc! {"ping": 1}),
        "Invalid database name: 'a b'"
    );
    assert_eq!(
        request("a b", rawdoc! {"find": "c"}),
        "Invalid namespace specified 'a b.c'"
    );
    assert_eq!(
        request("app", rawdoc! {"find": ""}),
        "Invalid namespace specified 'app.'"
    );
    assert_eq!(
        request("app", rawdoc! {"insert": "a$b", "documents": [{}]}),
        "Invalid collection name: a$b"
    );
    assert_eq!(
        request("app", rawdoc! {"create": "system.foo"}),
        "Invalid system namespace: app.system.foo"
    );
    assert_eq!(
        request("app", rawdoc! {"delete": "system.views", "deletes": []}),
        "cannot write to app.system.views"
    );
    assert_eq!(
        run("local", rawdoc! {"ping": 1}).unwrap_err().code(),
        ErrorCode::IllegalOperation
    );
    run("app", rawdoc! {"find": "a$b"}).unwrap();
    assert_eq!(
        check_request_database("a.b").unwrap_err().message(),
        "'.' is an invalid character in a db name: a.b"
    );
}

#[test]
fn misspelled_max_time_gets_a_hint() {
    assert_eq!(
        error(rawdoc! {"find": "c", "$maxTimeMs": 5}),
        (
            72,
            "InvalidOptions".into(),
            "no such command option $maxTimeMs; use maxTimeMS instead".into()
        )
    );
    assert_eq!(error(rawdoc! {"find": "c", "maxTimeMS": "x"}).0, 2);
}
