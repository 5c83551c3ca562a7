//! The README and the pages of `docs/` as one set of documents: every relative link leads to
//! a file and every `#anchor` to a heading of it, the README links every page, and what the
//! README's tour shows is what the pages show. The examples' contents are held to the code
//! by the tests of their phase (`cli`, `execute`, the Python package's).

#[path = "../../../tests/support/pages.rs"]
mod pages;

use std::collections::HashSet;
use std::path::{Component, Path, PathBuf};

/// The workspace root, where `README.md` and `docs/` are.
fn root() -> &'static Path {
    Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."))
}

/// The page's text outside fenced code blocks, line by line (a code block's lines are
/// empty), so that links and headings are read only where Markdown reads them.
fn prose(text: &str) -> Vec<&str> {
    let mut fence: Option<&str> = None;
    text.lines()
        .map(|line| {
            let trimmed = line.trim_start();
            match fence {
                Some(open) if trimmed.trim_end() == open => {
                    fence = None;
                    ""
                }
                Some(_) => "",
                None if trimmed.starts_with("```") => {
                    let ticks = trimmed.len() - trimmed.trim_start_matches('`').len();
                    fence = Some(&trimmed[..ticks]);
                    ""
                }
                None => line,
            }
        })
        .collect()
}

/// The fenced code blocks of a page, each without its fences and its indentation.
fn code_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut open: Option<(usize, String, Vec<String>)> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        let indent = line.len() - trimmed.len();
        match &mut open {
            Some((_, fence, lines)) if trimmed.trim_end() == fence.as_str() => {
                let mut block = lines.join("\n");
                block.push('\n');
                blocks.push(block);
                open = None;
            }
            Some((at, _, lines)) => {
                // The block's indentation, and no more, is taken off each line.
                let spaces = line.len() - line.trim_start_matches(' ').len();
                lines.push(line[spaces.min(*at)..].to_owned());
            }
            None if trimmed.starts_with("```") => {
                let ticks = trimmed.len() - trimmed.trim_start_matches('`').len();
                open = Some((indent, trimmed[..ticks].to_owned(), Vec::new()));
            }
            None => {}
        }
    }
    blocks
}

/// The text with its inline code spans taken out, so that `[a](b)` inside backticks is
/// not read as a link.
fn without_code_spans(line: &str) -> String {
    let mut out = String::new();
    let mut rest = line;
    while let Some(start) = rest.find('`') {
        out.push_str(&rest[..start]);
        let ticks = rest[start..].len() - rest[start..].trim_start_matches('`').len();
        let fence = &rest[start..start + ticks];
        match rest[start + ticks..].find(fence) {
            Some(end) => rest = &rest[start + ticks + end + ticks..],
            None => {
                out.push_str(&rest[start..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// The targets of the Markdown links and images on a line: what stands in `](...)`.
fn link_targets(line: &str) -> Vec<String> {
    let line = without_code_spans(line);
    line.split("](")
        .skip(1)
        .filter_map(|after| after.split(')').next())
        .map(|target| target.trim().to_owned())
        .collect()
}

/// The anchors GitHub gives a page's headings: the heading in lower case, with what is
/// not a letter, a digit, `-`, `_` or a space left out, and spaces written `-`; a heading
/// met again gets `-1`, `-2`, ...
fn anchors(text: &str) -> HashSet<String> {
    let mut seen = HashSet::new();
    for line in prose(text) {
        let Some(heading) = line.strip_prefix('#') else {
            continue;
        };
        let heading = heading.trim_start_matches('#');
        if !heading.starts_with(' ') {
            continue;
        }
        let slug: String = heading
            .trim()
            .to_lowercase()
            .chars()
            .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
            .map(|c| if c == ' ' { '-' } else { c })
            .collect();
        let mut anchor = slug.clone();
        let mut n = 0;
        while !seen.insert(anchor.clone()) {
            n += 1;
            anchor = format!("{slug}-{n}");
        }
    }
    seen
}

/// `a/b/../c` as `a/c`, without asking the file system.
fn normal(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for part in path.components() {
        match part {
            Component::ParentDir => {
                out.pop();
            }
            Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

#[test]
fn every_relative_link_leads_to_a_file_and_a_heading() {
    let mut broken = Vec::new();
    for (page, text) in pages::all() {
        let folder = Path::new(&page).parent().unwrap_or(Path::new(""));
        for (n, line) in prose(&text).into_iter().enumerate() {
            for target in link_targets(line) {
                if target.contains("://") || target.starts_with("mailto:") {
                    continue;
                }
                let (file, anchor) = match target.split_once('#') {
                    Some((file, anchor)) => (file, Some(anchor)),
                    None => (target.as_str(), None),
                };
                let path = if file.is_empty() {
                    PathBuf::from(&page)
                } else {
                    normal(&folder.join(file))
                };
                let at = format!("{page}:{}: ({target})", n + 1);
                if !root().join(&path).exists() {
                    broken.push(format!("{at}: no file {}", path.display()));
                    continue;
                }
                let Some(anchor) = anchor else { continue };
                if path.extension().and_then(|e| e.to_str()) != Some("md") {
                    broken.push(format!("{at}: an anchor into a file that is not Markdown"));
                    continue;
                }
                let target_text = std::fs::read_to_string(root().join(&path))
                    .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
                if !anchors(&target_text).contains(anchor) {
                    broken.push(format!("{at}: {} has no heading #{anchor}", path.display()));
                }
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_readme_links_every_page_of_docs() {
    let pages = pages::all();
    let readme = &pages[0].1;
    let linked: HashSet<String> = prose(readme)
        .into_iter()
        .flat_map(link_targets)
        .map(|target| target.split('#').next().unwrap_or("").to_owned())
        .collect();
    let unlinked: Vec<&str> = pages[1..]
        .iter()
        .map(|(page, _)| page.as_str())
        .filter(|page| !linked.contains(*page))
        .collect();
    assert!(
        unlinked.is_empty(),
        "the README links no {}",
        unlinked.join(", ")
    );
}

/// The README's tour shows examples of the pages: each code block of it (but the opening
/// commands and one-line commands) is shown, the same, on a page of `docs/`, so the two
/// cannot drift apart and the tests that hold a page's example to the code hold the
/// README's too.
#[test]
fn the_readme_shows_what_the_pages_show() {
    let pages = pages::all();
    let in_pages: HashSet<String> = pages[1..]
        .iter()
        .flat_map(|(_, text)| code_blocks(text))
        .collect();
    let readme = code_blocks(&pages[0].1);
    assert!(
        readme.len() > 1,
        "the README shows its opening commands and a tour"
    );
    let missing: Vec<&String> = readme[1..]
        .iter()
        .filter(|block| block.lines().count() > 1 && !in_pages.contains(*block))
        .collect();
    assert!(
        missing.is_empty(),
        "the README shows blocks no page of docs/ shows:\n{}",
        missing
            .iter()
            .map(|b| b.as_str())
            .collect::<Vec<_>>()
            .join("\n---\n")
    );
}

/// The Rust example of the README's tour is the crate documentation's, which runs as a
/// doctest.
#[test]
fn the_readme_rust_example_is_the_crate_documentation_s() {
    let lib = std::fs::read_to_string(root().join("crates/atfunc/src/lib.rs"))
        .expect("crates/atfunc/src/lib.rs is readable");
    let doc: Vec<&str> = lib
        .lines()
        .filter_map(|line| line.strip_prefix("//!"))
        .map(|line| line.strip_prefix(' ').unwrap_or(line))
        .collect();
    let doc = doc.join("\n") + "\n";
    let start = doc
        .find("```\n")
        .expect("the crate documentation has an example")
        + 4;
    let end = start + doc[start..].find("```").expect("the example ends");
    let example = &doc[start..end];
    let readme = &pages::all()[0].1;
    assert!(
        readme.contains(&format!("```rust\n{example}```\n")),
        "the README's Rust example is not the crate documentation's:\n{example}"
    );
}

/// `crates/atfunc-lab/reports/table.py --models FILE` writes the model tables into a file:
/// docs/accuracy.md shows them, and the levers table (`--readme FILE`); the README, a
/// landing page, gives a line per model and no table.
#[test]
fn the_accuracy_page_shows_the_model_tables() {
    let between = |text: &str, marker: &str| -> String {
        let start = text
            .find(&format!("<!-- {marker}"))
            .unwrap_or_else(|| panic!("the opening line of {marker}"));
        let end = text
            .find(&format!("<!-- /{marker} -->"))
            .unwrap_or_else(|| panic!("the closing line of {marker}"));
        text[start..end].to_owned()
    };
    let read = |name: &str| std::fs::read_to_string(root().join(name)).expect(name);
    let (readme, page) = (read("README.md"), read("docs/accuracy.md"));
    assert!(
        !readme.contains("<!-- model-tables"),
        "the README shows no table"
    );
    let tables = between(&page, "model-tables");
    assert!(tables.contains("| category |"), "{tables}");
    assert!(between(&page, "accuracy-table").contains("| category |"));
}

#[test]
fn anchors_are_github_s() {
    let page = "# Gateway\n## Deciding first under `tool_choice: \"auto\"`: `--decide`\n\
                ```sh\n# not a heading\n```\n## Other models' call formats: `--dialect`\n## Gateway\n";
    let found = anchors(page);
    for anchor in [
        "gateway",
        "deciding-first-under-tool_choice-auto---decide",
        "other-models-call-formats---dialect",
        "gateway-1",
    ] {
        assert!(found.contains(anchor), "{anchor} in {found:?}");
    }
    assert!(!found.contains("not-a-heading"));
    assert_eq!(
        link_targets("see [`--x`](a.md#b), `[c](d)` and ![e](f.svg)"),
        ["a.md#b", "f.svg"]
    );
}
