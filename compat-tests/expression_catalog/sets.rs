//! Set operators: the manual's examples, empty sets, null operands, numbers of mixed types as
//! equal elements. Set results have no defined order: they are sorted before comparing.

use super::{Case, constant, long, on};
use mongodb::bson::{Bson, bson, doc};

/// `expression`'s array result in ascending order.
fn sorted(expression: Bson) -> Bson {
    bson!({"$sortArray": {"input": expression, "sortBy": 1}})
}

pub fn cases() -> Vec<Case> {
    vec![
        constant(
            "setEquals manual",
            bson!({"$setEquals": [["a", "b", "a"], ["b", "a"]]}),
            true,
        ),
        constant(
            "setEquals mixed numbers",
            bson!({"$setEquals": [[1], [1.0, long(1)]]}),
            true,
        ),
        constant("setEquals empty", bson!({"$setEquals": [[], []]}), true),
        constant(
            "setIntersection manual",
            sorted(bson!({"$setIntersection": [["a", "b", "a"], ["b", "a"]]})),
            bson!(["a", "b"]),
        ),
        constant(
            "setIntersection empty",
            bson!({"$setIntersection": [["a"], []]}),
            bson!([]),
        ),
        on(
            "setIntersection null",
            doc! {},
            bson!({"$setIntersection": [["a"], "$x"]}),
            Bson::Null,
        ),
        constant(
            "setUnion manual",
            sorted(bson!({"$setUnion": [["a", "b", "a"], ["c"]]})),
            bson!(["a", "b", "c"]),
        ),
        constant("setUnion none", bson!({"$setUnion": []}), bson!([])),
        on(
            "setUnion null",
            doc! {},
            bson!({"$setUnion": [[1], null]}),
            Bson::Null,
        ),
        constant(
            "setDifference manual",
            bson!({"$setDifference": [["a", "b", "a"], ["b", "a"]]}),
            bson!([]),
        ),
        constant(
            "setDifference",
            bson!({"$setDifference": [["a", "b", "c"], ["b"]]}),
            bson!(["a", "c"]),
        ),
        on(
            "setDifference null",
            doc! {},
            bson!({"$setDifference": ["$a", [1]]}),
            Bson::Null,
        ),
        constant(
            "setIsSubset manual",
            bson!({"$setIsSubset": [["a", "b", "a"], ["b", "a"]]}),
            true,
        ),
        constant(
            "setIsSubset not",
            bson!({"$setIsSubset": [["a", "c"], ["a"]]}),
            false,
        ),
        constant(
            "setIsSubset empty",
            bson!({"$setIsSubset": [[], ["a"]]}),
            true,
        ),
        constant(
            "anyElementTrue manual",
            bson!({"$anyElementTrue": [[true, false]]}),
            true,
        ),
        constant(
            "anyElementTrue empty",
            bson!({"$anyElementTrue": [[]]}),
            false,
        ),
        constant(
            "anyElementTrue falsy",
            bson!({"$anyElementTrue": [[null, false, 0]]}),
            false,
        ),
        constant(
            "allElementsTrue manual",
            bson!({"$allElementsTrue": [[true, 1, "someString"]]}),
            true,
        ),
        constant(
            "allElementsTrue empty",
            bson!({"$allElementsTrue": [[]]}),
            true,
        ),
        constant(
            "allElementsTrue null",
            bson!({"$allElementsTrue": [[null, true]]}),
            false,
        ),
    ]
}
