//! Tools as Python hands them over: a JSON string, a list of dicts (or any JSON-like
//! value) or a path, loaded and validated once into a [`Tools`] object.
//!
//! Loading is the CLI's `--tools FILE`: the three shapes a tools file takes, every problem
//! of every definition listed at once, then the cross-checks of `atfunc check`. What fails
//! raises `ToolsError`, a `ValueError` whose `problems` attribute lists the problems one
//! string each.

use crate::convert::json_to_py;
use atfunc::batch::Batch;
use atfunc::interface::{LoadOptions, Loaded, Strictness};
use atfunc::parse::Dialect;
use atfunc::{Catalog, Interface, LoadError};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString, PyTuple};
use serde_json::Value as Json;
use std::sync::{Arc, OnceLock};

pyo3::create_exception!(
    atfunc,
    ToolsError,
    PyValueError,
    "The tools are not valid. The message lists every problem found; `problems` lists\nthem one string each, each naming the function, its toolbox and what to fix."
);

/// A tool set loaded and validated once; pass it wherever `tools` is taken so a batch
/// does not load the tools again.
///
/// `root` names the toolbox whose functions are called without their prefix
/// (`@get(...)` for `weather.get`), regardless of case; a name that is not one of the
/// tools' toolboxes is a `ToolsError` naming those there are. A `str` is read as _JSON
/// text; give a file's path as a `pathlib.Path`. Raises `ToolsError` listing every
/// problem, `OSError` for a file that cannot be read, `TypeError` for a value that is not
/// _JSON.
///
/// Definitions are read as servers read them: what one contradicts (a boolean whose
/// choices are strings, bounds the wrong way round, an unknown type, ...) is worked around
/// and said as a `UserWarning`; `strict=True` raises `ToolsError` for each instead, as
/// `atfunc check --strict` does.
///
/// Two `Tools` are equal (`==`, and hash alike) when they load to the same functions with
/// the same root, whichever shape each was given in; `definitions()` gives back what was
/// given.
#[pyclass(module = "atfunc", frozen, name = "Tools")]
pub struct Tools {
    pub(crate) interfaces: Arc<Vec<Interface>>,
    pub(crate) catalog: Arc<Catalog>,
    /// For `parse_jsonl`: kept with the tools so that its cache of the records' own tool
    /// sets lives from one batch to the next.
    pub(crate) batches: Batches,
    /// The definitions as JSON text, for pickling: a worker of Ray or Spark that gets a
    /// `Tools` loads the same definitions, wherever they were read from.
    json: String,
}

/// The [`Batch`] of each dialect for one tool set (or none), made when first asked for
/// and kept, with its cache of the records' own tool sets, for the next call.
pub(crate) struct Batches {
    tools: Option<Catalog>,
    /// In the order of [`Dialect::ALL`].
    made: [OnceLock<Arc<Batch>>; Dialect::ALL.len()],
}

impl Batches {
    pub(crate) fn new(tools: Option<Catalog>) -> Batches {
        Batches {
            tools,
            made: std::array::from_fn(|_| OnceLock::new()),
        }
    }

    /// The batch that reads completions written in `dialect`.
    pub(crate) fn get(&self, dialect: Dialect) -> Arc<Batch> {
        let make = || Arc::new(Batch::new(self.tools.clone()).with_dialect(dialect));
        match Dialect::ALL
            .iter()
            .position(|d| *d == dialect)
            .and_then(|i| self.made.get(i))
        {
            Some(made) => made.get_or_init(make).clone(),
            None => make(),
        }
    }
}

#[pymethods]
impl Tools {
    #[new]
    #[pyo3(signature = (tools, *, root = None, strict = false))]
    fn new(
        py: Python<'_>,
        tools: &Bound<'_, PyAny>,
        root: Option<String>,
        strict: bool,
    ) -> PyResult<Tools> {
        let (json, source) = tools_json(py, tools)?;
        let strictness = if strict {
            Strictness::Strict
        } else {
            Strictness::Lenient
        };
        let loaded =
            load(&json, strictness).map_err(|problems| tools_error(py, source, problems))?;
        // Tools written for servers that accept them as they are load here too; what was
        // worked around is a warning, as the CLI says it on stderr.
        for warning in &loaded.warnings {
            crate::convert::user_warning(py, &warning.warning())?;
        }
        let interfaces = loaded.interfaces;
        let json = json.map(|json| json.to_string()).unwrap_or_default();
        let mut catalog = Catalog::new(interfaces.clone());
        if let Some(root) = root {
            catalog = catalog.with_root(root_toolbox(py, &interfaces, &root)?);
        }
        Ok(Tools {
            interfaces: Arc::new(interfaces),
            batches: Batches::new(Some(catalog.clone())),
            catalog: Arc::new(catalog),
            json,
        })
    }

    /// Pickling carries the definitions themselves (not a path), so a Ray or Spark
    /// worker that gets a `Tools` loads the same tools.
    fn __getnewargs_ex__<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyTuple>, Bound<'py, PyDict>)> {
        let args = PyTuple::new(py, [&self.json])?;
        let kwargs = PyDict::new(py);
        kwargs.set_item("root", self.catalog.root())?;
        Ok((args, kwargs))
    }

    /// The definitions as they were given (each in its own shape), as a list of dicts:
    /// `Tools(tools.definitions())` loads the same tools again.
    fn definitions(&self, py: Python<'_>) -> PyResult<Py<PyAny>> {
        let json: Json = serde_json::from_str(&self.json)
            .map_err(|e| PyValueError::new_err(format!("the definitions kept: {e}")))?;
        let list = match json {
            Json::Array(items) => items,
            Json::Object(mut map) => {
                match map.remove("tools").or_else(|| map.remove("functions")) {
                    Some(Json::Array(items)) => items,
                    Some(other) => {
                        map.insert(String::from("tools"), other);
                        vec![Json::Object(map)]
                    }
                    None => vec![Json::Object(map)],
                }
            }
            other => vec![other],
        };
        json_to_py(py, &Json::Array(list))
    }

    // Equal when both load to the same functions and have the same root toolbox,
    // whichever shape each was given in.
    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        match other.cast::<Tools>() {
            Ok(other) => {
                let other = other.get();
                self.interfaces == other.interfaces && self.catalog.root() == other.catalog.root()
            }
            Err(_) => false,
        }
    }

    // Consistent with `==`: equal tools have the same names and root.
    fn __hash__(&self) -> u64 {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        self.names().hash(&mut hasher);
        self.catalog.root().hash(&mut hasher);
        hasher.finish()
    }

    /// The qualified names of the functions, in the order they were defined.
    #[getter]
    fn names(&self) -> Vec<String> {
        self.interfaces
            .iter()
            .map(Interface::qualified_name)
            .collect()
    }

    /// The root toolbox, if any.
    #[getter]
    fn root(&self) -> Option<String> {
        self.catalog.root().map(str::to_owned)
    }

    fn __len__(&self) -> usize {
        self.interfaces.len()
    }

    fn __repr__(&self) -> String {
        let names = self.names();
        let shown = names.iter().take(5).cloned().collect::<Vec<_>>().join(", ");
        let more = names.len().saturating_sub(5);
        let more = if more > 0 {
            format!(", ... {more} more")
        } else {
            String::new()
        };
        match self.catalog.root() {
            Some(root) => format!("<atfunc.Tools [{shown}{more}] root={root:?}>"),
            None => format!("<atfunc.Tools [{shown}{more}]>"),
        }
    }
}

/// The toolbox `root` names among the functions' toolboxes (as the CLI's `--root-toolbox`,
/// regardless of case; spelt as the definitions spell it), or a `ToolsError` naming the
/// toolboxes there are.
fn root_toolbox(py: Python<'_>, interfaces: &[Interface], root: &str) -> PyResult<String> {
    let mut toolboxes: Vec<&str> = Vec::new();
    for domain in interfaces.iter().filter_map(|i| i.domain.as_deref()) {
        if !toolboxes.contains(&domain) {
            toolboxes.push(domain);
        }
    }
    if let Some(found) = toolboxes
        .iter()
        .find(|d| d.to_lowercase() == root.to_lowercase())
    {
        return Ok((*found).to_owned());
    }
    let there = if toolboxes.is_empty() {
        String::from(
            "these tools have no toolbox (no function name has a prefix such as 'weather.')",
        )
    } else {
        format!("the toolboxes are: {}", toolboxes.join(", "))
    };
    Err(tools_error(
        py,
        Source::Value,
        vec![format!(
            "root '{root}' is not a toolbox of these tools; {there}"
        )],
    ))
}

/// `tools` as given to a function: `None`, a [`Tools`], or anything [`Tools::new`] takes.
pub(crate) fn optional(
    py: Python<'_>,
    tools: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<Py<Tools>>> {
    match tools {
        None => Ok(None),
        Some(tools) if tools.is_none() => Ok(None),
        Some(tools) => required(py, tools).map(Some),
    }
}

/// `tools` as given to a function that needs some: a [`Tools`], or anything
/// [`Tools::new`] takes.
pub(crate) fn required(py: Python<'_>, tools: &Bound<'_, PyAny>) -> PyResult<Py<Tools>> {
    if let Ok(loaded) = tools.cast::<Tools>() {
        return Ok(loaded.clone().unbind());
    }
    Py::new(py, Tools::new(py, tools, None, false)?)
}

/// Where the tools came from, for messages: a file names itself in front of each problem.
enum Source {
    Value,
    File(String),
}

/// The JSON text of `tools`: a `str` is JSON, an `os.PathLike` names a file, anything else
/// is turned into JSON by Python's `json` module (lists and dicts of plain values).
fn tools_json(
    py: Python<'_>,
    tools: &Bound<'_, PyAny>,
) -> PyResult<(Result<Json, String>, Source)> {
    if let Ok(text) = tools.cast::<PyString>() {
        let text = text.to_cow()?;
        let json = parse_json(&text).map_err(|error| {
            // A str is JSON; a path is a Path. Say so when the str is no JSON at all.
            let path = std::path::Path::new(text.trim());
            if text.trim_start().starts_with(['[', '{']) {
                error
            } else if path.is_file() {
                format!("{error} (a str is read as JSON; to read the file {text:?}, pass pathlib.Path({text:?}))")
            } else {
                format!("{error} (a str is read as JSON text; to read a tools file, pass its path as pathlib.Path(...), not as a str)")
            }
        });
        return Ok((json, Source::Value));
    }
    if tools.hasattr("__fspath__")? {
        let path = py.import("os")?.call_method1("fspath", (tools,))?;
        let path: std::path::PathBuf = path.extract()?;
        let shown = path.display().to_string();
        let text = std::fs::read_to_string(&path).map_err(|e| {
            pyo3::exceptions::PyOSError::new_err(format!("cannot read tools file {shown}: {e}"))
        })?;
        return Ok((parse_json(&text), Source::File(shown)));
    }
    if tools.cast::<pyo3::types::PyBytes>().is_ok() {
        return Err(pyo3::exceptions::PyTypeError::new_err(
            "tools as bytes are not read: give a str of JSON, a list of dicts or a path (pathlib.Path)",
        ));
    }
    let text: String = py
        .import("json")?
        .call_method1("dumps", (tools,))
        .map_err(|e| {
            pyo3::exceptions::PyTypeError::new_err(format!(
                "tools must be a JSON str, a list of dicts or a path (os.PathLike), \
                 and this value cannot be written as JSON: {e}"
            ))
        })?
        .extract()?;
    Ok((parse_json(&text), Source::Value))
}

fn parse_json(text: &str) -> Result<Json, String> {
    serde_json::from_str(text).map_err(|e| format!("not valid JSON: {e}"))
}

/// The interfaces of readable tools, with what was worked around to read them, or every
/// problem found.
fn load(json: &Result<Json, String>, strictness: Strictness) -> Result<Loaded, Vec<String>> {
    let json = json.as_ref().map_err(|e| vec![e.clone()])?;
    let problems = match LoadOptions::default()
        .with_strictness(strictness)
        .load(json)
    {
        Ok(loaded) => return Ok(loaded),
        Err(LoadError::Invalid(problems)) => problems,
        Err(other) => return Err(vec![other.to_string()]),
    };
    Err(problems.iter().map(ToString::to_string).collect())
}

fn tools_error(py: Python<'_>, source: Source, problems: Vec<String>) -> PyErr {
    let place = match &source {
        Source::Value => String::from("invalid tools"),
        Source::File(path) => format!("{path}: invalid tools file"),
    };
    let list: String = problems.iter().map(|p| format!("\n  {p}")).collect();
    let error = ToolsError::new_err(format!("{place} ({} problem(s)):{list}", problems.len()));
    // The list is for programs; the message above is the same for people.
    let attached =
        PyList::new(py, &problems).and_then(|list| error.value(py).setattr("problems", list));
    match attached {
        Ok(()) => error,
        Err(other) => other,
    }
}
