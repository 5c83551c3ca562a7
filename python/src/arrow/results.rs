//! `parse_arrow`'s answer: a `struct<calls, errors>` per text, built from the records of
//! `parse --jsonl` (with `tools_error` where texts bring their own tool sets; `args` as
//! JSON text, or as a struct typed from the tools' parameters).

use arrow_array::builder::{Int64Builder, StringBuilder};
use arrow_array::{
    ArrayRef, BooleanArray, Float64Array, Int64Array, ListArray, StringArray, StructArray,
};
use arrow_buffer::{NullBuffer, OffsetBuffer};
use arrow_schema::{DataType, Field, Fields};
use atfunc::batch::Records;
use atfunc::interface::ParamType;
use atfunc::Interface;
use serde_json::{Map, Value as Json};
use std::sync::Arc;

/// `struct<start: int64, end: int64>`: a span in bytes or in characters. Signed, since
/// Spark has no unsigned integers.
fn range_fields() -> Fields {
    Fields::from(vec![
        Field::new("start", DataType::Int64, false),
        Field::new("end", DataType::Int64, false),
    ])
}

/// The fields of a call: the ones of a call record of `atfunc parse`, JSON values as text
/// (`args` as text too, or as the struct `args` says).
fn call_fields(args: &Args) -> Fields {
    Fields::from(vec![
        Field::new("name", DataType::Utf8, false),
        // Bound calls have `args`; without tools, `positional` and `named` instead.
        Field::new("args", args.data_type(), true),
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

/// The fields of one text's result: `calls` and `errors`, and `tools_error` where the
/// texts come with their own tool sets.
pub(super) fn result_fields(args: &Args, tools_error: bool) -> Fields {
    let list = |fields| {
        DataType::List(Arc::new(Field::new(
            "item",
            DataType::Struct(fields),
            false,
        )))
    };
    let mut fields = vec![
        Field::new("calls", list(call_fields(args)), false),
        Field::new("errors", list(error_fields()), false),
    ];
    if tools_error {
        fields.push(Field::new("tools_error", DataType::Utf8, true));
    }
    Fields::from(fields)
}

/// How `args` is written: as JSON text (the default), or as a struct with one field per
/// parameter of the tools, typed from the parameter's type.
pub(super) enum Args {
    Json,
    Struct(Vec<(String, ArgKind)>),
}

/// The Arrow type of one parameter in `args` as a struct: a string, whole number, number
/// or boolean as itself; anything else (objects, lists, `any`), or a parameter whose
/// types differ between functions or whose values do not fit, as JSON text.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum ArgKind {
    Text,
    Integer,
    Float,
    Boolean,
    JsonText,
}

impl ArgKind {
    fn of(ty: &ParamType) -> ArgKind {
        match ty {
            ParamType::String => ArgKind::Text,
            ParamType::Integer => ArgKind::Integer,
            ParamType::Number => ArgKind::Float,
            ParamType::Boolean => ArgKind::Boolean,
            // Structured values, and any type a later atfunc adds, travel as JSON text.
            _ => ArgKind::JsonText,
        }
    }

    fn data_type(self) -> DataType {
        match self {
            ArgKind::Text | ArgKind::JsonText => DataType::Utf8,
            ArgKind::Integer => DataType::Int64,
            ArgKind::Float => DataType::Float64,
            ArgKind::Boolean => DataType::Boolean,
        }
    }

    fn fits(self, value: &Json) -> bool {
        match self {
            ArgKind::Text => value.is_string(),
            ArgKind::Integer => value.is_i64(),
            ArgKind::Float => value.is_number(),
            ArgKind::Boolean => value.is_boolean(),
            ArgKind::JsonText => true,
        }
    }
}

impl Args {
    /// The struct of every parameter of `interfaces`, in order of first appearance, and of
    /// every other key the calls in `found` have; a field whose types or values disagree
    /// is JSON text.
    pub(super) fn of<'a>(
        interfaces: impl IntoIterator<Item = &'a Interface>,
        found: &[Option<Found>],
    ) -> Args {
        let mut fields: Vec<(String, ArgKind)> = Vec::new();
        let widen = |fields: &mut Vec<(String, ArgKind)>, name: &str, kind: ArgKind| match fields
            .iter_mut()
            .find(|(n, _)| n == name)
        {
            Some((_, known)) if *known != kind => *known = ArgKind::JsonText,
            Some(_) => {}
            None => fields.push((name.to_owned(), kind)),
        };
        for interface in interfaces {
            for param in interface.params.iter().chain(&interface.request_body) {
                widen(&mut fields, &param.name, ArgKind::of(&param.ty));
            }
        }
        for row in found.iter().flatten().flat_map(|f| &f.calls) {
            for (key, value) in row.args_value.iter().flatten() {
                match fields.iter_mut().find(|(n, _)| n == key) {
                    Some((_, kind)) if !value.is_null() && !kind.fits(value) => {
                        *kind = ArgKind::JsonText
                    }
                    Some(_) => {}
                    None => fields.push((key.clone(), ArgKind::JsonText)),
                }
            }
        }
        Args::Struct(fields)
    }

    fn data_type(&self) -> DataType {
        match self {
            Args::Json => DataType::Utf8,
            Args::Struct(fields) => DataType::Struct(struct_fields(fields)),
        }
    }
}

fn struct_fields(fields: &[(String, ArgKind)]) -> Fields {
    fields
        .iter()
        .map(|(name, kind)| Field::new(name, kind.data_type(), true))
        .collect()
}

/// One text's calls and errors, their JSON already written as text: made in parallel, so
/// that building the arrays after is only copying.
#[derive(Default)]
pub(super) struct Found {
    calls: Vec<CallRow>,
    errors: Vec<ErrorRow>,
    /// Why the text's own tool set did not load (its calls and errors are then empty).
    tools_error: Option<String>,
}

struct CallRow {
    name: String,
    /// `args` as JSON text, or (for a struct) as the object itself.
    args: Option<String>,
    args_value: Option<Map<String, Json>>,
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
    /// The records of one text; `args_as_struct` keeps each call's `args` as an object for
    /// the struct built later.
    pub(super) fn of(records: Records, args_as_struct: bool) -> Found {
        Found {
            calls: records
                .calls
                .into_iter()
                .map(|record| CallRow::of(record, args_as_struct))
                .collect(),
            errors: records.errors.into_iter().map(ErrorRow::of).collect(),
            tools_error: None,
        }
    }

    /// A text whose own tool set did not load: no calls, no errors, the reason.
    pub(super) fn tools_error(message: String) -> Found {
        Found {
            tools_error: Some(message),
            ..Found::default()
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
    fn of(mut record: Json, args_as_struct: bool) -> CallRow {
        let (args, args_value) = match take(&mut record, "args") {
            Some(Json::Object(map)) if args_as_struct => (None, Some(map)),
            other => (other.map(|value| value.to_string()), None),
        };
        let mut json = |key| take(&mut record, key).map(|value| value.to_string());
        let (positional, named) = (json("positional"), json("named"));
        CallRow {
            name: take_string(&mut record, "name").unwrap_or_default(),
            args,
            args_value,
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

struct Calls<'a> {
    args_shape: &'a Args,
    name: StringBuilder,
    args: StringBuilder,
    /// For `args` as a struct: each call's object, in order (None: no args).
    args_values: Vec<Option<&'a Map<String, Json>>>,
    positional: StringBuilder,
    named: StringBuilder,
    body: StringBuilder,
    span: Ranges,
    chars: Ranges,
}

impl<'a> Calls<'a> {
    fn new(args_shape: &'a Args) -> Calls<'a> {
        Calls {
            args_shape,
            name: StringBuilder::new(),
            args: StringBuilder::new(),
            args_values: Vec::new(),
            positional: StringBuilder::new(),
            named: StringBuilder::new(),
            body: StringBuilder::new(),
            span: Ranges::default(),
            chars: Ranges::default(),
        }
    }

    fn push(&mut self, row: &'a CallRow) {
        self.name.append_value(&row.name);
        self.args.append_option(row.args.as_deref());
        self.args_values.push(row.args_value.as_ref());
        self.positional.append_option(row.positional.as_deref());
        self.named.append_option(row.named.as_deref());
        self.body.append_option(row.body.as_deref());
        self.span.push(row.span);
        self.chars.push(row.chars);
    }

    fn finish(mut self) -> StructArray {
        let args: ArrayRef = match self.args_shape {
            Args::Json => Arc::new(self.args.finish()),
            Args::Struct(fields) => Arc::new(args_struct(fields, &self.args_values)),
        };
        StructArray::new(
            call_fields(self.args_shape),
            vec![
                Arc::new(self.name.finish()),
                args,
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

/// The `args` struct of calls whose arguments are `values` (a null struct for None).
fn args_struct(fields: &[(String, ArgKind)], values: &[Option<&Map<String, Json>>]) -> StructArray {
    let nulls = NullBuffer::from_iter(values.iter().map(Option::is_some));
    let nulls = (nulls.null_count() > 0).then_some(nulls);
    if fields.is_empty() {
        return StructArray::new_empty_fields(values.len(), nulls);
    }
    let columns = fields
        .iter()
        .map(|(name, kind)| -> ArrayRef {
            let cells = values
                .iter()
                .map(|args| args.and_then(|args| args.get(name)));
            match kind {
                ArgKind::Text => Arc::new(StringArray::from_iter(
                    cells.map(|v| v.and_then(Json::as_str)),
                )),
                ArgKind::Integer => Arc::new(Int64Array::from_iter(
                    cells.map(|v| v.and_then(Json::as_i64)),
                )),
                ArgKind::Float => Arc::new(Float64Array::from_iter(
                    cells.map(|v| v.and_then(Json::as_f64)),
                )),
                ArgKind::Boolean => Arc::new(BooleanArray::from_iter(
                    cells.map(|v| v.and_then(Json::as_bool)),
                )),
                ArgKind::JsonText => Arc::new(StringArray::from_iter(
                    cells.map(|v| v.filter(|v| !v.is_null()).map(|v| v.to_string())),
                )),
            }
        })
        .collect();
    StructArray::new(struct_fields(fields), columns, nulls)
}

/// The `struct<calls, errors>` array of one chunk's results (null for a null text), with
/// `args` as `args_shape` says and a `tools_error` field when asked for.
pub(super) fn results_array(
    results: &[Option<Found>],
    args_shape: &Args,
    tools_error: bool,
) -> StructArray {
    let mut calls = Calls::new(args_shape);
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
    let mut columns = vec![
        list(call_fields(args_shape), call_lengths, calls.finish()),
        list(error_fields(), error_lengths, errors.finish()),
    ];
    if tools_error {
        columns.push(Arc::new(StringArray::from_iter(
            results
                .iter()
                .map(|found| found.as_ref().and_then(|f| f.tools_error.as_deref())),
        )));
    }
    StructArray::new(result_fields(args_shape, tools_error), columns, nulls)
}
