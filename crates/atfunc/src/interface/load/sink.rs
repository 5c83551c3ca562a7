//! What every reader of a definition shares: the sink its problems go to, and the fields
//! every shape has (the function's name, its description, what it returns).

use super::json::json_kind;
use super::json::{Json, Map};
use super::refs::{Budget, LoadLimit};
use super::Strictness;
use crate::interface::validate::ValidationError as Problem;
use crate::interface::validate::{ValidationError, ValidationErrorKind};

/// Collects problems for the definition being read, labelled with its function and toolbox.
pub(super) struct Sink<'a> {
    pub(super) problems: &'a mut Vec<Problem>,
    /// What was repaired so the definition could be read; with [`Strictness::Strict`]
    /// these go to `problems` instead.
    pub(super) warnings: &'a mut Vec<Problem>,
    pub(super) strictness: Strictness,
    pub(super) function: String,
    pub(super) toolbox: String,
    /// What `$ref`s may still write out in this load.
    pub(super) budget: &'a mut Budget,
    /// The limit this definition went past, if it did.
    pub(super) exceeded: Option<LoadLimit>,
}

impl Sink<'_> {
    pub(super) fn report(&mut self, message: impl Into<String>) {
        self.report_as(ValidationErrorKind::Definition, message);
    }

    /// A contradiction the loader worked around (`problem`, then how: `workaround`): a
    /// warning when reading leniently, a problem when strictly.
    pub(super) fn repair(&mut self, problem: impl Into<String>, workaround: &str) {
        self.repair_as(ValidationErrorKind::Definition, problem, workaround);
    }

    pub(super) fn repair_as(
        &mut self,
        kind: ValidationErrorKind,
        problem: impl Into<String>,
        workaround: &str,
    ) {
        let problem = problem.into();
        match self.strictness {
            Strictness::Lenient => {
                let message = format!("{problem}; {workaround}");
                self.warnings.push(self.problem(kind, message));
            }
            Strictness::Strict => self.problems.push(self.problem(kind, problem)),
        }
    }

    /// A restriction the definition declares and atfunc does not enforce (`problem`, then
    /// what that means for a call: `consequence`): a warning when reading leniently, a
    /// problem when strictly, since a call the definition forbids would reach the tool.
    pub(super) fn unenforced(&mut self, problem: impl Into<String>, consequence: &str) {
        self.repair_as(ValidationErrorKind::Ignored, problem, consequence);
    }

    /// A restriction atfunc enforces in another form than written (`const` as the only
    /// choice): a warning however strictly the definition is read, since nothing is lost.
    pub(super) fn rewritten(&mut self, message: impl Into<String>) {
        let note = self.problem(ValidationErrorKind::Rewritten, message.into());
        self.warnings.push(note);
    }

    fn problem(&self, kind: ValidationErrorKind, message: String) -> ValidationError {
        ValidationError {
            function: self.function.clone(),
            toolbox: self.toolbox.clone(),
            kind,
            message,
        }
    }

    pub(super) fn report_as(&mut self, kind: ValidationErrorKind, message: impl Into<String>) {
        let problem = self.problem(kind, message.into());
        self.problems.push(problem);
    }
}

/// Any name will do (the loader gives it an identifier a call can write; see
/// [`names`]), as long as neither it nor a dotted part of it is empty.
pub(super) fn check_function_name(full: &str, sink: &mut Sink) {
    if full.split('.').any(|part| part.trim().is_empty()) {
        sink.report_as(ValidationErrorKind::Name, format!(
            "function name '{full}' is empty or has an empty part: give a name (a domain and a name joined by '.')"
        ));
    }
}

pub(super) fn optional_string(
    map: &Map<String, Json>,
    key: &str,
    sink: &mut Sink,
) -> Option<String> {
    match map.get(key) {
        None | Some(Json::Null) => None,
        Some(Json::String(s)) => Some(s.clone()),
        Some(other) => {
            sink.repair(
                format!("field '{key}' must be a string, found {}", json_kind(other)),
                "it is left out",
            );
            None
        }
    }
}

/// `returns` may be a type name or a small schema; keep a short text either way.
pub(super) fn returns_text(value: &Json) -> Option<String> {
    match value {
        Json::String(s) => Some(s.clone()),
        Json::Null => None,
        Json::Object(map) => match map.get("type") {
            Some(Json::String(t)) => Some(t.clone()),
            _ => Some(value.to_string()),
        },
        other => Some(other.to_string()),
    }
}
