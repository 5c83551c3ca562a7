//! The texts of `parse_jsonl` and `parse_arrow`: Arrow arrays read in place (the C data
//! interface), or a list of `str` made into one.

use super::c_data::Imported;
use arrow_array::cast::AsArray;
use arrow_array::types::{GenericBinaryType, GenericStringType};
use arrow_array::{Array, ArrayRef, GenericByteArray, StringArray};
use arrow_schema::DataType;
use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use std::sync::Arc;

/// The input, as chunks of Arrow arrays.
pub(super) struct Input {
    pub(super) chunks: Vec<ArrayRef>,
    /// Whether the answer is a ChunkedArray (the input was one, or a stream).
    pub(super) chunked: bool,
}

impl Input {
    pub(super) fn read(input: &Bound<'_, PyAny>) -> PyResult<Input> {
        let arrow = input.hasattr("__arrow_c_array__")? || input.hasattr("__arrow_c_stream__")?;
        if arrow {
            return match super::c_data::import(input)? {
                Imported::Array(array) => Ok(Input {
                    chunks: vec![array],
                    chunked: false,
                }),
                Imported::Chunks(chunks) => Ok(Input {
                    chunks,
                    chunked: true,
                }),
            };
        }
        if input.is_instance_of::<pyo3::types::PyString>()
            || input.is_instance_of::<pyo3::types::PyBytes>()
        {
            return Err(PyTypeError::new_err(
                "expected many texts (a pyarrow string array or a list of str), got a single \
                 str or bytes: wrap it in a list",
            ));
        }
        let texts: Vec<Option<String>> = input.extract().map_err(|_| {
            PyTypeError::new_err(
                "expected a pyarrow string array, a pyarrow.ChunkedArray or a list of str",
            )
        })?;
        Ok(Input {
            chunks: vec![Arc::new(StringArray::from(texts))],
            chunked: false,
        })
    }

    /// Every element of every chunk, in order, as bytes (`None` for a null).
    pub(super) fn elements(&self) -> PyResult<Vec<Option<&[u8]>>> {
        let mut out = Vec::with_capacity(self.chunks.iter().map(|c| c.len()).sum());
        for chunk in &self.chunks {
            let chunk = chunk.as_ref();
            match chunk.data_type() {
                DataType::Utf8 => push_bytes(&mut out, chunk.as_string::<i32>()),
                DataType::LargeUtf8 => push_bytes(&mut out, chunk.as_string::<i64>()),
                DataType::Binary => push_bytes(&mut out, chunk.as_binary::<i32>()),
                DataType::LargeBinary => push_bytes(&mut out, chunk.as_binary::<i64>()),
                DataType::Utf8View => {
                    out.extend(chunk.as_string_view().iter().map(|t| t.map(str::as_bytes)))
                }
                DataType::BinaryView => out.extend(chunk.as_binary_view().iter()),
                other => {
                    return Err(PyTypeError::new_err(format!(
                        "expected an array of strings (string, large_string, string_view or \
                         binary), got {other}"
                    )))
                }
            }
        }
        Ok(out)
    }

    /// Whether the input's offsets are 64-bit (an answer of text keeps them so).
    pub(super) fn large(&self) -> bool {
        self.chunks
            .iter()
            .any(|c| matches!(c.data_type(), DataType::LargeUtf8 | DataType::LargeBinary))
    }

    pub(super) fn lengths(&self) -> Vec<usize> {
        self.chunks.iter().map(|c| c.len()).collect()
    }
}

/// Bytes of each element of a string or binary array.
trait Bytes {
    fn bytes(&self, i: usize) -> &[u8];
}

impl<O: arrow_array::OffsetSizeTrait> Bytes for GenericByteArray<GenericStringType<O>> {
    fn bytes(&self, i: usize) -> &[u8] {
        self.value(i).as_bytes()
    }
}

impl<O: arrow_array::OffsetSizeTrait> Bytes for GenericByteArray<GenericBinaryType<O>> {
    fn bytes(&self, i: usize) -> &[u8] {
        self.value(i)
    }
}

fn push_bytes<'a, A: Array + Bytes>(out: &mut Vec<Option<&'a [u8]>>, array: &'a A) {
    out.extend((0..array.len()).map(|i| array.is_valid(i).then(|| array.bytes(i))));
}
