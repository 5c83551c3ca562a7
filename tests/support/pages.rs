//! The documentation a user reads: `README.md` and the pages of `docs/`. The tests that
//! keep an example true (a command's output, a program shown whole) look for it in all of
//! them, wherever it is shown.
#![allow(dead_code)]

use std::path::Path;

/// `README.md` first, then every `docs/*.md` by name, each as (path from the workspace
/// root, text).
pub fn all() -> Vec<(String, String)> {
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let read = |name: &str| {
        std::fs::read_to_string(root.join(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
    };
    let mut names: Vec<String> = std::fs::read_dir(root.join("docs"))
        .expect("docs/ is readable")
        .map(|entry| entry.expect("a docs/ entry").file_name())
        .filter_map(|name| name.to_str().map(str::to_owned))
        .filter(|name| name.ends_with(".md"))
        .map(|name| format!("docs/{name}"))
        .collect();
    names.sort();
    names.insert(0, "README.md".to_owned());
    names
        .into_iter()
        .map(|name| {
            let text = read(&name);
            (name, text)
        })
        .collect()
}

/// Every page's text, one after the other, with a NUL line between two pages so that no
/// text found in it runs from one page into the next.
pub fn text() -> String {
    all()
        .into_iter()
        .map(|(_, text)| text)
        .collect::<Vec<_>>()
        .join("\n\0\n")
}
