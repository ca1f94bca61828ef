//! The words the mutator puts into keys and strings, and the libFuzzer dictionary written
//! from them: MongoDB's operator, stage and argument names, system variables and field paths.
//! A mutation that swaps a key for one of these reaches a parser branch that random bytes
//! would almost never spell.

/// Query, update, projection and expression operators, stages and accumulators.
#[rustfmt::skip]
pub const OPERATORS: &[&str] = &[
    // match expressions
    "$eq", "$ne", "$gt", "$gte", "$lt", "$lte", "$in", "$nin", "$and", "$or", "$nor", "$not",
    "$exists", "$type", "$all", "$elemMatch", "$size", "$regex", "$options", "$mod", "$expr",
    "$jsonSchema", "$where", "$text", "$search", "$comment", "$alwaysTrue", "$alwaysFalse",
    "$bitsAllSet", "$bitsAnySet", "$bitsAllClear", "$bitsAnyClear", "$geoWithin",
    "$geoIntersects", "$near", "$nearSphere", "$box", "$center", "$geometry", "$sampleRate",
    // update operators
    "$set", "$unset", "$inc", "$mul", "$rename", "$setOnInsert", "$min", "$max",
    "$currentDate", "$push", "$pull", "$pullAll", "$pop", "$addToSet", "$each", "$slice",
    "$sort", "$position", "$bit", "$isolated",
    // projection
    "$meta", "$literal",
    // stages
    "$match", "$project", "$addFields", "$replaceRoot", "$replaceWith", "$group", "$unwind",
    "$limit", "$skip", "$count", "$sortByCount", "$facet", "$bucket", "$bucketAuto", "$lookup",
    "$graphLookup", "$unionWith", "$out", "$merge", "$documents", "$setWindowFields",
    "$densify", "$fill", "$redact", "$sample", "$collStats", "$indexStats", "$currentOp",
    "$listSessions", "$listLocalSessions", "$changeStream", "$geoNear", "$planCacheStats",
    "$shardedDataDistribution",
    // accumulators and window functions
    "$sum", "$avg", "$first", "$last", "$firstN", "$lastN", "$maxN", "$minN", "$top", "$topN",
    "$bottom", "$bottomN", "$stdDevPop", "$stdDevSamp", "$mergeObjects", "$accumulator",
    "$rank", "$denseRank", "$documentNumber", "$shift", "$derivative", "$integral",
    "$expMovingAvg", "$covariancePop", "$covarianceSamp", "$locf", "$linearFill", "$median",
    "$percentile",
    // expression operators
    "$add", "$subtract", "$multiply", "$divide", "$abs", "$ceil", "$floor", "$exp", "$ln",
    "$log", "$log10", "$pow", "$sqrt", "$trunc", "$round", "$cmp", "$cond", "$ifNull",
    "$switch", "$branches", "$case", "$then", "$default", "$concat", "$substr", "$substrBytes",
    "$substrCP", "$toLower", "$toUpper", "$strLenBytes", "$strLenCP", "$split", "$trim",
    "$ltrim", "$rtrim", "$indexOfBytes", "$indexOfCP", "$regexMatch", "$regexFind",
    "$regexFindAll", "$replaceOne", "$replaceAll", "$strcasecmp", "$arrayElemAt",
    "$arrayToObject", "$objectToArray", "$concatArrays", "$filter", "$map", "$reduce", "$zip",
    "$range", "$reverseArray", "$indexOfArray", "$isArray", "$anyElementTrue",
    "$allElementsTrue", "$setUnion", "$setIntersection", "$setDifference", "$setEquals",
    "$setIsSubset", "$let", "$vars", "$dateAdd", "$dateSubtract", "$dateDiff", "$dateTrunc",
    "$dateFromParts", "$dateToParts", "$dateFromString", "$dateToString", "$year", "$month",
    "$dayOfMonth", "$dayOfWeek", "$dayOfYear", "$hour", "$minute", "$second", "$millisecond",
    "$week", "$isoWeek", "$isoWeekYear", "$isoDayOfWeek", "$convert", "$toInt", "$toLong",
    "$toDouble", "$toDecimal", "$toString", "$toBool", "$toDate", "$toObjectId", "$isNumber",
    "$getField", "$setField", "$unsetField", "$rand", "$binarySize", "$bsonSize",
    "$function", "$tsSecond", "$tsIncrement", "$sin", "$cos", "$tan", "$asin", "$atan2",
    "$degreesToRadians", "$bitAnd", "$bitOr", "$bitXor", "$bitNot", "$sortArray",
    "$firstN", "$lastN", "$toHashedIndexKey", "$elemMatch",
];

/// Argument names of commands, stages and operators.
#[rustfmt::skip]
pub const ARGUMENTS: &[&str] = &[
    "find", "filter", "projection", "sort", "skip", "limit", "batchSize", "singleBatch",
    "hint", "let", "collation", "allowDiskUse", "min", "max", "returnKey", "showRecordId",
    "tailable", "awaitData", "aggregate", "pipeline", "cursor", "explain", "update", "updates",
    "q", "u", "c", "upsert", "multi", "arrayFilters", "delete", "deletes", "insert",
    "documents", "ordered", "bypassDocumentValidation", "writeConcern", "w", "j", "wtimeout",
    "bulkWrite", "ops", "nsInfo", "ns", "errorsOnly", "updateMods", "document", "constants",
    "findAndModify", "query", "remove", "new", "fields", "count", "distinct", "key",
    "getMore", "collection", "killCursors", "cursors", "maxTimeMS", "readConcern", "level",
    "lsid", "txnNumber", "autocommit", "startTransaction", "$db", "$readPreference",
    "createIndexes", "indexes", "name", "unique", "sparse", "partialFilterExpression",
    "expireAfterSeconds", "create", "validator", "capped", "size", "viewOn", "drop",
    "dropDatabase", "listCollections", "listIndexes", "listDatabases", "hello", "isMaster",
    "client", "driver", "application", "compression", "saslSupportedMechs", "helloOk",
    "shardCollection", "numInitialChunks", "from", "localField", "foreignField", "as",
    "startWith", "connectFromField", "connectToField", "maxDepth", "depthField", "into", "on",
    "whenMatched", "whenNotMatched", "coll", "db", "_id", "groupBy", "boundaries", "buckets",
    "granularity", "output", "partitionBy", "sortBy", "window", "documents", "range", "unit",
    "field", "bounds", "step", "path", "includeArrayIndex", "preserveNullAndEmptyArrays",
    "newRoot", "input", "cond", "in", "initialValue", "format", "timezone", "onError",
    "onNull", "to", "date", "startDate", "endDate", "amount", "binSize", "startOfWeek", "regex",
    "options", "find", "replacement", "chars", "bsonType", "properties", "required", "items",
    "enum", "minimum", "maximum", "pattern", "additionalProperties", "minItems", "maxItems",
    "uniqueItems", "minLength", "maxLength", "dependencies", "patternProperties", "anyOf",
    "allOf", "oneOf", "not", "n", "sortKey", "textScore", "indexKey", "searchScore",
];

/// Field names, paths, variables and other strings that steer parsers.
#[rustfmt::skip]
pub const VALUES: &[&str] = &[
    "", "a", "b", "x", "a.b", "a.0", "a.0.b", "a.$", "a.$[]", "a.$[x]", "$[]", "$[x]", "x.b",
    "0", "-1", "$", "$$", "$a", "$a.b", "$$ROOT", "$$CURRENT", "$$NOW", "$$CLUSTER_TIME",
    "$$REMOVE", "$$DESCEND", "$$PRUNE", "$$KEEP", "$$this", "$$value", "$$x", "$$SEARCH_META",
    "$$USER_ROLES", "a..b", ".a", "a.", "\u{0}", "\u{FFFF}", "é", "hashed", "text", "2d",
    "2dsphere", "asc", "desc", "majority", "local", "snapshot", "available", "linearizable",
    "coll", "test", "admin", "config", "local", "system.views", "system.profile",
    "queryPlanner", "executionStats", "allPlansExecution", "int", "long", "double", "decimal",
    "string", "object", "array", "bool", "date", "null", "regex", "objectId", "number",
    "minKey", "maxKey", "timestamp", "binData", "undefined", "javascript", "symbol",
    "America/New_York", "+05:30", "Z", "%Y-%m-%d", "%H:%M:%S", "iso8601", "year", "quarter",
    "month", "week", "day", "hour", "minute", "second", "millisecond", "R5", "1-2-5", "E96",
    "POWERSOF2", "locf", "linear", "documents", "range", "full", "partition", "current",
    "unbounded", "merge", "replace", "keepExisting", "fail", "insert", "discard",
    "zstd", "snappy", "zlib", "noop", "(a+)+$", "[", "\\", "(?i)a", "^a", ".*", "\\d{1000}",
];

/// Every word, for the mutator.
pub fn all() -> impl Iterator<Item = &'static str> {
    OPERATORS.iter().chain(ARGUMENTS).chain(VALUES).copied()
}

/// The libFuzzer dictionary (`-dict=`): each word as a quoted, escaped token.
pub fn dictionary() -> String {
    let mut out = String::from("# Generated by docgrid-fuzz from fuzz/harness/words.rs.\n");
    // libFuzzer refuses empty entries.
    for word in all().filter(|w| !w.is_empty()) {
        out.push('"');
        for b in word.bytes() {
            match b {
                b'"' | b'\\' => out.push_str(&format!("\\{}", b as char)),
                0x20..=0x7e => out.push(b as char),
                _ => out.push_str(&format!("\\x{b:02X}")),
            }
        }
        out.push_str("\"\n");
    }
    out
}
