//! `parse_arrow`'s answer: a `struct<calls, errors>` per text, built from the records of
//! `parse --jsonl`.

use arrow_array::builder::{Int64Builder, StringBuilder};
use arrow_array::{ArrayRef, ListArray, StructArray};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Fields};
use atfunc::batch::Records;
use serde_json::Value as Json;
use std::sync::Arc;

/// `struct<start: int64, end: int64>`: a span in bytes or in characters. Signed, since
/// Spark has no unsigned integers.
fn range_fields() -> Fields {
    Fields::from(vec![
        Field::new("start", DataType::Int64, false),
        Field::new("end", DataType::Int64, false),
    ])
}

/// The fields of a call: the ones of a call record of `atfunc parse`, JSON values as text.
fn call_fields() -> Fields {
    Fields::from(vec![
        Field::new("name", DataType::Utf8, false),
        // Bound calls have `args`; without tools, `positional` and `named` instead.
        Field::new("args", DataType::Utf8, true),
        Field::new("positional", DataType::Utf8, true),
        Field::new("named", DataType::Utf8, true),
        Field::new("body", DataType::Utf8, true),
        Field::new("span", DataType::Struct(range_fields()), false),
        Field::new("chars", DataType::Struct(range_fields()), false),
    ])
}

/// The fields of an error: those of an error record of `atfunc parse`.
fn error_fields() -> Fields {
    Fields::from(vec![
        Field::new("error", DataType::Utf8, false),
        Field::new("span", DataType::Struct(range_fields()), false),
        Field::new("chars", DataType::Struct(range_fields()), false),
        Field::new("raw", DataType::Utf8, false),
    ])
}

pub(super) fn result_fields() -> Fields {
    let list = |fields| {
        DataType::List(Arc::new(Field::new(
            "item",
            DataType::Struct(fields),
            false,
        )))
    };
    Fields::from(vec![
        Field::new("calls", list(call_fields()), false),
        Field::new("errors", list(error_fields()), false),
    ])
}

/// One text's calls and errors, their JSON already written as text: made in parallel, so
/// that building the arrays after is only copying.
#[derive(Default)]
pub(super) struct Found {
    calls: Vec<CallRow>,
    errors: Vec<ErrorRow>,
}

struct CallRow {
    name: String,
    args: Option<String>,
    positional: Option<String>,
    named: Option<String>,
    body: Option<String>,
    span: [i64; 2],
    chars: [i64; 2],
}

struct ErrorRow {
    error: String,
    span: [i64; 2],
    chars: [i64; 2],
    raw: String,
}

impl Found {
    pub(super) fn of(records: Records) -> Found {
        Found {
            calls: records.calls.into_iter().map(CallRow::of).collect(),
            errors: records.errors.into_iter().map(ErrorRow::of).collect(),
        }
    }
}

/// Takes field `key` out of a record.
fn take(record: &mut Json, key: &str) -> Option<Json> {
    record.as_object_mut().and_then(|map| map.shift_remove(key))
}

/// A string field; a record's strings are never anything else.
fn take_string(record: &mut Json, key: &str) -> Option<String> {
    match take(record, key) {
        Some(Json::String(text)) => Some(text),
        _ => None,
    }
}

/// A `[start, end]` field.
fn take_range(record: &mut Json, key: &str) -> [i64; 2] {
    let pair = take(record, key);
    let at = |i: usize| {
        pair.as_ref()
            .and_then(|p| p.get(i))
            .and_then(Json::as_i64)
            .unwrap_or_default()
    };
    [at(0), at(1)]
}

impl CallRow {
    fn of(mut record: Json) -> CallRow {
        let mut json = |key| take(&mut record, key).map(|value| value.to_string());
        let (args, positional, named) = (json("args"), json("positional"), json("named"));
        CallRow {
            name: take_string(&mut record, "name").unwrap_or_default(),
            args,
            positional,
            named,
            body: take_string(&mut record, "body"),
            span: take_range(&mut record, "span"),
            chars: take_range(&mut record, "chars"),
        }
    }
}

impl ErrorRow {
    fn of(mut record: Json) -> ErrorRow {
        ErrorRow {
            error: take_string(&mut record, "error").unwrap_or_default(),
            span: take_range(&mut record, "span"),
            chars: take_range(&mut record, "chars"),
            raw: take_string(&mut record, "raw").unwrap_or_default(),
        }
    }
}

/// Start and end columns of a span field.
#[derive(Default)]
struct Ranges {
    start: Int64Builder,
    end: Int64Builder,
}

impl Ranges {
    fn push(&mut self, [start, end]: [i64; 2]) {
        self.start.append_value(start);
        self.end.append_value(end);
    }

    fn finish(mut self) -> ArrayRef {
        Arc::new(StructArray::new(
            range_fields(),
            vec![Arc::new(self.start.finish()), Arc::new(self.end.finish())],
            None,
        ))
    }
}

#[derive(Default)]
struct Calls {
    name: StringBuilder,
    args: StringBuilder,
    positional: StringBuilder,
    named: StringBuilder,
    body: StringBuilder,
    span: Ranges,
    chars: Ranges,
}

impl Calls {
    fn push(&mut self, row: &CallRow) {
        self.name.append_value(&row.name);
        self.args.append_option(row.args.as_deref());
        self.positional.append_option(row.positional.as_deref());
        self.named.append_option(row.named.as_deref());
        self.body.append_option(row.body.as_deref());
        self.span.push(row.span);
        self.chars.push(row.chars);
    }

    fn finish(mut self) -> StructArray {
        StructArray::new(
            call_fields(),
            vec![
                Arc::new(self.name.finish()),
                Arc::new(self.args.finish()),
                Arc::new(self.positional.finish()),
                Arc::new(self.named.finish()),
                Arc::new(self.body.finish()),
                self.span.finish(),
                self.chars.finish(),
            ],
            None,
        )
    }
}

#[derive(Default)]
struct Errors {
    error: StringBuilder,
    span: Ranges,
    chars: Ranges,
    raw: StringBuilder,
}

impl Errors {
    fn push(&mut self, row: &ErrorRow) {
        self.error.append_value(&row.error);
        self.span.push(row.span);
        self.chars.push(row.chars);
        self.raw.append_value(&row.raw);
    }

    fn finish(mut self) -> StructArray {
        StructArray::new(
            error_fields(),
            vec![
                Arc::new(self.error.finish()),
                self.span.finish(),
                self.chars.finish(),
                Arc::new(self.raw.finish()),
            ],
            None,
        )
    }
}

/// The `struct<calls, errors>` array of one chunk's results (null for a null text).
pub(super) fn results_array(results: &[Option<Found>]) -> StructArray {
    let mut calls = Calls::default();
    let mut errors = Errors::default();
    let mut call_lengths = Vec::with_capacity(results.len());
    let mut error_lengths = Vec::with_capacity(results.len());
    for found in results {
        let found = found.as_ref();
        let (c, e) = found.map_or((&[][..], &[][..]), |f| (&f.calls[..], &f.errors[..]));
        c.iter().for_each(|record| calls.push(record));
        e.iter().for_each(|record| errors.push(record));
        call_lengths.push(c.len());
        error_lengths.push(e.len());
    }
    let list = |fields: Fields, lengths: Vec<usize>, values: StructArray| -> ArrayRef {
        Arc::new(ListArray::new(
            Arc::new(Field::new("item", DataType::Struct(fields), false)),
            OffsetBuffer::from_lengths(lengths),
            Arc::new(values),
            None,
        ))
    };
    let nulls = NullBuffer::from_iter(results.iter().map(Option::is_some));
    let nulls = (nulls.null_count() > 0).then_some(nulls);
    StructArray::new(
        result_fields(),
        vec![
            list(call_fields(), call_lengths, calls.finish()),
            list(error_fields(), error_lengths, errors.finish()),
        ],
        nulls,
    )
}
