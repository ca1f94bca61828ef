//! The wildcard planner's scans: paths, bounds, key checks and sorts, on plain and compound
//! wildcard indexes.

use super::*;
use crate::datanode::exec::plan::AccessPath;
use crate::datanode::exec::test_catalog::{collection, index};
use crate::datanode::index::wildcard_key;
use crate::query::sort::SortSpec;

fn plan(
    key: Document,
    multikey: bool,
    filter: Document,
    sort: Option<Document>,
) -> Option<IndexScanPlan> {
    scan_of(index(key, 2, multikey), filter, sort)
}

/// The index scan planned for `filter` (and `sort`) on a collection with `index`.
fn scan_of(index: IndexMeta, filter: Document, sort: Option<Document>) -> Option<IndexScanPlan> {
    let coll = collection(vec![index]);
    let sort = sort.map(|s| SortSpec::parse(&s).unwrap());
    let shape = QueryShape {
        sort: sort.as_ref(),
        ..QueryShape::filter(&filter)
    };
    match AccessPath::choose(&coll, &shape).unwrap() {
        AccessPath::IndexScan(plan) => Some((*plan).clone()),
        _ => None,
    }
}

fn finds(plan: &IndexScanPlan, path: &str, value: Bson) -> bool {
    let descending = plan.wildcard.as_ref().unwrap().descending;
    let key = wildcard_key(path, &value, descending);
    plan.intervals.iter().any(|iv| iv.contains(&key))
}

#[test]
fn one_path_per_scan() {
    let all = doc! {"$**": 1};
    let eq = plan(all.clone(), false, doc! {"a": 5, "z": {"$ne": 1}}, None).unwrap();
    assert_eq!(eq.key_pattern(), doc! {"$_path": 1, "a": 1});
    assert!(finds(&eq, "a", Bson::Int64(5)));
    assert!(!finds(&eq, "a", Bson::Int32(6)) && !finds(&eq, "b", Bson::Int32(5)));
    assert!(!finds(&eq, "a.b", Bson::Int32(5)));
    let range = plan(
        all.clone(),
        true,
        doc! {"b": {"$gt": 1}, "a": {"$exists": true}},
        None,
    )
    .unwrap();
    assert_eq!(range.wildcard.as_ref().unwrap().path, "b");
    assert!(finds(&range, "b", Bson::Double(1.5)) && !finds(&range, "b", Bson::String("x".into())));
    let exists = plan(all.clone(), false, doc! {"a": {"$exists": true}}, None).unwrap();
    for (path, value) in [
        ("a", Bson::Null),
        ("a.b", Bson::Int32(1)),
        ("a", Bson::Document(doc! {})),
    ] {
        assert!(finds(&exists, path, value), "{path}");
    }
    assert!(!finds(&exists, "ab", Bson::Int32(1)) && !finds(&exists, "b", Bson::Int32(1)));
    let regex = plan(all.clone(), false, doc! {"s": {"$regex": "^ab"}}, None).unwrap();
    assert!(finds(&regex, "s", Bson::String("abc".into())));
    assert!(!finds(&regex, "s", Bson::String("b".into())));
    for unplanned in [
        doc! {"a": null},
        doc! {"a": {"$exists": false}},
        doc! {"a": {"$ne": 1}},
        doc! {"a": {"$nin": [1]}},
        doc! {"a": {"b": 1}},
        doc! {"a": [1]},
        doc! {"a.0": 1},
        doc! {"a": {"$in": [1, null]}},
    ] {
        assert!(
            plan(all.clone(), false, unplanned.clone(), None).is_none(),
            "{unplanned}"
        );
    }
    assert!(plan(all, false, doc! {"a": {}}, None).is_some());
}

#[test]
fn projections_sorts_and_directions() {
    let sub = doc! {"a.$**": -1};
    assert!(plan(sub.clone(), false, doc! {"b": 1}, None).is_none());
    let desc = plan(
        sub.clone(),
        false,
        doc! {"a.c": {"$in": [1, 2]}},
        Some(doc! {"a.c": 1}),
    )
    .unwrap();
    assert!(finds(&desc, "a.c", Bson::Int32(2)) && desc.provides_sort && desc.reverse);
    assert!(desc.intervals[0].low < desc.intervals[1].low);
    let multikey = plan(
        sub.clone(),
        true,
        doc! {"a.c": {"$gt": 1}},
        Some(doc! {"a.c": 1}),
    );
    assert!(!multikey.unwrap().provides_sort);
    // One point on the path: the sort on it is the scan's, arrays or not.
    let point = plan(sub, true, doc! {"a.c": 1}, Some(doc! {"a.c": 1})).unwrap();
    assert!(point.provides_sort);
}

#[test]
fn each_path_is_planned_by_its_own_arrays() {
    let mut multikey = index(doc! {"$**": 1}, 2, true);
    multikey.multikey_paths = Arc::new(["a".to_string(), "c.d".to_string()].into());
    let sorted = |path: &str| {
        let filter = doc! {path: {"$gt": 1}};
        let plan = scan_of(multikey.clone(), filter, Some(doc! {path: 1})).unwrap();
        plan.provides_sort
    };
    for path in ["b", "c", "c.e", "ab"] {
        assert!(sorted(path), "{path}");
    }
    // An array at the path or above it: several keys per document there.
    for path in ["a", "a.b", "c.d", "c.d.e"] {
        assert!(!sorted(path), "{path}");
    }
    assert_eq!(
        multikey.multikey_prefixes("c.d.e"),
        Some(vec!["c.d".into()])
    );
    assert_eq!(multikey.multikey_prefixes("c.e"), Some(vec![]));
    let range = |path: &str| {
        let filter = doc! {path: {"$gt": 1, "$lt": 5}};
        scan_of(multikey.clone(), filter, None).unwrap()
    };
    let b = range("b");
    assert!(finds(&b, "b", Bson::Int32(3)));
    assert!(!finds(&b, "b", Bson::Int32(7)) && !finds(&b, "b", Bson::Int32(0)));
    // `{a: [0, 7]}` matches: one predicate alone bounds the scan.
    let a = range("a");
    assert!(finds(&a, "a", Bson::Int32(3)));
    assert!(finds(&a, "a", Bson::Int32(7)) || finds(&a, "a", Bson::Int32(0)));
    // Recorded multikey before its paths were: every path is, whatever paths come later.
    let mut unknown = index(doc! {"$**": 1}, 2, true);
    unknown.add_multikey_paths(&["a".to_string()].into());
    assert_eq!(unknown.multikey_prefixes("b"), None);
    let plan = scan_of(unknown, doc! {"b": {"$gt": 1}}, Some(doc! {"b": 1})).unwrap();
    assert!(!plan.provides_sort);
}

#[test]
fn simple_regex_prefixes() {
    assert_eq!(regex_prefix("^abc", ""), Some("abc".into()));
    assert_eq!(regex_prefix("^ab*c", ""), Some("a".into()));
    assert_eq!(regex_prefix("^a\\.b.*", ""), Some("a.b".into()));
    assert_eq!(regex_prefix("^abc", "i"), None);
    assert_eq!(regex_prefix("abc", ""), None);
    assert_eq!(regex_prefix("^a|b", ""), None);
    assert_eq!(after_prefix("abc"), Some("abd".into()));
}

fn compound(spec: Document, filter: Document, sort: Option<Document>) -> Option<IndexScanPlan> {
    use crate::datanode::exec::test_catalog::index_of;
    scan_of(index_of(spec, 2, false), filter, sort)
}

/// Whether the scan keeps the key of `values` (ascending fields) once read.
fn admits(plan: &IndexScanPlan, values: &[Bson]) -> bool {
    let mut key = Vec::new();
    for value in values {
        keystring::encode_value(value, false, &mut key);
    }
    plan.admits(&key)
}

fn holds(plan: &IndexScanPlan, values: &[Bson]) -> bool {
    let mut key = Vec::new();
    for value in values {
        keystring::encode_value(value, false, &mut key);
    }
    plan.intervals.iter().any(|iv| iv.contains(&key))
}

#[test]
fn compound_scans_bound_the_regular_fields_then_the_path() {
    let spec = doc! {"key": {"a": 1, "$**": 1}, "wildcardProjection": {"a": 0}};
    let s = |v: &str| Bson::String(v.into());
    let both = compound(spec.clone(), doc! {"a": 5, "b": 3}, Some(doc! {"b": 1})).unwrap();
    assert_eq!(both.key_pattern(), doc! {"a": 1, "$_path": 1, "b": 1});
    assert!(holds(&both, &[Bson::Int32(5), s("b"), Bson::Int32(3)]));
    assert!(!holds(&both, &[Bson::Int32(5), s("b"), Bson::Int32(4)]));
    assert!(!holds(&both, &[Bson::Int32(6), s("b"), Bson::Int32(3)]));
    assert!(!holds(&both, &[Bson::Int32(5), s("c"), Bson::Int32(3)]));
    // Fields one point fixes are in the order of any sort.
    assert!(both.provides_sort);
    // A sort on the regular fields before the wildcard field comes from the scan.
    let sorted = compound(
        spec.clone(),
        doc! {"a": {"$in": [5, 6]}},
        Some(doc! {"a": -1}),
    );
    let sorted = sorted.unwrap();
    assert!(sorted.provides_sort && sorted.reverse);
    let sorted = compound(
        spec.clone(),
        doc! {"a": {"$gt": 5}, "b": 1},
        Some(doc! {"a": 1}),
    );
    let sorted = sorted.unwrap();
    assert!(sorted.provides_sort && !sorted.reverse);
    // The regular field alone: every `$_path`, and documents keyed with `MinKey`.
    let prefix = compound(spec.clone(), doc! {"a": 5}, None).unwrap();
    assert_eq!(prefix.key_pattern(), doc! {"a": 1, "$_path": 1});
    assert!(holds(
        &prefix,
        &[Bson::Int32(5), Bson::MinKey, Bson::MinKey]
    ));
    assert!(holds(&prefix, &[Bson::Int32(5), s("z"), Bson::Int32(1)]));
    assert!(!holds(
        &prefix,
        &[Bson::Int32(6), Bson::MinKey, Bson::MinKey]
    ));
    // After a range on the regular field, the intervals bound it alone; the path and its
    // value are checked on each key.
    let range = compound(spec.clone(), doc! {"a": {"$gt": 1}, "b": 3}, None).unwrap();
    assert_eq!(range.key_pattern(), doc! {"a": 1, "$_path": 1, "b": 1});
    assert!(holds(&range, &[Bson::Int32(2), s("c"), Bson::Int32(9)]));
    assert!(!admits(&range, &[Bson::Int32(2), s("c"), Bson::Int32(9)]));
    assert!(admits(&range, &[Bson::Int32(2), s("b"), Bson::Int32(3)]));
    assert!(!holds(&range, &[Bson::Int32(1), s("b"), Bson::Int32(3)]));
    assert_eq!(range.bounds.len(), 3);
    // A hinted index is scanned whole on a first field only `$exists: true` bounds.
    let hinted = |filter: Document| {
        let coll = crate::datanode::exec::test_catalog::collection(vec![
            crate::datanode::exec::test_catalog::index_of(spec.clone(), 2, false),
        ]);
        let hint = Bson::String("a_1_$**_1".into());
        let shape = QueryShape {
            hint: Some(&hint),
            ..QueryShape::filter(&filter)
        };
        AccessPath::choose(&coll, &shape)
    };
    match hinted(doc! {"a": {"$exists": true}, "b": 3}).unwrap() {
        AccessPath::IndexScan(plan) => {
            assert_eq!(plan.intervals, vec![KeyInterval::all()]);
            assert!(admits(&plan, &[Bson::Int32(7), s("b"), Bson::Int32(3)]));
            assert!(!admits(&plan, &[Bson::Int32(7), s("b"), Bson::Int32(4)]));
        }
        other => panic!("{other:?}"),
    }
    assert!(hinted(doc! {"b": 3}).is_err());
    assert!(compound(spec.clone(), doc! {"a": {"$exists": true}}, None).is_none());
    // The leading field must be bounded, and not to what a missing field matches.
    for unplanned in [
        doc! {"b": 3},
        doc! {"a": null},
        doc! {"a": {"$exists": false}},
    ] {
        assert!(
            compound(spec.clone(), unplanned.clone(), None).is_none(),
            "{unplanned}"
        );
    }
    // With a path queried, a null on the regular field no longer matters.
    let null = compound(spec, doc! {"a": null, "b": 3}, None).unwrap();
    assert!(holds(&null, &[Bson::Null, s("b"), Bson::Int32(3)]));
}

#[test]
fn compound_scans_sort_as_mongodb_provides() {
    let spec = doc! {"key": {"a": 1, "$**": 1}, "wildcardProjection": {"a": 0}};
    let sorted = |filter: Document, sort: Document| {
        compound(spec.clone(), filter, Some(sort))
            .map(|p| (p.provides_sort, p.reverse))
            .unwrap()
    };
    let range = doc! {"a": 5, "b": {"$gt": 1}};
    assert_eq!(sorted(range.clone(), doc! {"b": 1}), (true, false));
    assert_eq!(sorted(range.clone(), doc! {"a": -1, "b": -1}), (true, true));
    assert_eq!(sorted(range, doc! {"c": 1}), (false, false));
    let both = doc! {"a": {"$in": [5, 6]}, "b": {"$gt": 1}};
    assert_eq!(sorted(both.clone(), doc! {"a": 1, "b": 1}), (true, false));
    assert_eq!(sorted(both.clone(), doc! {"b": 1}), (false, false));
    assert_eq!(sorted(both, doc! {"a": 1, "b": -1}), (false, false));
    // `$exists` scans the paths below too: no order on the path.
    let exists = doc! {"a": 5, "b": {"$exists": true}};
    assert_eq!(sorted(exists.clone(), doc! {"b": 1}), (false, false));
    assert_eq!(sorted(exists, doc! {"a": 1}), (true, false));
    // After the wildcard field: the fields after the path's value, in their directions.
    let after = doc! {"key": {"w.$**": 1, "c": -1}};
    let plan = compound(
        after.clone(),
        doc! {"w.x": 1, "c": {"$gt": 0}},
        Some(doc! {"c": 1}),
    );
    let plan = plan.unwrap();
    assert!(plan.provides_sort && plan.reverse);
    let plan = compound(
        after,
        doc! {"w.x": {"$gt": 0}},
        Some(doc! {"w.x": 1, "c": -1}),
    );
    let plan = plan.unwrap();
    assert!(plan.provides_sort && !plan.reverse);
}

#[test]
fn compound_scans_with_the_wildcard_first() {
    let spec = doc! {"key": {"a.$**": 1, "c": -1}};
    assert!(compound(spec.clone(), doc! {"c": 1}, None).is_none());
    let plan = compound(spec, doc! {"a.x": {"$in": [1, 2]}, "c": 1}, None).unwrap();
    assert_eq!(plan.key_pattern(), doc! {"$_path": 1, "a.x": 1, "c": -1});
    // `c` is descending in the key.
    let key = |path: &str, value: i32, c: i32| {
        let mut key = keystring::encode_one(&s_(path));
        keystring::encode_value(&Bson::Int32(value), false, &mut key);
        keystring::encode_value(&Bson::Int32(c), true, &mut key);
        key
    };
    let held = |k: Vec<u8>| plan.intervals.iter().any(|iv| iv.contains(&k));
    assert!(held(key("a.x", 2, 1)) && held(key("a.x", 1, 1)));
    // The regular field after the wildcard field tightens the scan once the value is fixed.
    assert!(!held(key("a.x", 2, 7)) && !held(key("a.y", 2, 1)));
    assert_eq!(plan.bounds.len(), 3);
}

fn s_(v: &str) -> Bson {
    Bson::String(v.into())
}
