//! The catalogue of aggregation expression operators and accumulators, end to end through the
//! router: every operator of the aggregation issue runs on documents of an unsharded and of a
//! sharded (hashed `_id`) collection, with the manual's examples and the edge cases (null,
//! missing, mixed numeric types, empty arrays, time zones); results are compared strictly (BSON
//! types, field order), errors by code. Each family module returns its cases; the runner
//! evaluates all cases of a family in one aggregation per collection.

mod accumulators;
mod arithmetic;
mod arrays;
mod dates;
mod logic;
mod objects;
mod sets;
mod strings;
mod types;
mod windows;

use crate::harness::{admin, aggregate_documents, error_code};
use futures::TryStreamExt;
use mongodb::bson::{Bson, DateTime, Decimal128, Document, doc};
use mongodb::{Client, Collection, Database};

pub fn dec(text: &str) -> Bson {
    Bson::Decimal128(text.parse::<Decimal128>().unwrap())
}

pub fn long(n: i64) -> Bson {
    Bson::Int64(n)
}

/// A date from its RFC 3339 text.
pub fn date(text: &str) -> Bson {
    Bson::DateTime(DateTime::parse_rfc3339_str(text).unwrap())
}

/// One expression: evaluated on `input` (a document of its own), it gives `expected`
/// (`None`: the field is missing from the output).
pub struct Case {
    pub name: &'static str,
    pub input: Document,
    pub expression: Bson,
    pub expected: Option<Bson>,
}

/// A case whose expression reads no fields.
pub fn constant(name: &'static str, expression: Bson, expected: impl Into<Bson>) -> Case {
    on(name, doc! {}, expression, expected)
}

/// A case evaluated on `input`.
pub fn on(
    name: &'static str,
    input: Document,
    expression: Bson,
    expected: impl Into<Bson>,
) -> Case {
    Case {
        name,
        input,
        expression,
        expected: Some(expected.into()),
    }
}

/// A case whose result is missing (the output field is left out).
pub fn absent(name: &'static str, input: Document, expression: Bson) -> Case {
    Case {
        name,
        input,
        expression,
        expected: None,
    }
}

/// An expression that fails with MongoDB's `code` when evaluated on `input`.
pub struct ErrorCase {
    pub name: &'static str,
    pub input: Document,
    pub expression: Bson,
    pub code: i32,
}

pub fn fails(name: &'static str, input: Document, expression: Bson, code: i32) -> ErrorCase {
    ErrorCase {
        name,
        input,
        expression,
        code,
    }
}

/// A pipeline (accumulators in `$group`, window functions in `$setWindowFields`) over the
/// documents `docs`, giving `expected` in order.
pub struct PipelineCase {
    pub name: &'static str,
    pub docs: Vec<Document>,
    pub pipeline: Vec<Document>,
    pub expected: Vec<Document>,
}

/// Equality as the server means it for a reply: same BSON types, same field order; NaN equals
/// NaN.
pub fn same(a: &Bson, b: &Bson) -> bool {
    match (a, b) {
        (Bson::Double(x), Bson::Double(y)) => x == y || (x.is_nan() && y.is_nan()),
        (Bson::Array(x), Bson::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(a, b)| same(a, b))
        }
        (Bson::Document(x), Bson::Document(y)) => same_document(x, y),
        _ => a == b,
    }
}

fn same_document(a: &Document, b: &Document) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b.iter())
            .all(|((ka, va), (kb, vb))| ka == kb && same(va, vb))
}

/// The unsharded and the sharded collection `name` of `db`, empty.
async fn collections(client: &Client, db: &Database, name: &str) -> [Collection<Document>; 2] {
    let plain = db.collection::<Document>(&format!("{name}_plain"));
    let sharded = db.collection::<Document>(&format!("{name}_sharded"));
    plain.drop().await.unwrap();
    sharded.drop().await.unwrap();
    admin(
        client,
        doc! {"shardCollection": sharded.namespace().to_string(), "key": {"_id": "hashed"}},
    )
    .await
    .unwrap();
    [plain, sharded]
}

/// Runs every case of `family` in one `$project` per collection: document `i` holds case `i`'s
/// input and a `$switch` on `_id` picks case `i`'s expression for it; then each error case on
/// its own.
pub async fn run_family(client: &Client, family: &str, cases: Vec<Case>, errors: Vec<ErrorCase>) {
    let db = client.database("expression_catalog");
    let mut failures = Vec::new();
    for coll in collections(client, &db, family).await {
        let docs: Vec<Document> = cases
            .iter()
            .enumerate()
            .map(|(i, case)| {
                let mut d = doc! {"_id": i as i32};
                d.extend(case.input.clone());
                d
            })
            .collect();
        coll.insert_many(docs).await.unwrap();
        let branches: Vec<Bson> = cases
            .iter()
            .enumerate()
            .map(|(i, case)| {
                Bson::Document(
                    doc! {"case": {"$eq": ["$_id", i as i32]}, "then": case.expression.clone()},
                )
            })
            .collect();
        let pipeline = vec![
            doc! {"$project": {"r": {"$switch": {"branches": branches, "default": "$$REMOVE"}}}},
            doc! {"$sort": {"_id": 1}},
        ];
        let results = match coll.aggregate(pipeline).await {
            Ok(cursor) => cursor.try_collect::<Vec<Document>>().await,
            Err(e) => Err(e),
        };
        let results = match results {
            Ok(results) => results,
            Err(e) => panic!("{family} on {}: {e}", coll.name()),
        };
        assert_eq!(results.len(), cases.len(), "{family} on {}", coll.name());
        for (case, result) in cases.iter().zip(&results) {
            let got = result.get("r");
            let ok = match (&case.expected, got) {
                (None, None) => true,
                (Some(want), Some(got)) => same(want, got),
                _ => false,
            };
            if !ok {
                failures.push(format!(
                    "{} on {}: {} gave {:?}, expected {:?}",
                    case.name,
                    coll.name(),
                    case.expression,
                    got,
                    case.expected
                ));
            }
        }
        for (i, case) in errors.iter().enumerate() {
            let mut input = doc! {"_id": 1_000_000 + i as i32};
            input.extend(case.input.clone());
            coll.insert_one(input).await.unwrap();
            let pipeline = vec![
                doc! {"$match": {"_id": 1_000_000 + i as i32}},
                doc! {"$project": {"r": case.expression.clone()}},
            ];
            let got = match coll.aggregate(pipeline).await {
                Ok(cursor) => match cursor.try_collect::<Vec<Document>>().await {
                    Ok(docs) => Err(format!("{docs:?}")),
                    Err(e) => Ok(error_code(&e)),
                },
                Err(e) => Ok(error_code(&e)),
            };
            if got != Ok(Some(case.code)) {
                failures.push(format!(
                    "error case {} on {}: {} gave {got:?}, expected code {}",
                    case.name,
                    coll.name(),
                    case.expression,
                    case.code
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

/// A pipeline that fails with MongoDB's `code` (run on the documents of every case).
pub struct PipelineError {
    pub name: &'static str,
    pub pipeline: Vec<Document>,
    pub code: i32,
}

/// Runs every pipeline case of `family` on both collections; case `i`'s documents carry
/// `case: i` (and `_id` in the order listed) and the runner puts a `$match` on it first.
pub async fn run_pipelines(
    client: &Client,
    family: &str,
    cases: Vec<PipelineCase>,
    errors: Vec<PipelineError>,
) {
    let db = client.database("expression_catalog");
    let mut failures = Vec::new();
    for coll in collections(client, &db, family).await {
        let docs: Vec<Document> = cases
            .iter()
            .enumerate()
            .flat_map(|(i, case)| {
                case.docs.iter().enumerate().map(move |(j, d)| {
                    let mut d = d.clone();
                    d.insert("_id", (i * 1000 + j) as i32);
                    d.insert("case", i as i32);
                    d
                })
            })
            .collect();
        coll.insert_many(docs).await.unwrap();
        for (i, case) in cases.iter().enumerate() {
            let mut pipeline = vec![doc! {"$match": {"case": i as i32}}];
            pipeline.extend(case.pipeline.clone());
            let got = aggregate_documents(&coll, pipeline).await;
            let ok = got.len() == case.expected.len()
                && got
                    .iter()
                    .zip(&case.expected)
                    .all(|(g, w)| same_document(g, w));
            if !ok {
                failures.push(format!(
                    "{} on {}: gave {got:?}, expected {:?}",
                    case.name,
                    coll.name(),
                    case.expected
                ));
            }
        }
        for error in &errors {
            let got = crate::harness::aggregate_error(&coll, error.pipeline.clone()).await;
            if got != Some(error.code) {
                failures.push(format!(
                    "error case {} on {}: gave {got:?}, expected code {}",
                    error.name,
                    coll.name(),
                    error.code
                ));
            }
        }
    }
    assert!(
        failures.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        failures.join("\n")
    );
}

async fn arithmetic_operators(client: &Client) {
    run_family(
        client,
        "arithmetic",
        arithmetic::cases(),
        arithmetic::errors(),
    )
    .await;
}

async fn logic_operators(client: &Client) {
    run_family(client, "logic", logic::cases(), logic::errors()).await;
}

async fn string_operators(client: &Client) {
    run_family(client, "strings", strings::cases(), strings::errors()).await;
}

async fn array_operators(client: &Client) {
    run_family(client, "arrays", arrays::cases(), arrays::errors()).await;
}

async fn type_operators(client: &Client) {
    run_family(client, "types", types::cases(), types::errors()).await;
}

async fn date_operators(client: &Client) {
    run_family(client, "dates", dates::cases(), dates::errors()).await;
}

async fn object_operators(client: &Client) {
    run_family(client, "objects", objects::cases(), objects::errors()).await;
}

async fn group_accumulators(client: &Client) {
    run_pipelines(
        client,
        "group",
        accumulators::group_cases(),
        accumulators::group_errors(),
    )
    .await;
}

async fn window_accumulators(client: &Client) {
    run_pipelines(
        client,
        "window",
        windows::window_cases(),
        windows::window_errors(),
    )
    .await;
}

/// One test per family on the in-process cluster.
macro_rules! in_process {
    ($($family:ident),* $(,)?) => {
        $(
            mod $family {
                #[tokio::test]
                async fn in_process() {
                    let cluster = $crate::harness::TestCluster::start().await;
                    super::$family(&cluster.client).await;
                    cluster.shutdown().await;
                }
            }
        )*
    };
}

in_process!(
    arithmetic_operators,
    logic_operators,
    string_operators,
    array_operators,
    type_operators,
    date_operators,
    object_operators,
    group_accumulators,
    window_accumulators,
);

/// Every family once more with config server, shards and router as separate processes.
#[tokio::test]
async fn every_family_separate_processes() {
    let cluster = crate::harness::ProcessCluster::start(2).await;
    let client = cluster.client().await;
    arithmetic_operators(&client).await;
    logic_operators(&client).await;
    string_operators(&client).await;
    array_operators(&client).await;
    type_operators(&client).await;
    date_operators(&client).await;
    object_operators(&client).await;
    group_accumulators(&client).await;
    window_accumulators(&client).await;
}
