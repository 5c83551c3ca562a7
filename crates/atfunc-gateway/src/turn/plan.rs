//! What the gateway does with one request, decided from its own settings and the
//! request's fields before anything is loaded or asked: run the calls itself, pass the
//! request through, or answer a tool turn, with a grammar or without.

use super::request::Request;
use super::TurnError;
use atfunc::parse::Dialect;
use serde_json::Value as Json;

/// The gateway's settings that decide a request's plan.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Settings {
    /// Run the calls of every request without tools (`--execute`).
    pub(crate) execute_all: bool,
    /// A grammar for every request with tools (`--constrain`).
    pub(crate) constrain: bool,
    /// A request may ask for a grammar itself (`--constrain-per-request`).
    pub(crate) constrain_per_request: bool,
    /// The call format the upstream's model writes.
    pub(crate) dialect: Dialect,
}

/// What to do with a request: `T` its tools, `B` the gateway's tool boxes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Plan<T, B> {
    /// Run its calls in the gateway's tool boxes (`atfunc_execute`).
    Execute(B),
    /// Send it upstream as it came; `strip` when the gateway's own fields must be taken
    /// out of it first.
    PassThrough { strip: bool },
    /// A turn with the request's tools, under a grammar or not.
    Tools { tools: T, constrain: bool },
}

impl<T, B> Plan<T, B> {
    /// The plan for `request`, with its `tools` (if it has any) and the gateway's tool
    /// `boxes` (if it runs calls), under the gateway's `settings`; a field of the gateway's
    /// that the request sets wrongly, or that asks for what this gateway does not do, is
    /// refused saying what to change.
    pub(crate) fn resolve(
        settings: &Settings,
        request: &Request,
        tools: Option<T>,
        boxes: Option<B>,
    ) -> Result<Plan<T, B>, TurnError> {
        let has_tools = tools.is_some();
        let execute = match request.get("atfunc_execute") {
            Some(Json::Bool(flag)) => flag,
            None | Some(Json::Null) => settings.execute_all && !has_tools,
            Some(_) => {
                return Err(TurnError::bad_request(
                    "'atfunc_execute' must be true or false",
                ))
            }
        };
        let asked = request.get("atfunc_constrain");
        if !super::has_grammar(settings.dialect) && asked == Some(Json::Bool(true)) {
            return Err(TurnError::bad_request(format!(
                "This gateway reads the model's own call format ({}), and grammars are \
                 only made for atfunc's syntax and hermes: send the request without \
                 'atfunc_constrain'",
                settings.dialect
            )));
        }
        let constrain = match asked {
            Some(Json::Bool(true)) if !settings.constrain && !settings.constrain_per_request => {
                return Err(TurnError::bad_request(
                    "This gateway does not let a request turn on grammars with \
                     'atfunc_constrain': start it with --constrain-per-request (or \
                     --constrain, for every request)",
                ))
            }
            Some(Json::Bool(flag)) => flag,
            None | Some(Json::Null) => settings.constrain,
            Some(_) => {
                return Err(TurnError::bad_request(
                    "'atfunc_constrain' must be true or false",
                ))
            }
        };
        if execute {
            let Some(boxes) = boxes else {
                return Err(TurnError::bad_request(
                    "This gateway runs no calls: start it with --config to use atfunc_execute",
                ));
            };
            if has_tools {
                return Err(TurnError::bad_request(
                    "A request with atfunc_execute uses the gateway's functions: send no \
                     'tools'",
                ));
            }
            return Ok(Plan::Execute(boxes));
        }
        match tools {
            Some(tools) => Ok(Plan::Tools { tools, constrain }),
            None => {
                let strip =
                    request.contains("atfunc_execute") || request.contains("atfunc_constrain");
                Ok(Plan::PassThrough { strip })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        Settings {
            execute_all: false,
            constrain: false,
            constrain_per_request: true,
            dialect: Dialect::Atfunc,
        }
    }

    /// The plan with tools (`()`) or without, and tool boxes (`()`) unless `no_boxes`.
    fn plan_with(
        settings: &Settings,
        body: &str,
        has_tools: bool,
        no_boxes: bool,
    ) -> Result<Plan<(), ()>, String> {
        let request = Request::parse(body.as_bytes()).unwrap();
        let tools = has_tools.then_some(());
        let boxes = (!no_boxes).then_some(());
        Plan::resolve(settings, &request, tools, boxes).map_err(|e| e.to_string())
    }

    fn plan(settings: &Settings, body: &str, has_tools: bool) -> Result<Plan<(), ()>, String> {
        plan_with(settings, body, has_tools, false)
    }

    #[test]
    fn a_request_is_run_passed_through_or_answered_as_its_fields_and_the_gateway_say() {
        let s = settings();
        assert_eq!(
            plan(&s, r#"{"atfunc_execute": true}"#, false),
            Ok(Plan::Execute(()))
        );
        assert_eq!(
            plan(&s, "{}", false),
            Ok(Plan::PassThrough { strip: false })
        );
        assert_eq!(
            plan(&s, r#"{"atfunc_execute": false}"#, false),
            Ok(Plan::PassThrough { strip: true })
        );
        assert_eq!(
            plan(&s, "{}", true),
            Ok(Plan::Tools {
                tools: (),
                constrain: false
            })
        );
        assert_eq!(
            plan(&s, r#"{"atfunc_constrain": true}"#, true),
            Ok(Plan::Tools {
                tools: (),
                constrain: true
            })
        );
        let everything = Settings {
            execute_all: true,
            constrain: true,
            ..s
        };
        assert_eq!(plan(&everything, "{}", false), Ok(Plan::Execute(())));
        // A request's own `false` wins over the gateway's defaults.
        assert_eq!(
            plan(&everything, r#"{"atfunc_constrain": false}"#, true),
            Ok(Plan::Tools {
                tools: (),
                constrain: false
            })
        );
        assert_eq!(
            plan(&everything, r#"{"atfunc_execute": null}"#, true),
            Ok(Plan::Tools {
                tools: (),
                constrain: true
            })
        );
    }

    #[test]
    fn what_a_gateway_does_not_do_is_refused_saying_what_to_change() {
        let s = settings();
        let refused = |settings: &Settings, body: &str, has_tools: bool, says: &str| {
            let error = plan(settings, body, has_tools).unwrap_err();
            assert!(error.contains(says), "{body}: {error}");
        };
        refused(
            &s,
            r#"{"atfunc_execute": 1}"#,
            false,
            "must be true or false",
        );
        refused(
            &s,
            r#"{"atfunc_constrain": "yes"}"#,
            true,
            "must be true or false",
        );
        refused(&s, r#"{"atfunc_execute": true}"#, true, "send no 'tools'");
        let error = plan_with(&s, r#"{"atfunc_execute": true}"#, false, true).unwrap_err();
        assert!(error.contains("--config"), "{error}");
        let fixed = Settings {
            constrain_per_request: false,
            ..s
        };
        refused(
            &fixed,
            r#"{"atfunc_constrain": true}"#,
            true,
            "--constrain-per-request",
        );
        let pythonic = Settings {
            dialect: Dialect::Pythonic,
            ..s
        };
        refused(
            &pythonic,
            r#"{"atfunc_constrain": true}"#,
            true,
            "own call format (pythonic)",
        );
        // Hermes has a grammar of its own blocks.
        let hermes = Settings {
            dialect: Dialect::Hermes,
            ..s
        };
        assert_eq!(
            plan(&hermes, r#"{"atfunc_constrain": true}"#, true),
            Ok(Plan::Tools {
                tools: (),
                constrain: true
            })
        );
    }
}
