//! The registry: registration, lookup, execution of answers (whole and streamed), control
//! functions, statistics, errors for the model, and snapshots of the formatted output.

use atfunc::format::DEFAULT_TRUNCATE_LENGTH;
use atfunc::render::SEPARATOR;
use atfunc::{Interface, Param, ParamType};
use atfunc_tools::{
    CallContext, CallOptions, EmptyBox, FnBox, MultiBox, RegisterError, Registry, RegistryPrompt,
    ToolBox, ToolBoxExt, ToolError, ToolOutput,
};
use serde_json::{json, Map, Value};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

fn weather_interface() -> Interface {
    Interface::new("get_temp")
        .in_domain("weather")
        .describe("Get the current temperature of a city")
        .param(
            Param::new("location", ParamType::String)
                .required()
                .describe("City name"),
        )
        .param(Param::new("unit", ParamType::String).describe("c or f"))
}

fn weather() -> FnBox {
    FnBox::new("weather").function(weather_interface(), |args, _ctx| {
        let location: String = args.get("location")?;
        let unit = args.opt::<String>("unit")?.unwrap_or_else(|| "c".into());
        Ok(json!({"location": location, "temp": 21, "unit": unit}))
    })
}

fn math() -> FnBox {
    FnBox::new("math").function(
        Interface::new("calculate_power")
            .in_domain("math")
            .describe("Calculate base raised to the power of exponent")
            .param(
                Param::new("base", ParamType::Number)
                    .required()
                    .describe("The base"),
            )
            .param(
                Param::new("exponent", ParamType::Number)
                    .required()
                    .describe("The exponent"),
            ),
        |args, _ctx| {
            let base: f64 = args.get("base")?;
            let exponent: f64 = args.get("exponent")?;
            Ok(json!(base.powf(exponent)))
        },
    )
}

fn registry() -> Registry {
    let registry = Registry::new();
    registry.register(weather()).unwrap();
    registry.register(math()).unwrap();
    registry
}

fn plain(name: &str) -> Interface {
    Interface::new(name).in_domain("t").describe("A test tool")
}

#[tokio::test]
async fn reference_weather_example() {
    let report = registry()
        .execute_response("Let me look that up.\n@weather.get_temp(\"Paris\")\nOne moment.")
        .await;
    assert_eq!(report.call_count, 1);
    insta::assert_snapshot!(report.output, @r#"
    Function call: weather.get_temp("Paris")
    Returned: {"location":"Paris","temp":21,"unit":"c"}
    "#);
}

#[tokio::test]
async fn reference_math_and_weather_in_one_answer() {
    let answer = "First @math.calculate_power(2, 10) then @weather.get_temp(\"Oslo\", unit=\"f\").";
    let report = registry().execute_response(answer).await;
    assert_eq!(report.call_count, 2);
    insta::assert_snapshot!("math_and_weather", report.output);
}

#[tokio::test]
async fn missing_required_parameter_has_the_reference_message() {
    let report = registry().execute_response("@weather.get_temp()").await;
    assert_eq!(report.call_count, 1);
    assert_eq!(
        report.output,
        "Function call: weather.get_temp()\nReturned: Error: Missing required parameter for function 'weather.get_temp': location\n"
    );
    insta::assert_snapshot!("missing_parameter", report.output);
    let direct = registry().call("weather.get_temp", Value::Null).await;
    assert_eq!(
        direct.unwrap_err().to_string(),
        "Missing required parameter for function 'weather.get_temp': location"
    );
}

#[tokio::test]
async fn control_functions_reference_example() {
    let registry = registry();
    let answer = "\n@tools.get_toolboxes()\n@tools.get_functions(\"weather\")\n@tools.get_function_interface(\"WEATHER.get_temp\")\n";
    let report = registry.execute_response(answer).await;
    assert_eq!(report.call_count, 3);
    insta::assert_snapshot!("control_functions", report.output);
}

#[tokio::test]
async fn set_truncate_length_applies_to_later_results_of_its_own_conversation_only() {
    let registry = Registry::new();
    registry
        .register(FnBox::new("t").function(plain("long"), |_, _| Ok(json!("x".repeat(50)))))
        .unwrap();
    let report = registry
        .execute_response("@tools.set_truncate_length(10) @t.long()")
        .await;
    insta::assert_snapshot!(report.output, @"
    Function call: tools.set_truncate_length(10)
    Returned: Function results are now cut at 10 characters

    Function call: t.long()
    Returned: xxxxxxxxxx… [truncated 40 more characters]
    ");
    assert_eq!(report.settings.truncate_length, 10);
    // The registry, shared by every conversation, is not changed by a model.
    assert_eq!(registry.truncate_length(), DEFAULT_TRUNCATE_LENGTH);
    let unrelated = registry.execute_response("@t.long()").await;
    assert_eq!(unrelated.calls[0].result, Ok(json!("x".repeat(50))));
    assert!(
        !unrelated.output.contains("truncated"),
        "{}",
        unrelated.output
    );

    // Carried on explicitly, the setting lasts into the same conversation's next answer.
    let mut next = registry.stream().with_settings(&report.settings);
    assert_eq!(next.settings().truncate_length, 10);
    let outcomes = next.feed_str("@t.long()").await;
    assert!(
        outcomes[0].block.contains("truncated 40 more"),
        "{}",
        outcomes[0].block
    );

    let refused = registry
        .execute_response("@tools.set_truncate_length(0)")
        .await;
    assert!(refused.calls[0].is_error(), "{}", refused.output);
    // Outside an answer there is no conversation to change.
    let direct = registry
        .call("tools.set_truncate_length", json!({"length": 5}))
        .await
        .unwrap_err();
    assert!(
        direct.to_string().contains("settings of a model's answer"),
        "{direct}"
    );
    assert_eq!(registry.truncate_length(), DEFAULT_TRUNCATE_LENGTH);
}

#[tokio::test]
async fn the_prompt_lists_control_functions_only_when_asked() {
    let registry = registry();
    let plain = registry.prompt(&CallContext::new(), &RegistryPrompt::default());
    assert!(!plain.contains("@tools."), "{plain}");
    assert!(plain.contains("@weather.get_temp("), "{plain}");
    let with_control = registry.prompt(
        &CallContext::new(),
        &RegistryPrompt::default().with_control_functions(),
    );
    assert!(
        with_control.contains("@tools.set_truncate_length("),
        "{with_control}"
    );
    assert!(!with_control.contains(SEPARATOR), "{with_control}");
    // Each choice reads as what it does at the call site; they combine.
    let both = registry.prompt(
        &CallContext::new(),
        &RegistryPrompt::default()
            .with_separators()
            .with_control_functions(),
    );
    assert!(both.contains(&format!("{SEPARATOR}\n@tools.")), "{both}");
    assert!(!registry
        .prompt(
            &CallContext::new(),
            &RegistryPrompt::default().with_separators()
        )
        .contains("@tools."));
    // Listed or not, they are answered while registered.
    let report = registry.execute_response("@tools.get_toolboxes()").await;
    assert_eq!(
        report.calls[0].result,
        Ok(json!(["weather", "math", "tools"]))
    );
}

/// A user who registers four tools offers their model four functions: an unknown
/// function's error names neither the control functions nor a count that holds them,
/// though they stay callable; the registry setting shows them again.
#[tokio::test]
async fn unknown_function_errors_name_only_the_users_tools() {
    let registry = Registry::new();
    let mut tools = FnBox::new("t");
    for name in ["a", "b", "c", "d"] {
        tools = tools.function(plain(name), |_, _| Ok(json!("ok")));
    }
    registry.register(tools).unwrap();
    let refused = |text: &str| {
        let registry = &registry;
        let text = text.to_owned();
        async move {
            let report = registry.execute_response(&text).await;
            match &report.calls[0].result {
                Err(error) => error.to_string(),
                Ok(value) => panic!("{text}: ran, giving {value}"),
            }
        }
    };
    assert_eq!(
        refused("@t.e()").await,
        "Unknown function 't.e': available functions are 't.a', 't.b', 't.c', 't.d'"
    );
    // Close to a control function's name, yet no pointer to it.
    let near = refused("@get_function()").await;
    assert!(!near.contains("tools."), "{near}");
    let plain_prompt = registry.prompt(&CallContext::new(), &RegistryPrompt::default());
    assert!(!plain_prompt.contains("@tools."), "{plain_prompt}");
    let report = registry.execute_response("@tools.get_toolboxes()").await;
    assert_eq!(report.calls[0].result, Ok(json!(["t", "tools"])));

    registry.set_control_functions_listed(true);
    assert!(refused("@t.e()")
        .await
        .contains("'tools.get_toolboxes' and 3 more"));
    assert_eq!(
        refused("@get_function()").await,
        "Unknown function 'get_function': did you mean 'tools.get_functions'?"
    );
    let listed = registry.prompt(&CallContext::new(), &RegistryPrompt::default());
    assert!(listed.contains("@tools.get_functions("), "{listed}");
}

#[tokio::test]
async fn control_functions_unregister_and_register_again() {
    let registry = registry();
    assert!(registry.unregister_control_function("tools.get_toolboxes"));
    assert!(!registry.unregister_control_function("get_toolboxes"));
    let report = registry.execute_response("@tools.get_toolboxes()").await;
    assert!(report.calls[0].is_error());
    assert!(report
        .output
        .contains("Unknown function 'tools.get_toolboxes'"));
    assert_eq!(
        registry
            .toolbox_functions("tools", &CallContext::new())
            .unwrap(),
        [
            "tools.get_functions",
            "tools.get_function_interface",
            "tools.set_truncate_length"
        ]
    );

    registry.register_control_function("get_toolboxes").unwrap();
    let report = registry.execute_response("@tools.get_toolboxes()").await;
    assert_eq!(
        report.calls[0].result,
        Ok(json!(["weather", "math", "tools"]))
    );
    assert_eq!(
        registry
            .toolbox_functions("tools", &CallContext::new())
            .unwrap()[0],
        "tools.get_toolboxes"
    );

    assert!(matches!(
        registry.register_control_function("nope"),
        Err(RegisterError::UnknownControlFunction { .. })
    ));

    registry.unregister_control_functions();
    assert_eq!(registry.toolboxes(), ["weather", "math"]);
    assert_eq!(
        registry.toolbox_functions("tools", &CallContext::new()),
        None
    );
    // With every control function gone, the name is free for a box of one's own.
    registry.register(EmptyBox::new("tools")).unwrap();
    assert_eq!(
        registry.register_control_functions(),
        Err(RegisterError::NameTaken {
            name: "tools".into()
        })
    );
    registry.unregister("tools").unwrap();
    registry.register_control_functions().unwrap();
    assert_eq!(
        registry
            .toolbox_functions("tools", &CallContext::new())
            .unwrap()
            .len(),
        4
    );
}

#[tokio::test]
async fn registration_is_validated_and_names_are_unique() {
    let registry = registry();
    let wrong = FnBox::new("weather2").function(weather_interface(), |_, _| Ok(Value::Null));
    let error = registry.register(wrong).unwrap_err();
    assert!(matches!(error, RegisterError::Validation(_)));
    assert!(
        error
            .to_string()
            .contains("Interface domain 'weather' does not match toolbox name 'weather2'"),
        "{error}"
    );
    assert_eq!(
        registry.register(EmptyBox::new("WEATHER")),
        Err(RegisterError::NameTaken {
            name: "WEATHER".into()
        })
    );
    // `tools` is not taken by a box: it is reserved, and the error says so.
    let reserved = registry.register(EmptyBox::new("Tools")).unwrap_err();
    assert_eq!(
        reserved,
        RegisterError::Reserved {
            name: "Tools".into()
        }
    );
    assert!(
        reserved
            .to_string()
            .starts_with("the name 'Tools' is reserved for the control functions"),
        "{reserved}"
    );
    assert_eq!(registry.toolboxes(), ["weather", "math", "tools"]);
}

#[tokio::test]
async fn root_box_find_and_listing() {
    let registry = registry();
    assert!(matches!(
        registry.set_root("nowhere"),
        Err(RegisterError::UnknownToolbox { .. })
    ));
    registry.set_root("Weather").unwrap();
    assert_eq!(registry.root().as_deref(), Some("weather"));

    let found = registry.find("GET_TEMP").unwrap();
    assert_eq!(found.toolbox, "weather");
    assert_eq!(found.interface.qualified_name(), "weather.get_temp");
    assert_eq!(
        registry.find("tools.get_functions").unwrap().toolbox,
        "tools"
    );
    assert!(registry.find("math.nope").is_none());

    let report = registry
        .execute_response("@get_temp(Paris) @Weather.Get_Temp(\"Rome\")")
        .await;
    assert_eq!(report.call_count, 2);
    assert!(report.calls.iter().all(|c| c.name == "weather.get_temp"));
    assert!(
        report.calls.iter().all(|c| !c.is_error()),
        "{}",
        report.output
    );

    assert_eq!(
        registry.functions(&CallContext::new()),
        [
            "weather.get_temp",
            "math.calculate_power",
            "tools.get_toolboxes",
            "tools.get_functions",
            "tools.get_function_interface",
            "tools.set_truncate_length"
        ]
    );
    assert_eq!(
        registry
            .toolbox_functions("MATH", &CallContext::new())
            .unwrap(),
        ["math.calculate_power"]
    );
    assert_eq!(
        registry.toolbox_functions("nope", &CallContext::new()),
        None
    );

    let prompt = registry.prompt(&CallContext::new(), &RegistryPrompt::default());
    assert!(
        prompt.contains("@get_temp( <*location>, <unit> )"),
        "{prompt}"
    );
    assert!(prompt.contains("@math.calculate_power( <*base{number}>, <*exponent{number}> )"));

    assert!(registry.unregister("weather").is_some());
    assert_eq!(registry.root(), None);
}

#[tokio::test]
async fn unknown_function_suggests_the_closest_and_still_gets_a_block() {
    let registry = registry();
    let report = registry
        .execute_response("@wether.get_temp(\"Paris\") @weather.get_temp(\"Paris\")")
        .await;
    assert_eq!(report.call_count, 2);
    insta::assert_snapshot!(report.output, @r#"
    Function call: wether.get_temp("Paris")
    Returned: Error: Unknown function 'wether.get_temp': did you mean 'weather.get_temp'?

    Function call: weather.get_temp("Paris")
    Returned: {"location":"Paris","temp":21,"unit":"c"}
    "#);
    assert_eq!(report.calls[0].name, "wether.get_temp");
    assert_eq!(report.calls[0].args, None);
}

/// A box's own unknown-function error suggests by the measure binding uses: a near name
/// is named, a mere prefix of one is not (one measure for every "did you mean").
#[tokio::test]
async fn a_box_suggests_names_as_binding_does() {
    let weather = weather();
    let closest = |function: &'static str| {
        let weather = &weather;
        async move {
            match weather
                .call(function, Map::new(), &CallContext::new())
                .await
            {
                Err(ToolError::UnknownFunction { closest, .. }) => closest,
                other => panic!("{other:?}"),
            }
        }
    };
    assert_eq!(closest("get_tmp").await.as_deref(), Some("get_temp"));
    assert_eq!(closest("GET_TEMPS").await.as_deref(), Some("get_temp"));
    assert_eq!(closest("get").await, None);
}

#[tokio::test]
async fn bind_errors_and_unreadable_calls_get_blocks() {
    let registry = registry();
    let report = registry
        .execute_response("@weather.get_temp(\"Paris\", units=\"c\")\n@math.calculate_power(2, 3, 4)\n@weather.get_temp(\"unterminated")
        .await;
    assert_eq!(report.call_count, 3, "{}", report.output);
    assert!(report.calls.iter().all(|c| c.is_error()));
    assert!(report.calls[0]
        .record
        .result
        .as_ref()
        .unwrap_err()
        .contains("Unknown parameter 'units'"));
    assert!(report.calls[1]
        .record
        .result
        .as_ref()
        .unwrap_err()
        .contains("Too many arguments"));
    assert!(report.calls[2].call.is_none());
    assert!(
        report.calls[2]
            .block
            .starts_with("Function call: weather.get_temp(\"unterminated\nReturned: Error: This call could not be read"),
        "{}",
        report.calls[2].block
    );
    let stats = registry.stats();
    assert_eq!((stats.calls, stats.errors, stats.refused), (3, 3, 3));
}

fn panicky() -> FnBox {
    FnBox::new("t")
        .function(plain("boom"), |_, _| panic!("index out of range"))
        .function(plain("fine"), |_, _| Ok(json!("ok")))
        .async_function(plain("hang"), |_, _| async {
            tokio::time::sleep(Duration::from_secs(3600)).await;
            Ok(json!("too late"))
        })
        .function(plain("fail"), |_, _| {
            Err(ToolError::msg("the service is down; try again later"))
        })
}

#[tokio::test]
async fn a_panicking_tool_gives_an_error_and_the_registry_stays_usable() {
    let registry = Registry::new();
    registry.register(panicky()).unwrap();
    let report = registry
        .execute_response("@t.boom() @t.fine() @t.boom() @t.fine()")
        .await;
    assert_eq!(report.call_count, 4);
    insta::assert_snapshot!(report.output, @"
    Function call: t.boom()
    Returned: Error: Function 't.boom' failed unexpectedly (index out of range); the call had no effect you can rely on

    Function call: t.fine()
    Returned: ok

    Function call: t.boom()
    Returned: Error: Function 't.boom' failed unexpectedly (index out of range); the call had no effect you can rely on

    Function call: t.fine()
    Returned: ok
    ");
    assert_eq!(registry.call("t.fine", Value::Null).await, Ok(json!("ok")));
    assert!(matches!(
        registry.call("t.boom", Value::Null).await,
        Err(ToolError::Panicked { .. })
    ));
    assert_eq!(registry.stats().functions["t.boom"].errors, 3);
}

#[tokio::test(start_paused = true)]
async fn a_hanging_tool_times_out_and_later_calls_still_run() {
    let registry = Registry::new();
    registry.register(panicky()).unwrap();
    registry.set_call_timeout(Some(Duration::from_secs(5)));
    let report = registry
        .execute_response("@t.hang() @t.fine() @t.fail()")
        .await;
    insta::assert_snapshot!(report.output, @"
    Function call: t.hang()
    Returned: Error: Function 't.hang' did not finish within 5s and was stopped; try again with a smaller request, or go on without it

    Function call: t.fine()
    Returned: ok

    Function call: t.fail()
    Returned: Error: the service is down; try again later
    ");
    assert_eq!(registry.call("t.fine", Value::Null).await, Ok(json!("ok")));
}

#[tokio::test(start_paused = true)]
async fn concurrent_calls_are_reported_in_order() {
    let finished = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&finished);
    let tools = FnBox::new("t").async_function(
        plain("wait").param(
            Param::new("secs", ParamType::Integer)
                .required()
                .describe("s"),
        ),
        move |args, _| {
            let log = Arc::clone(&log);
            async move {
                let secs = args.opt::<u64>("secs")?.unwrap_or(0);
                tokio::time::sleep(Duration::from_secs(secs)).await;
                log.lock().unwrap().push(secs);
                Ok(json!(secs))
            }
        },
    );
    let registry = Registry::new();
    registry.register(tools).unwrap();
    let answer = "@t.wait(3) @t.wait(1) @t.wait(2) and done.";

    let sequential = registry.execute_response(answer).await;
    assert_eq!(*finished.lock().unwrap(), [3, 1, 2]);
    finished.lock().unwrap().clear();

    registry.set_concurrency(3);
    let concurrent = registry.execute_response(answer).await;
    // They ran at once (the shortest finished first), yet the blocks keep the answer's order.
    assert_eq!(*finished.lock().unwrap(), [1, 2, 3]);
    assert_eq!(concurrent.output, sequential.output);
    let results: Vec<_> = concurrent.calls.iter().map(|c| c.result.clone()).collect();
    assert_eq!(results, [Ok(json!(3)), Ok(json!(1)), Ok(json!(2))]);
}

#[tokio::test]
async fn statistics_count_boxes_functions_and_errors_and_reset() {
    let registry = registry();
    registry.register(panicky()).unwrap();
    registry
        .execute_response("@weather.get_temp(Paris) @weather.get_temp(Rome) @math.calculate_power(2, 2) @t.fail() @nope() @tools.get_toolboxes()")
        .await;
    registry.call("t.fine", Value::Null).await.unwrap();
    let stats = registry.stats();
    assert_eq!(stats.calls, 7);
    assert_eq!(stats.errors, 2);
    assert_eq!(stats.refused, 1);
    assert_eq!(stats.toolboxes["weather"], 2);
    assert_eq!(stats.toolboxes["math"], 1);
    assert_eq!(stats.toolboxes["t"], 2);
    assert_eq!(stats.toolboxes["tools"], 1);
    assert_eq!(stats.functions["weather.get_temp"].calls, 2);
    assert_eq!(stats.functions["t.fail"].errors, 1);
    assert_eq!(stats.functions["t.fine"].errors, 0);
    registry.reset_stats();
    assert_eq!(registry.stats(), Default::default());
}

#[tokio::test]
async fn a_stream_that_forgets_its_outcomes_gives_each_once_and_counts_them() {
    let registry = registry();
    let answer = "@weather.get_temp(\"Paris\") @nowhere.call() @math.calculate_power(2, 10)";
    let mut stream = registry.stream().forget_outcomes();
    let given = stream.feed_str(answer).await;
    assert_eq!(given.len(), 3);
    assert!(stream.outcomes().is_empty());
    let end = stream.finish().await;
    assert_eq!(end.report.call_count, 3);
    assert!(end.report.calls.is_empty() && end.report.output.is_empty());
    // By default every outcome is kept.
    let kept = registry.execute_response(answer).await;
    assert_eq!(kept.calls.len(), 3);
}

#[tokio::test]
async fn streaming_runs_each_call_as_soon_as_it_is_complete() {
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = Arc::clone(&ran);
    let registry = Registry::new();
    registry
        .register(FnBox::new("t").function(plain("count"), move |_, _| {
            Ok(json!(counter.fetch_add(1, Ordering::SeqCst) + 1))
        }))
        .unwrap();
    let answer = "Start @t.count() middle @t.count()\n\n end @t.count(";
    let mut stream = registry.stream();
    let mut seen = Vec::new();
    for (i, byte) in answer.bytes().enumerate() {
        let outcomes = stream.feed(&[byte]).await;
        let fed = &answer[..=i];
        // A call runs right at its `)`: no function here takes a `with_body` block, so
        // nothing that follows can belong to it.
        let closed = fed.matches("count()").count();
        let ran_now = ran.load(Ordering::SeqCst);
        assert_eq!(ran_now, closed, "{fed:?}");
        seen.extend(outcomes);
    }
    assert_eq!(seen.len(), 2);
    let end = stream.finish().await;
    assert_eq!(end.outcomes.len(), 1);
    assert!(end.outcomes[0].is_error());
    assert_eq!(end.report.call_count, 3);
    assert_eq!(end.report.calls[..2], seen[..]);
    let whole = registry.execute_response(answer).await;
    assert_eq!(whole.call_count, 3);
    assert_eq!(whole.calls[2].block, end.report.calls[2].block);
    assert_eq!(whole.calls[0].result, Ok(json!(3)));
}

/// An answer that loops, as SmolLM2 writes BFCL `parallel` answers: its calls, the same
/// calls again (spelled otherwise), and a copy the token limit cut short.
const LOOPING: &str = "Sure. @weather.get_temp(\"Paris\") @math.calculate_power(2, 10)\n\
    @nowhere.call() @weather.get_temp(\"Paris\", unit=\"f\")\n\
    @WEATHER.Get_Temp(location=\"Paris\") @math.calculate_power(2, 10) @weather.get_temp(\"Pa";

#[tokio::test]
async fn a_stream_ended_at_a_repeated_call_runs_nothing_from_it_on_at_every_chunking() {
    let registry = registry();
    let repeat = LOOPING.find("@WEATHER").unwrap();
    let repeat_end = repeat + LOOPING[repeat..].find(')').unwrap() + 1;
    let mut ends = Vec::new();
    for size in [LOOPING.len(), 1, 3, 7] {
        let mut stream = registry.stream().end_at_repeated_call();
        let mut given = Vec::new();
        let mut fed = 0;
        for piece in LOOPING.as_bytes().chunks(size) {
            given.extend(stream.feed(piece).await);
            fed += piece.len();
            // Known as soon as the repeat is read, before the answer ends.
            assert_eq!(stream.repeated_at().is_some(), fed >= repeat_end, "{fed}");
        }
        let end = stream.finish().await;
        assert!(
            end.outcomes.is_empty(),
            "the cut call after the repeat is not refused"
        );
        let names: Vec<_> = end.report.calls.iter().map(|o| o.name.as_str()).collect();
        // Another unit is another call; an unknown function is refused, not a repeat.
        assert_eq!(
            names,
            [
                "weather.get_temp",
                "math.calculate_power",
                "nowhere.call",
                "weather.get_temp"
            ],
            "chunks of {size}"
        );
        assert_eq!(given, end.report.calls, "chunks of {size}");
        let at = end.repeated_at.expect("a repeat");
        assert_eq!(at.start as usize, repeat);
        ends.push((end.report.output, at));
    }
    assert!(ends.windows(2).all(|w| w[0] == w[1]));

    // Read from a byte stream while calls run: the same.
    let pieces: Vec<Result<&[u8], std::io::Error>> = LOOPING.as_bytes().chunks(5).map(Ok).collect();
    let mut outcomes = registry
        .stream()
        .end_at_repeated_call()
        .run(futures::stream::iter(pieces));
    let mut ran = 0;
    while let Some(outcome) = futures::StreamExt::next(&mut outcomes).await {
        outcome.unwrap();
        ran += 1;
    }
    assert_eq!(ran, 4);
    assert_eq!(outcomes.repeated_at(), Some(ends[0].1));
    assert_eq!(outcomes.report().output, ends[0].0);

    // By default every call runs, as written, and the cut one is refused.
    let all = registry.execute_response(LOOPING).await;
    assert_eq!(all.call_count, 7);
    let end = registry.stream().finish().await;
    assert_eq!(end.repeated_at, None);
}

#[tokio::test]
async fn direct_calls_truncate_per_call() {
    let registry = Registry::new();
    registry
        .register(
            FnBox::new("t")
                .function(plain("text"), |_, _| Ok(json!("é".repeat(12_350))))
                .function(plain("list"), |_, _| Ok(json!(vec!["item"; 100]))),
        )
        .unwrap();
    let text = registry
        .call_with(
            "t.text",
            Value::Null,
            &CallOptions::default().with_truncate_length(Some(5)),
        )
        .await
        .unwrap();
    assert_eq!(text, json!("ééééé… [truncated 12,345 more characters]"));
    let default = registry.call("t.text", Value::Null).await.unwrap();
    assert!(default
        .as_str()
        .unwrap()
        .ends_with("… [truncated 7,350 more characters]"));

    let list = registry
        .call_with(
            "t.list",
            Value::Null,
            &CallOptions::default().with_truncate_length(Some(100)),
        )
        .await
        .unwrap();
    assert_eq!(list["truncated"], json!(true));
    assert!(list.to_string().chars().count() <= 100);
    let whole = registry
        .call_with(
            "t.list",
            json!({}),
            &CallOptions::default().with_truncate_length(Some(10_000)),
        )
        .await
        .unwrap();
    assert_eq!(whole.as_array().unwrap().len(), 100);

    assert!(registry
        .call("t.text", json!([1]))
        .await
        .unwrap_err()
        .to_string()
        .contains("must be an object"));
}

#[tokio::test]
async fn direct_calls_bind_like_text_calls() {
    let registry = registry();
    let result = registry
        .call("Math.Calculate_Power", json!({"base": "2", "exponent": 3}))
        .await;
    assert_eq!(result, Ok(json!(8.0)));
    let unknown = registry.call("math.calc", Value::Null).await.unwrap_err();
    assert!(
        unknown
            .to_string()
            .starts_with("Unknown function 'math.calc'"),
        "{unknown}"
    );
}

#[tokio::test]
async fn output_filters_run_in_order_before_truncation() {
    let registry = Registry::new();
    registry
        .register(
            FnBox::new("feed").function(
                Interface::new("posts")
                    .in_domain("feed")
                    .describe("Posts")
                    .param(Param::new("tag", ParamType::String).describe("Tag")),
                |_, _| Ok(json!({"posts": ["mint", "hello", "mint", "world"]})),
            ),
        )
        .unwrap();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let log = Arc::clone(&calls);
    registry.add_output_filter(move |name, params, result| {
        log.lock().unwrap().push((name.to_owned(), params.clone()));
        let mut parsed: Value = serde_json::from_str(result).ok()?;
        let posts = parsed["posts"].as_array_mut()?;
        let before = posts.len();
        posts.retain(|p| p != "mint");
        parsed["_filtered"] = json!(format!("{} posts hidden", before - posts.len()));
        Some(parsed.to_string())
    });
    registry.add_output_filter(|_, _, result| Some(result.to_uppercase()));
    registry.add_output_filter(|_, _, _| None);
    registry.set_truncate_length(30);
    let report = registry.execute_response("@feed.posts(tag=\"x\")").await;
    assert_eq!(
        report.output,
        "Function call: feed.posts(tag=\"x\")\nReturned: {\"POSTS\":[\"HELLO\",\"WORLD\"],\"_F… [truncated 26 more characters]\n"
    );
    let (name, params) = calls.lock().unwrap()[0].clone();
    assert_eq!(name, "feed.posts");
    assert_eq!(params["tag"], json!("x"));
    assert_eq!(
        report.calls[0].result,
        Ok(json!(
            "{\"POSTS\":[\"HELLO\",\"WORLD\"],\"_FILTERED\":\"2 POSTS HIDDEN\"}"
        ))
    );
    registry.clear_output_filters();
    let plain = registry.execute_response("@feed.posts()").await;
    assert!(plain.output.contains("mint"));
}

#[tokio::test]
async fn report_and_outcome_as_json() {
    let registry = registry();
    registry.set_truncate_length(40);
    let report = registry
        .execute_response("@weather.get_temp(\"Paris\") @weather.get_temp()")
        .await;
    let json = report.to_json();
    assert_eq!(json["call_count"], 2);
    assert_eq!(json["calls"][0]["name"], "weather.get_temp");
    assert_eq!(json["calls"][0]["args"], json!({"location": "Paris"}));
    assert_eq!(json["calls"][0]["result"]["truncated"], true);
    assert!(json["calls"][0]["result"].to_string().chars().count() <= 40);
    assert_eq!(
        json["calls"][1]["args"],
        json!({}).get("x").cloned().unwrap_or(Value::Null)
    );
    assert!(json["calls"][1]["error"]
        .as_str()
        .unwrap()
        .starts_with("Missing required"));
    assert_eq!(json["output"], report.output);
}

#[tokio::test]
async fn the_json_form_keeps_errors_whole_as_the_block_does() {
    let registry = registry();
    registry.set_truncate_length(20);
    let report = registry.execute_response("@weather.get_temp()").await;
    let message = "Missing required parameter for function 'weather.get_temp': location";
    assert!(report.output.contains(message), "{}", report.output);
    assert_eq!(report.to_json()["calls"][0]["error"], message);
}

struct Closing {
    name: &'static str,
    closed: Arc<AtomicUsize>,
}

#[async_trait::async_trait]
impl ToolBox for Closing {
    fn name(&self) -> &str {
        self.name
    }

    fn interfaces(&self, _ctx: &CallContext) -> Vec<Interface> {
        vec![Interface::new("get")
            .in_domain(self.name)
            .describe("Which box answered")]
    }

    async fn call(
        &self,
        function: &str,
        _args: Map<String, Value>,
        _ctx: &CallContext,
    ) -> Result<Value, ToolError> {
        Ok(json!(format!("{}.{function}", self.name)))
    }

    async fn close(&self) -> Result<(), ToolError> {
        self.closed.fetch_add(1, Ordering::SeqCst);
        Ok(())
    }
}

#[tokio::test]
async fn multi_box_flat_names_route_back_and_close_closes_children() {
    let closed = Arc::new(AtomicUsize::new(0));
    let child = |name| Closing {
        name,
        closed: Arc::clone(&closed),
    };
    let multi = MultiBox::new("all")
        .with(child("a"))
        .with(child("a_b"))
        .with(EmptyBox::new("empty"))
        .flat_names();
    let names: Vec<String> = multi
        .interfaces(&CallContext::new())
        .iter()
        .map(|i| i.qualified_name())
        .collect();
    assert_eq!(names, ["all.a_get", "all.a_b_get"]);

    let registry = Registry::new();
    registry.register(multi).unwrap();
    registry.set_root("all").unwrap();
    let report = registry
        .execute_response("@a_get() @A_B_GET() @all.a_get()")
        .await;
    let results: Vec<_> = report.calls.iter().map(|c| c.result.clone()).collect();
    assert_eq!(
        results,
        [Ok(json!("a.get")), Ok(json!("a_b.get")), Ok(json!("a.get"))]
    );
    registry.close().await.unwrap();
    assert_eq!(closed.load(Ordering::SeqCst), 2);
}

#[tokio::test]
async fn multi_box_without_flat_names_merges_and_rejects_clashes() {
    let closed = Arc::new(AtomicUsize::new(0));
    let merged = MultiBox::new("all").with(weather()).with(math());
    let registry = Registry::new();
    registry.register(merged).unwrap();
    let report = registry
        .execute_response("@all.get_temp(Paris) @all.calculate_power(3, 2)")
        .await;
    assert_eq!(report.calls[1].result, Ok(json!(9.0)), "{}", report.output);

    let clash = MultiBox::new("twice")
        .with(Closing {
            name: "x",
            closed: Arc::clone(&closed),
        })
        .with(Closing {
            name: "y",
            closed: Arc::clone(&closed),
        });
    assert!(matches!(
        registry.register(clash),
        Err(RegisterError::Validation(_))
    ));
    let direct = MultiBox::new("m").with(weather());
    let error = direct
        .call("get_tmp", Map::new(), &CallContext::new())
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "Unknown function 'get_tmp': did you mean 'get_temp'?"
    );
}

#[tokio::test]
async fn closure_boxes_sync_async_and_declared() {
    let tools = FnBox::new("t")
        .async_function(plain("id"), |_, ctx| async move { Ok(json!(ctx.call_id)) })
        .declare(plain("later"));
    let registry = Registry::new();
    registry.register(tools).unwrap();
    let report = registry
        .execute_response("@t.id() @t.later() @t.id()")
        .await;
    insta::assert_snapshot!(report.output, @"
    Function call: t.id()
    Returned: call_1

    Function call: t.later()
    Returned: Error: function 't.later' has no implementation

    Function call: t.id()
    Returned: call_3
    ");
    let empty = EmptyBox::new("nothing");
    assert!(empty.interfaces(&CallContext::new()).is_empty());
    assert!(matches!(
        empty.call("x", Map::new(), &CallContext::new()).await,
        Err(ToolError::UnknownFunction { .. })
    ));
}

/// A registry with `api.create_user(username)`, an api-wrapper whose body holds `age`;
/// it answers with the user and the body it got.
fn create_user_api() -> Registry {
    let mut create = Interface::new("create_user")
        .in_domain("api")
        .describe("Create a user");
    create.kind = atfunc::interface::Kind::ApiWrapper;
    let mut username = Param::new("username", ParamType::String)
        .required()
        .describe("Name");
    username.location = atfunc::interface::Location::Path;
    create.params.push(username);
    let mut age = Param::new("age", ParamType::Integer).describe("Age");
    age.location = atfunc::interface::Location::Body;
    create.request_body.push(age);
    let registry = Registry::new();
    registry
        .register(FnBox::new("api").function(create, |args, ctx| {
            let body = ctx.body.as_ref().and_then(|b| b.json.clone());
            Ok(json!({"user": args.value("username"), "body": body}))
        }))
        .unwrap();
    registry
}

#[tokio::test]
async fn api_wrapper_body_reaches_the_tool_through_the_context() {
    let report = create_user_api()
        .execute_response("@api.create_user(\"john\") with_body [[{\"age\": 30}]]")
        .await;
    assert_eq!(
        report.calls[0].result,
        Ok(json!({"user": "john", "body": {"age": 30}})),
        "{}",
        report.output
    );
}

#[tokio::test]
async fn another_body_makes_another_call() {
    let answer = "@api.create_user(ann) with_body [[{\"age\": 30}]] \
                  @api.create_user(ann) with_body [[{\"age\": 31}]] \
                  @api.create_user(\"ann\") with_body [[{\"age\": 30}]] @api.create_user(";
    let mut stream = create_user_api().stream().end_at_repeated_call();
    stream.feed_str(answer).await;
    let end = stream.finish().await;
    assert_eq!(end.report.call_count, 2, "{}", end.report.output);
    let repeat = answer.find("@api.create_user(\"ann\")");
    assert_eq!(end.repeated_at.map(|s| s.start as usize), repeat);
}

/// A box of tools that show the user something: one element per call, named by its
/// argument, and a value for the model.
fn showing() -> FnBox {
    let text = || {
        Param::new("text", ParamType::String)
            .required()
            .describe("t")
    };
    FnBox::new("t")
        .function(plain("card").param(text()), |args, ctx| {
            let text: String = args.get("text")?;
            ctx.add_element(json!({"type": "card", "title": text}));
            Ok(json!("card shown"))
        })
        .async_function(plain("later").param(text()), |args, ctx| async move {
            let text: String = args.get("text")?;
            // Calls of one answer run at once; each keeps its own elements.
            tokio::time::sleep(Duration::from_millis(if text == "a" { 30 } else { 1 })).await;
            ctx.add_element(ToolOutput::text_element(format!("{text} 1")));
            ctx.add_element(ToolOutput::text_element(format!("{text} 2")));
            Ok(json!(text))
        })
        .function(plain("broken"), |_args, ctx| {
            ctx.add_element(json!({"type": "card", "title": "partial"}));
            Err(ToolError::msg("it broke halfway"))
        })
}

#[tokio::test]
async fn fn_box_elements_go_to_the_outcome_and_never_into_the_blocks() {
    let registry = Registry::new();
    // Wrappers pass the call's context on, and with it the elements.
    registry
        .register(showing().with_timeout(Duration::from_secs(5)))
        .unwrap();
    registry.register(weather()).unwrap();
    registry.set_concurrency(3);
    let report = registry
        .execute_response(
            r#"@t.card("Oslo") @t.later("a") @t.later("b") @weather.get_temp("Rome") @t.broken() @t.card()"#,
        )
        .await;
    let elements: Vec<&[Value]> = report.calls.iter().map(|c| c.elements.as_slice()).collect();
    assert_eq!(elements[0], [json!({"type": "card", "title": "Oslo"})]);
    assert_eq!(
        elements[1],
        [
            json!({"type": "text", "text": "a 1"}),
            json!({"type": "text", "text": "a 2"})
        ]
    );
    assert_eq!(elements[2][0], json!({"type": "text", "text": "b 1"}));
    assert!(elements[3].is_empty());
    // What a failing call showed before it failed is still the client's.
    assert_eq!(elements[4], [json!({"type": "card", "title": "partial"})]);
    assert!(report.calls[4].is_error());
    // A call that does not bind never ran: nothing shown.
    assert!(elements[5].is_empty() && report.calls[5].is_error());

    assert!(!report.output.contains("title"), "{}", report.output);
    assert!(report.output.contains("Returned: card shown"));
    let json = report.to_json();
    assert_eq!(
        json["calls"][0]["elements"],
        json!([{"type": "card", "title": "Oslo"}])
    );
    assert!(json["calls"][3].get("elements").is_none());
}

#[tokio::test]
async fn elements_reach_a_stream_and_a_box_called_directly() {
    let registry = Registry::new();
    registry.register(showing()).unwrap();
    let mut stream = registry.stream();
    let first = stream.feed_str("One @t.card(\"x\") and ").await;
    assert_eq!(first[0].elements, [json!({"type": "card", "title": "x"})]);
    let end = stream.finish().await;
    assert_eq!(end.report.calls[0].elements, first[0].elements);

    // Called without a registry, a box's elements reach a context that collects them.
    let ctx = CallContext::new().collecting_elements();
    let mut args = Map::new();
    args.insert("text".into(), json!("y"));
    let value = showing().call("card", args, &ctx).await;
    assert_eq!(value, Ok(json!("card shown")));
    assert_eq!(ctx.take_elements(), [json!({"type": "card", "title": "y"})]);

    // A direct call hands its elements to the options' context when that collects them.
    let options = CallOptions::default().with_ctx(CallContext::new().collecting_elements());
    let value = registry
        .call_with("t.card", json!({"text": "z"}), &options)
        .await;
    assert_eq!(value, Ok(json!("card shown")));
    assert_eq!(
        options.ctx.take_elements(),
        [json!({"type": "card", "title": "z"})]
    );
    assert_eq!(registry.call("t.card", json!({"text": "z"})).await, value);
}

/// A closure of a `FnBox` can use `?` on an `std::io::Error`; the model reads its message
/// and the caller finds the error itself with `downcast_ref`.
#[tokio::test]
async fn a_tools_own_error_is_kept_whole() {
    let files =
        FnBox::new("disk").function(Interface::new("read_missing").in_domain("disk"), |_, _| {
            let text = std::fs::read_to_string("/no/such/dir/atfunc-test.txt")?;
            Ok(json!(text))
        });
    let error = files
        .call("read_missing", Map::new(), &CallContext::new())
        .await
        .unwrap_err();
    let io = error.downcast_ref::<std::io::Error>().expect("an io error");
    assert_eq!(io.kind(), std::io::ErrorKind::NotFound);
    assert_eq!(error.to_string(), io.to_string());
    // Any error type that boxes into one goes in by `from_error`, and clones compare equal.
    let parsed = "x"
        .parse::<i32>()
        .map_err(ToolError::from_error)
        .unwrap_err();
    assert!(parsed.downcast_ref::<std::num::ParseIntError>().is_some());
    assert!(parsed.downcast_ref::<std::io::Error>().is_none());
    assert_eq!(parsed.clone(), parsed);
}

/// A report that walks an error's chain (anyhow's `{:#}` and `{:?}`) names each message
/// of a tool's error once: the error's `Display` is its own message, its causes are its
/// `source()` chain, and only the model's text joins them.
#[tokio::test]
async fn a_tools_error_chain_is_printed_once() {
    let missing = std::io::Error::new(std::io::ErrorKind::NotFound, "no such file");
    let inner = anyhow::Error::new(missing)
        .context("reading settings.toml")
        .context("loading the profile");
    let error = ToolError::from_error(inner);
    assert_eq!(error.to_string(), "loading the profile");
    assert_eq!(
        error.model_message(),
        "loading the profile: reading settings.toml: no such file"
    );
    let report = format!("{:#}", anyhow::Error::new(error.clone()));
    assert_eq!(
        report,
        "loading the profile: reading settings.toml: no such file"
    );
    assert!(error.downcast_ref::<std::io::Error>().is_some());
    // The same for an error made while a box was put together.
    let built = atfunc_tools::BuildError::new(std::io::Error::other("no config"));
    assert_eq!(format!("{:#}", anyhow::Error::new(built)), "no config");
}

/// A call with problems of several kinds gets one block listing them all, the same
/// whether the answer arrives whole or in 1-byte, 3-byte or uneven chunks.
#[tokio::test]
async fn every_bind_problem_reaches_the_model_at_every_chunking() {
    const ANSWER: &str = r#"Trying: @math.calculate_power(2, 3, 4, base=2, exp=3) then @weather.get_temp(unit="c", town="Oslo")."#;
    let whole = registry().execute_response(ANSWER).await;
    assert_eq!(
        whole.calls[0].result.as_ref().err().map(ToString::to_string),
        Some(
            "The call of function 'math.calculate_power' has 3 problems:\n\
             - Too many arguments for function 'math.calculate_power': it takes 2 (base, exponent), got 3\n\
             - Parameter 'base' of function 'math.calculate_power' is given more than once: give it once, by position or by name\n\
             - Unknown parameter 'exp' for function 'math.calculate_power': valid parameters are base, exponent"
                .to_owned()
        )
    );
    assert!(whole.calls[1]
        .block
        .contains("has 2 problems:\n  - Unknown parameter 'town'"));
    assert!(whole.calls[1]
        .block
        .contains("\n  - Missing required parameter for function 'weather.get_temp': location"));
    // Uneven pieces from a fixed seed: 1 to 7 bytes each.
    let mut seed = 7u32;
    let mut uneven = Vec::new();
    let mut rest = ANSWER.as_bytes();
    while !rest.is_empty() {
        seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12_345);
        let take = (1 + (seed >> 16) as usize % 7).min(rest.len());
        let (piece, tail) = rest.split_at(take);
        uneven.push(piece);
        rest = tail;
    }
    let chunkings: Vec<Vec<&[u8]>> = vec![
        ANSWER.as_bytes().chunks(1).collect(),
        ANSWER.as_bytes().chunks(3).collect(),
        uneven,
    ];
    for pieces in chunkings {
        let registry = registry();
        let mut stream = registry.stream();
        for piece in &pieces {
            stream.feed(piece).await;
        }
        let report = stream.finish().await.report;
        assert_eq!(report.output, whole.output, "{} pieces", pieces.len());
    }
}
