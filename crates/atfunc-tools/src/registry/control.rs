//! The control functions, domain `tools`: what a model can ask the registry about itself.

use super::view::{Conversation, View};
use crate::toolbox::ToolError;
use atfunc::format::group_digits;
use atfunc::interface::{Interface, Param, ParamType};
use atfunc::render::{render_interface_with, PromptOptions};
use serde_json::{Map, Value as Json};
use unicase::UniCase;

/// The domain of the control functions.
pub const CONTROL_DOMAIN: &str = "tools";

/// One of the registry's control functions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[non_exhaustive]
pub(crate) enum ControlFunction {
    /// `tools.get_toolboxes()`: the names of the registered boxes.
    GetToolboxes,
    /// `tools.get_functions(toolbox?)`: the functions, all or of one box.
    GetFunctions,
    /// `tools.get_function_interface(function_name, separator?)`: one function's interface
    /// as prompt text.
    GetFunctionInterface,
    /// `tools.set_truncate_length(length)`: the length results are cut at, for the rest of
    /// the model's conversation (never for the registry's other conversations).
    SetTruncateLength,
}

impl ControlFunction {
    /// Every control function, in the order they are listed.
    pub const ALL: [ControlFunction; 4] = [
        ControlFunction::GetToolboxes,
        ControlFunction::GetFunctions,
        ControlFunction::GetFunctionInterface,
        ControlFunction::SetTruncateLength,
    ];

    /// The function's name, without the domain.
    pub fn name(self) -> &'static str {
        match self {
            ControlFunction::GetToolboxes => "get_toolboxes",
            ControlFunction::GetFunctions => "get_functions",
            ControlFunction::GetFunctionInterface => "get_function_interface",
            ControlFunction::SetTruncateLength => "set_truncate_length",
        }
    }

    /// The function named `name` (`get_toolboxes` or `tools.get_toolboxes`, any case).
    pub fn from_name(name: &str) -> Option<ControlFunction> {
        let short = match name.rsplit_once('.') {
            Some((domain, short)) if UniCase::new(domain) == UniCase::new(CONTROL_DOMAIN) => short,
            Some(_) => return None,
            None => name,
        };
        ControlFunction::ALL
            .into_iter()
            .find(|f| UniCase::new(f.name()) == UniCase::new(short))
    }

    /// The function's interface.
    pub fn interface(self) -> Interface {
        let base = Interface::new(self.name()).in_domain(CONTROL_DOMAIN);
        let mut interface = match self {
            ControlFunction::GetToolboxes => {
                base.describe("List the names of all registered toolboxes")
            }
            ControlFunction::GetFunctions => base
                .describe("List the names of all functions, or of the functions of one toolbox")
                .param(
                    Param::new("toolbox", ParamType::String)
                        .describe("Only the functions of this toolbox"),
                ),
            ControlFunction::GetFunctionInterface => base
                .describe("Show how to call a function: its parameters and description")
                .param(
                    Param::new("function_name", ParamType::String)
                        .required()
                        .describe("Full function name, such as weather.get_temp"),
                )
                .param(
                    Param::new("separator", ParamType::Boolean)
                        .describe("Add a visual separator line"),
                ),
            ControlFunction::SetTruncateLength => base
                .describe("Set the length, in characters, at which function results are cut")
                .param(
                    Param::new("length", ParamType::Integer)
                        .required()
                        .describe("Truncation length in characters")
                        .min(1.0),
                ),
        };
        interface.returns = Some(
            match self {
                ControlFunction::GetToolboxes | ControlFunction::GetFunctions => "array",
                _ => "string",
            }
            .to_owned(),
        );
        interface
    }
}

/// The control functions, listed for an error message.
pub(crate) fn names_list() -> String {
    ControlFunction::ALL
        .iter()
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Runs a control function with bound arguments. A setting changes `conversation`, the
/// answer's own; a call outside any answer (`Registry::call`) has none to change.
pub(super) fn run(
    view: &View,
    conversation: Option<&Conversation>,
    function: ControlFunction,
    args: &Map<String, Json>,
) -> Result<Json, ToolError> {
    match function {
        ControlFunction::GetToolboxes => Ok(Json::from(view.toolbox_names().to_vec())),
        ControlFunction::GetFunctions => {
            let toolbox = args.get("toolbox").and_then(Json::as_str);
            match view.function_names(toolbox) {
                Some(names) => Ok(Json::from(names)),
                None => Err(ToolError::msg(format!(
                    "Unknown toolbox '{}': the toolboxes are {}",
                    toolbox.unwrap_or_default(),
                    view.toolbox_names().join(", ")
                ))),
            }
        }
        ControlFunction::GetFunctionInterface => {
            let name = args
                .get("function_name")
                .and_then(Json::as_str)
                .unwrap_or_default();
            let separator = args
                .get("separator")
                .and_then(Json::as_bool)
                .unwrap_or(false);
            let (_, interface) = view.catalog().find(name)?;
            Ok(Json::String(render_interface_with(
                interface,
                &PromptOptions::default()
                    .with_root(view.catalog().root())
                    .with_separator(separator),
            )))
        }
        ControlFunction::SetTruncateLength => {
            let length = args
                .get("length")
                .and_then(Json::as_u64)
                .and_then(|n| usize::try_from(n).ok())
                .filter(|n| *n >= 1)
                .ok_or_else(|| {
                    ToolError::msg(
                        "The length must be a whole number of characters, at least 1: @tools.set_truncate_length(5000)",
                    )
                })?;
            let conversation = conversation.ok_or_else(|| {
                ToolError::msg(
                    "tools.set_truncate_length changes the settings of a model's answer; outside an answer, set the registry's truncate length instead",
                )
            })?;
            conversation.set_truncate_length(length);
            Ok(Json::String(format!(
                "Function results are now cut at {} characters",
                group_digits(length)
            )))
        }
    }
}
