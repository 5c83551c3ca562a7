//! The variant `+next`: an answer that began to repeat its calls, continued one new call
//! at a time.
//!
//! A small model asked for several calls (BFCL `parallel`: "Taylor Swift for 20 minutes
//! and Maroon 5 for 15") writes its first call and then the same call again. Its answer is
//! read up to the repeat; `+next` then gives it back what it wrote (as the start of its own
//! turn, through llama-server's `/completion`) and asks for one more call under a grammar
//! that leaves out every call written so far
//! ([`GrammarOptions::with_not_again`](atfunc::grammar::GrammarOptions::with_not_again)), or the end
//! of its answer ([`GrammarOptions::with_continued`](atfunc::grammar::GrammarOptions::with_continued)).
//! Greedy, the model writes its next best call, or ends. It goes on until the model ends,
//! no call is left to make, the new call is a near-repeat ([`ends_answer`]: a fragment of
//! an earlier text value, or only values earlier calls gave), or [`NEXT_MOST_CALLS`] calls
//! are read. An answer is read up to its first near-repeat, continued or not.

use super::{grammar_options, CaseOutcome, Evaluator, Read};
use crate::eval::case::Case;
use crate::eval::mode::Mode;
use atfunc::bind::{bind, BoundCall, Catalog, Repeats};
use atfunc::grammar::{Choice, GrammarError};
use atfunc::parse::{parse_events, Event};
use serde_json::Value as Json;

/// The most calls `+next` reads from one answer: more than any BFCL `parallel` answer
/// holds (at most 8 calls in `parallel_multiple`, 6 in `parallel`).
const NEXT_MOST_CALLS: usize = 8;

impl Evaluator {
    /// `+next` on `answer`, read into `read`: when the reading stopped at a repeat, the
    /// answer (`text`) is continued one call at a time; each new call is added to `read`,
    /// and `text` becomes the answer up to the last call read. The tokens are added to
    /// `outcome`.
    pub(super) async fn next_calls(
        &self,
        case: &Case,
        mode: &Mode,
        (messages, catalog): (&[Json], &Catalog),
        text: &mut String,
        read: &mut Read,
        outcome: &mut CaseOutcome,
    ) -> Result<(), String> {
        // A call that did not bind is for the resamples to mend, not for more calls.
        if !read.refused.is_empty() {
            return Ok(());
        }
        if let Some(at) =
            (0..read.bound.len()).find(|&at| ends_answer(&read.bound[at], &read.bound[..at]))
        {
            // The answer ends before its first near-repeat: nothing is asked.
            read.bound.truncate(at);
            read.repeat_after = None;
            let end = read.bound.last().map_or(0, |call| {
                usize::try_from(call.span.end).unwrap_or(usize::MAX)
            });
            text.truncate(end.min(text.len()));
            return Ok(());
        }
        let Some(end) = read.repeat_after.take() else {
            return Ok(());
        };
        if read.bound.is_empty() {
            return Ok(());
        }
        let mut written = text.get(..end).unwrap_or(text.as_str()).to_owned();
        let prompt = self.templated(Json::Array(messages.to_vec())).await?;
        let mut repeats = Repeats::remembering(usize::MAX);
        for call in &read.bound {
            repeats.admit(call);
        }
        while read.bound.len() < NEXT_MOST_CALLS {
            let not_again = read
                .bound
                .iter()
                .map(|call| call.written(catalog))
                .collect();
            // One more call on a line of its own, or the end: the model may be done.
            let options = grammar_options(case, Choice::Required, mode)
                .with_continued(true)
                .with_not_again(not_again);
            let grammar = match atfunc::grammar::gbnf(&case.interfaces, &options) {
                Ok(grammar) => grammar,
                // Every call left to make is one already made.
                Err(GrammarError::NoCallable { .. }) => break,
                Err(error) => return Err(format!("no grammar: {error}")),
            };
            let more = self
                .continue_answer(&prompt, &written, grammar, outcome)
                .await?;
            let call = parse_events(&more)
                .into_iter()
                .find_map(|event| match event {
                    Event::Call(call) => Some(call),
                    _ => None,
                });
            // No call: the model ended its answer.
            let Some(bound) = call.and_then(|call| bind(&call, catalog).ok()) else {
                break;
            };
            if !repeats.admit(&bound) || ends_answer(&bound, &read.bound) {
                break;
            }
            let upto = usize::try_from(bound.span.end).unwrap_or(usize::MAX);
            written.push_str(more.get(..upto).unwrap_or(&more));
            read.bound.push(bound);
        }
        *text = written;
        Ok(())
    }

    /// The model's own continuation of `written`, the start of its turn after `prompt`
    /// (the conversation through the server's chat template), under `grammar`, greedy.
    async fn continue_answer(
        &self,
        prompt: &str,
        written: &str,
        grammar: String,
        outcome: &mut CaseOutcome,
    ) -> Result<String, String> {
        let fields = [
            ("temperature", Json::from(0)),
            ("grammar", Json::from(grammar)),
        ];
        let answer = self
            .complete(format!("{prompt}{written}"), fields, outcome)
            .await?;
        Ok(answer.text)
    }
}

/// Whether `call`, after `earlier`, is a near-repeat that ends the answer rather than a new
/// item: a text value that is part of, or contains, a different value an earlier call of
/// the function gave the same parameter (`"Swift"` after `"Taylor Swift"`, `"copper and"`
/// after `"copper"`: the question's next words, not its next item), or every argument a
/// value an earlier call of the function gave it (`(A, 2)` after `(A, 1)` and `(B, 2)`).
/// A model held away from its exact repeats writes these when it has no new item left; in
/// BFCL `parallel` the answers read up to them were right more often (EVAL.md (r)).
fn ends_answer(call: &BoundCall, earlier: &[BoundCall]) -> bool {
    let same: Vec<&BoundCall> = earlier.iter().filter(|e| e.index == call.index).collect();
    if same.is_empty() {
        return false;
    }
    let stutters = call.args.iter().any(|(name, value)| {
        let Some(text) = value.as_str() else {
            return false;
        };
        let text = text.to_lowercase();
        same.iter()
            .any(|e| match e.args.get(name).and_then(Json::as_str) {
                Some(other) => {
                    let other = other.to_lowercase();
                    other != text && (other.contains(&text) || text.contains(&other))
                }
                None => false,
            })
    });
    let recombines = call
        .args
        .iter()
        .all(|(name, value)| same.iter().any(|e| e.args.get(name) == Some(value)));
    stutters || recombines
}

#[cfg(test)]
mod tests {
    use super::ends_answer;
    use atfunc::bind::{bind, Catalog};
    use atfunc::parse::{parse_events, Event};
    use serde_json::json;

    fn calls(text: &str) -> Vec<atfunc::bind::BoundCall> {
        let tools = json!([{"name": "play", "parameters": {"type": "object", "properties": {
            "artist": {"type": "string"}, "minutes": {"type": "integer"}},
            "required": ["artist"]}}, {"name": "stop", "parameters": {"type": "object",
            "properties": {"artist": {"type": "string"}}}}]);
        let catalog = Catalog::new(atfunc::load_interfaces(&tools).unwrap());
        parse_events(text)
            .into_iter()
            .filter_map(|event| match event {
                Event::Call(call) => Some(bind(&call, &catalog).unwrap()),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_part_of_an_earlier_value_or_a_mix_of_earlier_values_ends_the_answer() {
        let written = calls(
            "@play(artist=\"Taylor Swift\", minutes=20)\n@play(artist=\"Maroon 5\", minutes=15)",
        );
        for (next, ends) in [
            ("@play(artist=\"Swift\", minutes=30)", true),
            ("@play(artist=\"maroon 5 and more\", minutes=30)", true),
            ("@play(artist=\"Taylor Swift\", minutes=15)", true),
            ("@play(artist=\"Maroon 5\")", true),
            ("@play(artist=\"Adele\", minutes=20)", false),
            ("@play(artist=\"Taylor Swift\", minutes=30)", false),
            // Another function may take the same values.
            ("@stop(artist=\"Swift\")", false),
        ] {
            let call = &calls(next)[0];
            assert_eq!(ends_answer(call, &written), ends, "{next}");
        }
        // The first call of a function ends nothing.
        assert!(!ends_answer(&written[0], &[]));
    }
}
