//! Deciding first under `tool_choice: "auto"`: one short constrained answer, a function's
//! name or `none`, before the answer itself. `atfunc eval --mode decide` measures it and
//! `atfunc serve --constrain --decide` sends it; both ask with what is here.
//!
//! ```
//! use atfunc::grammar::{decision_gbnf, decision_names, read_decision, ToolDecision, NO_FUNCTION};
//! use atfunc::{Interface, Param, ParamType};
//!
//! let sqrt = Interface::new("sqrt").in_domain("calc").param(Param::new("x", ParamType::Number));
//! let cbrt = Interface::new("cbrt").in_domain("calc").param(Param::new("x", ParamType::Number));
//! let names = decision_names(&[sqrt, cbrt]);
//! assert_eq!(names, ["calc.sqrt", "calc.cbrt"]);
//! assert_eq!(
//!     decision_gbnf(&names),
//!     "root ::= \"calc.sqrt\" | \"calc.cbrt\" | \"none\"\n"
//! );
//! assert_eq!(read_decision(" calc.cbrt\n", &names), ToolDecision::Function("calc.cbrt".into()));
//! assert_eq!(read_decision(NO_FUNCTION, &names), ToolDecision::NoFunction);
//! assert_eq!(read_decision("calc.cb", &names), ToolDecision::Unreadable);
//! ```
//!
//! # Contract
//!
//! The decision request is the conversation as the answer would be asked for (the atfunc
//! prompt in front), then one more user message, [`DECIDE_QUESTION`], under the grammar
//! [`decision_gbnf`] of the functions' names as the prompt shows them ([`decision_names`]),
//! which allows exactly one of them or [`NO_FUNCTION`]. [`read_decision`] reads the answer:
//! a name (trimmed, exactly as listed), `none`, or neither (an upstream that ignored the
//! grammar, or a name cut by the request's token limit).

use super::gbnf_literal;
use crate::interface::Interface;

/// The question after the conversation in the decision request.
pub const DECIDE_QUESTION: &str =
    "Which function answers the last message? Write its name, or none.";

/// The decision's word for "no function". A function of that name cannot be chosen: the
/// word means no call.
pub const NO_FUNCTION: &str = "none";

/// What a decision answer says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToolDecision {
    /// Call this function (its name as listed).
    Function(String),
    /// Call none: [`NO_FUNCTION`].
    NoFunction,
    /// Neither a listed name nor [`NO_FUNCTION`].
    Unreadable,
}

/// The names a decision chooses among: each function's as the atfunc prompt shows it
/// (qualified, `calc.sqrt`), in the prompt's order.
pub fn decision_names(interfaces: &[Interface]) -> Vec<String> {
    interfaces.iter().map(Interface::qualified_name).collect()
}

/// The GBNF grammar of a decision: one of `names`, or [`NO_FUNCTION`].
pub fn decision_gbnf(names: &[String]) -> String {
    let quoted: Vec<String> = names
        .iter()
        .map(String::as_str)
        .chain([NO_FUNCTION])
        .map(gbnf_literal)
        .collect();
    format!("root ::= {}\n", quoted.join(" | "))
}

/// Reads a decision answer against the `names` its grammar listed.
pub fn read_decision(answer: &str, names: &[String]) -> ToolDecision {
    let written = answer.trim();
    if written == NO_FUNCTION {
        return ToolDecision::NoFunction;
    }
    match names.iter().find(|name| name.as_str() == written) {
        Some(name) => ToolDecision::Function(name.clone()),
        None => ToolDecision::Unreadable,
    }
}
