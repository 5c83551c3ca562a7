//! Typed access to a call's arguments by name, for tools written as closures.

use super::toolbox::ToolError;
use atfunc::bind::BindError;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value as Json};

/// The arguments of one call, already bound to the function's interface, read by name as
/// Rust types.
///
/// The binder has checked what the interface declares (required parameters are present,
/// values have their declared types), so the easy path is safe: [`get`](Args::get) for a
/// required parameter, [`opt`](Args::opt) for an optional one. A value that does not fit
/// the Rust type asked for is an error written for the model, in the binder's words.
///
/// ```
/// use atfunc_tools::{Args, ToolError};
/// use serde_json::{json, Map};
///
/// let mut map = Map::new();
/// map.insert("x".into(), json!(21));
/// let args = Args::new("math.double", map);
///
/// assert_eq!(args.get::<f64>("x"), Ok(21.0));
/// assert_eq!(args.opt::<u32>("precision"), Ok(None));
/// assert_eq!(
///     args.get::<String>("label").unwrap_err().to_string(),
///     "Missing required parameter for function 'math.double': label"
/// );
/// assert_eq!(
///     args.get::<String>("x").unwrap_err().to_string(),
///     "Invalid value for parameter 'x' of function 'math.double': expected a string, got 21"
/// );
/// # let _: Option<ToolError> = None;
/// ```
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Args {
    function: String,
    map: Map<String, Json>,
}

impl Args {
    /// The arguments `map` of a call of `function` (its qualified name, used in errors).
    pub fn new(function: impl Into<String>, map: Map<String, Json>) -> Args {
        Args {
            function: function.into(),
            map,
        }
    }

    /// The qualified name of the function called.
    pub fn function(&self) -> &str {
        &self.function
    }

    /// The argument `name` as a `T`. Missing (or `null`) is the binder's "missing required
    /// parameter" error; a value that is not a `T` is its "invalid value" error.
    pub fn get<T: DeserializeOwned>(&self, name: &str) -> Result<T, ToolError> {
        self.opt(name)?.ok_or_else(|| {
            ToolError::Bind(BindError::MissingParameters {
                function: self.function.clone(),
                params: vec![name.to_owned()],
            })
        })
    }

    /// The argument `name` as a `T`, or `None` when it was not given (or given as `null`).
    pub fn opt<T: DeserializeOwned>(&self, name: &str) -> Result<Option<T>, ToolError> {
        match self.map.get(name) {
            None | Some(Json::Null) => Ok(None),
            Some(value) => T::deserialize(value).map(Some).map_err(|error| {
                ToolError::Bind(BindError::InvalidValue {
                    function: self.function.clone(),
                    param: name.to_owned(),
                    expected: expected(&error.to_string()),
                    got: value.to_string(),
                })
            }),
        }
    }

    /// The argument `name` as JSON, if given.
    pub fn value(&self, name: &str) -> Option<&Json> {
        self.map.get(name)
    }

    /// The arguments as a JSON object.
    pub fn as_map(&self) -> &Map<String, Json> {
        &self.map
    }

    /// The arguments as a JSON object, owned.
    pub fn into_map(self) -> Map<String, Json> {
        self.map
    }
}

/// What serde expected, from its message (`invalid type: integer `21`, expected a string`):
/// the part after the last `expected `, or `another value` when it names none.
fn expected(message: &str) -> String {
    match message.rsplit_once("expected ") {
        Some((_, wanted)) => wanted.trim_end_matches('.').replace('`', "'"),
        None => "another value".to_owned(),
    }
}
