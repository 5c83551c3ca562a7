//! The native half of the Python package `atfunc` (`atfunc._atfunc`).
//!
//! The contract: every function here is the library's (or the CLI's) own answer, turned
//! into Python values, never a second implementation of it.
//! - Tools ([`tools`]) are loaded and validated once into a `Tools` object; a function
//!   given tools in another form (JSON text, a list of dicts, a path) loads them itself.
//! - `parse` and `StreamParser` ([`records`]) give the records `atfunc parse` prints, as
//!   dicts; `parse_jsonl` and `parse_arrow` ([`arrow`]) the lines `atfunc parse --jsonl`
//!   prints and the same calls as Arrow structs, over Arrow arrays read in place.
//! - `render`, `grammar` and the formatting functions ([`text`]) give the library's text.
//! - `Toolbox` ([`toolbox`]) runs Python functions as tools in the crate's registry.
//! - `_run_cli` ([`cli`]) is the `atfunc` command the package installs: the CLI crate's
//!   own `run`, so the wheel ships the command without a second binary.
//!
//! Work on a large input or a batch runs with the GIL released, so other Python threads go
//! on meanwhile. A panic (a bug, never bad input) unwinds to the function's boundary, where
//! PyO3 raises it as `atfunc.PanicException`: the interpreter lives on. The wheel is built
//! with `panic = "unwind"` (Cargo's default) for that reason.

mod answer;
mod arrow;
mod calls;
mod cli;
mod convert;
mod records;
mod text;
mod toolbox;
mod tools;

use pyo3::prelude::*;

/// Raises a Rust panic carrying `message`, from a thread of rayon's pool with the GIL
/// released: the path a bug in a batch would take. For the test that a panic becomes a
/// Python exception; not part of the API.
#[pyfunction]
fn _panic_for_test(py: Python<'_>, message: String) -> PyResult<()> {
    use rayon::prelude::*;
    py.detach(|| {
        (0..4).into_par_iter().for_each(|i| {
            if i == 3 {
                panic!("{message}");
            }
        });
    });
    Ok(())
}

#[pymodule]
fn _atfunc(m: &Bound<'_, PyModule>) -> PyResult<()> {
    let py = m.py();
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    m.add("ToolsError", py.get_type::<tools::ToolsError>())?;
    m.add("GrammarError", py.get_type::<text::GrammarError>())?;
    m.add(
        "PanicException",
        py.get_type::<pyo3::panic::PanicException>(),
    )?;
    m.add_class::<tools::Tools>()?;
    m.add_class::<records::StreamParser>()?;
    m.add_class::<toolbox::NativeRegistry>()?;
    m.add_class::<toolbox::NativeStream>()?;
    m.add_class::<calls::Cancel>()?;
    m.add_function(wrap_pyfunction!(records::parse, m)?)?;
    m.add_function(wrap_pyfunction!(arrow::parse_jsonl, m)?)?;
    m.add_function(wrap_pyfunction!(arrow::parse_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(text::render, m)?)?;
    m.add_function(wrap_pyfunction!(text::grammar, m)?)?;
    m.add_function(wrap_pyfunction!(text::format_results, m)?)?;
    m.add_function(wrap_pyfunction!(text::truncate, m)?)?;
    m.add_function(wrap_pyfunction!(text::fit_json, m)?)?;
    m.add_function(wrap_pyfunction!(text::call_text, m)?)?;
    m.add_function(wrap_pyfunction!(_panic_for_test, m)?)?;
    m.add_function(wrap_pyfunction!(cli::_run_cli, m)?)?;
    Ok(())
}
