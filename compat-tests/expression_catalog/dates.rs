//! Date operators: parts, formatting, parsing, arithmetic and truncation, in UTC, in an Olson
//! zone (with and without daylight saving time) and at fixed offsets; null and missing dates.

use super::{Case, ErrorCase, constant, date, fails, long, on};
use mongodb::bson::{Bson, bson, doc};

pub fn cases() -> Vec<Case> {
    let mut cases = parts();
    cases.extend(formatting());
    cases.extend(arithmetic());
    cases
}

fn parts() -> Vec<Case> {
    let sale = doc! {"date": date("2014-01-01T08:15:39.736Z")};
    let part = |name: &'static str, op: &str, expected: i32| {
        on(name, sale.clone(), bson!({op: "$date"}), expected)
    };
    let zoned = |name: &'static str, op: &str, timezone: &str, expected: i32| {
        on(
            name,
            sale.clone(),
            bson!({op: {"date": "$date", "timezone": timezone}}),
            expected,
        )
    };
    vec![
        part("year", "$year", 2014),
        part("month", "$month", 1),
        part("dayOfMonth", "$dayOfMonth", 1),
        part("hour", "$hour", 8),
        part("minute", "$minute", 15),
        part("second", "$second", 39),
        part("millisecond", "$millisecond", 736),
        part("dayOfYear", "$dayOfYear", 1),
        part("dayOfWeek", "$dayOfWeek", 4),
        part("week", "$week", 0),
        part("isoWeek", "$isoWeek", 1),
        on(
            "isoWeekYear",
            sale.clone(),
            bson!({"$isoWeekYear": "$date"}),
            long(2014),
        ),
        part("isoDayOfWeek", "$isoDayOfWeek", 3),
        zoned("hour olson", "$hour", "America/New_York", 3),
        zoned("hour offset colon", "$hour", "+05:30", 13),
        zoned("minute offset", "$minute", "+0530", 45),
        zoned("hour offset hours", "$hour", "-03", 5),
        on(
            "dayOfMonth olson previous day",
            doc! {"date": date("2014-01-01T02:00:00Z")},
            bson!({"$dayOfMonth": {"date": "$date", "timezone": "America/New_York"}}),
            31,
        ),
        on(
            "year olson previous year",
            doc! {"date": date("2014-01-01T02:00:00Z")},
            bson!({"$year": {"date": "$date", "timezone": "America/New_York"}}),
            2013,
        ),
        on(
            "hour olson daylight saving",
            doc! {"date": date("2014-07-01T12:00:00Z")},
            bson!({"$hour": {"date": "$date", "timezone": "America/New_York"}}),
            8,
        ),
        on(
            "hour array argument",
            sale.clone(),
            bson!({"$hour": ["$date"]}),
            8,
        ),
        constant(
            "week first saturday",
            bson!({"$week": date("2016-01-02T00:00:00Z")}),
            0,
        ),
        constant(
            "week first sunday",
            bson!({"$week": date("2016-01-03T00:00:00Z")}),
            1,
        ),
        constant(
            "isoWeek previous year",
            bson!({"$isoWeek": date("2016-01-01T00:00:00Z")}),
            53,
        ),
        constant(
            "isoWeekYear previous year",
            bson!({"$isoWeekYear": date("2016-01-01T00:00:00Z")}),
            long(2015),
        ),
        on(
            "year null",
            doc! {"date": null},
            bson!({"$year": "$date"}),
            Bson::Null,
        ),
        on(
            "month missing",
            doc! {},
            bson!({"$month": "$date"}),
            Bson::Null,
        ),
        on(
            "dateToParts manual",
            doc! {"date": date("2017-01-01T01:29:09.123Z")},
            bson!({"$dateToParts": {"date": "$date"}}),
            bson!({"year": 2017, "month": 1, "day": 1, "hour": 1, "minute": 29, "second": 9, "millisecond": 123}),
        ),
        on(
            "dateToParts olson",
            doc! {"date": date("2017-01-01T01:29:09.123Z")},
            bson!({"$dateToParts": {"date": "$date", "timezone": "America/New_York"}}),
            bson!({"year": 2016, "month": 12, "day": 31, "hour": 20, "minute": 29, "second": 9, "millisecond": 123}),
        ),
        on(
            "dateToParts iso8601",
            doc! {"date": date("2017-01-01T01:29:09.123Z")},
            bson!({"$dateToParts": {"date": "$date", "iso8601": true}}),
            bson!({"isoWeekYear": 2016, "isoWeek": 52, "isoDayOfWeek": 7, "hour": 1, "minute": 29, "second": 9, "millisecond": 123}),
        ),
        on(
            "dateToParts offset",
            doc! {"date": date("2017-01-01T01:29:09.123Z")},
            bson!({"$dateToParts": {"date": "$date", "timezone": "+04:00"}}),
            bson!({"year": 2017, "month": 1, "day": 1, "hour": 5, "minute": 29, "second": 9, "millisecond": 123}),
        ),
        on(
            "dateToParts null",
            doc! {},
            bson!({"$dateToParts": {"date": "$date"}}),
            Bson::Null,
        ),
    ]
}

fn formatting() -> Vec<Case> {
    let sale = doc! {"date": date("2014-01-01T08:15:39.736Z")};
    let format = |name: &'static str, format: &str, timezone: Option<&str>, expected: &str| {
        let mut spec = doc! {"format": format, "date": "$date"};
        if let Some(zone) = timezone {
            spec.insert("timezone", zone);
        }
        on(name, sale.clone(), bson!({"$dateToString": spec}), expected)
    };
    let log = |date: &str, timezone: &str| doc! {"date": date, "timezone": timezone};
    let parse = bson!({"$dateFromString": {"dateString": "$date", "timezone": "$timezone"}});
    vec![
        format("dateToString ymd", "%Y-%m-%d", None, "2014-01-01"),
        format(
            "dateToString olson",
            "%H:%M:%S:%L%z",
            Some("America/New_York"),
            "03:15:39:736-0500",
        ),
        format(
            "dateToString minutes offset",
            "%Z",
            Some("America/New_York"),
            "-300",
        ),
        format(
            "dateToString offset zone",
            "%H:%M %z",
            Some("+05:30"),
            "13:45 +0530",
        ),
        format("dateToString day parts", "%j %w %U", None, "001 4 00"),
        format("dateToString iso parts", "%G-W%V-%u", None, "2014-W01-3"),
        format("dateToString percent", "%%Y", None, "%Y"),
        on(
            "dateToString default format",
            sale.clone(),
            bson!({"$dateToString": {"date": "$date"}}),
            "2014-01-01T08:15:39.736Z",
        ),
        on(
            "dateToString onNull",
            doc! {},
            bson!({"$dateToString": {"date": "$date", "onNull": "none"}}),
            "none",
        ),
        on(
            "dateToString null",
            doc! {"date": null},
            bson!({"$dateToString": {"date": "$date"}}),
            Bson::Null,
        ),
        on(
            "dateFromString olson",
            log("2017-02-08T12:10:40.787", "America/New_York"),
            parse.clone(),
            date("2017-02-08T17:10:40.787Z"),
        ),
        on(
            "dateFromString offset",
            log("2017-02-08", "-05:00"),
            parse.clone(),
            date("2017-02-08T05:00:00Z"),
        ),
        on(
            "dateFromString london",
            log("2017-02-09", "Europe/London"),
            parse.clone(),
            date("2017-02-09T00:00:00Z"),
        ),
        on(
            "dateFromString compact offset",
            log("2017-02-09T03:35:02.055", "+0530"),
            parse.clone(),
            date("2017-02-08T22:05:02.055Z"),
        ),
        on(
            "dateFromString missing",
            doc! {"timezone": "-05:00"},
            parse,
            Bson::Null,
        ),
        constant(
            "dateFromString format",
            bson!({"$dateFromString": {"dateString": "15-06-2018", "format": "%d-%m-%Y"}}),
            date("2018-06-15T00:00:00Z"),
        ),
        constant(
            "dateFromString zone in string",
            bson!({"$dateFromString": {"dateString": "2017-02-08T12:10:40.787+02:00"}}),
            date("2017-02-08T10:10:40.787Z"),
        ),
        constant(
            "dateFromString onError",
            bson!({"$dateFromString": {"dateString": "not a date", "onError": "bad"}}),
            "bad",
        ),
        on(
            "dateFromString onNull",
            doc! {},
            bson!({"$dateFromString": {"dateString": "$date", "onNull": "none"}}),
            "none",
        ),
        constant(
            "dateFromParts manual",
            bson!({"$dateFromParts": {"year": 2017, "month": 2, "day": 8, "hour": 12}}),
            date("2017-02-08T12:00:00Z"),
        ),
        constant(
            "dateFromParts iso",
            bson!({"$dateFromParts": {"isoWeekYear": 2017, "isoWeek": 6, "isoDayOfWeek": 3, "hour": 12}}),
            date("2017-02-08T12:00:00Z"),
        ),
        constant(
            "dateFromParts olson",
            bson!({"$dateFromParts": {"year": 2016, "month": 12, "day": 31, "hour": 23, "minute": 46,
                "second": 12, "timezone": "America/New_York"}}),
            date("2017-01-01T04:46:12Z"),
        ),
        constant(
            "dateFromParts offset",
            bson!({"$dateFromParts": {"year": 2017, "month": 1, "day": 1, "timezone": "+01:00"}}),
            date("2016-12-31T23:00:00Z"),
        ),
        constant(
            "dateFromParts month overflow",
            bson!({"$dateFromParts": {"year": 2017, "month": 14, "day": 1}}),
            date("2018-02-01T00:00:00Z"),
        ),
        constant(
            "dateFromParts month zero",
            bson!({"$dateFromParts": {"year": 2017, "month": 0, "day": 1}}),
            date("2016-12-01T00:00:00Z"),
        ),
        constant(
            "dateFromParts long and double parts",
            bson!({"$dateFromParts": {"year": long(2017), "month": 2.0, "day": 8}}),
            date("2017-02-08T00:00:00Z"),
        ),
        on(
            "dateFromParts null",
            doc! {},
            bson!({"$dateFromParts": {"year": "$y"}}),
            Bson::Null,
        ),
    ]
}

fn arithmetic() -> Vec<Case> {
    let purchase = doc! {"purchaseDate": date("2020-10-31T12:10:05Z")};
    let order = doc! {"orderDate": date("2020-05-18T14:10:30Z")};
    let trunc = |name: &'static str, spec: mongodb::bson::Document, expected: &str| {
        let mut spec = spec;
        spec.insert("date", "$orderDate");
        on(
            name,
            order.clone(),
            bson!({"$dateTrunc": spec}),
            date(expected),
        )
    };
    vec![
        on(
            "dateAdd manual",
            purchase.clone(),
            bson!({"$dateAdd": {"startDate": "$purchaseDate", "unit": "day", "amount": 3}}),
            date("2020-11-03T12:10:05Z"),
        ),
        constant(
            "dateAdd month end",
            bson!({"$dateAdd": {"startDate": date("2021-01-31T00:00:00Z"), "unit": "month", "amount": 1}}),
            date("2021-02-28T00:00:00Z"),
        ),
        constant(
            "dateAdd day across daylight saving",
            bson!({"$dateAdd": {"startDate": date("2021-03-13T17:00:00Z"), "unit": "day", "amount": 1,
                "timezone": "America/New_York"}}),
            date("2021-03-14T16:00:00Z"),
        ),
        constant(
            "dateAdd hours across daylight saving",
            bson!({"$dateAdd": {"startDate": date("2021-03-13T17:00:00Z"), "unit": "hour", "amount": 24,
                "timezone": "America/New_York"}}),
            date("2021-03-14T17:00:00Z"),
        ),
        constant(
            "dateAdd long amount",
            bson!({"$dateAdd": {"startDate": date("2021-01-01T00:00:00Z"), "unit": "minute", "amount": long(90)}}),
            date("2021-01-01T01:30:00Z"),
        ),
        on(
            "dateAdd null amount",
            purchase.clone(),
            bson!({"$dateAdd": {"startDate": "$purchaseDate", "unit": "day", "amount": null}}),
            Bson::Null,
        ),
        constant(
            "dateSubtract month end",
            bson!({"$dateSubtract": {"startDate": date("2021-03-31T00:00:00Z"), "unit": "month", "amount": 1}}),
            date("2021-02-28T00:00:00Z"),
        ),
        on(
            "dateSubtract hours",
            purchase.clone(),
            bson!({"$dateSubtract": {"startDate": "$purchaseDate", "unit": "hour", "amount": 3}}),
            date("2020-10-31T09:10:05Z"),
        ),
        on(
            "dateSubtract missing",
            doc! {},
            bson!({"$dateSubtract": {"startDate": "$purchaseDate", "unit": "hour", "amount": 3}}),
            Bson::Null,
        ),
        constant(
            "dateDiff days",
            bson!({"$dateDiff": {"startDate": date("2021-01-01T00:00:00Z"), "endDate": date("2021-01-03T23:59:00Z"), "unit": "day"}}),
            long(2),
        ),
        constant(
            "dateDiff year boundary",
            bson!({"$dateDiff": {"startDate": date("2020-12-31T23:59:00Z"), "endDate": date("2021-01-01T00:01:00Z"), "unit": "year"}}),
            long(1),
        ),
        constant(
            "dateDiff negative",
            bson!({"$dateDiff": {"startDate": date("2021-03-01T00:00:00Z"), "endDate": date("2021-01-15T00:00:00Z"), "unit": "month"}}),
            long(-2),
        ),
        constant(
            "dateDiff week sunday",
            bson!({"$dateDiff": {"startDate": date("2021-01-02T00:00:00Z"), "endDate": date("2021-01-03T00:00:00Z"), "unit": "week"}}),
            long(1),
        ),
        constant(
            "dateDiff week monday",
            bson!({"$dateDiff": {"startDate": date("2021-01-02T00:00:00Z"), "endDate": date("2021-01-03T00:00:00Z"),
                "unit": "week", "startOfWeek": "monday"}}),
            long(0),
        ),
        constant(
            "dateDiff utc",
            bson!({"$dateDiff": {"startDate": date("2021-01-01T03:00:00Z"), "endDate": date("2021-01-01T06:00:00Z"), "unit": "day"}}),
            long(0),
        ),
        constant(
            "dateDiff olson",
            bson!({"$dateDiff": {"startDate": date("2021-01-01T03:00:00Z"), "endDate": date("2021-01-01T06:00:00Z"),
                "unit": "day", "timezone": "America/New_York"}}),
            long(1),
        ),
        on(
            "dateDiff null",
            doc! {},
            bson!({"$dateDiff": {"startDate": "$start", "endDate": date("2021-01-01T06:00:00Z"), "unit": "day"}}),
            Bson::Null,
        ),
        trunc(
            "dateTrunc year",
            doc! {"unit": "year"},
            "2020-01-01T00:00:00Z",
        ),
        trunc(
            "dateTrunc quarter",
            doc! {"unit": "quarter"},
            "2020-04-01T00:00:00Z",
        ),
        trunc(
            "dateTrunc month",
            doc! {"unit": "month"},
            "2020-05-01T00:00:00Z",
        ),
        trunc(
            "dateTrunc week sunday",
            doc! {"unit": "week"},
            "2020-05-17T00:00:00Z",
        ),
        trunc(
            "dateTrunc week monday",
            doc! {"unit": "week", "startOfWeek": "monday"},
            "2020-05-18T00:00:00Z",
        ),
        trunc(
            "dateTrunc hour bins",
            doc! {"unit": "hour", "binSize": 6},
            "2020-05-18T12:00:00Z",
        ),
        trunc(
            "dateTrunc day olson",
            doc! {"unit": "day", "timezone": "America/New_York"},
            "2020-05-18T04:00:00Z",
        ),
        trunc(
            "dateTrunc day offset",
            doc! {"unit": "day", "timezone": "+03:00"},
            "2020-05-17T21:00:00Z",
        ),
        on(
            "dateTrunc null",
            doc! {},
            bson!({"$dateTrunc": {"date": "$d", "unit": "day"}}),
            Bson::Null,
        ),
    ]
}

pub fn errors() -> Vec<ErrorCase> {
    vec![
        fails(
            "year of a string",
            doc! {"d": "2020"},
            bson!({"$year": "$d"}),
            16006,
        ),
        fails(
            "unknown time zone",
            doc! {"d": date("2020-01-01T00:00:00Z"), "tz": "Mars/Olympus"},
            bson!({"$hour": {"date": "$d", "timezone": "$tz"}}),
            40485,
        ),
        fails(
            "dateFromString unparsable",
            doc! {"s": "not a date"},
            bson!({"$dateFromString": {"dateString": "$s"}}),
            241,
        ),
        fails(
            "dateToString bad specifier",
            doc! {"d": date("2020-01-01T00:00:00Z")},
            bson!({"$dateToString": {"date": "$d", "format": "%q"}}),
            18536,
        ),
    ]
}
