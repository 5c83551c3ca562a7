//! What the core turns on in the crates it shares with a user's program.

use std::path::Path;
use std::process::Command;

/// `cargo tree` of serde_json as the core alone depends on it (no dev-dependencies), with
/// the features each dependent turns on, the core built with `features`.
fn serde_json_tree(features: &[&str]) -> String {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| String::from("cargo"));
    let manifest = Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml");
    let mut command = Command::new(cargo);
    command
        .args(["tree", "--offline", "--edges", "features,normal"])
        .args(["--invert", "serde_json", "--package", "atfunc"])
        .arg("--manifest-path")
        .arg(&manifest);
    if !features.is_empty() {
        command.arg("--features").arg(features.join(","));
    }
    let output = command.output().expect("cargo runs");
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// A Cargo feature is on for every crate of a program once one crate turns it on: with
/// serde_json's `preserve_order` on, a program that never calls atfunc printed
/// `{"b":1,"a":2}` where serde_json alone prints `{"a":2,"b":1}`. The core with its
/// default features leaves it off (the loader keeps a definition's order itself), and so
/// does `batch`; the core's own `preserve_order` feature turns it on.
#[test]
fn the_core_leaves_serde_json_preserve_order_off() {
    for features in [&[][..], &["batch"]] {
        let tree = serde_json_tree(features);
        // The tree is read, not skipped: serde_json and its features are in it.
        assert!(tree.contains("serde_json feature \"std\""), "{tree}");
        assert!(!tree.contains("preserve_order"), "{features:?}:\n{tree}");
    }
    let tree = serde_json_tree(&["preserve_order"]);
    assert!(
        tree.contains("serde_json feature \"preserve_order\""),
        "{tree}"
    );
}
