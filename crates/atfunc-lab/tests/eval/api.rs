//! The evaluator's re-exports: what the crate documentation shows of `eval`, its
//! experiments' pieces left out.

use regex::Regex;

#[test]
fn eval_shows_no_experiment_s_pieces() {
    // `eval`'s re-exports, those hidden from the docs left out.
    let eval = std::fs::read_to_string(
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/eval/mod.rs"),
    )
    .expect("eval/mod.rs");
    let uses = Regex::new(r"(?ms)^(#\[doc\(hidden\)\]\n)?pub use ([^;]+);").expect("the pattern");
    let shown: String = uses
        .captures_iter(&eval)
        .filter(|c| c.get(1).is_none())
        .filter_map(|c| c.get(2).map(|m| m.as_str().to_owned()))
        .collect::<Vec<_>>()
        .join(", ");
    let word = Regex::new(r"[A-Za-z_]+").expect("the pattern");
    let shown: Vec<&str> = word.find_iter(&shown).map(|m| m.as_str()).collect();
    for internal in [
        "NEXT_MOST_CALLS",
        "OWN_FIELDS",
        "BOUND_STRING_CHARS",
        "BOUND_LIST_ITEMS",
        "normalise",
        "DECIDE_QUESTION",
        "NO_FUNCTION",
        "resume",
        "Resumed",
        "ABSTRACT_EXAMPLE",
        "SEVERAL_RULE",
        "SHOT_EXAMPLE",
    ] {
        assert!(
            !shown.contains(&internal),
            "eval::{internal} is in the docs"
        );
    }
}
