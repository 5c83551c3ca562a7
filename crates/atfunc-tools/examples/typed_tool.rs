//! Typed tools: two Rust functions offered to a model, called from its text.
//!
//! Run with `cargo run -p atfunc-tools --example typed_tool --features typed`.

use atfunc::interop::{to_openai_tools, ToolFormatOptions};
use atfunc_tools::typed::{TypedBox, TypedTool};
use atfunc_tools::{CallContext, Registry, RegistryPrompt, ToolBox};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Send an email to one recipient.
#[derive(Deserialize, JsonSchema)]
struct SendEmail {
    /// The recipient's address.
    to: String,
    /// The subject line.
    subject: String,
    /// The message itself.
    body: String,
}

#[derive(Serialize)]
struct Sent {
    message_id: String,
}

/// A tool as a type: its id, `send_email`, comes from the type's name.
struct SendEmailTool;

impl TypedTool for SendEmailTool {
    type Args = SendEmail;
    type Output = Sent;
    type Error = String;

    async fn call(&self, args: SendEmail, _ctx: &CallContext) -> Result<Sent, String> {
        if !args.to.contains('@') {
            return Err(format!(
                "'{}' is not an email address: ask the user for one",
                args.to
            ));
        }
        println!(
            "  (sending '{}' to {}: {} bytes)",
            args.subject,
            args.to,
            args.body.len()
        );
        Ok(Sent {
            message_id: "msg-0001".into(),
        })
    }
}

/// Convert a temperature between Celsius and Fahrenheit.
#[derive(Deserialize, JsonSchema)]
struct Convert {
    /// The temperature to convert.
    value: f64,
    /// The unit it is in.
    from: Unit,
}

/// A temperature unit.
#[derive(Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
enum Unit {
    Celsius,
    Fahrenheit,
}

/// A tool as a plain function.
fn convert(args: Convert) -> Result<f64, String> {
    match args.from {
        Unit::Celsius => Ok(args.value * 9.0 / 5.0 + 32.0),
        Unit::Fahrenheit if args.value < -459.67 => {
            Err("below absolute zero: check the value".into())
        }
        Unit::Fahrenheit => Ok((args.value - 32.0) * 5.0 / 9.0),
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let tools = TypedBox::new("assistant")
        .tool(SendEmailTool)
        .function("convert_temperature", convert)
        .build()?;
    let openai = to_openai_tools(
        &tools.interfaces(&CallContext::new()),
        &ToolFormatOptions::default(),
    );
    println!(
        "The tools for an OpenAI-style API:\n\n{}\n",
        serde_json::to_string_pretty(&openai.tools)?
    );

    let registry = Registry::new();
    registry.register(tools)?;
    println!(
        "What a model reads in its prompt:\n\n{}",
        registry.prompt(&CallContext::new(), &RegistryPrompt::default())
    );

    let completion = r#"Sure. @assistant.convert_temperature(451, from="fahrenheit")
Then @assistant.send_email(to="ada@example.org", subject="Hello", body="It works.")
And @assistant.send_email("nobody", "Hi", "?") and @assistant.convert_temperature(-500, fahrenheit)"#;
    println!("The model answers:\n\n{completion}\n");
    let report = registry.execute_response(completion).await;
    println!("What goes back to the model:\n\n{}", report.output);
    Ok(())
}
