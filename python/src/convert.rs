//! JSON values as Python objects: objects become dicts (keys in order), arrays lists.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};
use pyo3::IntoPyObjectExt;
use serde_json::Value as Json;

/// `value` as the Python object `json.loads` gives for its text.
pub(crate) fn json_to_py(py: Python<'_>, value: &Json) -> PyResult<Py<PyAny>> {
    Ok(match value {
        Json::Null => py.None(),
        Json::Bool(b) => b.into_py_any(py)?,
        Json::Number(n) => {
            if let Some(i) = n.as_i64() {
                i.into_py_any(py)?
            } else if let Some(u) = n.as_u64() {
                u.into_py_any(py)?
            } else {
                n.as_f64().unwrap_or(f64::NAN).into_py_any(py)?
            }
        }
        Json::String(s) => s.into_py_any(py)?,
        Json::Array(items) => {
            let items = items
                .iter()
                .map(|item| json_to_py(py, item))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any().unbind()
        }
        Json::Object(map) => {
            let dict = PyDict::new(py);
            for (key, item) in map {
                dict.set_item(key, json_to_py(py, item)?)?;
            }
            dict.into_any().unbind()
        }
    })
}

/// `value`, given as the argument `name`, as a count or a length: a negative one (or one
/// past what `T` holds) is a `ValueError` that names the argument, where a conversion of
/// its own would raise a bare `OverflowError`.
pub(crate) fn non_negative<T: TryFrom<i64>>(name: &str, value: i64) -> PyResult<T> {
    if value < 0 {
        return Err(pyo3::exceptions::PyValueError::new_err(format!(
            "{name} must be 0 or more, got {value}"
        )));
    }
    T::try_from(value).map_err(|_| {
        pyo3::exceptions::PyValueError::new_err(format!("{name}={value} is too large"))
    })
}

/// `value`, given as the argument `name`, as a count of at least `least`: one below it,
/// or past what a `usize` holds (`10**20`), is a `ValueError` that names the argument,
/// where the conversion of its own would raise a bare `OverflowError`; one that is no
/// integer, the conversion's `TypeError`.
pub(crate) fn count_at_least(
    name: &str,
    value: &Bound<'_, PyAny>,
    least: usize,
) -> PyResult<usize> {
    let below = || {
        pyo3::exceptions::PyValueError::new_err(format!(
            "{name} must be at least {least}, got {value}"
        ))
    };
    match value.extract::<usize>() {
        Ok(count) if count >= least => Ok(count),
        Ok(_) => Err(below()),
        Err(error) if error.is_instance_of::<pyo3::exceptions::PyOverflowError>(value.py()) => {
            if value.lt(0)? {
                Err(below())
            } else {
                Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "{name}={value} is too large (at most {})",
                    usize::MAX
                )))
            }
        }
        Err(error) => Err(error),
    }
}

/// Issues `message` as a Python `UserWarning`, as the CLI writes a warning on stderr: the
/// caller's warning filters decide whether it shows (once per place, by default).
pub(crate) fn user_warning(py: Python<'_>, message: &str) -> PyResult<()> {
    // A message holding NUL cannot be a C string; its text up to the NUL still says what.
    let text = message.split('\0').next().unwrap_or_default();
    let text = std::ffi::CString::new(text).unwrap_or_default();
    PyErr::warn(
        py,
        &py.get_type::<pyo3::exceptions::PyUserWarning>(),
        &text,
        1,
    )
}
