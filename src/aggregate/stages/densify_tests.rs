//! `$densify` through whole pipelines: the manual's examples and the parse and run errors.

use crate::aggregate::Pipeline;
use bson::{Bson, DateTime, Document, bson, doc};

fn run(spec: Bson, docs: Vec<Document>) -> crate::error::Result<Vec<Document>> {
    Pipeline::parse(&[doc! {"$densify": spec}])?.run(docs)
}

fn code(spec: Bson) -> i32 {
    Pipeline::parse(&[doc! {"$densify": spec}])
        .err()
        .map_or(0, |e| e.code().code())
}

fn date(text: &str) -> DateTime {
    DateTime::parse_rfc3339_str(text).unwrap()
}

/// The manual's "Densify Time Series Data" example.
#[test]
fn manual_hourly_weather() {
    let docs = vec![
        doc! {"metadata": {"sensorId": 5578, "type": "temperature"}, "timestamp": date("2021-05-18T00:00:00Z"), "temp": 12},
        doc! {"metadata": {"sensorId": 5578, "type": "temperature"}, "timestamp": date("2021-05-18T04:00:00Z"), "temp": 11},
        doc! {"metadata": {"sensorId": 5578, "type": "temperature"}, "timestamp": date("2021-05-18T08:00:00Z"), "temp": 11},
        doc! {"metadata": {"sensorId": 5578, "type": "temperature"}, "timestamp": date("2021-05-18T12:00:00Z"), "temp": 12},
    ];
    let out = run(
        bson!({"field": "timestamp", "range": {"step": 1, "unit": "hour", "bounds": [date("2021-05-18T00:00:00Z"), date("2021-05-18T08:00:00Z")]}}),
        docs,
    )
    .unwrap();
    let stamps: Vec<String> = out
        .iter()
        .map(|d| {
            d.get_datetime("timestamp")
                .unwrap()
                .try_to_rfc3339_string()
                .unwrap()
        })
        .collect();
    assert_eq!(stamps.len(), 10);
    assert_eq!(stamps[1], "2021-05-18T01:00:00Z");
    assert_eq!(stamps[4], "2021-05-18T04:00:00Z");
    assert_eq!(stamps[9], "2021-05-18T12:00:00Z");
    assert_eq!(out[1], doc! {"timestamp": date("2021-05-18T01:00:00Z")});
    assert_eq!(out[8].get_i32("temp").unwrap(), 11);
}

fn coffee() -> Vec<Document> {
    vec![
        doc! {"altitude": 600, "variety": "Arabica Typica", "score": 68.3},
        doc! {"altitude": 750, "variety": "Arabica Typica", "score": 69.5},
        doc! {"altitude": 950, "variety": "Arabica Typica", "score": 70.5},
        doc! {"altitude": 1250, "variety": "Gesha", "score": 88.15},
        doc! {"altitude": 1700, "variety": "Gesha", "score": 95.5, "price": 1029},
    ]
}

fn by_variety(out: &[Document]) -> Vec<(String, i32)> {
    let mut pairs: Vec<(String, i32)> = out
        .iter()
        .map(|d| {
            (
                d.get_str("variety").unwrap().to_string(),
                d.get_i32("altitude").unwrap(),
            )
        })
        .collect();
    pairs.sort();
    pairs
}

/// The manual's "Densification with Partitions" example (bounds "full").
#[test]
fn manual_partitions_full() {
    let out = run(
        bson!({"field": "altitude", "partitionByFields": ["variety"], "range": {"bounds": "full", "step": 200}}),
        coffee(),
    )
    .unwrap();
    let mut expected = Vec::new();
    for altitude in [600, 750, 800, 950, 1000, 1200, 1400, 1600] {
        expected.push(("Arabica Typica".to_string(), altitude));
    }
    for altitude in [600, 800, 1000, 1200, 1250, 1400, 1600, 1700] {
        expected.push(("Gesha".to_string(), altitude));
    }
    expected.sort();
    assert_eq!(by_variety(&out), expected);
}

/// The same data with bounds "partition".
#[test]
fn manual_partitions_partition() {
    let out = run(
        bson!({"field": "altitude", "partitionByFields": ["variety"], "range": {"bounds": "partition", "step": 200}}),
        coffee(),
    )
    .unwrap();
    let pairs: Vec<(String, i32)> = out
        .iter()
        .map(|d| {
            (
                d.get_str("variety").unwrap().to_string(),
                d.get_i32("altitude").unwrap(),
            )
        })
        .collect();
    let a = |n: i32| ("Arabica Typica".to_string(), n);
    let g = |n: i32| ("Gesha".to_string(), n);
    assert_eq!(
        pairs,
        vec![
            a(600),
            a(750),
            a(800),
            a(950),
            g(1250),
            g(1450),
            g(1650),
            g(1700)
        ]
    );
    assert_eq!(out[2], doc! {"variety": "Arabica Typica", "altitude": 800});
}

#[test]
fn numbers_nulls_and_calendar_units() {
    let out = run(
        bson!({"field": "v", "range": {"step": 0.5, "bounds": [0.0, 2.0]}}),
        vec![doc! {"v": 1.0}, doc! {"x": 1}, doc! {"v": 3.0}],
    )
    .unwrap();
    assert_eq!(
        out,
        vec![
            doc! {"x": 1},
            doc! {"v": 0.0},
            doc! {"v": 0.5},
            doc! {"v": 1.0},
            doc! {"v": 1.5},
            doc! {"v": 3.0},
        ]
    );
    let out = run(
        bson!({"field": "d", "range": {"step": 1, "unit": "month", "bounds": "full"}}),
        vec![
            doc! {"d": date("2021-01-31T00:00:00Z")},
            doc! {"d": date("2021-04-30T00:00:00Z")},
        ],
    )
    .unwrap();
    let days: Vec<String> = out
        .iter()
        .map(|d| {
            d.get_datetime("d")
                .unwrap()
                .try_to_rfc3339_string()
                .unwrap()
        })
        .collect();
    assert_eq!(
        days,
        vec![
            "2021-01-31T00:00:00Z",
            "2021-02-28T00:00:00Z",
            "2021-03-28T00:00:00Z",
            "2021-04-28T00:00:00Z",
            "2021-04-30T00:00:00Z"
        ]
    );
    let err = run(
        bson!({"field": "v", "range": {"step": 1, "bounds": "full"}}),
        vec![doc! {"v": "a"}],
    )
    .unwrap_err();
    assert_eq!(err.code().code(), 5733201);
    let err = run(
        bson!({"field": "v", "range": {"step": 1, "unit": "day", "bounds": "full"}}),
        vec![doc! {"v": 1}],
    )
    .unwrap_err();
    assert_eq!(err.code().code(), 6053600);
}

#[test]
fn specification_errors() {
    assert_eq!(code(bson!(1)), 9);
    assert_eq!(code(bson!({"range": {"step": 1, "bounds": "full"}})), 40414);
    assert_eq!(
        code(bson!({"field": "a", "range": {"step": 1, "bounds": "full"}, "x": 1})),
        40415
    );
    assert_eq!(
        code(bson!({"field": "a", "range": {"step": 0, "bounds": "full"}})),
        5733401
    );
    assert_eq!(
        code(bson!({"field": "a", "range": {"step": 1.5, "unit": "day", "bounds": "full"}})),
        6586400
    );
    assert_eq!(
        code(bson!({"field": "a", "range": {"step": 1, "unit": "days", "bounds": "full"}})),
        9
    );
    assert_eq!(
        code(bson!({"field": "a", "range": {"step": 1, "bounds": [1]}})),
        5733403
    );
    assert_eq!(
        code(bson!({"field": "a", "range": {"step": 1, "bounds": [2, 1]}})),
        5733402
    );
    assert_eq!(
        code(bson!({"field": "a", "range": {"step": 1, "unit": "day", "bounds": [1, 2]}})),
        5733409
    );
    assert_eq!(
        code(bson!({"field": "a", "range": {"step": 1, "bounds": [1, 2.0]}})),
        5876900
    );
    assert_eq!(
        code(
            bson!({"field": "a", "range": {"step": 1, "bounds": [DateTime::from_millis(0), DateTime::from_millis(1)]}})
        ),
        5733410
    );
    assert_eq!(
        code(bson!({"field": "a", "range": {"step": 1, "bounds": ["a", "b"]}})),
        5946800
    );
    assert_eq!(
        code(bson!({"field": "a", "range": {"step": 1, "bounds": "all"}})),
        5946802
    );
    assert_eq!(
        code(bson!({"field": "a", "range": {"step": 1, "bounds": 1}})),
        5733404
    );
    assert_eq!(
        code(bson!({"field": "a", "range": {"step": 1, "bounds": "partition"}})),
        5733408
    );
}

/// A range that would generate without end stops at MongoDB's limit
/// (`internalQueryMaxAllowedDensifyDocs`) instead of filling memory (found by the fuzzer).
#[test]
fn generation_stops_at_the_limit() {
    let spec = bson!({"field": "x", "range": {"step": 1, "bounds": "full"}});
    let err = run(spec.clone(), vec![doc! {"x": 1}, doc! {"x": 1e19}]).unwrap_err();
    assert_eq!(err.code().code(), 5897900);
    assert!(
        err.message()
            .contains("Generated 500001 documents in $densify, which is over the limit of 500000."),
        "{}",
        err.message()
    );
    // Exactly at the limit: the bounds' own values are not generated.
    let last = super::densify::MAX_GENERATED_DOCS as i64 + 1;
    let out = run(spec, vec![doc! {"x": 0_i64}, doc! {"x": last}]).unwrap();
    assert_eq!(out.len(), super::densify::MAX_GENERATED_DOCS + 2);
}

/// The sort before densifying spills past `internalQueryMaxBlockingSortMemoryUsageBytes` with
/// disk use (same output); the partitions seen count against
/// `internalDocumentSourceDensifyMaxMemoryBytes` (Location6007200), and documents without the
/// field are never densified and count for nothing (MongoDB's `densify_memory_limit` cases).
#[test]
fn densifies_within_the_memory_limits() {
    use crate::aggregate::MemoryLimits;
    let long = ",".repeat(100);
    let docs: Vec<Document> = (0..10)
        .map(|i| doc! {"_id": i, "val": i, "part": format!("{long}{i}")})
        .collect();
    let spec = bson!({"field": "val", "partitionByFields": ["part"], "range": {"step": 1, "bounds": "partition"}});
    let run_with = |spec: Bson, docs: Vec<Document>, limits: MemoryLimits| {
        Pipeline::parse(&[doc! {"$densify": spec}])
            .unwrap()
            .with_limits(limits)
            .run(docs)
    };
    let table = MemoryLimits {
        max_densify_bytes: 1000,
        ..MemoryLimits::unlimited()
    };
    let err = run_with(spec.clone(), docs, table.clone()).unwrap_err();
    assert_eq!(
        (err.code().code(), err.message()),
        (
            6007200,
            "PlanExecutor error during aggregation :: caused by :: $densify exceeded memory limit of 1000"
        )
    );
    let no_field: Vec<Document> = (0..10)
        .map(|i| doc! {"_id": i, "otherVal": i, "part": format!("{long}{i}")})
        .collect();
    assert_eq!(run_with(spec, no_field, table).unwrap().len(), 10);

    // Gaps in 4 partitions, sorted through a spilling sort.
    let docs: Vec<Document> = (0..400)
        .map(|i| doc! {"_id": i, "p": i % 4, "v": (i * 3) % 700, "pad": "x".repeat(30)})
        .collect();
    let spec =
        bson!({"field": "v", "partitionByFields": ["p"], "range": {"step": 2, "bounds": "full"}});
    let expected = run(spec.clone(), docs.clone()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let sorting = |allow| MemoryLimits {
        max_sort_bytes: 5_000,
        ..MemoryLimits::spilling_to(dir.path(), allow)
    };
    let err = run_with(spec.clone(), docs.clone(), sorting(false)).unwrap_err();
    assert_eq!(err.code().code(), 292);
    assert_eq!(run_with(spec, docs, sorting(true)).unwrap(), expected);
    assert!(dir.path().join("_tmp").exists(), "the sort spilled");
}
