//! Checks on the shape of the public API, read from the source: a name that two modules
//! both export, an old spelling kept behind `#[deprecated]`, or a crate root that keeps
//! growing each make the API harder to learn, and none of them fails a build.

use regex::Regex;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every `.rs` file under `dir`, sorted so a failure reads the same on every machine.
fn sources(dir: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source folder") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                stack.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                files.push(path);
            }
        }
    }
    files.sort();
    files
}

fn src() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The library's files: `main.rs` and `cli/` are the binary, a user of the library.
fn library_sources() -> Vec<(String, String)> {
    let root = src();
    sources(&root)
        .into_iter()
        .filter_map(|path| {
            let name = path
                .strip_prefix(&root)
                .expect("under src")
                .to_string_lossy()
                .replace('\\', "/");
            if name == "main.rs" || name.starts_with("cli/") {
                return None;
            }
            let text = std::fs::read_to_string(&path).expect("a source file");
            Some((name, text))
        })
        .collect()
}

#[test]
fn no_two_public_types_share_a_name() {
    // Only `pub`, not `pub(crate)`: a type inside the crate may share a name. A `pub` type
    // in a private module that nobody re-exports is counted too; such a clash is a rename
    // waiting to happen when it is re-exported.
    let item = Regex::new(r"(?m)^\s*pub (?:struct|enum|type|trait|union) ([A-Z][A-Za-z0-9_]*)")
        .expect("the pattern");
    let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (file, text) in library_sources() {
        for name in item.captures_iter(&text) {
            seen.entry(name[1].to_string())
                .or_default()
                .push(file.clone());
        }
    }
    let clashes: Vec<String> = seen
        .into_iter()
        .filter(|(_, files)| files.len() > 1)
        .map(|(name, files)| format!("{name}: {}", files.join(", ")))
        .collect();
    assert!(clashes.is_empty(), "{}", clashes.join("\n"));
}

#[test]
fn no_deprecated_aliases_or_hidden_options_remain() {
    let mut found = Vec::new();
    for path in sources(&src()) {
        let text = std::fs::read_to_string(&path).expect("a source file");
        for (number, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.starts_with("#[deprecated") || line.starts_with("hide = true") {
                found.push(format!("{}:{}: {line}", path.display(), number + 1));
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}

#[test]
fn the_crate_root_re_exports_few_names() {
    let lib = std::fs::read_to_string(src().join("lib.rs")).expect("lib.rs");
    let uses = Regex::new(r"(?ms)^pub use ([^;]+);").expect("the pattern");
    let mut names = Vec::new();
    for statement in uses.captures_iter(&lib) {
        // `a::{b, c}` names b and c; `a::b` names b; `self` in a group names the module.
        let body = &statement[1];
        let (path, group) = match body.find('{') {
            Some(open) => (&body[..open], body[open + 1..].trim_end_matches('}')),
            None => ("", body),
        };
        for name in group.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let name = if name == "self" {
                path.trim_end_matches("::")
            } else {
                name
            };
            names.push(name.rsplit("::").next().unwrap_or(name).to_string());
        }
    }
    // Each phase's first names, its error, and what tools' signatures need; the rest is
    // in the phases' modules. Growing past this needs a reason in the crate docs.
    assert!(names.len() <= 30, "{} names: {names:?}", names.len());
}

#[test]
fn batch_and_eval_keep_their_pieces_to_themselves() {
    // What `batch` builds its records from, and `eval`'s experiments, are not API: a
    // `pub` item here would be reachable as `atfunc::batch::...` / `atfunc::eval::...`.
    let batch = std::fs::read_to_string(src().join("batch.rs")).expect("batch.rs");
    let item = Regex::new(r"(?m)^pub (?:fn|const|struct|enum) ([A-Za-z_]+)").expect("the pattern");
    let public: Vec<&str> = item
        .captures_iter(&batch)
        .filter_map(|c| c.get(1).map(|m| m.as_str()))
        .collect();
    for internal in [
        "call_record",
        "malformed_record",
        "add_span",
        "parser_config",
        "Record",
        "CallHead",
        "RAW_LIMIT",
        "TOOL_CACHE_CAPACITY",
    ] {
        assert!(!public.contains(&internal), "batch::{internal} is public");
    }

    // `eval`'s re-exports, those hidden from the docs left out.
    let eval = std::fs::read_to_string(src().join("eval/mod.rs")).expect("eval/mod.rs");
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
