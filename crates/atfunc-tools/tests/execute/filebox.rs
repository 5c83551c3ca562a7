//! The file tool box: every operation through the `ToolBox` trait, escapes from the root, and
//! setup from a `.filetb` file.

use std::fs;
use std::path::PathBuf;
use std::sync::Arc;

use atfunc_tools::{CallContext, FileBox, FileBoxError, FileErrorKind, ToolBox, ToolError};
use serde_json::{json, Map, Value};
use tempfile::TempDir;

const SECRET: &str = "outside the root: must never change";

/// A temporary folder holding `root/` (the box's root), a sibling file `outside.txt` and a
/// sibling folder `outdir/` with `outdir/inner.txt` and an empty `outdir/empty/`.
struct Fixture {
    tmp: TempDir,
    files: FileBox,
}

impl Fixture {
    fn new() -> Fixture {
        let tmp = tempfile::tempdir().unwrap();
        fs::create_dir(tmp.path().join("root")).unwrap();
        fs::write(tmp.path().join("outside.txt"), SECRET).unwrap();
        fs::create_dir_all(tmp.path().join("outdir/empty")).unwrap();
        fs::write(tmp.path().join("outdir/inner.txt"), SECRET).unwrap();
        let files = FileBox::open(tmp.path().join("root")).unwrap();
        Fixture { tmp, files }
    }

    fn root(&self) -> PathBuf {
        self.tmp.path().join("root")
    }

    /// The absolute spellings of the temporary folder that must never appear in an error.
    fn secrets(&self) -> Vec<String> {
        let mut out = vec![self.tmp.path().display().to_string()];
        if let Ok(real) = self.tmp.path().canonicalize() {
            out.push(real.display().to_string());
        }
        out
    }

    /// Checks that nothing outside the root changed.
    fn assert_outside_unchanged(&self, context: &str) {
        let tmp = self.tmp.path();
        assert_eq!(
            fs::read_to_string(tmp.join("outside.txt")).unwrap(),
            SECRET,
            "{context}"
        );
        assert_eq!(
            fs::read_to_string(tmp.join("outdir/inner.txt")).unwrap(),
            SECRET,
            "{context}"
        );
        assert!(tmp.join("outdir/empty").is_dir(), "{context}");
        let mut top: Vec<String> = fs::read_dir(tmp)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        top.sort();
        assert_eq!(top, ["outdir", "outside.txt", "root"], "{context}");
        let mut inner: Vec<String> = fs::read_dir(tmp.join("outdir"))
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        inner.sort();
        assert_eq!(inner, ["empty", "inner.txt"], "{context}");
    }

    /// Checks that an error message shows no absolute path of this machine beyond what the
    /// model itself wrote.
    fn assert_discreet(&self, message: &str, raw: &str) {
        let without_raw = message.replace(raw, "");
        for secret in self.secrets() {
            assert!(
                !without_raw.contains(&secret),
                "error reveals {secret}: {message}"
            );
        }
        assert!(
            message.chars().count() < 600,
            "error is too long: {} characters",
            message.chars().count()
        );
    }
}

fn args(pairs: &[(&str, &str)]) -> Map<String, Value> {
    pairs
        .iter()
        .map(|(k, v)| ((*k).to_owned(), Value::String((*v).to_owned())))
        .collect()
}

async fn call(files: &FileBox, function: &str, pairs: &[(&str, &str)]) -> Result<Value, ToolError> {
    files.call(function, args(pairs), &CallContext::new()).await
}

fn message(err: &ToolError) -> String {
    err.to_string()
}

// ---------------------------------------------------------------------------------------
// Success paths, through the trait.

#[tokio::test]
async fn write_then_read() {
    let fx = Fixture::new();
    let out = call(
        &fx.files,
        "writefile",
        &[("filepath", "notes.txt"), ("content", "héllo")],
    )
    .await
    .unwrap();
    assert_eq!(out, json!("Wrote 6 bytes to \"notes.txt\" (a new file)."));
    assert_eq!(
        fs::read_to_string(fx.root().join("notes.txt")).unwrap(),
        "héllo"
    );
    let out = call(&fx.files, "readfile", &[("filepath", "notes.txt")])
        .await
        .unwrap();
    assert_eq!(out, json!("héllo"));
}

#[tokio::test]
async fn write_replaces_content() {
    let fx = Fixture::new();
    fs::write(fx.root().join("a.txt"), "a much longer old content").unwrap();
    let out = call(
        &fx.files,
        "writefile",
        &[("filepath", "a.txt"), ("content", "new")],
    )
    .await
    .unwrap();
    assert_eq!(
        out,
        json!("Wrote 3 bytes to \"a.txt\" (replacing its previous content).")
    );
    assert_eq!(fs::read_to_string(fx.root().join("a.txt")).unwrap(), "new");
}

#[tokio::test]
async fn write_creates_missing_parents_and_says_so() {
    let fx = Fixture::new();
    let out = call(
        &fx.files,
        "writefile",
        &[("filepath", "output/deep/results.txt"), ("content", "done")],
    )
    .await
    .unwrap();
    let text = out.as_str().unwrap();
    assert!(text.contains("parent folders were created"), "{text}");
    assert_eq!(
        fs::read_to_string(fx.root().join("output/deep/results.txt")).unwrap(),
        "done"
    );
}

#[tokio::test]
async fn write_normalises_dots_inside_the_root() {
    let fx = Fixture::new();
    call(
        &fx.files,
        "writefile",
        &[("filepath", "./a/../b.txt"), ("content", "x")],
    )
    .await
    .unwrap();
    assert_eq!(fs::read_to_string(fx.root().join("b.txt")).unwrap(), "x");
    assert!(!fx.root().join("a").exists(), "no stray folder for a/..");
}

#[tokio::test]
async fn write_refuses_folder_and_file_as_parent() {
    let fx = Fixture::new();
    fs::create_dir(fx.root().join("docs")).unwrap();
    fs::write(fx.root().join("plain.txt"), "p").unwrap();
    let err = call(
        &fx.files,
        "writefile",
        &[("filepath", "docs"), ("content", "x")],
    )
    .await
    .unwrap_err();
    assert!(message(&err).contains("is a folder"), "{err}");
    let err = call(
        &fx.files,
        "writefile",
        &[("filepath", "plain.txt/x.txt"), ("content", "x")],
    )
    .await
    .unwrap_err();
    assert!(message(&err).contains("is a file, not a folder"), "{err}");
    assert_eq!(
        fs::read_to_string(fx.root().join("plain.txt")).unwrap(),
        "p"
    );
}

#[tokio::test]
async fn read_errors_say_what_to_do() {
    let fx = Fixture::new();
    fs::create_dir(fx.root().join("docs")).unwrap();
    let err = call(&fx.files, "readfile", &[("filepath", "docs/missing.txt")])
        .await
        .unwrap_err();
    assert_eq!(
        message(&err),
        "cannot read \"docs/missing.txt\": it does not exist; file.listfiles(\"docs\") shows what does"
    );
    let err = call(&fx.files, "readfile", &[("filepath", "docs")])
        .await
        .unwrap_err();
    assert_eq!(
        message(&err),
        "cannot read \"docs\": it is a folder, not a file; see what it holds with file.listfiles(\"docs\")"
    );
    let err = call(&fx.files, "readfile", &[("filepath", ".")])
        .await
        .unwrap_err();
    assert!(message(&err).contains("the working folder itself"), "{err}");
}

#[tokio::test]
async fn read_refuses_large_and_binary_files() {
    let fx = Fixture::new();
    let files = fx.files.clone().with_max_read_bytes(10);
    fs::write(fx.root().join("ten.txt"), "0123456789").unwrap();
    fs::write(fx.root().join("eleven.txt"), "0123456789A").unwrap();
    fs::write(fx.root().join("bin.dat"), [0xff, 0xfe, 0x00]).unwrap();
    assert_eq!(
        files.read_file("ten.txt").unwrap(),
        "0123456789",
        "exactly at the limit is allowed"
    );
    let err = files.read_file("eleven.txt").unwrap_err();
    assert_eq!(err.kind(), FileErrorKind::TooLarge);
    assert_eq!(
        err.message(),
        "cannot read \"eleven.txt\": it holds 11 bytes and at most 10 can be read"
    );
    let err = files.read_file("bin.dat").unwrap_err();
    assert_eq!(err.kind(), FileErrorKind::NotText);
    assert_eq!(fx.files.max_read_bytes(), 1024 * 1024);
}

#[tokio::test]
async fn list_sorted_with_folders_marked() {
    let fx = Fixture::new();
    let root = fx.root();
    fs::write(root.join("b.txt"), "").unwrap();
    fs::write(root.join("A.txt"), "").unwrap();
    fs::create_dir_all(root.join("docs/drafts")).unwrap();
    fs::write(root.join("docs/readme.md"), "").unwrap();
    fs::create_dir(root.join("empty")).unwrap();

    let top = json!(["A.txt", "b.txt", "docs/", "empty/"]);
    assert_eq!(call(&fx.files, "listfiles", &[]).await.unwrap(), top);
    assert_eq!(
        call(&fx.files, "listfiles", &[("subdir", "")])
            .await
            .unwrap(),
        top
    );
    assert_eq!(
        call(&fx.files, "listfiles", &[("subdir", ".")])
            .await
            .unwrap(),
        top
    );
    let mut null_arg = Map::new();
    null_arg.insert("subdir".into(), Value::Null);
    assert_eq!(
        fx.files
            .call("listfiles", null_arg, &CallContext::new())
            .await
            .unwrap(),
        top
    );
    assert_eq!(
        call(&fx.files, "listfiles", &[("subdir", "docs")])
            .await
            .unwrap(),
        json!(["drafts/", "readme.md"])
    );
    assert_eq!(
        call(&fx.files, "listfiles", &[("subdir", "empty")])
            .await
            .unwrap(),
        json!([])
    );
    let err = call(&fx.files, "listfiles", &[("subdir", "b.txt")])
        .await
        .unwrap_err();
    assert!(message(&err).contains("is a file, not a folder"), "{err}");
    let err = call(&fx.files, "listfiles", &[("subdir", "nope")])
        .await
        .unwrap_err();
    assert!(message(&err).contains("does not exist"), "{err}");
}

#[cfg(unix)]
#[tokio::test]
async fn list_marks_links_to_folders_inside_the_root() {
    let fx = Fixture::new();
    fs::create_dir(fx.root().join("real")).unwrap();
    std::os::unix::fs::symlink("real", fx.root().join("alias")).unwrap();
    std::os::unix::fs::symlink("/", fx.root().join("to_root")).unwrap();
    assert_eq!(
        fx.files.list_files(".").unwrap(),
        ["alias/", "real/", "to_root"]
    );
}

#[test]
fn list_files_takes_the_folder_as_text_empty_or_dot_for_the_root() {
    let fx = Fixture::new();
    fs::create_dir(fx.root().join("docs")).unwrap();
    fs::write(fx.root().join("docs/a.txt"), "a").unwrap();
    assert_eq!(fx.files.list_files("").unwrap(), ["docs/"]);
    assert_eq!(fx.files.list_files(".").unwrap(), ["docs/"]);
    assert_eq!(fx.files.list_files("docs").unwrap(), ["a.txt"]);
}

#[tokio::test]
async fn delete_file_and_refuse_folder() {
    let fx = Fixture::new();
    fs::write(fx.root().join("gone.txt"), "x").unwrap();
    fs::create_dir(fx.root().join("dir")).unwrap();
    assert_eq!(
        call(&fx.files, "deletefile", &[("filepath", "gone.txt")])
            .await
            .unwrap(),
        json!("Deleted \"gone.txt\".")
    );
    assert!(!fx.root().join("gone.txt").exists());
    let err = call(&fx.files, "deletefile", &[("filepath", "dir")])
        .await
        .unwrap_err();
    assert_eq!(
        message(&err),
        "cannot delete \"dir\": it is a folder; remove an empty folder with file.rmdir(\"dir\")"
    );
    assert!(fx.root().join("dir").is_dir());
    let err = call(&fx.files, "deletefile", &[("filepath", "gone.txt")])
        .await
        .unwrap_err();
    assert!(message(&err).contains("does not exist"), "{err}");
}

#[tokio::test]
async fn mkdir_with_parents_and_idempotent() {
    let fx = Fixture::new();
    assert_eq!(
        call(&fx.files, "mkdir", &[("dirpath", "a/b/c")])
            .await
            .unwrap(),
        json!("Created the folder \"a/b/c\".")
    );
    assert!(fx.root().join("a/b/c").is_dir());
    assert_eq!(
        call(&fx.files, "mkdir", &[("dirpath", "a/b")])
            .await
            .unwrap(),
        json!("The folder \"a/b\" already exists.")
    );
    fs::write(fx.root().join("f"), "").unwrap();
    let err = call(&fx.files, "mkdir", &[("dirpath", "f")])
        .await
        .unwrap_err();
    assert!(
        message(&err).contains("a file with that name exists"),
        "{err}"
    );
    let err = call(&fx.files, "mkdir", &[("dirpath", "f/sub")])
        .await
        .unwrap_err();
    assert!(message(&err).contains("is a file, not a folder"), "{err}");
}

#[tokio::test]
async fn rmdir_only_empty_folders() {
    let fx = Fixture::new();
    fs::create_dir_all(fx.root().join("full/inner")).unwrap();
    fs::create_dir(fx.root().join("empty")).unwrap();
    fs::write(fx.root().join("file.txt"), "").unwrap();
    assert_eq!(
        call(&fx.files, "rmdir", &[("dirpath", "empty")])
            .await
            .unwrap(),
        json!("Removed the folder \"empty\".")
    );
    assert!(!fx.root().join("empty").exists());
    let err = call(&fx.files, "rmdir", &[("dirpath", "full")])
        .await
        .unwrap_err();
    assert_eq!(
        message(&err),
        "cannot remove the folder \"full\": it is not empty; see what it holds with file.listfiles(\"full\") and delete that first"
    );
    assert!(fx.root().join("full/inner").is_dir());
    let err = call(&fx.files, "rmdir", &[("dirpath", "file.txt")])
        .await
        .unwrap_err();
    assert!(
        message(&err).contains("file.deletefile(\"file.txt\")"),
        "{err}"
    );
    for root in [".", "", "a/.."] {
        let err = call(&fx.files, "rmdir", &[("dirpath", root)])
            .await
            .unwrap_err();
        assert!(fx.root().is_dir(), "{root:?}: {err}");
    }
}

#[tokio::test]
async fn calls_are_checked_and_explained() {
    let fx = Fixture::new();
    let err = call(&fx.files, "readfile", &[]).await.unwrap_err();
    assert_eq!(
        message(&err),
        "file.readfile needs the argument filepath; call it like file.readfile(\"docs/readme.txt\")"
    );
    let mut bad = Map::new();
    bad.insert("filepath".into(), json!(3));
    let err = fx
        .files
        .call("readfile", bad, &CallContext::new())
        .await
        .unwrap_err();
    assert!(
        message(&err).contains("must be a string, not a number"),
        "{err}"
    );
    // A JSON value's kind is worded as in every other message of the crate.
    let mut listed = Map::new();
    listed.insert("filepath".into(), json!(["a.txt"]));
    let err = fx
        .files
        .call("readfile", listed, &CallContext::new())
        .await
        .unwrap_err();
    assert!(
        message(&err).contains("must be a string, not a list"),
        "{err}"
    );
    let err = call(&fx.files, "format_disk", &[]).await.unwrap_err();
    assert!(
        matches!(err, ToolError::UnknownFunction { ref name, .. } if name == "format_disk"),
        "{err:?}"
    );
    fs::write(fx.root().join("x.txt"), "case").unwrap();
    assert_eq!(
        call(&fx.files, "ReadFile", &[("filepath", "x.txt")])
            .await
            .unwrap(),
        json!("case")
    );
}

#[tokio::test]
async fn interfaces_and_name() {
    let fx = Fixture::new();
    let ctx = CallContext::new();
    let names: Vec<String> = fx
        .files
        .interfaces(&ctx)
        .iter()
        .map(|i| i.qualified_name())
        .collect();
    assert_eq!(
        names,
        [
            "file.readfile",
            "file.writefile",
            "file.deletefile",
            "file.listfiles",
            "file.mkdir",
            "file.rmdir"
        ]
    );
    for interface in fx.files.interfaces(&ctx) {
        assert!(!interface.description.is_empty(), "{}", interface.name);
        assert!(interface.returns.is_some(), "{}", interface.name);
        for param in &interface.params {
            assert!(!param.description.is_empty(), "{}", param.name);
        }
        let required: Vec<&str> = interface
            .params
            .iter()
            .filter(|p| p.required)
            .map(|p| p.name.as_str())
            .collect();
        let expected: &[&str] = match interface.name.as_str() {
            "writefile" => &["filepath", "content"],
            "listfiles" => &[],
            "mkdir" | "rmdir" => &["dirpath"],
            _ => &["filepath"],
        };
        assert_eq!(required, expected, "{}", interface.name);
    }
    let renamed = fx.files.clone().with_name("disk");
    assert_eq!(ToolBox::name(&renamed), "disk");
    assert!(renamed
        .interfaces(&ctx)
        .iter()
        .all(|i| i.domain.as_deref() == Some("disk")));
    let err = renamed.call("rmdir", Map::new(), &ctx).await.unwrap_err();
    assert!(message(&err).starts_with("disk.rmdir needs"), "{err}");
}

#[tokio::test]
async fn usable_as_a_shared_trait_object() {
    let fx = Fixture::new();
    let shared: Arc<dyn ToolBox> = Arc::new(fx.files.clone());
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                let name = format!("n{i}.txt");
                shared
                    .call(
                        "writefile",
                        args(&[("filepath", &name), ("content", &i.to_string())]),
                        &CallContext::new(),
                    )
                    .await
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap().unwrap();
    }
    assert_eq!(fx.files.list_files(".").unwrap().len(), 8);
    shared.close().await.unwrap();
}

#[test]
fn debug_hides_the_root() {
    let fx = Fixture::new();
    let debug = format!("{:?}", fx.files);
    fx.assert_discreet(&debug, "");
    assert!(debug.contains("FileBox"), "{debug}");
}

// ---------------------------------------------------------------------------------------
// Escapes: each refused, nothing outside the root changed, no absolute path revealed.

/// Every operation a hostile path can be given to, as (function, arguments).
fn attempts(path: &str) -> Vec<(&'static str, Vec<(&'static str, String)>)> {
    let p = path.to_owned();
    vec![
        ("readfile", vec![("filepath", p.clone())]),
        (
            "writefile",
            vec![("filepath", p.clone()), ("content", "pwned".to_owned())],
        ),
        ("deletefile", vec![("filepath", p.clone())]),
        ("listfiles", vec![("subdir", p.clone())]),
        ("mkdir", vec![("dirpath", p.clone())]),
        ("rmdir", vec![("dirpath", p)]),
    ]
}

/// Runs every operation on every path and expects each to be refused. `skip` names the
/// (function, path) pairs not to run because they legitimately act inside the root only
/// (deleting a symbolic link removes the link, not its target); they are tested apart.
async fn assert_all_refused(fx: &Fixture, paths: &[String], skip: &[(&str, &str)]) {
    for path in paths {
        for (function, pairs) in attempts(path) {
            if skip.contains(&(function, path.as_str())) {
                continue;
            }
            let pairs: Vec<(&str, &str)> = pairs.iter().map(|(k, v)| (*k, v.as_str())).collect();
            let outcome = call(&fx.files, function, &pairs).await;
            let context = format!("{function}({path:?})");
            match outcome {
                Ok(value) => panic!("{context} was not refused: {value}"),
                Err(err) => fx.assert_discreet(&message(&err), path),
            }
            fx.assert_outside_unchanged(&context);
        }
    }
}

#[tokio::test]
async fn dot_dot_is_refused() {
    let fx = Fixture::new();
    let paths: Vec<String> = [
        "..",
        "../x",
        "../outside.txt",
        "../outdir",
        "../outdir/inner.txt",
        "../outdir/empty",
        "../outdir/new",
        "a/../../x",
        "a/../../outside.txt",
        "./../outdir/empty",
        "../root/../outside.txt",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    assert_all_refused(&fx, &paths, &[]).await;
    let err = fx.files.read_file("../outside.txt").unwrap_err();
    assert_eq!(err.kind(), FileErrorKind::OutsideRoot);
    assert!(
        err.message().contains("leads outside the working folder"),
        "{err}"
    );
}

#[tokio::test]
async fn absolute_paths_are_refused() {
    let fx = Fixture::new();
    let tmp = fx.tmp.path();
    let paths: Vec<String> = vec![
        "/etc/passwd".to_owned(),
        "/".to_owned(),
        "/tmp".to_owned(),
        tmp.join("outside.txt").display().to_string(),
        tmp.join("outdir").display().to_string(),
        tmp.join("outdir/empty").display().to_string(),
        tmp.join("outdir/new").display().to_string(),
        tmp.join("root/inside.txt").display().to_string(),
        "C:\\Windows\\win.ini".to_owned(),
        "\\\\server\\share".to_owned(),
    ];
    assert_all_refused(&fx, &paths, &[]).await;
    let err = fx.files.read_file("/etc/passwd").unwrap_err();
    assert_eq!(err.kind(), FileErrorKind::OutsideRoot);
    assert!(err.message().contains("absolute path"), "{err}");
    assert!(!fx.root().join("inside.txt").exists());
}

#[cfg(unix)]
#[tokio::test]
async fn symlink_to_slash_is_refused() {
    use std::os::unix::fs::symlink;
    let fx = Fixture::new();
    symlink("/", fx.root().join("to_root")).unwrap();
    let tmp = fx.tmp.path().display().to_string();
    let through = |rest: &str| format!("to_root{tmp}/{rest}");
    let paths = vec![
        "to_root/etc/passwd".to_owned(),
        "to_root/etc".to_owned(),
        through("outside.txt"),
        through("outdir"),
        through("outdir/inner.txt"),
        through("outdir/empty"),
        through("outdir/new"),
        through("root/inside.txt"),
        "to_root".to_owned(),
    ];
    assert_all_refused(&fx, &paths, &[("deletefile", "to_root")]).await;
    let err = fx.files.read_file("to_root/etc/passwd").unwrap_err();
    assert_eq!(err.kind(), FileErrorKind::OutsideRoot, "{err}");
    // Deleting the link removes the link only.
    fx.files.delete_file("to_root").unwrap();
    assert!(fs::symlink_metadata(fx.root().join("to_root")).is_err());
    fx.assert_outside_unchanged("deleting the link to /");
}

#[cfg(unix)]
#[tokio::test]
async fn symlinks_pointing_out_are_refused() {
    use std::os::unix::fs::symlink;
    let fx = Fixture::new();
    let tmp = fx.tmp.path();
    symlink("../outside.txt", fx.root().join("rel_file")).unwrap();
    symlink(tmp.join("outside.txt"), fx.root().join("abs_file")).unwrap();
    symlink("../outdir", fx.root().join("rel_dir")).unwrap();
    fs::create_dir(fx.root().join("sub")).unwrap();
    symlink("../../outdir", fx.root().join("sub/deep_dir")).unwrap();
    let paths: Vec<String> = [
        "rel_file",
        "abs_file",
        "rel_dir",
        "rel_dir/inner.txt",
        "rel_dir/empty",
        "rel_dir/new",
        "sub/deep_dir/inner.txt",
        "sub/deep_dir/empty",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    let links = ["rel_file", "abs_file", "rel_dir"];
    let skip: Vec<(&str, &str)> = links.iter().map(|l| ("deletefile", *l)).collect();
    assert_all_refused(&fx, &paths, &skip).await;
    // Deleting a link removes the link, never its target.
    for link in links {
        fx.files.delete_file(link).unwrap();
        assert!(
            fs::symlink_metadata(fx.root().join(link)).is_err(),
            "{link}"
        );
        fx.assert_outside_unchanged(link);
    }
}

#[cfg(unix)]
#[tokio::test]
async fn symlink_loops_are_refused() {
    use std::os::unix::fs::symlink;
    let fx = Fixture::new();
    symlink("loop_b", fx.root().join("loop_a")).unwrap();
    symlink("loop_a", fx.root().join("loop_b")).unwrap();
    symlink("self", fx.root().join("self")).unwrap();
    let paths: Vec<String> = ["loop_a", "loop_a/x", "loop_b/y/z", "self", "self/x"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    let skip = [("deletefile", "loop_a"), ("deletefile", "self")];
    assert_all_refused(&fx, &paths, &skip).await;
    let err = fx.files.read_file("loop_a").unwrap_err();
    assert!(
        err.message().contains("symbolic links"),
        "a loop is named as such: {err}"
    );
    let mut names = fx.files.list_files(".").unwrap();
    names.sort();
    assert_eq!(names, ["loop_a", "loop_b", "self"], "nothing was created");
}

#[tokio::test]
async fn nul_bytes_are_refused() {
    let fx = Fixture::new();
    let paths: Vec<String> = ["a\0b", "\0", "../outside.txt\0", "ok.txt\0../../x"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    assert_all_refused(&fx, &paths, &[]).await;
    let err = fx.files.write_file("a\0b", "x").unwrap_err();
    assert_eq!(err.kind(), FileErrorKind::InvalidPath);
    assert!(err.message().contains("NUL"), "{err}");
    assert!(!err.message().contains('\0'), "the NUL is escaped: {err:?}");
    assert!(fs::read_dir(fx.root()).unwrap().next().is_none());
}

#[tokio::test]
async fn overlong_names_are_refused() {
    let fx = Fixture::new();
    let long = "x".repeat(10_000);
    let paths = vec![
        long.clone(),
        format!("../{long}"),
        format!("dir/{long}"),
        "y".repeat(256),
        format!("{}/z", "d/".repeat(3000)),
    ];
    assert_all_refused(&fx, &paths, &[]).await;
    let err = fx.files.write_file(&long, "x").unwrap_err();
    assert_eq!(err.kind(), FileErrorKind::InvalidPath);
    assert!(
        err.message().contains("(10000 characters)"),
        "the name is cut short in the message: {err}"
    );
    assert!(fs::read_dir(fx.root()).unwrap().next().is_none());
    // 255 bytes is a legal name.
    fx.files.write_file(&"y".repeat(255), "ok").unwrap();
}

#[tokio::test]
async fn the_root_itself_is_never_a_target() {
    let fx = Fixture::new();
    for path in [".", "./", "a/..", ""] {
        for function in ["readfile", "deletefile", "mkdir", "rmdir"] {
            let arg = if function.ends_with("dir") {
                "dirpath"
            } else {
                "filepath"
            };
            let err = call(&fx.files, function, &[(arg, path)]).await.unwrap_err();
            fx.assert_discreet(&message(&err), path);
        }
        let err = call(
            &fx.files,
            "writefile",
            &[("filepath", path), ("content", "x")],
        )
        .await
        .unwrap_err();
        fx.assert_discreet(&message(&err), path);
    }
    assert!(fx.root().is_dir());
    fx.assert_outside_unchanged("root as target");
}

// ---------------------------------------------------------------------------------------
// Setup.

#[test]
fn filetb_with_absolute_path() {
    let fx = Fixture::new();
    let filetb = fx.tmp.path().join("abs.filetb");
    fs::write(&filetb, format!("  {}  \n", fx.root().display())).unwrap();
    let files = FileBox::from_filetb(&filetb).unwrap();
    files.write_file("hi.txt", "hi").unwrap();
    assert_eq!(fs::read_to_string(fx.root().join("hi.txt")).unwrap(), "hi");
}

#[test]
fn filetb_relative_to_its_own_folder() {
    let fx = Fixture::new();
    let filetb = fx.tmp.path().join("outdir").join(".filetb");
    fs::write(&filetb, "../root\n\n").unwrap();
    let files = FileBox::from_filetb(&filetb).unwrap();
    files.write_file("rel.txt", "r").unwrap();
    assert!(fx.root().join("rel.txt").is_file());
    fs::remove_file(&filetb).unwrap();
}

#[test]
fn filetb_errors_are_clear() {
    let fx = Fixture::new();
    let dir = fx.tmp.path();
    let missing = dir.join("missing.filetb");
    let err = FileBox::from_filetb(&missing).unwrap_err();
    assert!(matches!(err, FileBoxError::ReadFiletb { .. }), "{err:?}");
    assert!(err.to_string().contains("missing.filetb"), "{err}");

    for (name, text) in [("empty.filetb", ""), ("blank.filetb", "  \n\t\n")] {
        let path = dir.join(name);
        fs::write(&path, text).unwrap();
        let err = FileBox::from_filetb(&path).unwrap_err();
        assert!(
            matches!(err, FileBoxError::EmptyFiletb { .. }),
            "{name}: {err:?}"
        );
        assert!(err.to_string().contains("is empty"), "{err}");
    }

    let two = dir.join("two.filetb");
    fs::write(&two, "root\nother\n").unwrap();
    let err = FileBox::from_filetb(&two).unwrap_err();
    assert!(
        matches!(err, FileBoxError::MultilineFiletb { .. }),
        "{err:?}"
    );

    let nowhere = dir.join("nowhere.filetb");
    fs::write(&nowhere, "no_such_folder").unwrap();
    let err = FileBox::from_filetb(&nowhere).unwrap_err();
    assert!(matches!(err, FileBoxError::RootMissing { .. }), "{err:?}");
    assert!(err.to_string().contains("does not exist"), "{err}");

    let file_root = dir.join("file_root.filetb");
    fs::write(&file_root, "outside.txt").unwrap();
    let err = FileBox::from_filetb(&file_root).unwrap_err();
    assert!(
        matches!(err, FileBoxError::RootNotAFolder { .. }),
        "{err:?}"
    );
}

#[test]
fn open_needs_an_existing_folder() {
    let fx = Fixture::new();
    let err = FileBox::open(fx.tmp.path().join("absent")).unwrap_err();
    assert!(matches!(err, FileBoxError::RootMissing { .. }), "{err:?}");
    let err = FileBox::open(fx.tmp.path().join("outside.txt")).unwrap_err();
    assert!(
        matches!(err, FileBoxError::RootNotAFolder { .. }),
        "{err:?}"
    );
    assert_eq!(FileBox::open(fx.root()).unwrap().name(), "file");
}

#[test]
fn a_root_that_moves_keeps_the_sandbox() {
    // The box holds the folder itself, not its path: renaming the root does not redirect
    // the box to whatever takes the old path's place.
    let fx = Fixture::new();
    let moved = fx.tmp.path().join("moved");
    fs::rename(fx.root(), &moved).unwrap();
    fs::create_dir(fx.root()).unwrap();
    fx.files.write_file("where.txt", "here").unwrap();
    assert!(moved.join("where.txt").is_file());
    assert!(!fx.root().join("where.txt").exists());
}

// ---------------------------------------------------------------------------------------
// Hostile folders: a FIFO swapped in, a trailing slash, names that reorder the message.

/// Makes a FIFO at `path`.
#[cfg(unix)]
fn mkfifo(path: &std::path::Path) {
    use std::os::unix::ffi::OsStrExt;
    let name = std::ffi::CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `name` is a valid NUL-terminated path for the call's duration.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
}

#[cfg(unix)]
#[test]
fn a_fifo_in_place_of_a_file_is_refused_without_blocking() {
    let tmp = tempfile::tempdir().unwrap();
    let files = FileBox::open(tmp.path()).unwrap();
    mkfifo(&tmp.path().join("pipe"));
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let read = files.read_file("pipe").map_err(|e| e.to_string());
        let write = files.write_file("pipe", "x").map_err(|e| e.to_string());
        let _ = send.send((read, write));
    });
    let (read, write) = receive
        .recv_timeout(std::time::Duration::from_secs(10))
        .expect("a FIFO blocked the file box");
    assert_eq!(
        read.unwrap_err(),
        "cannot read \"pipe\": it is not a regular file"
    );
    assert_eq!(
        write.unwrap_err(),
        "cannot write \"pipe\": it is not a regular file"
    );
}

/// A file and a FIFO take turns under one name while the box reads and writes it: the
/// box's first look and its opening see different things, and it must never block.
#[cfg(unix)]
#[test]
fn a_fifo_swapped_in_while_a_call_runs_never_blocks() {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_owned();
    let files = FileBox::open(&root).unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let swapper = {
        let stop = Arc::clone(&stop);
        let root = root.clone();
        std::thread::spawn(move || {
            // Bounded in count as well as by the flag.
            for _ in 0..200_000 {
                if stop.load(std::sync::atomic::Ordering::Relaxed) {
                    break;
                }
                let _ = fs::write(root.join("file.tmp"), "text");
                let _ = fs::rename(root.join("file.tmp"), root.join("target"));
                let _ = fs::remove_file(root.join("fifo.tmp"));
                mkfifo(&root.join("fifo.tmp"));
                let _ = fs::rename(root.join("fifo.tmp"), root.join("target"));
            }
        })
    };
    let (send, receive) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let until = std::time::Instant::now() + std::time::Duration::from_secs(3);
        let mut calls = 0u32;
        while std::time::Instant::now() < until {
            let _ = files.read_file("target");
            let _ = files.write_file("target", "new text");
            calls += 1;
        }
        let _ = send.send(calls);
    });
    let calls = receive.recv_timeout(std::time::Duration::from_secs(20));
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = swapper.join();
    assert!(calls.is_ok(), "a call blocked on a FIFO swapped in");
}

#[test]
fn writefile_with_a_trailing_slash_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let files = FileBox::open(tmp.path()).unwrap();
    let error = files.write_file("trailing/", "x").unwrap_err().to_string();
    assert_eq!(
        error,
        "cannot write \"trailing/\": a path ending in \"/\" names a folder, not a file; write the file's name without it, such as \"trailing/notes.txt\""
    );
    assert!(!tmp.path().join("trailing").exists());
    fs::write(tmp.path().join("a.txt"), "keep").unwrap();
    assert!(files.delete_file("a.txt/").is_err());
    assert!(files.read_file("a.txt/").is_err());
    assert!(tmp.path().join("a.txt").exists());
}

#[test]
fn bidi_and_invisible_characters_are_escaped_in_messages() {
    let tmp = tempfile::tempdir().unwrap();
    let files = FileBox::open(tmp.path()).unwrap();
    let error = files
        .read_file("invoice\u{202E}fdp.exe\u{2066}\u{200B}\u{2028}")
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("cannot read \"invoice\\u{202e}fdp.exe\\u{2066}\\u{200b}\\u{2028}\""),
        "{error}"
    );
    for c in ['\u{202E}', '\u{2066}', '\u{200B}', '\u{2028}'] {
        assert!(!error.contains(c), "{error}");
    }
}

/// A name that hides text (tag characters spelling a message, a Hangul filler, a variation
/// selector, a combining grapheme joiner, a deprecated format character) is shown with
/// each of them as an escape, the same list the terminal questions of `atfunc exec` use.
#[tokio::test]
async fn invisible_characters_in_a_name_are_shown_as_escapes() {
    let fx = Fixture::new();
    let name = "a\u{e0041}\u{e0042}b\u{3164}c\u{115f}d\u{fe0f}e\u{34f}f\u{206a}g.txt";
    let err = fx.files.read_file(name).unwrap_err();
    assert_eq!(err.kind(), FileErrorKind::NotFound, "{err}");
    assert!(
        err.message().contains(
            "a\\u{e0041}\\u{e0042}b\\u{3164}c\\u{115f}d\\u{fe0f}e\\u{34f}f\\u{206a}g.txt"
        ),
        "{err}"
    );
    for c in name.chars().filter(|c| !c.is_ascii()) {
        assert!(!err.message().contains(c), "U+{:04X}: {err}", u32::from(c));
    }
}

/// A hard link inside the root to a file outside it: writing replaces the name inside the
/// root with a new file and never writes through the link.
#[cfg(unix)]
#[tokio::test]
async fn write_through_a_hard_link_leaves_the_file_outside_unchanged() {
    use std::os::unix::fs::PermissionsExt;
    let fx = Fixture::new();
    fs::hard_link(
        fx.tmp.path().join("outside.txt"),
        fx.root().join("link.txt"),
    )
    .unwrap();
    fs::set_permissions(
        fx.root().join("link.txt"),
        fs::Permissions::from_mode(0o640),
    )
    .unwrap();
    let out = call(
        &fx.files,
        "writefile",
        &[("filepath", "link.txt"), ("content", "changed")],
    )
    .await
    .unwrap();
    assert_eq!(
        out,
        json!("Wrote 7 bytes to \"link.txt\" (replacing its previous content).")
    );
    assert_eq!(
        fs::read_to_string(fx.root().join("link.txt")).unwrap(),
        "changed"
    );
    // The outside file keeps its content (its mode was changed through the link above).
    assert_eq!(
        fs::read_to_string(fx.tmp.path().join("outside.txt")).unwrap(),
        SECRET
    );
    // The new file keeps the permissions the old one had, and nothing else is left.
    let mode = fs::metadata(fx.root().join("link.txt"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o640);
    let names: Vec<String> = fs::read_dir(fx.root())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert_eq!(names, ["link.txt"]);
}

/// Through a symbolic link inside the root, the link stays and its target is replaced.
#[cfg(unix)]
#[tokio::test]
async fn write_through_a_symbolic_link_inside_the_root_replaces_its_target() {
    let fx = Fixture::new();
    fs::create_dir(fx.root().join("docs")).unwrap();
    fs::write(fx.root().join("docs/real.txt"), "old").unwrap();
    std::os::unix::fs::symlink("docs/real.txt", fx.root().join("alias.txt")).unwrap();
    fx.files.write_file("alias.txt", "new").unwrap();
    assert!(fs::symlink_metadata(fx.root().join("alias.txt"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(
        fs::read_to_string(fx.root().join("docs/real.txt")).unwrap(),
        "new"
    );
    let mut names: Vec<String> = fs::read_dir(fx.root().join("docs"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(names, ["real.txt"]);
}
