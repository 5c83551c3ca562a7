//! Arrow arrays across the boundary with Python, through the Arrow PyCapsule interface.
//!
//! The contract: an array comes in through its `__arrow_c_array__` (one array) or
//! `__arrow_c_stream__` (the chunks of a `ChunkedArray`, or any stream of arrays) and is
//! read where it lies: arrow-rs's C data interface (`arrow_array::ffi`) wraps the
//! producer's buffers, which it releases when the last Rust reference goes. An answer goes
//! out the same way: an object whose `__arrow_c_array__` hands pyarrow the buffers this
//! module built, which `pyarrow.array` takes over without a copy. This file only carries
//! the capsules; the conversions are arrow-rs's.

use arrow_array::ffi::{from_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::ffi_stream::FFI_ArrowArrayStream;
use arrow_array::{make_array, new_empty_array, ArrayRef};
use arrow_schema::FieldRef;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyCapsule;
use std::ffi::CStr;

/// The capsule names the PyCapsule interface fixes.
const SCHEMA: &CStr = c"arrow_schema";
const ARRAY: &CStr = c"arrow_array";
const STREAM: &CStr = c"arrow_array_stream";

fn arrow_error(error: arrow_schema::ArrowError) -> PyErr {
    PyTypeError::new_err(format!("cannot read the Arrow array: {error}"))
}

/// An Arrow object handed over by Python: one array, or the chunks of a stream.
pub(super) enum Imported {
    Array(ArrayRef),
    Chunks(Vec<ArrayRef>),
}

/// The arrays of `input`, which has `__arrow_c_array__` or `__arrow_c_stream__`.
pub(super) fn import(input: &Bound<'_, PyAny>) -> PyResult<Imported> {
    if input.hasattr("__arrow_c_array__")? {
        let pair = input.call_method0("__arrow_c_array__")?;
        let schema = pair.get_item(0)?.cast_into::<PyCapsule>()?;
        let array = pair.get_item(1)?.cast_into::<PyCapsule>()?;
        let schema = schema
            .pointer_checked(Some(SCHEMA))?
            .cast::<FFI_ArrowSchema>();
        let array = array.pointer_checked(Some(ARRAY))?.cast::<FFI_ArrowArray>();
        // SAFETY: the capsules are named as the interface names them, so they hold an
        // ArrowSchema and an ArrowArray. The array is moved out of its capsule (which is
        // left released, as the interface asks of a consumer); the schema is only read,
        // while its capsule is alive.
        let data = unsafe {
            let array = FFI_ArrowArray::from_raw(array.as_ptr());
            from_ffi(array, schema.as_ref())
        }
        .map_err(arrow_error)?;
        return Ok(Imported::Array(make_array(data)));
    }
    let capsule = input
        .call_method0("__arrow_c_stream__")?
        .cast_into::<PyCapsule>()?;
    let stream = capsule
        .pointer_checked(Some(STREAM))?
        .cast::<FFI_ArrowArrayStream>();
    // SAFETY: a capsule of that name holds an ArrowArrayStream; it is moved out (the
    // capsule is left released) and released when `stream` drops.
    let mut stream = unsafe { FFI_ArrowArrayStream::from_raw(stream.as_ptr()) };
    read_stream(&mut stream).map(Imported::Chunks)
}

/// Every array of `stream`, in order. Not arrow-rs's `ArrowArrayStreamReader`: that one
/// reads record batches, and the stream of a `ChunkedArray` carries plain arrays.
fn read_stream(stream: &mut FFI_ArrowArrayStream) -> PyResult<Vec<ArrayRef>> {
    let (Some(get_schema), Some(get_next)) = (stream.get_schema, stream.get_next) else {
        return Err(PyValueError::new_err(
            "the Arrow stream was already released",
        ));
    };
    let mut schema = FFI_ArrowSchema::empty();
    // SAFETY: the callbacks of a live stream, called with the stream itself and an empty
    // struct to fill, as the C stream interface defines them.
    let code = unsafe { get_schema(stream, &mut schema) };
    if code != 0 {
        return Err(stream_error(stream, code));
    }
    let mut chunks = Vec::new();
    loop {
        let mut array = FFI_ArrowArray::empty();
        // SAFETY: as above.
        let code = unsafe { get_next(stream, &mut array) };
        if code != 0 {
            return Err(stream_error(stream, code));
        }
        // A released array marks the end of the stream.
        if array.is_released() {
            return Ok(chunks);
        }
        // SAFETY: the array the stream just produced, of the stream's schema.
        let data = unsafe { from_ffi(array, &schema) }.map_err(arrow_error)?;
        chunks.push(make_array(data));
    }
}

/// The stream's own message for a failed call, or the error code.
fn stream_error(stream: &mut FFI_ArrowArrayStream, code: i32) -> PyErr {
    let message = stream.get_last_error.and_then(|last_error| {
        // SAFETY: the stream's callback; a non-null answer is a C string it owns until its
        // next call.
        let text = unsafe { last_error(stream) };
        (!text.is_null()).then(|| {
            unsafe { CStr::from_ptr(text) }
                .to_string_lossy()
                .into_owned()
        })
    });
    PyValueError::new_err(format!(
        "reading the Arrow stream failed: {}",
        message.unwrap_or_else(|| format!("error code {code}"))
    ))
}

/// One array on its way to Python: `pyarrow.array(exported)` takes it over through
/// `__arrow_c_array__`.
#[pyclass(frozen, module = "atfunc")]
struct Exported {
    array: ArrayRef,
    field: FieldRef,
}

#[pymethods]
impl Exported {
    /// The PyCapsule interface: the schema and the array, moved into two capsules.
    /// `requested_schema` is not honoured: the array goes as it is.
    #[pyo3(signature = (requested_schema = None))]
    fn __arrow_c_array__<'py>(
        &self,
        py: Python<'py>,
        requested_schema: Option<Bound<'py, PyAny>>,
    ) -> PyResult<(Bound<'py, PyCapsule>, Bound<'py, PyCapsule>)> {
        let _ = requested_schema;
        let schema = FFI_ArrowSchema::try_from(self.field.as_ref()).map_err(arrow_error)?;
        let array = FFI_ArrowArray::new(&self.array.to_data());
        Ok((
            PyCapsule::new_with_value(py, schema, SCHEMA)?,
            PyCapsule::new_with_value(py, array, ARRAY)?,
        ))
    }
}

/// The `pyarrow` module, which the answers are made with. It is an extra of the package
/// (`atfunc[arrow]`): without it the error says how to install it. `function` names the
/// function that needs it.
pub(super) fn pyarrow<'py>(py: Python<'py>, function: &str) -> PyResult<Bound<'py, PyModule>> {
    py.import("pyarrow").map_err(|error| {
        if !error.is_instance_of::<pyo3::exceptions::PyImportError>(py) {
            return error;
        }
        let missing = pyo3::exceptions::PyModuleNotFoundError::new_err(format!(
            "atfunc.{function} answers with pyarrow arrays, and pyarrow cannot be imported \
             ({error}): install it with pip install 'atfunc[arrow]'"
        ));
        missing.set_cause(py, Some(error));
        missing
    })
}

/// `chunks` as a `pyarrow.ChunkedArray` (`chunked`) or as the one `pyarrow.Array` there is,
/// made by `pyarrow` (the module).
pub(super) fn export(
    pyarrow: &Bound<'_, PyModule>,
    chunked: bool,
    chunks: Vec<ArrayRef>,
    field: FieldRef,
) -> PyResult<Py<PyAny>> {
    let py = pyarrow.py();
    let to_pyarrow = |array: ArrayRef| {
        let exported = Exported {
            array,
            field: field.clone(),
        };
        pyarrow.call_method1("array", (exported,))
    };
    if !chunked {
        let array = chunks
            .into_iter()
            .next()
            .ok_or_else(|| PyValueError::new_err("no output array"))?;
        return Ok(to_pyarrow(array)?.unbind());
    }
    // The type comes from an empty array, so a stream without chunks keeps it too.
    let kind = to_pyarrow(new_empty_array(field.data_type()))?.getattr("type")?;
    let arrays = chunks
        .into_iter()
        .map(to_pyarrow)
        .collect::<PyResult<Vec<_>>>()?;
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("type", kind)?;
    Ok(pyarrow
        .call_method("chunked_array", (arrays,), Some(&kwargs))?
        .unbind())
}
