//! Why a call does not bind, worded for the model that wrote it.

use crate::interface::StringFormat;
use std::fmt;

/// Why a call does not bind. Each message says what failed and how to write the call
/// correctly, because it goes back into the model's context.
///
/// Parameter names in messages are spelled as the interface declares them; a nested
/// parameter is written as a path (`options.limit`, `points[1].x`). Values are shown as the
/// model wrote them (strings in double quotes), cut after 80 bytes.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[non_exhaustive]
pub enum BindError {
    /// No interface has this name.
    ///
    /// `Unknown function 'wether.get_temp': did you mean 'weather.get_temp'?`, or, when
    /// nothing is close, `Unknown function 'foo': available functions are 'a.b', 'c' and 3
    /// more` (`no functions are available` for an empty catalog).
    #[error("Unknown function '{name}': {}", unknown_function_hint(.closest, .available, *.more))]
    UnknownFunction {
        /// The name as written.
        name: String,
        /// The closest known qualified name, if any is close.
        closest: Option<String>,
        /// A few known qualified names, in registration order (empty when `closest` is set).
        available: Vec<String>,
        /// How many known names `available` leaves out.
        more: usize,
    },

    /// More positional arguments than the function has parameters.
    ///
    /// `Too many arguments for function 'weather.get_temp': it takes 2 (location, unit), got 3`
    #[error("Too many arguments for function '{function}': it takes {}, got {given}", takes(.params))]
    TooManyArguments {
        /// The function's qualified name.
        function: String,
        /// How many positional arguments the call gave.
        given: usize,
        /// The function's parameters, in declared order.
        params: Vec<String>,
    },

    /// A named argument matches no parameter, or a field matches none of an object that
    /// takes no other ([`Param::closed`](crate::Param::closed)).
    ///
    /// `Unknown parameter 'units' for function 'weather.get_temp': did you mean 'unit'? Valid
    /// parameters are location, unit`; for a field, paths: `Unknown parameter
    /// 'style.colour' ...: did you mean 'style.color'? Valid parameters are style.color,
    /// style.font`
    #[error("Unknown parameter '{param}' for function '{function}': {}", unknown_param_hint(.closest, .valid))]
    UnknownParameter {
        /// The function's qualified name.
        function: String,
        /// The name as written (a path for a field).
        param: String,
        /// The closest parameter name, if any is close.
        closest: Option<String>,
        /// Every parameter of the function (or field of the object), in declared order.
        valid: Vec<String>,
    },

    /// A field of an api-wrapper's request body written as an argument of the call.
    ///
    /// `'email' is a field of the request body of function 'api.create_user', not an
    /// argument: write it in the with_body [[ {...} ]] block after the call`
    #[error("'{field}' is a field of the request body of function '{function}', not an argument: write it in the with_body [[ {{...}} ]] block after the call")]
    BodyFieldAsArgument {
        /// The function's qualified name.
        function: String,
        /// The body field as declared.
        field: String,
    },

    /// One JSON object holding parameters by name, given beside other arguments (alone,
    /// its fields are taken as the named arguments; see the [module docs](super)).
    ///
    /// `Invalid arguments for function 'chat.send': got one JSON object (keys channel, text)
    /// and 1 more argument; write every argument as name=value:
    /// @chat.send(channel="ops", text="hi", urgent=true)`
    #[error(
        "Invalid arguments for function '{function}': got one JSON object (keys {}) and {others} more argument{}; write every argument as name=value: {example}",
        .keys.join(", "),
        if *.others == 1 { "" } else { "s" }
    )]
    ObjectArguments {
        /// The function's qualified name.
        function: String,
        /// The object's keys as written (the first ten, then how many more).
        keys: Vec<String>,
        /// How many other arguments the call gave.
        others: usize,
        /// The call written as name=value, the values as the model wrote them.
        example: String,
    },

    /// A parameter given twice: by position and by name, or by name twice.
    ///
    /// `Parameter 'location' of function 'weather.get_temp' is given more than once: give it
    /// once, by position or by name`
    #[error("Parameter '{param}' of function '{function}' is given more than once: give it once, by position or by name")]
    DuplicateParameter {
        /// The function's qualified name.
        function: String,
        /// The parameter as declared.
        param: String,
    },

    /// Required parameters left out (or given as `null`), all of them in declared order.
    ///
    /// `Missing required parameter for function 'weather.get_temp': location` (the reference
    /// library's wording), `...: a, b` when several are missing.
    #[error("Missing required parameter for function '{function}': {}", .params.join(", "))]
    MissingParameters {
        /// The function's qualified name.
        function: String,
        /// The missing parameters (paths for nested object fields).
        params: Vec<String>,
    },

    /// A value that cannot be read as the declared type.
    ///
    /// `Invalid value for parameter 'days' of function 'weather.forecast': expected integer,
    /// got "soon"`
    #[error("Invalid value for parameter '{param}' of function '{function}': expected {expected}, got {got}")]
    InvalidValue {
        /// The function's qualified name.
        function: String,
        /// The parameter (a path for nested values).
        param: String,
        /// The declared type, as the model should write it.
        expected: String,
        /// The value as written.
        got: String,
    },

    /// A value outside the parameter's enum choices.
    ///
    /// `Invalid value for parameter 'unit' of function 'weather.get_temp': expected one of
    /// "celsius", "fahrenheit", got "Celsius" (did you mean "celsius"?)`
    #[error(
        "Invalid value for parameter '{param}' of function '{function}': expected one of {}, got {got}{}",
        .choices.join(", "),
        did_you_mean(.suggestion)
    )]
    InvalidChoice {
        /// The function's qualified name.
        function: String,
        /// The parameter (a path for nested values).
        param: String,
        /// The allowed values as JSON (at most 20; the last entry says how many more).
        choices: Vec<String>,
        /// The value, after conversion to the declared type.
        got: String,
        /// The choice that matches ignoring case, when one does.
        suggestion: Option<String>,
    },

    /// A number outside the parameter's `min`/`max`.
    ///
    /// `Invalid value for parameter 'limit' of function 'tasks.list': expected a number from
    /// 1 to 5, got 7` (`at least 1`, `at most 5` when one bound is declared).
    #[error(
        "Invalid value for parameter '{param}' of function '{function}': expected a number {}, got {got}",
        range(*.min, *.max)
    )]
    OutOfRange {
        /// The function's qualified name.
        function: String,
        /// The parameter (a path for nested values).
        param: String,
        /// The declared minimum.
        min: Option<f64>,
        /// The declared maximum.
        max: Option<f64>,
        /// The value, after conversion to the declared type.
        got: String,
    },

    /// A string that is not of its parameter's declared JSON Schema `format`, and why.
    ///
    /// `Invalid value for parameter 'day' of function 'calendar.book': "2026-02-30" is not a
    /// date: February 2026 has 28 days`
    #[error("Invalid value for parameter '{param}' of function '{function}': {got} is not {}: {reason}", super::string_format::noun(*.format))]
    InvalidFormat {
        /// The function's qualified name.
        function: String,
        /// The parameter (a path for nested values).
        param: String,
        /// The declared format.
        format: StringFormat,
        /// The value as JSON, cut after 80 bytes.
        got: String,
        /// What is wrong with it and how to write it.
        reason: String,
    },

    /// A placeholder of the prompt's example call (or of the listing's `<*name>`) copied
    /// instead of a value: an unquoted `<...>`, which no value is (text is quoted, and no
    /// unquoted word of another type starts with `<`), or text that is one of the
    /// parameter's own placeholders (`"<name>"`, `"<*name{string}>"`, its name in any case
    /// and in the definition's spelling too; blanks around it and more of the example's
    /// arguments after it do not make it a value). Other text that holds `<name>` is a
    /// value (`"<html><body>..."` for `html`).
    ///
    /// `Invalid value for parameter 'location' of function 'weather.get_current_weather':
    /// <location> is a placeholder; write the value itself, text in double quotes`
    #[error("Invalid value for parameter '{param}' of function '{function}': {written} is a placeholder; write the value itself, text in double quotes")]
    Placeholder {
        /// The function's qualified name.
        function: String,
        /// The parameter (a path for nested values).
        param: String,
        /// The placeholder as written, cut after 80 bytes.
        written: String,
    },

    /// A value the parameter's own parser refused (see [`Catalog::set_parser`]), with the
    /// parser's message.
    ///
    /// `Invalid value for parameter 'path' of function 'files.read': ../etc is outside the
    /// project folder`
    ///
    /// [`Catalog::set_parser`]: super::Catalog::set_parser
    #[error("Invalid value for parameter '{param}' of function '{function}': {message}")]
    Refused {
        /// The function's qualified name.
        function: String,
        /// The parameter as declared.
        param: String,
        /// The parser's message.
        message: String,
    },

    /// Arguments a typed tool (feature `typed`) could not deserialise into its arguments
    /// type, with what did not fit: a refusal of the model's call, like every other bind
    /// error, though the tool's own deserialiser noticed it.
    ///
    /// `Invalid arguments for function 'pen.draw': argument 'shape': unknown variant
    /// 'hexagon', expected 'circle' or 'square'`
    #[error("Invalid arguments for function '{function}': {problem}")]
    InvalidArguments {
        /// The function's qualified name.
        function: String,
        /// What did not fit, naming the argument by its path.
        problem: String,
    },

    /// Several problems with one call, each as its own error, in the order of the call's
    /// checks (arguments, required parameters, values, body): the model gets them all at
    /// once. [`BindError::problems`] lists them, for this error and every other one.
    ///
    /// ```text
    /// The call of function 'weather.forecast' has 2 problems:
    /// - Missing required parameter for function 'weather.forecast': location
    /// - Invalid value for parameter 'days' of function 'weather.forecast': expected a number from 1 to 14, got 30
    /// ```
    #[error("The call of function '{function}' has {} problems:{}", .errors.len(), listed(.errors))]
    Several {
        /// The function's qualified name.
        function: String,
        /// Every problem, two or more, none of them `Several`.
        errors: Vec<BindError>,
    },

    /// An api-wrapper with required body fields called without a `with_body` block.
    ///
    /// `Missing request body for function 'api.create_user': add with_body [[ ... ]] after
    /// the call, with the required fields name, email`
    #[error("Missing request body for function '{function}': add with_body [[ ... ]] after the call, with the required fields {}", .fields.join(", "))]
    MissingBody {
        /// The function's qualified name.
        function: String,
        /// The required body fields, in declared order.
        fields: Vec<String>,
    },

    /// A JSON object body without some required fields.
    ///
    /// `Missing required body field for function 'api.create_user': name, email`
    #[error("Missing required body field for function '{function}': {}", .fields.join(", "))]
    MissingBodyFields {
        /// The function's qualified name.
        function: String,
        /// The missing fields, in declared order.
        fields: Vec<String>,
    },

    /// A body that is JSON but not a JSON object, for an api-wrapper that declares fields.
    ///
    /// `Invalid request body for function 'api.create_user': expected a JSON object, got [1,2]`
    #[error("Invalid request body for function '{function}': expected a JSON object, got {got}")]
    InvalidBody {
        /// The function's qualified name.
        function: String,
        /// The body as written.
        got: String,
    },

    /// A `with_body` block on a function that takes no request body.
    ///
    /// `Function 'weather.get_temp' takes no request body: remove the with_body block`
    #[error("Function '{function}' takes no request body: remove the with_body block")]
    UnexpectedBody {
        /// The function's qualified name.
        function: String,
    },
}

/// What kind of problem a [`BindError`] is, without its details: one per variant, for a
/// program that sorts, counts or tests for problems ([`BindError::has`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum BindErrorKind {
    /// [`BindError::UnknownFunction`].
    UnknownFunction,
    /// [`BindError::TooManyArguments`].
    TooManyArguments,
    /// [`BindError::UnknownParameter`].
    UnknownParameter,
    /// [`BindError::BodyFieldAsArgument`].
    BodyFieldAsArgument,
    /// [`BindError::ObjectArguments`].
    ObjectArguments,
    /// [`BindError::DuplicateParameter`].
    DuplicateParameter,
    /// [`BindError::MissingParameters`].
    MissingParameters,
    /// [`BindError::InvalidValue`].
    InvalidValue,
    /// [`BindError::InvalidChoice`].
    InvalidChoice,
    /// [`BindError::OutOfRange`].
    OutOfRange,
    /// [`BindError::InvalidFormat`].
    InvalidFormat,
    /// [`BindError::Placeholder`].
    Placeholder,
    /// [`BindError::Refused`].
    Refused,
    /// [`BindError::InvalidArguments`].
    InvalidArguments,
    /// [`BindError::Several`].
    Several,
    /// [`BindError::MissingBody`].
    MissingBody,
    /// [`BindError::MissingBodyFields`].
    MissingBodyFields,
    /// [`BindError::InvalidBody`].
    InvalidBody,
    /// [`BindError::UnexpectedBody`].
    UnexpectedBody,
}

impl BindError {
    /// The problems this error stands for: those of [`BindError::Several`], or the error
    /// itself. Never empty, and never holds a `Several`.
    ///
    /// A call with two problems is one [`BindError::Several`], so a `match` on one variant
    /// misses it when it comes with another; look through the problems instead, or ask
    /// [`BindError::has`]:
    ///
    /// ```
    /// use atfunc::bind::BindErrorKind;
    /// use atfunc::{bind, load_interfaces_str, parse_events, Catalog, Event};
    ///
    /// let tools = load_interfaces_str(r#"[{"name": "weather.forecast", "parameters": {
    ///     "type": "object",
    ///     "properties": {"location": {"type": "string"}, "days": {"type": "integer"}},
    ///     "required": ["location"]}}]"#).unwrap();
    /// let catalog = Catalog::new(tools);
    /// let Some(Event::Call(call)) = parse_events("@weather.forecast(days=\"soon\")").pop()
    /// else { panic!("a call") };
    /// let error = bind(&call, &catalog).unwrap_err();
    /// // Two problems: `location` is missing and `days` is not an integer.
    /// assert_eq!(error.kind(), BindErrorKind::Several);
    /// assert_eq!(error.problems().len(), 2);
    /// assert!(error.has(BindErrorKind::MissingParameters));
    /// assert!(error.has(BindErrorKind::InvalidValue));
    /// assert_eq!(error.missing_parameters().collect::<Vec<_>>(), ["location"]);
    /// ```
    pub fn problems(&self) -> &[BindError] {
        match self {
            BindError::Several { errors, .. } => errors,
            other => std::slice::from_ref(other),
        }
    }

    /// What kind of error this is: [`BindErrorKind::Several`] for several problems, whose
    /// own kinds [`BindError::kinds`] gives.
    pub fn kind(&self) -> BindErrorKind {
        match self {
            BindError::UnknownFunction { .. } => BindErrorKind::UnknownFunction,
            BindError::TooManyArguments { .. } => BindErrorKind::TooManyArguments,
            BindError::UnknownParameter { .. } => BindErrorKind::UnknownParameter,
            BindError::BodyFieldAsArgument { .. } => BindErrorKind::BodyFieldAsArgument,
            BindError::ObjectArguments { .. } => BindErrorKind::ObjectArguments,
            BindError::DuplicateParameter { .. } => BindErrorKind::DuplicateParameter,
            BindError::MissingParameters { .. } => BindErrorKind::MissingParameters,
            BindError::InvalidValue { .. } => BindErrorKind::InvalidValue,
            BindError::InvalidChoice { .. } => BindErrorKind::InvalidChoice,
            BindError::OutOfRange { .. } => BindErrorKind::OutOfRange,
            BindError::InvalidFormat { .. } => BindErrorKind::InvalidFormat,
            BindError::Placeholder { .. } => BindErrorKind::Placeholder,
            BindError::Refused { .. } => BindErrorKind::Refused,
            BindError::InvalidArguments { .. } => BindErrorKind::InvalidArguments,
            BindError::Several { .. } => BindErrorKind::Several,
            BindError::MissingBody { .. } => BindErrorKind::MissingBody,
            BindError::MissingBodyFields { .. } => BindErrorKind::MissingBodyFields,
            BindError::InvalidBody { .. } => BindErrorKind::InvalidBody,
            BindError::UnexpectedBody { .. } => BindErrorKind::UnexpectedBody,
        }
    }

    /// The kind of each of [`BindError::problems`], in order.
    pub fn kinds(&self) -> impl Iterator<Item = BindErrorKind> + '_ {
        self.problems().iter().map(BindError::kind)
    }

    /// Whether one of the problems is of `kind`: alone, or among several.
    pub fn has(&self, kind: BindErrorKind) -> bool {
        self.kinds().any(|k| k == kind)
    }

    /// Whether a required parameter is missing, alone or beside other problems.
    pub fn is_missing_parameter(&self) -> bool {
        self.has(BindErrorKind::MissingParameters)
    }

    /// The required parameters left out, over every problem, in declared order.
    pub fn missing_parameters(&self) -> impl Iterator<Item = &str> + '_ {
        self.problems()
            .iter()
            .flat_map(|problem| match problem {
                BindError::MissingParameters { params, .. } => params.as_slice(),
                _ => &[],
            })
            .map(String::as_str)
    }

    /// One error for `problems`: none, the one, or [`BindError::Several`].
    pub(super) fn from_problems(function: &str, mut problems: Vec<BindError>) -> Option<BindError> {
        match problems.len() {
            0 => None,
            1 => problems.pop(),
            _ => Some(BindError::Several {
                function: function.to_owned(),
                errors: problems,
            }),
        }
    }
}

/// One problem a line, each a sentence the model can act on.
fn listed(errors: &[BindError]) -> String {
    let mut out = String::new();
    for error in errors {
        out.push_str("\n- ");
        out.push_str(&error.to_string());
    }
    out
}

/// The hint after "unknown function": the closest known name (`did you mean 'x'?`), or
/// the names there are (the first of them, and how many `more`), so that the model can
/// correct its call. Tool boxes give it when a call names a function they lack, in the
/// binder's own words.
pub fn unknown_function_hint(
    closest: &Option<String>,
    available: &[String],
    more: usize,
) -> String {
    if let Some(name) = closest {
        return format!("did you mean '{name}'?");
    }
    if available.is_empty() {
        return "no functions are available".to_owned();
    }
    let mut out = String::from("available functions are ");
    for (i, name) in available.iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push('\'');
        out.push_str(name);
        out.push('\'');
    }
    if more > 0 {
        out.push_str(&format!(" and {more} more"));
    }
    out
}

fn takes(params: &[String]) -> String {
    if params.is_empty() {
        "no arguments".to_owned()
    } else {
        format!("{} ({})", params.len(), params.join(", "))
    }
}

fn unknown_param_hint(closest: &Option<String>, valid: &[String]) -> String {
    if valid.is_empty() {
        return "it takes no parameters".to_owned();
    }
    match closest {
        Some(name) => format!(
            "did you mean '{name}'? Valid parameters are {}",
            valid.join(", ")
        ),
        None => format!("valid parameters are {}", valid.join(", ")),
    }
}

fn did_you_mean(suggestion: &Option<String>) -> String {
    match suggestion {
        Some(choice) => format!(" (did you mean {choice}?)"),
        None => String::new(),
    }
}

fn range(min: Option<f64>, max: Option<f64>) -> String {
    match (min, max) {
        (Some(lo), Some(hi)) => format!("from {} to {}", Bound(lo), Bound(hi)),
        (Some(lo), None) => format!("of at least {}", Bound(lo)),
        (None, Some(hi)) => format!("of at most {}", Bound(hi)),
        (None, None) => "in range".to_owned(),
    }
}

/// A bound as a model would write it: `1`, not `1.0`.
struct Bound(f64);

impl fmt::Display for Bound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}
