//! The variant `+next`: an answer that began to repeat its calls, continued one new call
//! at a time.
//!
//! A small model asked for several calls (BFCL `parallel`: "Taylor Swift for 20 minutes
//! and Maroon 5 for 15") writes its first call and then the same call again. Its answer is
//! read up to the repeat; `+next` then gives it back what it wrote (as the start of its own
//! turn, through llama-server's `/completion`) and asks for one more call under a grammar
//! that leaves out every call written so far
//! ([`GrammarOptions::not_again`](crate::grammar::GrammarOptions::not_again)), or the end
//! of its answer ([`GrammarOptions::continued`](crate::grammar::GrammarOptions::continued)).
//! Greedy, the model writes its next best call, or ends. It goes on until the model ends,
//! no call is left to make, or [`NEXT_MOST_CALLS`] calls are read.

use super::{counted, excerpt, grammar_options, Answer, CaseOutcome, Evaluator, Read};
use crate::bind::{bind, Repeats};
use crate::endpoint::Route;
use crate::eval::case::Case;
use crate::eval::mode::Mode;
use crate::grammar::{Choice, GrammarError, WrittenCall};
use crate::parse::{parse_events, Event};
use serde_json::{Map, Value as Json};

/// The most calls `+next` reads from one answer: more than any BFCL `parallel` answer
/// holds (at most 8 calls in `parallel_multiple`, 6 in `parallel`).
pub const NEXT_MOST_CALLS: usize = 8;

impl Evaluator {
    /// `+next` on `answer`, read into `read`: when the reading stopped at a repeat, the
    /// answer (`text`) is continued one call at a time; each new call is added to `read`,
    /// and `text` becomes the answer up to the last call read. The tokens are added to
    /// `outcome`.
    pub(super) async fn next_calls(
        &self,
        case: &Case,
        mode: &Mode,
        messages: &[Json],
        text: &mut String,
        read: &mut Read,
        outcome: &mut CaseOutcome,
    ) -> Result<(), String> {
        let Some(end) = read.repeat_after.take() else {
            return Ok(());
        };
        // A call that did not bind is for the resamples to mend, not for more calls.
        if !read.refused.is_empty() || read.bound.is_empty() {
            return Ok(());
        }
        let catalog = crate::bind::Catalog::new(case.interfaces.clone());
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
                .map(|call| {
                    let function = case
                        .interfaces
                        .get(call.index)
                        .map_or_else(|| call.name.clone(), |i| i.qualified_name());
                    WrittenCall::of_args(function, &call.args)
                })
                .collect();
            // One more call on a line of its own, or the end: the model may be done.
            let options = crate::grammar::GrammarOptions {
                continued: true,
                not_again,
                ..grammar_options(case, Choice::Required, mode)
            };
            let grammar = match crate::grammar::gbnf(&case.interfaces, &options) {
                Ok(grammar) => grammar,
                // Every call left to make is one already made.
                Err(GrammarError::NoCallable(_)) => break,
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
            let Some(bound) = call.and_then(|call| bind(&call, &catalog).ok()) else {
                break;
            };
            if !repeats.admit(&bound) {
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
        let mut completion = Map::new();
        completion.insert("prompt".into(), Json::from(format!("{prompt}{written}")));
        completion.insert("n_predict".into(), Json::from(self.options.max_tokens));
        for (name, value) in &self.options.request_fields {
            completion.insert(name.clone(), value.clone());
        }
        completion.insert("temperature".into(), Json::from(0));
        completion.insert("grammar".into(), Json::from(grammar));
        let (answer, body) = self.post(Route::Completion, &completion).await?;
        let text = answer
            .get("content")
            .and_then(Json::as_str)
            .ok_or_else(|| format!("/completion answered no content: {}", excerpt(&body)))?;
        let count = |field: &str| answer.get(field).and_then(Json::as_u64).unwrap_or(0);
        let answer = Answer {
            text: text.to_owned(),
            tool_calls: Vec::new(),
            prompt_tokens: count("tokens_evaluated"),
            completion_tokens: count("tokens_predicted"),
        };
        Ok(counted(answer, outcome).text)
    }
}
