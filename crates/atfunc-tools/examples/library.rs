//! atfunc as a library: tools written in Rust, a registry, and a model's answer read from a
//! byte stream while its calls run. This file is the README's "Using the library" section.
//!
//! Run with `cargo run -p atfunc-tools --example library --features typed`.

use atfunc::{json, Interface, Param, ParamType};
use atfunc_tools::typed::TypedBox;
use atfunc_tools::{schemars, CallContext, FnBox, OutcomeState, Registry, RegistryPrompt};
use futures::StreamExt;
use std::time::Duration;

/// Convert a temperature from Celsius to Fahrenheit.
#[derive(serde::Deserialize, schemars::JsonSchema)]
struct ToFahrenheit {
    /// Degrees Celsius.
    celsius: f64,
}

/// A tool as a typed function: its interface comes from its argument type.
fn to_fahrenheit(args: ToFahrenheit) -> Result<f64, String> {
    if args.celsius < -273.15 {
        return Err(format!("{} °C is below absolute zero", args.celsius));
    }
    Ok(args.celsius * 9.0 / 5.0 + 32.0)
}

/// Sets up the tools, runs a model's answer and returns the prompt and the results.
pub async fn run() -> Result<String, Box<dyn std::error::Error>> {
    let registry = Registry::new();
    // A tool as a closure: its interface written out, its arguments read by name.
    registry.register(
        FnBox::new("weather").async_function(
            Interface::new("get_temp")
                .in_domain("weather")
                .describe("Current temperature of a city, in °C")
                .param(Param::new("city", ParamType::String).required()),
            |args, _ctx| async move {
                let city: String = args.get("city")?;
                // A slow lookup: the rest of the answer is read meanwhile.
                tokio::time::sleep(Duration::from_millis(100)).await;
                match city.as_str() {
                    "Oslo" => Ok(json!({"city": city, "celsius": 4})),
                    _ => Err(format!("no weather station in {city}; try Oslo").into()),
                }
            },
        ),
    )?;
    registry.register(TypedBox::new("units").function("to_fahrenheit", to_fahrenheit))?;

    // What the model reads in its system prompt.
    let prompt = registry.prompt(&CallContext::new(), &RegistryPrompt::default());

    // The model's answer as an HTTP client hands it over (reqwest's `bytes_stream()`, say):
    // byte chunks that split calls anywhere.
    let answer = "Let me check. @weather.get_temp(\"Oslo\") That is @units.to_fahrenheit(4) \
                  in Fahrenheit. And @weather.get_temp(\"Atlantis\")?";
    let chunks: Vec<Result<Vec<u8>, std::io::Error>> = answer
        .as_bytes()
        .chunks(7)
        .map(|c| Ok(c.to_vec()))
        .collect();

    // Each outcome comes once its call is done, in call order (`in_completion_order()`:
    // as soon as it is done); reading goes on while tools run.
    let mut outcomes = registry.stream().run(futures::stream::iter(chunks));
    while let Some(outcome) = outcomes.next().await {
        let outcome = outcome?;
        // Only a call that returned is done: a held one did not run.
        let status = match outcome.state() {
            OutcomeState::Returned => "done",
            OutcomeState::Held { .. } => "waits for confirmation",
            _ => "failed",
        };
        println!("{} {status}", outcome.name);
    }
    // The result blocks, for the model's next turn.
    let results = outcomes.report().output;
    Ok(format!("{prompt}\n{results}"))
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    print!("{}", run().await?);
    Ok(())
}
