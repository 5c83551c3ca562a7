//! Phase 6, format: the results of calls as text the model reads on its next turn.

use serde_json::Value as Json;

/// One executed (or refused) call, ready to be formatted.
#[derive(Debug, Clone, PartialEq)]
pub struct CallRecord {
    /// The call as shown back to the model, without the `@`: `weather.get_temp("Paris")`.
    pub call_text: String,
    /// What it returned, or the error message meant for the model.
    pub result: Result<Json, String>,
}

/// Formats records in the reference's block form, one block per call.
pub fn format_results(records: &[CallRecord]) -> String {
    let mut out = String::new();
    for record in records {
        out.push_str("Function call: ");
        out.push_str(&record.call_text);
        out.push_str("\nReturned: ");
        match &record.result {
            Ok(Json::String(s)) => out.push_str(s),
            Ok(other) => out.push_str(&other.to_string()),
            Err(message) => {
                out.push_str("Error: ");
                out.push_str(message);
            }
        }
        out.push('\n');
    }
    out
}
