//! Binding parsed calls to interfaces: name resolution, argument assignment, type
//! conversion, checks, request bodies, and the exact text of every error.

use atfunc::interface::Kind;
use atfunc::interface::Location;
use atfunc::parse::{Span, Value};
use atfunc::{bind, BindError, BoundCall, Call, Catalog, Interface, Param, ParamType};
use serde_json::{json, Value as Json};

fn s(text: &str) -> Value {
    Value::String(text.to_owned())
}

fn bare(text: &str) -> Value {
    Value::Bare(text.to_owned())
}

fn num(literal: &str) -> Value {
    Value::Number(literal.to_owned())
}

fn call(name: &str, positional: Vec<Value>, named: Vec<(&str, Value)>) -> Call {
    Call::new(name)
        .with_positional(positional)
        .with_named(named.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
        .with_span(Span::new(3, 30))
}

fn with_body(mut call: Call, body: &str) -> Call {
    call.body = Some(body.to_owned());
    call
}

fn param(name: &str, ty: ParamType) -> Param {
    Param::new(name, ty)
}

fn choices(mut p: Param, values: Json) -> Param {
    p.choices = values.as_array().cloned();
    p
}

fn bounds(mut p: Param, min: Option<f64>, max: Option<f64>) -> Param {
    p.min = min;
    p.max = max;
    p
}

fn object(properties: Vec<Param>) -> ParamType {
    ParamType::Object { properties }
}

fn array(items: Option<Param>) -> ParamType {
    ParamType::Array {
        items: items.map(Box::new),
    }
}

fn get_temp() -> Interface {
    Interface::new("get_temp")
        .in_domain("weather")
        .param(param("location", ParamType::String).required())
        .param(choices(
            param("unit", ParamType::String),
            json!(["celsius", "fahrenheit"]),
        ))
}

fn forecast() -> Interface {
    Interface::new("forecast")
        .in_domain("weather")
        .param(param("location", ParamType::String).required())
        .param(bounds(
            param("days", ParamType::Integer),
            Some(1.0),
            Some(14.0),
        ))
        .param(param("detailed", ParamType::Boolean))
}

fn create_user() -> Interface {
    let mut interface = Interface::new("create_user").in_domain("api");
    interface.kind = Kind::ApiWrapper;
    let mut org = param("org", ParamType::String).required();
    org.location = Location::Path;
    let mut notify = param("notify", ParamType::Boolean);
    notify.location = Location::Query;
    interface.params = vec![org, notify];
    interface.request_body = ["name", "email"]
        .into_iter()
        .map(|f| {
            let mut p = param(f, ParamType::String).required();
            p.location = Location::Body;
            p
        })
        .chain(std::iter::once({
            let mut p = param("note", ParamType::String);
            p.location = Location::Body;
            p
        }))
        .collect();
    interface
}

fn catalog() -> Catalog {
    Catalog::new(vec![
        get_temp(),
        forecast(),
        Interface::new("now"),
        Interface::new("mean")
            .in_domain("math.stats")
            .param(param("values", array(Some(param("", ParamType::Number)))).required()),
        create_user(),
    ])
}

fn ok(call: &Call) -> BoundCall {
    match bind(call, &catalog()) {
        Ok(bound) => bound,
        Err(e) => panic!("{} did not bind: {e}", call.name),
    }
}

fn args(call: &Call) -> Json {
    Json::Object(ok(call).args)
}

fn err(call: &Call) -> String {
    err_in(call, &catalog())
}

/// The first of the call's problems (see `BindError::problems`).
fn first_problem(call: &Call) -> String {
    match bind(call, &catalog()) {
        Ok(bound) => panic!("{} bound unexpectedly: {:?}", call.name, bound.args),
        Err(e) => e.problems()[0].to_string(),
    }
}

fn err_in(call: &Call, catalog: &Catalog) -> String {
    match bind(call, catalog) {
        Ok(bound) => panic!("{} bound unexpectedly: {:?}", call.name, bound.args),
        Err(e) => e.to_string(),
    }
}

/// A catalog of one function `t.f` with one optional parameter `p` of type `ty`.
fn one(ty: ParamType) -> Catalog {
    Catalog::new(vec![Interface::new("f")
        .in_domain("t")
        .param(param("p", ty))])
}

fn coerced(ty: ParamType, value: Value) -> Result<Json, String> {
    bind(&call("t.f", vec![value], vec![]), &one(ty))
        .map(|b| b.args.get("p").cloned().unwrap_or(Json::Null))
        .map_err(|e| e.to_string())
}

// ---------------------------------------------------------------- names

#[test]
fn binds_a_qualified_name_and_reports_index_name_and_span() {
    let bound = ok(&call("weather.forecast", vec![s("Paris")], vec![]));
    assert_eq!(bound.index, 1);
    assert_eq!(bound.name, "weather.forecast");
    assert_eq!(bound.span, Span::new(3, 30));
    assert_eq!(bound.body, None);
}

#[test]
fn names_ignore_case_under_a_case_insensitive_catalog() {
    for name in [
        "weather.get_temp",
        "Weather.Get_Temp",
        "WEATHER.GET_TEMP",
        "wEaThEr.gEt_tEmP",
    ] {
        let bound = ok(&call(name, vec![s("Paris")], vec![]));
        assert_eq!(bound.name, "weather.get_temp", "{name}");
    }
}

#[test]
fn non_ascii_names_fold_case() {
    let catalog = Catalog::new(vec![Interface::new("Größe")
        .in_domain("Straße")
        .param(param("año", ParamType::Integer))]);
    let bound = bind(
        &call("STRASSE.GRÖSSE", vec![], vec![("AÑO", num("2024"))]),
        &catalog,
    )
    .unwrap();
    assert_eq!(bound.name, "Straße.Größe");
    assert_eq!(Json::Object(bound.args), json!({"año": 2024}));
}

#[test]
fn names_are_exact_under_a_case_sensitive_catalog() {
    let catalog = Catalog::new(vec![get_temp()]).matching(atfunc::bind::NameMatch::ExactCase);
    assert!(bind(
        &call("weather.get_temp", vec![s("Paris")], vec![]),
        &catalog
    )
    .is_ok());
    assert_eq!(
        err_in(
            &call("Weather.get_temp", vec![s("Paris")], vec![]),
            &catalog
        ),
        "Unknown function 'Weather.get_temp': did you mean 'weather.get_temp'?"
    );
    // Parameter names are exact too.
    assert_eq!(
        err_in(
            &call("weather.get_temp", vec![], vec![("Location", s("Paris"))]),
            &catalog
        ),
        "The call of function 'weather.get_temp' has 2 problems:\n\
         - Unknown parameter 'Location' for function 'weather.get_temp': did you mean 'location'? \
         Valid parameters are location, unit\n\
         - Missing required parameter for function 'weather.get_temp': location"
    );
}

#[test]
fn a_root_function_is_called_without_a_domain() {
    let bound = ok(&call("now", vec![], vec![]));
    assert_eq!(bound.name, "now");
    assert_eq!(bound.index, 2);
    assert_eq!(ok(&call("NOW", vec![], vec![])).index, 2);
}

#[test]
fn the_root_domain_is_callable_with_or_without_its_prefix() {
    let catalog = catalog().with_root("weather");
    assert_eq!(catalog.root(), Some("weather"));
    for name in [
        "get_temp",
        "Get_Temp",
        "weather.get_temp",
        "WEATHER.get_temp",
    ] {
        let bound = bind(&call(name, vec![s("Paris")], vec![]), &catalog).unwrap();
        assert_eq!(bound.name, "weather.get_temp", "{name}");
    }
    // Without a root domain, the bare name is unknown.
    assert_eq!(
        err(&call("get_temp", vec![s("Paris")], vec![])),
        "Unknown function 'get_temp': did you mean 'weather.get_temp'?"
    );
}

#[test]
fn a_root_function_wins_over_the_root_domain() {
    let catalog = Catalog::new(vec![
        Interface::new("now").in_domain("clock"),
        Interface::new("now"),
    ])
    .with_root("clock");
    assert_eq!(catalog.find("now").unwrap().0, 1);
    assert_eq!(catalog.find("clock.now").unwrap().0, 0);
}

#[test]
fn dotted_domains_split_at_the_last_dot() {
    let bound = ok(&call(
        "math.stats.mean",
        vec![json_array(&["1", "2"])],
        vec![],
    ));
    assert_eq!(bound.name, "math.stats.mean");
    assert_eq!(bound.args["values"], json!([1, 2]));
    assert_eq!(
        ok(&call("Math.Stats.MEAN", vec![json_array(&["3"])], vec![])).index,
        3
    );
    let catalog = catalog().with_root("math.stats");
    assert_eq!(catalog.find("mean").unwrap().0, 3);
}

fn json_array(numbers: &[&str]) -> Value {
    Value::Array(numbers.iter().map(|n| num(n)).collect())
}

#[test]
fn find_returns_the_interface() {
    let catalog = catalog();
    let (index, interface) = catalog.find("api.CREATE_USER").unwrap();
    assert_eq!(index, 4);
    assert_eq!(interface.name, "create_user");
    assert_eq!(catalog.len(), 5);
    assert!(!catalog.is_empty());
    assert_eq!(catalog.get(4), Some(interface));
}

#[test]
fn the_first_of_two_clashing_names_wins() {
    let mut catalog = Catalog::new(vec![Interface::new("f").in_domain("a")]);
    assert_eq!(catalog.push(Interface::new("F").in_domain("A")), 1);
    assert_eq!(catalog.find("a.f").unwrap().0, 0);
    assert_eq!(catalog.push(Interface::new("g").in_domain("b")), 2);
    assert_eq!(catalog.find("B.G").unwrap().0, 2);
}

#[test]
fn unknown_function_suggests_the_closest_name() {
    assert_eq!(
        err(&call("wether.get_temp", vec![], vec![])),
        "Unknown function 'wether.get_temp': did you mean 'weather.get_temp'?"
    );
    assert_eq!(
        err(&call("weather.forcast", vec![], vec![])),
        "Unknown function 'weather.forcast': did you mean 'weather.forecast'?"
    );
    // The right function in the wrong domain.
    assert_eq!(
        err(&call("climate.forecast", vec![], vec![])),
        "Unknown function 'climate.forecast': did you mean 'weather.forecast'?"
    );
    assert_eq!(
        err(&call("stats.mean", vec![], vec![])),
        "Unknown function 'stats.mean': did you mean 'math.stats.mean'?"
    );
}

#[test]
fn unknown_function_lists_some_names_when_none_is_close() {
    assert_eq!(
        err(&call("translate", vec![], vec![])),
        "Unknown function 'translate': available functions are 'weather.get_temp', \
         'weather.forecast', 'now', 'math.stats.mean', 'api.create_user'"
    );
    let mut catalog = catalog();
    catalog.push(Interface::new("y").in_domain("x"));
    catalog.push(Interface::new("z").in_domain("x"));
    assert_eq!(
        err_in(&call("translate", vec![], vec![]), &catalog),
        "Unknown function 'translate': available functions are 'weather.get_temp', \
         'weather.forecast', 'now', 'math.stats.mean', 'api.create_user' and 2 more"
    );
    assert_eq!(
        err_in(&call("translate", vec![], vec![]), &Catalog::default()),
        "Unknown function 'translate': no functions are available"
    );
}

#[test]
fn unknown_function_is_a_typed_error() {
    let e = bind(&call("wether.get_temp", vec![], vec![]), &catalog()).unwrap_err();
    assert_eq!(
        e,
        BindError::UnknownFunction {
            name: "wether.get_temp".into(),
            closest: Some("weather.get_temp".into()),
            available: vec![],
            more: 0,
        }
    );
}

// ---------------------------------------------------------------- arguments

#[test]
fn positional_arguments_fill_parameters_in_declared_order() {
    let c = call(
        "weather.forecast",
        vec![s("Paris"), num("3"), Value::Bool(true)],
        vec![],
    );
    assert_eq!(
        args(&c),
        json!({"location": "Paris", "days": 3, "detailed": true})
    );
}

#[test]
fn named_arguments_come_out_in_declared_order_with_declared_spelling() {
    let c = call(
        "weather.forecast",
        vec![],
        vec![
            ("DETAILED", Value::Bool(false)),
            ("Days", num("2")),
            ("location", bare("Oslo")),
        ],
    );
    let bound = ok(&c);
    let keys: Vec<&str> = bound.args.keys().map(String::as_str).collect();
    assert_eq!(keys, ["location", "days", "detailed"]);
    assert_eq!(
        Json::Object(bound.args),
        json!({"location": "Oslo", "days": 2, "detailed": false})
    );
}

#[test]
fn positional_and_named_mix() {
    let c = call(
        "weather.forecast",
        vec![s("Paris")],
        vec![("detailed", bare("true"))],
    );
    assert_eq!(args(&c), json!({"location": "Paris", "detailed": true}));
}

#[test]
fn absent_optional_parameters_stay_absent() {
    let mut interface = forecast();
    interface.params[1].default = Some(json!(7));
    let catalog = Catalog::new(vec![interface]);
    let bound = bind(
        &call("weather.forecast", vec![s("Paris")], vec![]),
        &catalog,
    )
    .unwrap();
    assert_eq!(Json::Object(bound.args), json!({"location": "Paris"}));
}

#[test]
fn null_counts_as_absent() {
    let c = call(
        "weather.forecast",
        vec![s("Paris"), Value::Null],
        vec![("detailed", Value::Null)],
    );
    assert_eq!(args(&c), json!({"location": "Paris"}));
    assert_eq!(
        err(&call("weather.forecast", vec![Value::Null], vec![])),
        "Missing required parameter for function 'weather.forecast': location"
    );
}

#[test]
fn missing_required_parameter_uses_the_reference_wording() {
    assert_eq!(
        err(&call("weather.get_temp", vec![], vec![])),
        "Missing required parameter for function 'weather.get_temp': location"
    );
    assert_eq!(
        err(&call(
            "weather.get_temp",
            vec![],
            vec![("unit", s("celsius"))]
        )),
        "Missing required parameter for function 'weather.get_temp': location"
    );
}

#[test]
fn every_missing_parameter_is_listed_in_declared_order() {
    let catalog = Catalog::new(vec![Interface::new("y")
        .in_domain("x")
        .param(param("a", ParamType::String).required())
        .param(param("opt", ParamType::String))
        .param(param("b", ParamType::Integer).required())
        .param(param("c", ParamType::Number).required())]);
    assert_eq!(
        err_in(&call("x.y", vec![], vec![("b", num("1"))]), &catalog),
        "Missing required parameter for function 'x.y': a, c"
    );
    assert_eq!(
        err_in(&call("x.y", vec![], vec![]), &catalog),
        "Missing required parameter for function 'x.y': a, b, c"
    );
}

#[test]
fn too_many_positional_arguments() {
    assert_eq!(
        err(&call(
            "weather.get_temp",
            vec![s("Paris"), s("celsius"), s("today")],
            vec![]
        )),
        "Too many arguments for function 'weather.get_temp': it takes 2 (location, unit), got 3"
    );
    assert_eq!(
        err(&call("now", vec![num("1")], vec![])),
        "Too many arguments for function 'now': it takes no arguments, got 1"
    );
    assert_eq!(
        err(&call("math.stats.mean", vec![num("1"), num("2")], vec![])),
        "The call of function 'math.stats.mean' has 2 problems:\n\
         - Too many arguments for function 'math.stats.mean': it takes 1 (values), got 2\n\
         - Invalid value for parameter 'values' of function 'math.stats.mean': expected array ([...]), got 1"
    );
}

#[test]
fn unknown_named_parameter_lists_the_valid_ones() {
    assert_eq!(
        err(&call(
            "weather.get_temp",
            vec![s("Paris")],
            vec![("units", s("celsius"))]
        )),
        "Unknown parameter 'units' for function 'weather.get_temp': did you mean 'unit'? \
         Valid parameters are location, unit"
    );
    assert_eq!(
        err(&call("weather.get_temp", vec![s("Paris")], vec![("zzz", s("x"))])),
        "Unknown parameter 'zzz' for function 'weather.get_temp': valid parameters are location, unit"
    );
    assert_eq!(
        err(&call("now", vec![], vec![("tz", s("UTC"))])),
        "Unknown parameter 'tz' for function 'now': it takes no parameters"
    );
}

#[test]
fn a_parameter_given_twice_is_an_error() {
    let message = "Parameter 'location' of function 'weather.get_temp' is given more than once: \
                   give it once, by position or by name";
    assert_eq!(
        err(&call(
            "weather.get_temp",
            vec![s("Paris")],
            vec![("location", s("Oslo"))]
        )),
        message
    );
    assert_eq!(
        err(&call(
            "weather.get_temp",
            vec![],
            vec![("location", s("Paris")), ("LOCATION", s("Oslo"))]
        )),
        message
    );
}

// ---------------------------------------------------------------- one JSON object for all arguments

fn obj(fields: Vec<(&str, Value)>) -> Value {
    Value::Object(fields.into_iter().map(|(k, v)| (k.to_owned(), v)).collect())
}

#[test]
fn a_sole_object_of_parameters_binds_as_named_arguments() {
    assert_eq!(
        args(&call(
            "weather.get_temp",
            vec![obj(vec![("location", s("Paris")), ("unit", s("celsius"))])],
            vec![]
        )),
        json!({"location": "Paris", "unit": "celsius"})
    );
    // Keys match as named arguments do (ignoring case here), values convert as declared.
    assert_eq!(
        args(&call(
            "weather.forecast",
            vec![obj(vec![
                ("detailed", s("true")),
                ("LOCATION", s("Paris")),
                ("days", s("3"))
            ])],
            vec![]
        )),
        json!({"location": "Paris", "days": 3, "detailed": true})
    );
    // As a model writes it.
    let text = r#"@weather.get_temp({"location": "Paris", "unit": "celsius"})"#;
    let parsed: Vec<Call> = atfunc::parse_events(text)
        .into_iter()
        .filter_map(|e| match e {
            atfunc::Event::Call(c) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(
        Json::Object(ok(&parsed[0]).args),
        json!({"location": "Paris", "unit": "celsius"})
    );
}

#[test]
fn a_sole_object_gets_the_errors_of_named_arguments() {
    assert_eq!(
        err(&call(
            "weather.get_temp",
            vec![obj(vec![("unit", s("celsius"))])],
            vec![]
        )),
        "Missing required parameter for function 'weather.get_temp': location"
    );
    assert_eq!(
        err(&call(
            "weather.get_temp",
            vec![obj(vec![("location", s("Paris")), ("units", s("celsius"))])],
            vec![]
        )),
        "Unknown parameter 'units' for function 'weather.get_temp': did you mean 'unit'? \
         Valid parameters are location, unit"
    );
    assert_eq!(
        err(&call(
            "weather.get_temp",
            vec![obj(vec![("location", s("Paris")), ("LOCATION", s("Oslo"))])],
            vec![]
        )),
        "Parameter 'location' of function 'weather.get_temp' is given more than once: \
         give it once, by position or by name"
    );
    assert_eq!(
        err(&call(
            "weather.get_temp",
            vec![obj(vec![("location", s("Paris")), ("unit", s("kelvin"))])],
            vec![]
        )),
        "Invalid value for parameter 'unit' of function 'weather.get_temp': expected one of \
         \"celsius\", \"fahrenheit\", got \"kelvin\""
    );
}

#[test]
fn an_empty_object_gives_no_arguments() {
    assert_eq!(args(&call("now", vec![obj(vec![])], vec![])), json!({}));
    assert_eq!(
        err(&call("weather.get_temp", vec![obj(vec![])], vec![])),
        "Missing required parameter for function 'weather.get_temp': location"
    );
}

#[test]
fn an_object_of_other_keys_stays_a_first_argument() {
    assert_eq!(
        err(&call(
            "weather.get_temp",
            vec![obj(vec![("city", s("Paris"))])],
            vec![]
        )),
        "Invalid value for parameter 'location' of function 'weather.get_temp': expected string, \
         got {\"city\":\"Paris\"}"
    );
    assert_eq!(
        err(&call(
            "math.stats.mean",
            vec![obj(vec![("x", num("1"))])],
            vec![]
        )),
        "Invalid value for parameter 'values' of function 'math.stats.mean': expected array ([...]), \
         got {\"x\":1}"
    );
    assert_eq!(
        err(&call("now", vec![obj(vec![("x", num("1"))])], vec![])),
        "Too many arguments for function 'now': it takes no arguments, got 1"
    );
    assert_eq!(
        err(&call(
            "weather.get_temp",
            vec![obj(vec![("city", s("Paris"))])],
            vec![("unit", s("celsius"))]
        )),
        "Invalid value for parameter 'location' of function 'weather.get_temp': expected string, \
         got {\"city\":\"Paris\"}"
    );
}

#[test]
fn an_object_of_parameters_beside_other_arguments_is_written_out() {
    let expected = "Invalid arguments for function 'weather.get_temp': got one JSON object \
                    (keys location) and 1 more argument; write every argument as name=value: \
                    @weather.get_temp(location=\"Paris\", unit=\"celsius\")";
    let object = || obj(vec![("location", s("Paris"))]);
    assert_eq!(
        err(&call(
            "weather.get_temp",
            vec![object()],
            vec![("unit", s("celsius"))]
        )),
        expected
    );
    assert_eq!(
        err(&call(
            "weather.get_temp",
            vec![object(), s("celsius")],
            vec![]
        )),
        expected
    );
    assert_eq!(
        err(&call(
            "weather.forecast",
            vec![obj(vec![("location", s("Paris")), ("days", num("3"))])],
            vec![("detailed", Value::Bool(true)), ("x", bare("y"))]
        )),
        "Invalid arguments for function 'weather.forecast': got one JSON object (keys \
         location, days) and 2 more arguments; write every argument as name=value: \
         @weather.forecast(location=\"Paris\", days=3, detailed=true, x=\"y\")"
    );
    assert!(matches!(
        bind(
            &call("weather.get_temp", vec![object(), s("celsius")], vec![]),
            &catalog()
        ),
        Err(BindError::ObjectArguments { others: 1, .. })
    ));
}

#[test]
fn a_sole_object_for_an_api_wrapper_holds_its_parameters_not_its_body() {
    let bound = ok(&with_body(
        call(
            "api.create_user",
            vec![obj(vec![("org", s("acme")), ("notify", Value::Bool(true))])],
            vec![],
        ),
        r#"{"name": "ann", "email": "a@example.com"}"#,
    ));
    assert_eq!(
        Json::Object(bound.args),
        json!({"org": "acme", "notify": true})
    );
    let body_field = "'name' is a field of the request body of function 'api.create_user', not an \
                      argument: write it in the with_body [[ {...} ]] block after the call";
    assert_eq!(
        err(&call(
            "api.create_user",
            vec![obj(vec![("org", s("acme")), ("name", s("ann"))])],
            vec![]
        )),
        format!(
            "The call of function 'api.create_user' has 2 problems:\n- {body_field}\n\
             - Missing request body for function 'api.create_user': add with_body [[ ... ]] \
             after the call, with the required fields name, email"
        )
    );
    // Keys that are all body fields still read as arguments misplaced, not as a value.
    assert_eq!(
        first_problem(&call(
            "api.create_user",
            vec![obj(vec![("name", s("ann")), ("email", s("e"))])],
            vec![]
        )),
        body_field
    );
    // The same slip without an object.
    assert_eq!(
        first_problem(&call(
            "api.create_user",
            vec![s("acme")],
            vec![("name", s("ann"))]
        )),
        body_field
    );
}

#[test]
fn a_first_parameter_of_type_object_or_any_takes_the_object() {
    let options = param("options", object(vec![param("limit", ParamType::Integer)]));
    let catalog = Catalog::new(vec![Interface::new("f")
        .in_domain("t")
        .param(options)
        .param(param("verbose", ParamType::Boolean))]);
    let given = call(
        "t.f",
        vec![obj(vec![
            ("limit", num("5")),
            ("verbose", Value::Bool(true)),
        ])],
        vec![],
    );
    let bound = bind(&given, &catalog).unwrap();
    assert_eq!(
        Json::Object(bound.args),
        json!({"options": {"limit": 5, "verbose": true}})
    );
    assert_eq!(
        coerced(ParamType::Any, obj(vec![("p", num("1"))])),
        Ok(json!({"p": 1}))
    );
}

// ---------------------------------------------------------------- conversion

#[test]
fn number_from_literals_and_text() {
    assert_eq!(coerced(ParamType::Number, num("2")), Ok(json!(2)));
    assert_eq!(coerced(ParamType::Number, num("-1.5")), Ok(json!(-1.5)));
    assert_eq!(coerced(ParamType::Number, num("+7")), Ok(json!(7)));
    assert_eq!(coerced(ParamType::Number, num("2e3")), Ok(json!(2000.0)));
    assert_eq!(coerced(ParamType::Number, s("2")), Ok(json!(2)));
    assert_eq!(coerced(ParamType::Number, s(" 0.25 ")), Ok(json!(0.25)));
    assert_eq!(coerced(ParamType::Number, bare("2")), Ok(json!(2)));
    assert_eq!(
        coerced(ParamType::Number, num("18446744073709551615")),
        Ok(json!(u64::MAX))
    );
}

#[test]
fn number_rejects_what_is_not_one() {
    for (value, shown) in [
        (s("two"), "\"two\""),
        (s("inf"), "\"inf\""),
        (s("NaN"), "\"NaN\""),
        (s("0x10"), "\"0x10\""),
        (s(""), "\"\""),
        (s("1.2.3"), "\"1.2.3\""),
        // A sign is one character: `+-7` is not -7.
        (s("+-7"), "\"+-7\""),
        (s("++7"), "\"++7\""),
        (bare("+-1.5"), "\"+-1.5\""),
        (num("1e999"), "1e999"),
        (Value::Bool(true), "true"),
        (Value::Array(vec![num("1")]), "[1]"),
    ] {
        assert_eq!(
            coerced(ParamType::Number, value),
            Err(format!(
                "Invalid value for parameter 'p' of function 't.f': expected number, got {shown}"
            ))
        );
    }
}

#[test]
fn integer_accepts_whole_numbers_only() {
    assert_eq!(coerced(ParamType::Integer, num("2")), Ok(json!(2)));
    assert_eq!(coerced(ParamType::Integer, num("2.0")), Ok(json!(2)));
    assert_eq!(coerced(ParamType::Integer, num("-3.000")), Ok(json!(-3)));
    assert_eq!(coerced(ParamType::Integer, num("2e3")), Ok(json!(2000)));
    assert_eq!(coerced(ParamType::Integer, s("42")), Ok(json!(42)));
    assert_eq!(coerced(ParamType::Integer, bare("7.0")), Ok(json!(7)));
    assert!(coerced(ParamType::Integer, num("2.0")).unwrap().is_i64());
    assert_eq!(
        coerced(ParamType::Integer, num("2.5")),
        Err("Invalid value for parameter 'p' of function 't.f': expected integer, got 2.5".into())
    );
    assert_eq!(
        coerced(ParamType::Integer, s("2.5")),
        Err(
            "Invalid value for parameter 'p' of function 't.f': expected integer, got \"2.5\""
                .into()
        )
    );
}

#[test]
fn integer_is_read_from_the_literal_not_through_a_float() {
    // Whole as written, and exact where a JSON integer holds the value.
    assert_eq!(
        coerced(ParamType::Integer, num("9007199254740993.0")),
        Ok(json!(9_007_199_254_740_993_i64))
    );
    assert_eq!(
        coerced(ParamType::Integer, num("123456789012345678e1")),
        Ok(json!(1_234_567_890_123_456_780_i64))
    );
    assert_eq!(
        coerced(ParamType::Integer, num("1.8446744073709551615e19")),
        Ok(json!(u64::MAX))
    );
    assert_eq!(coerced(ParamType::Integer, num("-0.0")), Ok(json!(0)));
    assert_eq!(coerced(ParamType::Integer, num("0e-999999")), Ok(json!(0)));
    // Below i64::MIN: never rounded to i64::MIN.
    assert_ne!(
        coerced(ParamType::Integer, num("-9223372036854775809")),
        Ok(json!(i64::MIN))
    );
    // Not whole, however close a float rounds them to a whole number.
    for literal in ["2.0000000000000001", "1e-400", "4503599627370496.5"] {
        assert_eq!(
            coerced(ParamType::Integer, num(literal)),
            Err(format!(
                "Invalid value for parameter 'p' of function 't.f': expected integer, got {literal}"
            ))
        );
    }
}

#[test]
fn wrong_type_names_parameter_and_expected_type() {
    assert_eq!(
        err(&call("weather.forecast", vec![s("Paris"), s("soon")], vec![])),
        "Invalid value for parameter 'days' of function 'weather.forecast': expected integer, got \"soon\""
    );
    assert_eq!(
        err(&call("weather.forecast", vec![s("Paris")], vec![("days", bare("soon"))])),
        "Invalid value for parameter 'days' of function 'weather.forecast': expected integer, got \"soon\""
    );
}

#[test]
fn boolean_from_literals_and_true_false_text() {
    for (value, expected) in [
        (Value::Bool(true), true),
        (Value::Bool(false), false),
        (s("true"), true),
        (s("False"), false),
        (bare("True"), true),
        (bare("FALSE"), false),
        (s(" true "), true),
    ] {
        assert_eq!(
            coerced(ParamType::Boolean, value.clone()),
            Ok(json!(expected)),
            "{value:?}"
        );
    }
}

#[test]
fn boolean_rejects_yes_no_and_numbers() {
    for (value, shown) in [
        (s("yes"), "\"yes\""),
        (bare("no"), "\"no\""),
        (num("1"), "1"),
        (s("on"), "\"on\""),
    ] {
        assert_eq!(
            coerced(ParamType::Boolean, value),
            Err(format!(
                "Invalid value for parameter 'p' of function 't.f': expected boolean (true or false), got {shown}"
            ))
        );
    }
}

#[test]
fn string_from_numbers_keeps_the_literal_and_from_booleans() {
    assert_eq!(coerced(ParamType::String, num("007")), Ok(json!("007")));
    assert_eq!(coerced(ParamType::String, num("1.50")), Ok(json!("1.50")));
    assert_eq!(coerced(ParamType::String, num("+7")), Ok(json!("+7")));
    assert_eq!(coerced(ParamType::String, num("2e3")), Ok(json!("2e3")));
    assert_eq!(
        coerced(ParamType::String, Value::Bool(true)),
        Ok(json!("true"))
    );
    assert_eq!(
        coerced(ParamType::String, bare("New York")),
        Ok(json!("New York"))
    );
    assert_eq!(coerced(ParamType::String, s("")), Ok(json!("")));
}

#[test]
fn string_rejects_objects_and_arrays() {
    assert_eq!(
        coerced(
            ParamType::String,
            Value::Object(vec![("a".into(), num("1"))])
        ),
        Err(
            "Invalid value for parameter 'p' of function 't.f': expected string, got {\"a\":1}"
                .into()
        )
    );
    assert_eq!(
        coerced(ParamType::String, Value::Array(vec![])),
        Err("Invalid value for parameter 'p' of function 't.f': expected string, got []".into())
    );
}

#[test]
fn object_and_array_from_literals_and_from_json_text() {
    let obj = object(vec![]);
    assert_eq!(
        coerced(
            obj.clone(),
            Value::Object(vec![("a".into(), num("1")), ("b".into(), s("x"))])
        ),
        Ok(json!({"a": 1, "b": "x"}))
    );
    assert_eq!(
        coerced(obj.clone(), s(r#" {"a": [1, 2], "b": null} "#)),
        Ok(json!({"a": [1, 2], "b": null}))
    );
    assert_eq!(
        coerced(obj.clone(), s("{a: 1}")),
        Err("Invalid value for parameter 'p' of function 't.f': expected object ({...}), got \"{a: 1}\"".into())
    );
    assert_eq!(
        coerced(obj, s("[1]")),
        Err("Invalid value for parameter 'p' of function 't.f': expected object ({...}), got \"[1]\"".into())
    );
    let arr = array(None);
    assert_eq!(
        coerced(
            arr.clone(),
            Value::Array(vec![num("1"), s("a"), Value::Null])
        ),
        Ok(json!([1, "a", null]))
    );
    assert_eq!(coerced(arr.clone(), s("[1, \"a\"]")), Ok(json!([1, "a"])));
    assert_eq!(
        coerced(arr, s("Paris")),
        Err("Invalid value for parameter 'p' of function 't.f': expected array ([...]), got \"Paris\"".into())
    );
}

#[test]
fn nested_values_are_converted_as_declared() {
    let point = object(vec![
        param("x", ParamType::Number).required(),
        param("y", ParamType::Number).required(),
        param("label", ParamType::String),
    ]);
    let ty = array(Some(param("", point)));
    let value = Value::Array(vec![
        Value::Object(vec![
            ("x".into(), s("1")),
            ("Y".into(), num("2.5")),
            ("extra".into(), Value::Bool(true)),
        ]),
        Value::Object(vec![
            ("y".into(), num("4")),
            ("x".into(), bare("3")),
            ("label".into(), num("007")),
        ]),
    ]);
    assert_eq!(
        coerced(ty.clone(), value),
        Ok(json!([{"x": 1, "y": 2.5, "extra": true}, {"x": 3, "y": 4, "label": "007"}]))
    );
    // JSON text inside a string is converted the same way.
    assert_eq!(
        coerced(ty.clone(), s(r#"[{"x": "5", "y": 6, "label": null}]"#)),
        Ok(json!([{"x": 5, "y": 6}]))
    );
    assert_eq!(
        coerced(
            ty.clone(),
            Value::Array(vec![Value::Object(vec![
                ("x".into(), num("1")),
                ("y".into(), s("up"))
            ])])
        ),
        Err(
            "Invalid value for parameter 'p[0].y' of function 't.f': expected number, got \"up\""
                .into()
        )
    );
    assert_eq!(
        coerced(
            ty.clone(),
            Value::Array(vec![
                Value::Object(vec![]),
                Value::Object(vec![("x".into(), num("1"))])
            ])
        ),
        Err("Missing required parameter for function 't.f': p[0].x, p[0].y".into())
    );
    assert_eq!(
        coerced(ty, Value::Array(vec![Value::Null])),
        Err("Invalid value for parameter 'p[0]' of function 't.f': expected object ({...}), got null".into())
    );
    let ints = array(Some(param("", ParamType::Integer)));
    assert_eq!(
        coerced(ints.clone(), s("[1, 2.0, \"3\"]")),
        Ok(json!([1, 2, 3]))
    );
    assert_eq!(
        coerced(ints, Value::Array(vec![num("1"), num("1.5")])),
        Err(
            "Invalid value for parameter 'p[1]' of function 't.f': expected integer, got 1.5"
                .into()
        )
    );
}

#[test]
fn nested_property_names_are_exact_under_a_case_sensitive_catalog() {
    let ty = object(vec![param("Name", ParamType::String).required()]);
    let catalog = Catalog::new(vec![Interface::new("f")
        .in_domain("t")
        .param(param("p", ty))])
    .matching(atfunc::bind::NameMatch::ExactCase);
    let c = call(
        "t.f",
        vec![Value::Object(vec![("name".into(), s("a"))])],
        vec![],
    );
    assert_eq!(
        err_in(&c, &catalog),
        "Missing required parameter for function 't.f': p.Name"
    );
}

#[test]
fn any_takes_the_value_as_json() {
    assert_eq!(coerced(ParamType::Any, num("2")), Ok(json!(2)));
    assert_eq!(coerced(ParamType::Any, s("2")), Ok(json!("2")));
    assert_eq!(coerced(ParamType::Any, bare("x")), Ok(json!("x")));
    assert_eq!(
        coerced(
            ParamType::Any,
            Value::Object(vec![("k".into(), Value::Array(vec![Value::Bool(false)]))])
        ),
        Ok(json!({"k": [false]}))
    );
}

// ---------------------------------------------------------------- choices and bounds

#[test]
fn choices_are_checked_after_conversion() {
    let c = call(
        "weather.get_temp",
        vec![s("Paris"), bare("celsius")],
        vec![],
    );
    assert_eq!(args(&c), json!({"location": "Paris", "unit": "celsius"}));
    assert_eq!(
        err(&call(
            "weather.get_temp",
            vec![s("Paris"), s("kelvin")],
            vec![]
        )),
        "Invalid value for parameter 'unit' of function 'weather.get_temp': expected one of \
         \"celsius\", \"fahrenheit\", got \"kelvin\""
    );
}

#[test]
fn string_choices_are_case_sensitive_with_a_suggestion() {
    assert_eq!(
        err(&call(
            "weather.get_temp",
            vec![s("Paris"), s("Celsius")],
            vec![]
        )),
        "Invalid value for parameter 'unit' of function 'weather.get_temp': expected one of \
         \"celsius\", \"fahrenheit\", got \"Celsius\" (did you mean \"celsius\"?)"
    );
}

#[test]
fn number_choices_compare_by_value() {
    let catalog = one(ParamType::Number);
    let mut interface = catalog.interfaces()[0].clone();
    interface.params[0] = choices(param("p", ParamType::Number), json!([1, 2.5, 10]));
    let catalog = Catalog::new(vec![interface]);
    for value in [num("1.0"), s("2.50"), num("1e1")] {
        assert!(
            bind(&call("t.f", vec![value.clone()], vec![]), &catalog).is_ok(),
            "{value:?}"
        );
    }
    assert_eq!(
        err_in(&call("t.f", vec![num("3")], vec![]), &catalog),
        "Invalid value for parameter 'p' of function 't.f': expected one of 1, 2.5, 10, got 3"
    );
}

#[test]
fn large_integer_choices_compare_exactly() {
    // Ids this large are 256 apart as floats; a near miss is not a choice.
    let interface = Interface::new("f").in_domain("t").param(choices(
        param("p", ParamType::Integer),
        json!([1_234_567_890_123_456_789_u64, 1_234_567_890_123_456_790_u64]),
    ));
    let catalog = Catalog::new(vec![interface]);
    assert!(bind(
        &call("t.f", vec![num("1234567890123456790")], vec![]),
        &catalog
    )
    .is_ok());
    assert_eq!(
        err_in(
            &call("t.f", vec![num("1234567890123456700")], vec![]),
            &catalog
        ),
        "Invalid value for parameter 'p' of function 't.f': expected one of \
         1234567890123456789, 1234567890123456790, got 1234567890123456700"
    );
}

#[test]
fn long_choice_lists_are_cut() {
    let values: Vec<Json> = (0..25).map(|i| json!(format!("c{i}"))).collect();
    let interface = Interface::new("f")
        .in_domain("t")
        .param(choices(param("p", ParamType::String), json!(values)));
    let catalog = Catalog::new(vec![interface]);
    let listed: Vec<String> = (0..20).map(|i| format!("\"c{i}\"")).collect();
    assert_eq!(
        err_in(&call("t.f", vec![s("zz")], vec![]), &catalog),
        format!(
            "Invalid value for parameter 'p' of function 't.f': expected one of {}, and 5 more, got \"zz\"",
            listed.join(", ")
        )
    );
}

#[test]
fn array_item_choices_are_checked() {
    let ty = array(Some(choices(
        param("", ParamType::String),
        json!(["a", "b"]),
    )));
    assert_eq!(
        coerced(ty.clone(), s(r#"["a","b","a"]"#)),
        Ok(json!(["a", "b", "a"]))
    );
    assert_eq!(
        coerced(ty, Value::Array(vec![s("a"), s("B")])),
        Err("Invalid value for parameter 'p[1]' of function 't.f': expected one of \"a\", \"b\", got \"B\" \
             (did you mean \"b\"?)"
            .into())
    );
}

/// `enum` on an array parameter, as tool files write it: the choices of each element.
fn metrics_tool(metrics: Json) -> Catalog {
    let tools = atfunc::load_interfaces(&json!([{
        "name": "stats.report",
        "parameters": {"type": "object", "properties": {"metrics": metrics},
                       "required": ["metrics"]}
    }]))
    .unwrap();
    Catalog::new(tools)
}

#[test]
fn array_choices_apply_to_each_element() {
    let catalog = metrics_tool(json!({
        "type": "array", "items": {"type": "string"}, "enum": ["view", "click", "share"]
    }));
    let bound = |value: Value| {
        bind(
            &call("stats.report", vec![], vec![("metrics", value)]),
            &catalog,
        )
        .map(|b| Json::Object(b.args))
        .map_err(|e| e.to_string())
    };
    let list = |items: &[&str]| Value::Array(items.iter().map(|i| s(i)).collect());
    assert_eq!(bound(list(&["view"])), Ok(json!({"metrics": ["view"]})));
    assert_eq!(
        bound(list(&["click", "view", "click"])),
        Ok(json!({"metrics": ["click", "view", "click"]}))
    );
    assert_eq!(bound(list(&[])), Ok(json!({"metrics": []})));
    assert_eq!(
        bound(list(&["view", "View"])),
        Err(
            "Invalid value for parameter 'metrics[1]' of function 'stats.report': expected one of \
             \"view\", \"click\", \"share\", got \"View\" (did you mean \"view\"?)"
                .into()
        )
    );
}

#[test]
fn array_choices_without_items_and_beside_items_choices() {
    let untyped = metrics_tool(json!({"type": "array", "enum": ["view", "click"]}));
    let given = |catalog: &Catalog, items: Vec<Value>| {
        bind(
            &call("stats.report", vec![Value::Array(items)], vec![]),
            catalog,
        )
        .map(|b| Json::Object(b.args))
        .map_err(|e| e.to_string())
    };
    assert_eq!(
        given(&untyped, vec![s("click")]),
        Ok(json!({"metrics": ["click"]}))
    );
    assert!(given(&untyped, vec![s("share")])
        .unwrap_err()
        .contains("'metrics[0]'"));
    // The items' own enum, and both at once: an element must be in each list.
    let own = metrics_tool(json!({
        "type": "array", "items": {"type": "string", "enum": ["view", "click"]}
    }));
    assert_eq!(
        given(&own, vec![s("view")]),
        Ok(json!({"metrics": ["view"]}))
    );
    assert!(given(&own, vec![s("share")]).is_err());
    let both = metrics_tool(json!({
        "type": "array", "items": {"type": "string", "enum": ["view", "click", "share"]},
        "enum": ["view", "click"]
    }));
    assert_eq!(
        given(&both, vec![s("click")]),
        Ok(json!({"metrics": ["click"]}))
    );
    assert!(given(&both, vec![s("share")])
        .unwrap_err()
        .starts_with("Invalid value for parameter 'metrics[0]'"));
}

#[test]
fn array_choices_that_are_lists_compare_the_whole_value() {
    // Proper JSON Schema: the whole list is one of the choices.
    let catalog = metrics_tool(json!({
        "type": "array", "items": {"type": "string"}, "enum": [["view"], ["view", "click"]]
    }));
    let given = |items: &[&str]| {
        let value = Value::Array(items.iter().map(|i| s(i)).collect());
        bind(&call("stats.report", vec![value], vec![]), &catalog).map_err(|e| e.to_string())
    };
    assert!(given(&["view", "click"]).is_ok());
    assert_eq!(
        given(&["click"]).unwrap_err(),
        "Invalid value for parameter 'metrics' of function 'stats.report': expected one of \
         [\"view\"], [\"view\",\"click\"], got [\"click\"]"
    );
}

#[test]
fn min_and_max_are_checked_on_numbers() {
    let ok_days = call("weather.forecast", vec![s("Paris"), num("14")], vec![]);
    assert_eq!(args(&ok_days)["days"], json!(14));
    assert_eq!(
        err(&call("weather.forecast", vec![s("Paris"), num("15")], vec![])),
        "Invalid value for parameter 'days' of function 'weather.forecast': expected a number from 1 to 14, got 15"
    );
    assert_eq!(
        err(&call("weather.forecast", vec![s("Paris"), s("0")], vec![])),
        "Invalid value for parameter 'days' of function 'weather.forecast': expected a number from 1 to 14, got 0"
    );
    let low = Interface::new("f").in_domain("t").param(bounds(
        param("p", ParamType::Number),
        Some(0.5),
        None,
    ));
    let high = Interface::new("g").in_domain("t").param(bounds(
        param("p", ParamType::Number),
        None,
        Some(-1.0),
    ));
    let catalog = Catalog::new(vec![low, high]);
    assert_eq!(
        err_in(&call("t.f", vec![num("0.25")], vec![]), &catalog),
        "Invalid value for parameter 'p' of function 't.f': expected a number of at least 0.5, got 0.25"
    );
    assert_eq!(
        err_in(&call("t.g", vec![num("0")], vec![]), &catalog),
        "Invalid value for parameter 'p' of function 't.g': expected a number of at most -1, got 0"
    );
}

#[test]
fn long_values_are_cut_in_messages() {
    let long = "é".repeat(100);
    let message = coerced(ParamType::Integer, s(&long)).unwrap_err();
    assert_eq!(
        message,
        format!(
            "Invalid value for parameter 'p' of function 't.f': expected integer, got \"{}\"[... 120 more bytes]",
            "é".repeat(40)
        )
    );
}

// ---------------------------------------------------------------- api-wrapper bodies

#[test]
fn api_wrapper_binds_path_then_query_params_and_the_body() {
    let body = r#" {"name": "Ann", "email": "ann@example.com", "note": "likes ]] and [[x]]"} "#;
    let c = with_body(
        call("api.create_user", vec![bare("acme"), bare("true")], vec![]),
        body,
    );
    let bound = ok(&c);
    assert_eq!(
        Json::Object(bound.args),
        json!({"org": "acme", "notify": true})
    );
    let body_out = bound.body.unwrap();
    assert_eq!(body_out.raw, body);
    assert_eq!(
        body_out.json,
        Some(json!({"name": "Ann", "email": "ann@example.com", "note": "likes ]] and [[x]]"}))
    );
}

#[test]
fn a_body_that_is_not_json_is_kept_raw() {
    let c = with_body(
        call("api.create_user", vec![s("acme")], vec![]),
        "name=Ann&email=a@b.c",
    );
    let body = ok(&c).body.unwrap();
    assert_eq!(body.raw, "name=Ann&email=a@b.c");
    assert_eq!(body.json, None);
}

#[test]
fn missing_body() {
    let message = "Missing request body for function 'api.create_user': add with_body [[ ... ]] after the call, \
                   with the required fields name, email";
    assert_eq!(
        err(&call("api.create_user", vec![s("acme")], vec![])),
        message
    );
    assert_eq!(
        err(&with_body(
            call("api.create_user", vec![s("acme")], vec![]),
            "  \n "
        )),
        message
    );
}

#[test]
fn missing_body_fields_are_listed_in_declared_order() {
    let c = with_body(
        call("api.create_user", vec![s("acme")], vec![]),
        r#"{"note": "x", "Email": "a@b.c"}"#,
    );
    assert_eq!(
        err(&c),
        "Missing required body field for function 'api.create_user': name, email"
    );
    let c = with_body(
        call("api.create_user", vec![s("acme")], vec![]),
        r#"{"name": "Ann", "email": null}"#,
    );
    assert_eq!(
        err(&c),
        "Missing required body field for function 'api.create_user': email"
    );
}

#[test]
fn a_body_must_be_an_object_when_fields_are_declared() {
    let c = with_body(call("api.create_user", vec![s("acme")], vec![]), " [1,2] ");
    assert_eq!(
        err(&c),
        "Invalid request body for function 'api.create_user': expected a JSON object, got [1,2]"
    );
}

#[test]
fn a_body_on_a_function_without_one_is_an_error() {
    let c = with_body(call("weather.get_temp", vec![s("Paris")], vec![]), "{}");
    assert_eq!(
        err(&c),
        "Function 'weather.get_temp' takes no request body: remove the with_body block"
    );
}

#[test]
fn an_api_wrapper_with_only_optional_body_fields_needs_no_body() {
    let mut interface = create_user();
    for field in &mut interface.request_body {
        field.required = false;
    }
    let catalog = Catalog::new(vec![interface]);
    let bound = bind(&call("api.create_user", vec![s("acme")], vec![]), &catalog).unwrap();
    assert_eq!(bound.body, None);
}

// ---------------------------------------------------------------- text-driven

/// Calls parsed from text bind like the hand-built ones.
#[test]
fn calls_parsed_from_text_bind() {
    let text = "Sure. @Weather.Forecast(\"Paris\", days: '3', detailed=True) and then \
                @api.create_user(acme) with_body [[{\"name\": \"a]]b\", \"email\": \"e\"}]]";
    let calls: Vec<Call> = atfunc::parse_events(text)
        .into_iter()
        .filter_map(|e| match e {
            atfunc::Event::Call(c) => Some(c),
            _ => None,
        })
        .collect();
    assert_eq!(calls.len(), 2);
    let first = ok(&calls[0]);
    assert_eq!(
        Json::Object(first.args),
        json!({"location": "Paris", "days": 3, "detailed": true})
    );
    let second = ok(&calls[1]);
    assert_eq!(
        second.body.unwrap().json,
        Some(json!({"name": "a]]b", "email": "e"}))
    );
}

#[test]
fn a_huge_unknown_name_is_quoted_short_and_not_compared_letter_by_letter() {
    // A hostile model can write a name of megabytes; the message quotes 80 bytes of it, and
    // no suggestion is searched for among names it cannot resemble.
    let name = "w".repeat(1_000_000);
    assert_eq!(
        err(&call(&name, vec![], vec![])),
        format!(
            "Unknown function '{}[... 999920 more bytes]': available functions are \
             'weather.get_temp', 'weather.forecast', 'now', 'math.stats.mean', 'api.create_user'",
            "w".repeat(80)
        )
    );
    let param = format!("location{}", "x".repeat(10_000));
    let message = err(&call(
        "weather.get_temp",
        vec![],
        vec![(param.as_str(), s("Paris"))],
    ));
    assert!(
        message.starts_with(&format!(
            "The call of function 'weather.get_temp' has 2 problems:\n\
             - Unknown parameter 'location{}[... 9928 more bytes]' for function 'weather.get_temp': ",
            "x".repeat(72)
        )),
        "{message}"
    );
}

/// A call with problems of several kinds gets them all in one error, as `atfunc check`
/// lists every problem of a file: the model fixes its call once, not once per kind.
#[test]
fn every_problem_of_a_call_is_reported_at_once() {
    let wrong = call(
        "weather.forecast",
        vec![],
        vec![
            ("dayz", num("3")),
            ("days", num("30")),
            ("detailed", s("maybe")),
        ],
    );
    let error = bind(&wrong, &catalog()).expect_err("refused");
    assert!(
        matches!(&error, BindError::Several { function, errors } if function == "weather.forecast" && errors.len() == 4)
    );
    assert_eq!(
        error.problems()[1].to_string(),
        "Missing required parameter for function 'weather.forecast': location"
    );
    let message = error.to_string();
    assert!(message.starts_with("The call of function 'weather.forecast' has 4 problems:\n- "));
    for problem in [
        "Unknown parameter 'dayz' for function 'weather.forecast'",
        "Missing required parameter for function 'weather.forecast': location",
        "Invalid value for parameter 'days' of function 'weather.forecast': expected a number from 1 to 14, got 30",
        "Invalid value for parameter 'detailed' of function 'weather.forecast'",
    ] {
        assert!(message.contains(problem), "{problem:?} is not in {message:?}");
    }
    // Too many arguments, a parameter given twice and a bad body, beside a bad value.
    let wrong = with_body(
        call(
            "api.create_user",
            vec![s("acme"), bare("true"), num("3")],
            vec![("org", s("acme")), ("email", s("a@b.c"))],
        ),
        r#"{"name": "Ada"}"#,
    );
    let message = err(&wrong);
    for problem in [
        "Too many arguments for function 'api.create_user'",
        "Parameter 'org' of function 'api.create_user' is given more than once",
        "'email' is a field of the request body of function 'api.create_user'",
        "Missing required body field for function 'api.create_user': email",
    ] {
        assert!(
            message.contains(problem),
            "{problem:?} is not in {message:?}"
        );
    }
}
