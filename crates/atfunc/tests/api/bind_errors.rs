use atfunc::bind::BindErrorKind;
use atfunc::parse::Value;
use atfunc::{bind, load_interfaces_str, BindError, Call, Catalog};

fn catalog() -> Catalog {
    Catalog::new(
        load_interfaces_str(
            r#"[{"name": "weather.forecast", "parameters": {"type": "object",
                "properties": {"location": {"type": "string"},
                               "when": {"type": "string"},
                               "days": {"type": "integer"}},
                "required": ["location", "when"]}}]"#,
        )
        .expect("tools"),
    )
}

/// A matcher on `MissingParameters` missed a call that also had a bad value: the two came
/// as one `Several`. The predicates look through it.
#[test]
fn a_missing_parameter_is_found_beside_other_problems() {
    let alone = Call::new("weather.forecast");
    let error = bind(&alone, &catalog()).expect_err("refused");
    assert_eq!(error.kind(), BindErrorKind::MissingParameters);
    assert!(error.is_missing_parameter());
    assert_eq!(
        error.missing_parameters().collect::<Vec<_>>(),
        ["location", "when"]
    );

    let with_bad_value = Call::new("weather.forecast")
        .with_named(vec![("days".into(), Value::String("soon".into()))]);
    let error = bind(&with_bad_value, &catalog()).expect_err("refused");
    assert!(matches!(error, BindError::Several { .. }));
    assert_eq!(error.kind(), BindErrorKind::Several);
    assert!(error.is_missing_parameter());
    assert!(error.has(BindErrorKind::InvalidValue));
    assert!(!error.has(BindErrorKind::UnknownParameter));
    assert_eq!(
        error.kinds().collect::<Vec<_>>(),
        [
            BindErrorKind::MissingParameters,
            BindErrorKind::InvalidValue
        ]
    );
    assert_eq!(
        error.missing_parameters().collect::<Vec<_>>(),
        ["location", "when"]
    );
}

#[test]
fn problems_never_nest() {
    let call = Call::new("weather.forecast").with_named(vec![
        ("location".into(), Value::String("Oslo".into())),
        ("days".into(), Value::Number("x".into())),
    ]);
    let error = bind(&call, &catalog()).expect_err("refused");
    assert!(error.is_missing_parameter());
    assert!(!error
        .problems()
        .iter()
        .any(|p| p.kind() == BindErrorKind::Several));
}
