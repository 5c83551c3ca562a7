//! The crate as a Rust user meets it: what docs.rs shows, the features a build pulls in,
//! and the small conveniences a tool written in Rust leans on.

use std::path::Path;

fn manifest() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
        .expect("Cargo.toml is readable")
}

/// The `[features]` line that defines `name`.
fn feature_line(manifest: &str, name: &str) -> String {
    let prefix = format!("{name} = [");
    manifest
        .lines()
        .find(|line| line.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no feature '{name}' in Cargo.toml"))
        .to_owned()
}

#[test]
fn docs_rs_documents_every_feature_with_badges() {
    let manifest = manifest();
    let metadata = manifest
        .split("[package.metadata.docs.rs]")
        .nth(1)
        .expect("a [package.metadata.docs.rs] table");
    let table = metadata.split("\n[").next().unwrap_or_default();
    assert!(table.contains("all-features = true"), "{table}");
    assert!(
        table.contains(r#"rustdoc-args = ["--cfg", "docsrs"]"#),
        "{table}"
    );
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .expect("src/lib.rs is readable");
    assert!(
        lib.contains("#![cfg_attr(docsrs, feature(doc_cfg))]"),
        "the crate turns on feature badges under docsrs"
    );
}

#[test]
fn running_calls_does_not_pull_in_the_file_box() {
    let manifest = manifest();
    assert!(!feature_line(&manifest, "execute").contains("cap-std"));
    assert!(feature_line(&manifest, "file").contains("dep:cap-std"));
    assert!(feature_line(&manifest, "cli").contains("\"file\""));
    // The parser alone stays small: no optional dependency is on by default.
    assert_eq!(feature_line(&manifest, "default"), "default = []");
}

#[cfg(feature = "execute")]
mod errors {
    use atfunc::execute::{FnBox, Registry, ToolError};
    use atfunc::{BindError, Interface, Param, ParamType};
    use serde_json::{json, Value};

    fn parse_number(text: &str) -> Result<Value, ToolError> {
        let value: Value = serde_json::from_str(text)?;
        if !value.is_number() {
            return Err("not a number".into());
        }
        if value.as_f64() == Some(0.0) {
            return Err(format!("{value} is zero").into());
        }
        Ok(value)
    }

    #[test]
    fn tool_errors_convert_from_strings_and_json_errors() {
        assert_eq!(
            parse_number("\"x\""),
            Err(ToolError::Failed("not a number".into()))
        );
        assert_eq!(
            parse_number("0"),
            Err(ToolError::Failed("0 is zero".into()))
        );
        let broken = parse_number("{").unwrap_err();
        assert!(broken.to_string().contains("EOF while parsing"), "{broken}");
        assert_eq!(parse_number("2"), Ok(json!(2)));
    }

    #[tokio::test]
    async fn a_streamed_outcome_keeps_the_structured_error() {
        let registry = Registry::new();
        registry
            .register(
                FnBox::new("math").function(
                    Interface::function(Some("math"), "half")
                        .param(Param::new("x", ParamType::Number).required()),
                    |_, _| Err("odd".into()),
                ),
            )
            .unwrap();
        let mut stream = registry.stream();
        let mut outcomes = stream
            .feed_str("@math.half() @math.half(3) @math.half(")
            .await;
        outcomes.extend(stream.finish().await.outcomes);
        let direct = registry.call("math.half", Value::Null).await.unwrap_err();
        // The same error, structured, whether the call came in an answer or directly.
        assert!(
            matches!(
                &outcomes[0].result,
                Err(ToolError::Bind(BindError::MissingParameters { .. }))
            ),
            "{:?}",
            outcomes[0].result
        );
        assert_eq!(outcomes[0].result.as_ref().unwrap_err(), &direct);
        assert_eq!(outcomes[1].result, Err(ToolError::Failed("odd".into())));
        assert!(
            matches!(outcomes[2].result, Err(ToolError::Unreadable(_))),
            "{:?}",
            outcomes[2].result
        );
        assert!(outcomes[2].block.contains("This call could not be read: "));
    }
}

#[cfg(feature = "execute")]
mod arguments {
    use atfunc::execute::{FnBox, Registry};
    use atfunc::{Interface, Param, ParamType};
    use serde_json::json;

    #[tokio::test]
    async fn closures_read_arguments_as_rust_types_and_a_missing_optional_one_is_none() {
        let registry = Registry::new();
        let scale = Interface::function(Some("math"), "scale")
            .param(Param::new("x", ParamType::Number).required())
            .param(Param::new("factor", ParamType::Number))
            .param(Param::new("label", ParamType::String));
        registry
            .register(FnBox::new("math").function(scale, |args, _ctx| {
                let x: f64 = args.get("x")?;
                let factor = args.opt::<f64>("factor")?.unwrap_or(2.0);
                // A Rust type the interface does not promise: an error for the model.
                let _small: Option<u8> = args.opt("label")?;
                Ok(json!(x * factor))
            }))
            .unwrap();
        let report = registry
            .execute_response("@math.scale(21) @math.scale(1, 3) @math.scale(1, label=\"big\")")
            .await;
        assert_eq!(report.calls[0].result, Ok(json!(42.0)));
        assert_eq!(report.calls[1].result, Ok(json!(3.0)));
        assert_eq!(
            report.calls[2].result.as_ref().unwrap_err().to_string(),
            "Invalid value for parameter 'label' of function 'math.scale': expected u8, got \"big\""
        );
    }
}
