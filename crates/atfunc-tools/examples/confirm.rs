//! A call that waits for the user's confirmation: the model's answer holds it, the host
//! shows it to the user, the user says yes, and the model reads its result on its next
//! turn.
//!
//! Run with `cargo run -p atfunc-tools --example confirm`.

use atfunc::{json, Interface, Param, ParamType};
use atfunc_tools::{FnBox, OutcomeState, Registry};

/// Runs a model's answer with a call that needs confirmation, confirms it, and returns
/// what the model reads: first the answer's blocks, then the confirmed call's.
pub async fn run() -> Result<String, Box<dyn std::error::Error>> {
    let registry = Registry::new();
    registry.register(
        FnBox::new("files")
            .function(
                Interface::new("delete")
                    .in_domain("files")
                    .describe("Delete a file")
                    .param(Param::new("path", ParamType::String).required()),
                |args, _ctx| Ok(json!(format!("deleted {}", args.get::<String>("path")?))),
            )
            .function(
                Interface::new("list")
                    .in_domain("files")
                    .describe("List the files"),
                |_args, _ctx| Ok(json!(["draft.txt", "notes.txt"])),
            ),
    )?;
    // Deleting needs the user's yes; listing does not.
    registry.require_confirmation("files.delete")?;

    let answer = r#"@files.list() I'll remove the draft: @Files.Delete("draft.txt")"#;
    let report = registry.execute_response(answer).await;
    // The model's next turn, now: the list, and that the delete waits.
    let mut next_turn = report.output.clone();

    for outcome in &report.calls {
        let OutcomeState::Held { confirmation_id } = outcome.state() else {
            continue;
        };
        // What the host shows the user: the call as the model wrote it.
        let held = registry.held_calls();
        let call = held
            .iter()
            .find(|call| call.confirmation_id == confirmation_id)
            .ok_or("the held call is listed")?;
        println!(
            "The model wants to run {}. The user says yes.",
            call.call_text
        );

        // Runs it, and gives the block the model reads as the call's result.
        let confirmed = registry.confirm_outcome(confirmation_id).await?;
        next_turn.push('\n');
        next_turn.push_str(&confirmed.block);
    }
    Ok(next_turn)
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    print!("{}", run().await?);
    Ok(())
}
