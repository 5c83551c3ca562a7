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

/// The source folders of the published crates: this one and those built on it, whose
/// APIs a user meets beside this one's.
fn published() -> Vec<PathBuf> {
    ["atfunc", "atfunc-tools", "atfunc-gateway", "atfunc-cli"]
        .iter()
        .map(|name| {
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("..")
                .join(name)
                .join("src")
        })
        .collect()
}

/// A crate's library files (`main.rs` is its binary, a user of the library).
fn library_sources(root: &Path) -> Vec<(String, String)> {
    sources(root)
        .into_iter()
        .filter_map(|path| {
            let name = path
                .strip_prefix(root)
                .expect("under src")
                .to_string_lossy()
                .replace('\\', "/");
            if name == "main.rs" {
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
    // Crate by crate: two crates are two paths, `atfunc::X` and `atfunc_tools::X`.
    let mut clashes: Vec<String> = Vec::new();
    for root in published() {
        let mut seen: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (file, text) in library_sources(&root) {
            for name in item.captures_iter(&text) {
                seen.entry(name[1].to_string())
                    .or_default()
                    .push(file.clone());
            }
        }
        clashes.extend(
            seen.into_iter()
                .filter(|(_, files)| files.len() > 1)
                .map(|(name, files)| format!("{}: {name}: {}", root.display(), files.join(", "))),
        );
    }
    assert!(clashes.is_empty(), "{}", clashes.join("\n"));
}

#[test]
fn no_deprecated_aliases_or_hidden_options_remain() {
    let mut found = Vec::new();
    for path in published().iter().flat_map(|root| sources(root)) {
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
fn batch_keeps_its_pieces_to_itself() {
    // What `batch` builds its records from is not API: a `pub` item here would be
    // reachable as `atfunc::batch::...`.
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
}
