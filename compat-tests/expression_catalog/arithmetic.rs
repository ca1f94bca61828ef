//! Arithmetic and math operators: the manual's examples, numeric type promotion (int32 overflow
//! to long, long overflow to double, decimal), null and missing operands.

use super::{Case, ErrorCase, constant, date, dec, fails, long, on};
use mongodb::bson::{Bson, bson, doc};

pub fn cases() -> Vec<Case> {
    let sale = doc! {"price": 10, "fee": 2, "discount": 5, "quantity": 2,
    "date": date("2014-03-01T08:00:00Z")};
    vec![
        // $add
        on(
            "add manual",
            sale.clone(),
            bson!({"$add": ["$price", "$fee"]}),
            12,
        ),
        on(
            "add date",
            sale.clone(),
            bson!({"$add": ["$date", 3 * 24 * 60 * 60000]}),
            date("2014-03-04T08:00:00Z"),
        ),
        constant("add int long", bson!({"$add": [1, long(2)]}), long(3)),
        constant("add int double", bson!({"$add": [1, 2.5]}), 3.5),
        constant("add int decimal", bson!({"$add": [1, dec("2")]}), dec("3")),
        constant(
            "add decimal int",
            bson!({"$add": [dec("1.5"), 1]}),
            dec("2.5"),
        ),
        constant(
            "add int overflow",
            bson!({"$add": [2147483647, 1]}),
            long(2147483648),
        ),
        constant(
            "add long overflow",
            bson!({"$add": [long(i64::MAX), 1]}),
            9.223372036854776e18,
        ),
        constant("add null", bson!({"$add": [1, null]}), Bson::Null),
        on(
            "add missing",
            doc! {},
            bson!({"$add": [1, "$nothing"]}),
            Bson::Null,
        ),
        constant("add none", bson!({"$add": []}), 0),
        // $subtract
        on(
            "subtract manual",
            sale.clone(),
            bson!({"$subtract": [{"$add": ["$price", "$fee"]}, "$discount"]}),
            7,
        ),
        on(
            "subtract date number",
            sale.clone(),
            bson!({"$subtract": ["$date", 5 * 60 * 1000]}),
            date("2014-03-01T07:55:00Z"),
        ),
        on(
            "subtract dates",
            sale.clone(),
            bson!({"$subtract": [date("2014-03-01T08:01:00Z"), "$date"]}),
            long(60000),
        ),
        constant(
            "subtract int underflow",
            bson!({"$subtract": [-2147483648, 1]}),
            long(-2147483649),
        ),
        constant(
            "subtract decimal",
            bson!({"$subtract": [dec("5.5"), 2]}),
            dec("3.5"),
        ),
        on(
            "subtract missing",
            doc! {},
            bson!({"$subtract": ["$a", 1]}),
            Bson::Null,
        ),
        // $multiply
        on(
            "multiply manual",
            sale.clone(),
            bson!({"$multiply": ["$price", "$quantity"]}),
            20,
        ),
        constant(
            "multiply int overflow",
            bson!({"$multiply": [2147483647, 2]}),
            long(4294967294),
        ),
        constant(
            "multiply long double",
            bson!({"$multiply": [long(3), 0.5]}),
            1.5,
        ),
        constant(
            "multiply decimal",
            bson!({"$multiply": [dec("1.5"), 2]}),
            dec("3.0"),
        ),
        constant("multiply null", bson!({"$multiply": [2, null]}), Bson::Null),
        constant("multiply none", bson!({"$multiply": []}), 1),
        // $divide
        on(
            "divide manual",
            doc! {"hours": 80},
            bson!({"$divide": ["$hours", 8]}),
            10.0,
        ),
        constant("divide long", bson!({"$divide": [long(10), 4]}), 2.5),
        constant(
            "divide decimal",
            bson!({"$divide": [1, dec("4")]}),
            dec("0.25"),
        ),
        constant("divide null", bson!({"$divide": [null, 2]}), Bson::Null),
        // $mod
        on(
            "mod manual",
            doc! {"hours": 80, "tasks": 7},
            bson!({"$mod": ["$hours", "$tasks"]}),
            3,
        ),
        constant("mod negative dividend", bson!({"$mod": [-13, 9]}), -4),
        constant("mod long", bson!({"$mod": [long(10), 3]}), long(1)),
        constant("mod double", bson!({"$mod": [10.5, 3]}), 1.5),
        constant("mod null", bson!({"$mod": [null, 3]}), Bson::Null),
        // $abs
        on(
            "abs manual",
            doc! {"startTemp": 50, "endTemp": 80},
            bson!({"$abs": {"$subtract": ["$startTemp", "$endTemp"]}}),
            30,
        ),
        constant(
            "abs int min",
            bson!({"$abs": -2147483648}),
            long(2147483648),
        ),
        constant("abs double", bson!({"$abs": -2.5}), 2.5),
        constant("abs decimal", bson!({"$abs": dec("-1.5")}), dec("1.5")),
        on("abs missing", doc! {}, bson!({"$abs": "$x"}), Bson::Null),
        // $ceil, $floor
        on(
            "ceil manual 9.25",
            doc! {"value": 9.25},
            bson!({"$ceil": "$value"}),
            10.0,
        ),
        on(
            "ceil manual -5.34",
            doc! {"value": -5.34},
            bson!({"$ceil": "$value"}),
            -5.0,
        ),
        constant("ceil int", bson!({"$ceil": 5}), 5),
        constant("ceil long", bson!({"$ceil": long(5)}), long(5)),
        constant("ceil decimal", bson!({"$ceil": dec("1.5")}), dec("2")),
        constant("ceil null", bson!({"$ceil": null}), Bson::Null),
        on(
            "floor manual 9.25",
            doc! {"value": 9.25},
            bson!({"$floor": "$value"}),
            9.0,
        ),
        on(
            "floor manual -5.34",
            doc! {"value": -5.34},
            bson!({"$floor": "$value"}),
            -6.0,
        ),
        constant("floor int", bson!({"$floor": 5}), 5),
        constant("floor decimal", bson!({"$floor": dec("-1.5")}), dec("-2")),
        // $round, $trunc
        on(
            "round manual 19.25",
            doc! {"value": 19.25},
            bson!({"$round": ["$value", 1]}),
            19.2,
        ),
        on(
            "round manual 28.73",
            doc! {"value": 28.73},
            bson!({"$round": ["$value", 1]}),
            28.7,
        ),
        on(
            "round manual -45.39",
            doc! {"value": -45.39},
            bson!({"$round": ["$value", 1]}),
            -45.4,
        ),
        on(
            "round places -1",
            doc! {"value": 19.25},
            bson!({"$round": ["$value", -1]}),
            20.0,
        ),
        on(
            "round places -1 negative",
            doc! {"value": -45.39},
            bson!({"$round": ["$value", -1]}),
            -50.0,
        ),
        constant("round half even down", bson!({"$round": [10.5, 0]}), 10.0),
        constant("round half even up", bson!({"$round": [11.5, 0]}), 12.0),
        constant("round default places", bson!({"$round": 2.5}), 2.0),
        constant("round int", bson!({"$round": [1234, -2]}), 1200),
        constant(
            "round long",
            bson!({"$round": [long(1260), -2]}),
            long(1300),
        ),
        constant(
            "round decimal",
            bson!({"$round": [dec("1.2345"), 2]}),
            dec("1.23"),
        ),
        constant("round null", bson!({"$round": [null, 1]}), Bson::Null),
        on(
            "trunc manual 19.25",
            doc! {"value": 19.25},
            bson!({"$trunc": ["$value", 1]}),
            19.2,
        ),
        on(
            "trunc manual -45.39",
            doc! {"value": -45.39},
            bson!({"$trunc": ["$value", 1]}),
            -45.3,
        ),
        on(
            "trunc manual 28.73",
            doc! {"value": 28.73},
            bson!({"$trunc": ["$value", 1]}),
            28.7,
        ),
        constant("trunc default places", bson!({"$trunc": -2.9}), -2.0),
        constant(
            "trunc long",
            bson!({"$trunc": [long(1299), -2]}),
            long(1200),
        ),
        on(
            "trunc missing",
            doc! {},
            bson!({"$trunc": "$v"}),
            Bson::Null,
        ),
        // $exp, $ln, $log, $log10, $pow, $sqrt
        on(
            "exp manual",
            doc! {"interestRate": 0.08, "presentValue": 10000},
            bson!({"$multiply": ["$presentValue", {"$exp": "$interestRate"}]}),
            10832.870676749586,
        ),
        constant("exp int", bson!({"$exp": 0}), 1.0),
        constant("exp null", bson!({"$exp": null}), Bson::Null),
        on(
            "ln manual",
            doc! {"sales": 8700000},
            bson!({"$ln": "$sales"}),
            15.978833583624812,
        ),
        constant("ln one", bson!({"$ln": 1}), 0.0),
        on(
            "log manual 5",
            doc! {"positiveInt": 5},
            bson!({"$floor": {"$add": [1, {"$log": ["$positiveInt", 2]}]}}),
            3.0,
        ),
        on(
            "log manual 23",
            doc! {"positiveInt": 23},
            bson!({"$floor": {"$add": [1, {"$log": ["$positiveInt", 2]}]}}),
            5.0,
        ),
        constant("log 100 base 10", bson!({"$log": [100, 10]}), 2.0),
        constant("log null", bson!({"$log": [null, 10]}), Bson::Null),
        on(
            "log10 manual",
            doc! {"H3O": 0.0025},
            bson!({"$multiply": [-1, {"$log10": "$H3O"}]}),
            2.6020599913279625,
        ),
        constant("log10 int", bson!({"$log10": 1000}), 3.0),
        constant("pow zero", bson!({"$pow": [5, 0]}), 1),
        constant("pow int", bson!({"$pow": [5, 2]}), 25),
        constant("pow negative exponent", bson!({"$pow": [5, -2]}), 0.04),
        constant(
            "pow negative base fraction",
            bson!({"$pow": [-5, 0.5]}),
            f64::NAN,
        ),
        constant(
            "pow int overflow",
            bson!({"$pow": [2, 31]}),
            long(2147483648),
        ),
        constant("pow long", bson!({"$pow": [long(2), 3]}), long(8)),
        constant("pow null", bson!({"$pow": [null, 2]}), Bson::Null),
        constant("sqrt int", bson!({"$sqrt": 25}), 5.0),
        constant("sqrt null", bson!({"$sqrt": null}), Bson::Null),
        on(
            "sqrt manual",
            doc! {"p1": {"x": 5, "y": 8}, "p2": {"x": 0, "y": 5}},
            bson!({"$sqrt": {"$add": [
                {"$pow": [{"$subtract": ["$p2.y", "$p1.y"]}, 2]},
                {"$pow": [{"$subtract": ["$p2.x", "$p1.x"]}, 2]}
            ]}}),
            5.830951894845301,
        ),
    ]
}

pub fn errors() -> Vec<ErrorCase> {
    vec![
        fails(
            "divide by zero",
            doc! {"d": 0},
            bson!({"$divide": [1, "$d"]}),
            16608,
        ),
        fails(
            "mod by zero",
            doc! {"d": 0},
            bson!({"$mod": [1, "$d"]}),
            16610,
        ),
        fails(
            "abs long min",
            doc! {"n": long(i64::MIN)},
            bson!({"$abs": "$n"}),
            28680,
        ),
        fails(
            "sqrt negative",
            doc! {"n": -1},
            bson!({"$sqrt": "$n"}),
            28714,
        ),
        fails("ln zero", doc! {"n": 0}, bson!({"$ln": "$n"}), 28766),
        fails(
            "log base one",
            doc! {"n": 1},
            bson!({"$log": [10, "$n"]}),
            28759,
        ),
        fails(
            "pow zero negative",
            doc! {"n": -1},
            bson!({"$pow": [0, "$n"]}),
            28764,
        ),
    ]
}
