//! Calls an answer may not write again
//! ([`GrammarOptions::with_not_again`](super::GrammarOptions::with_not_again)): the argument list of
//! a function, without the argument lists of its calls already written.
//!
//! A small model asked for several calls writes its first one and then writes it again and
//! again. A grammar that leaves out the calls already written makes it write its next
//! best call instead. The argument list is built as a tree over the calls left out: at each
//! parameter a call may follow one of them (the same value, or the same absence) and stay
//! bound to match the ones it follows, or leave them all behind with a value none of them
//! gave; once it has left them all, the rest of the list is free. Following one to its end
//! is not offered, so no call left out can be written.
//!
//! Leaving them behind needs a value the grammar can list
//! ([`Values::listed`](super::values::Values::listed)): a choice, a boolean, a grounded
//! number or a run of grounded text. A free number or text cannot be held to "any but
//! these" in GBNF without spelling out its complement, so a call whose only difference
//! would be in free values is not offered: the grammar stays exact, at the cost of calls a
//! model could have written differently.

use super::tree::{Builder, Node};
use super::values::{separated, Values};
use crate::interface::Param;

/// The most values of one parameter listed to tell a call apart (the runs of a long
/// question's words); a parameter with more is treated as free.
const MOST_LISTED: usize = 4096;

/// One parameter of the function: its value, and how a call may write it.
pub(super) struct Arg<'a> {
    pub param: &'a Param,
    /// What stands before the value: `name=`, or `"name": ` in a JSON call form.
    pub key: String,
    /// The key and the value.
    pub node: Node,
}

/// The argument list of `args` (in declared order, joined by `", "`, optional ones
/// optional, as [`separated`] builds it) that matches none of `left_out`, each the text of
/// a call's value per parameter (`None`: left out). `None` when every list matches one.
pub(super) fn args_except(
    b: &mut Builder,
    values: &Values,
    args: &[Arg<'_>],
    left_out: &[Vec<Option<String>>],
) -> Option<Node> {
    // Each call's values as the grammar spells them; a call with a value the grammar cannot
    // write is never written, and needs no leaving out.
    let left_out: Vec<Vec<Option<String>>> = left_out
        .iter()
        .filter_map(|row| {
            args.iter()
                .zip(row)
                .map(|(arg, value)| match value {
                    Some(value) => values.spelled(arg.param, value).map(Some),
                    None => Some(None),
                })
                .collect()
        })
        .collect();
    let listed: Vec<Option<Vec<String>>> = args
        .iter()
        .map(|arg| values.listed(arg.param, MOST_LISTED))
        .collect();
    let shared: Vec<Node> = args
        .iter()
        .map(|arg| b.share("arg", arg.node.clone()))
        .collect();
    // The free rest after each argument, built once: every branch that leaves the calls
    // behind at one parameter shares it.
    let mut after: Vec<Node> = Vec::with_capacity(args.len() + 1);
    for at in 0..=args.len() {
        after.push(started_rest(b, args, &shared, at));
    }
    let tree = Tree {
        args,
        shared: &shared,
        after: &after,
        listed: &listed,
    };
    let all: Vec<&Vec<Option<String>>> = left_out.iter().collect();
    tree.from(b, 0, &all, false)
}

struct Tree<'t, 'a> {
    args: &'t [Arg<'a>],
    /// Each argument's `name=value` node, a rule when it is not small.
    shared: &'t [Node],
    /// `after[at]`: arguments `at..` after one was written, free.
    after: &'t [Node],
    listed: &'t [Option<Vec<String>>],
}

impl Tree<'_, '_> {
    /// Arguments `at..`, after `started` (whether an argument was written already, so the
    /// next one takes a separator), matching none of `following`.
    fn from(
        &self,
        b: &mut Builder,
        at: usize,
        following: &[&Vec<Option<String>>],
        started: bool,
    ) -> Option<Node> {
        if following.is_empty() {
            return Some(self.rest(b, at, started));
        }
        let arg = self.args.get(at)?;
        let key = &arg.key;
        let sep = if started { ", " } else { "" };
        let mut ways = Vec::new();
        if !arg.param.required {
            let absent: Vec<&Vec<Option<String>>> = following
                .iter()
                .copied()
                .filter(|call| call.get(at).is_none_or(Option::is_none))
                .collect();
            ways.extend(self.from(b, at + 1, &absent, started));
        }
        // The values the calls followed give here, each once, in the calls' order.
        let mut given: Vec<&str> = Vec::new();
        for call in following {
            if let Some(Some(value)) = call.get(at) {
                if !given.contains(&value.as_str()) {
                    given.push(value);
                }
            }
        }
        for value in &given {
            let same: Vec<&Vec<Option<String>>> = following
                .iter()
                .copied()
                .filter(|call| call.get(at).and_then(Option::as_deref) == Some(*value))
                .collect();
            if let Some(rest) = self.from(b, at + 1, &same, true) {
                ways.push(Node::seq([Node::text(format!("{sep}{key}{value}")), rest]));
            }
        }
        if let Some(Some(listed)) = self.listed.get(at) {
            let others: Vec<Node> = listed
                .iter()
                .filter(|value| !given.contains(&value.as_str()))
                .map(|value| Node::text(value.as_str()))
                .collect();
            if !others.is_empty() {
                let rest = self.rest(b, at + 1, true);
                let others = b.share("other", Node::alt(others));
                ways.push(Node::seq([Node::text(format!("{sep}{key}")), others, rest]));
            }
        }
        (!ways.is_empty()).then(|| Node::alt(ways))
    }

    /// Arguments `at..`, free.
    fn rest(&self, b: &mut Builder, at: usize, started: bool) -> Node {
        if started {
            return self.after.get(at).cloned().unwrap_or(Node::Seq(Vec::new()));
        }
        let items = self
            .shared
            .iter()
            .zip(self.args)
            .skip(at)
            .map(|(node, arg)| (node.clone(), arg.param.required))
            .collect();
        separated(b, items, ", ")
    }
}

/// Arguments `at..` of `args` after one was written: each with the separator before it,
/// the optional ones optional.
fn started_rest(b: &mut Builder, args: &[Arg<'_>], shared: &[Node], at: usize) -> Node {
    let items = shared.iter().zip(args).skip(at).map(|(node, arg)| {
        let with_sep = Node::seq([Node::text(", "), node.clone()]);
        if arg.param.required {
            with_sep
        } else {
            Node::optional(with_sep)
        }
    });
    let node = Node::seq(items);
    b.share("rest", node)
}
