//! Reading a config's JSON, every problem collected.

use super::*;

pub(super) const TOP_FIELDS: &[&str] = &["root", "toolboxes"];
pub(super) const COMMON_FIELDS: &[&str] = &["name", "kind", "timeout_ms", "confirm"];
pub(super) const FILE_FIELDS: &[&str] = &["root", "max_read_bytes"];
pub(super) const COMMAND_FIELDS: &[&str] = &[
    "functions",
    "env",
    "pass_env",
    "inherit_env",
    "cwd",
    "max_output_bytes",
    "uid",
    "gid",
];
pub(super) const HTTP_FIELDS: &[&str] = &[
    "base_url",
    "headers",
    "functions",
    "max_response_bytes",
    "max_redirects",
];
pub(super) const MCP_FIELDS: &[&str] = &["command", "env"];
/// The fields of a function in each shape a tools file takes (see `load_interfaces`).
pub(super) const STANDARD_FIELDS: &[&str] = &[
    "domain",
    "name",
    "type",
    "description",
    "params",
    "path_params",
    "query_params",
    "request_body",
    "returns",
    "response_type",
];
pub(super) const SCHEMA_FUNCTION_FIELDS: &[&str] = &[
    "type",
    "name",
    "description",
    "parameters",
    "returns",
    "strict",
];
pub(super) const OPENAI_TOOL_FIELDS: &[&str] = &["type", "function"];
pub(super) const KINDS: &str = "file, command, http or mcp";

/// How a config's function definitions are read, and what reading them worked around.
pub(super) struct Reading {
    pub(super) strictness: Strictness,
    /// `toolbox 'api' (#3): function 'f': ...`, in the order the functions are read.
    pub(super) warnings: Vec<String>,
}

pub(super) fn read_config(
    json: &Json,
    dir: &Path,
    file: &str,
    problems: &mut Vec<String>,
    reading: &mut Reading,
) -> Config {
    let mut config = Config {
        file: file.to_owned(),
        dir: dir.to_owned(),
        root: None,
        toolboxes: Vec::new(),
        unread: Vec::new(),
        warnings: Vec::new(),
    };
    let Some(map) = json.as_object() else {
        problems.push(format!(
            "the config must be a JSON object with 'toolboxes', found {}",
            json_kind(json)
        ));
        return config;
    };
    let mut top = Fields {
        map,
        at: String::new(),
        problems,
    };
    top.unknown(&[TOP_FIELDS]);
    config.root = top.string("root", false);
    let entries = match map.get("toolboxes") {
        Some(Json::Array(items)) => items.as_slice(),
        Some(other) => {
            problems.push(format!(
                "field 'toolboxes' must be a list of toolboxes, found {}",
                json_kind(other)
            ));
            &[]
        }
        None => {
            problems.push(String::from("missing required field 'toolboxes'"));
            &[]
        }
    };
    for (index, entry) in entries.iter().enumerate() {
        let before = problems.len();
        let spec = read_toolbox(index + 1, entry, dir, problems, reading);
        // A toolbox with a problem is not built by a check (`Config::check_file`): its
        // build would report some of the same problems again.
        match spec {
            Some(spec) if problems.len() == before => config.toolboxes.push(spec),
            _ => config.unread.extend(toolbox_name(entry)),
        }
    }
    // Names are unique ignoring case, as calls match them.
    let mut clashing = Vec::new();
    for (i, spec) in config.toolboxes.iter().enumerate() {
        let lower = spec.name.to_lowercase();
        if lower == crate::CONTROL_DOMAIN {
            problems.push(format!(
                "{}: field 'name': '{}' is the control functions' domain; choose another name",
                spec.at(),
                spec.name
            ));
            clashing.push(i);
        }
        let earlier = config.toolboxes.get(..i).unwrap_or_default();
        if let Some(first) = earlier.iter().find(|t| t.name.to_lowercase() == lower) {
            problems.push(format!(
                "{}: field 'name': '{}' is taken by toolbox #{}; names must differ (ignoring case)",
                spec.at(),
                spec.name,
                first.number
            ));
            clashing.push(i);
        }
    }
    // Not built by a check either, where registering them would say the same again (the
    // first of a name is, so the name stays known).
    // A name can clash twice (`TOOLS` after `tools`): removed once.
    clashing.dedup();
    for i in clashing.into_iter().rev() {
        if i < config.toolboxes.len() {
            config.toolboxes.remove(i);
        }
    }
    if let Some(root) = &config.root {
        let names = config.toolboxes.iter().map(|t| &t.name);
        if !names
            .chain(&config.unread)
            .any(|name| name.to_lowercase() == root.to_lowercase())
        {
            problems.push(format!(
                "field 'root': no toolbox is named '{root}'; it must be one of the toolboxes' names"
            ));
            config.root = None;
        }
    }
    config
}

/// The name a toolbox entry gives itself, if it is a string.
fn toolbox_name(entry: &Json) -> Option<String> {
    entry.get("name")?.as_str().map(str::to_owned)
}

pub(super) fn read_toolbox(
    number: usize,
    entry: &Json,
    dir: &Path,
    problems: &mut Vec<String>,
    reading: &mut Reading,
) -> Option<ToolboxSpec> {
    let Some(map) = entry.as_object() else {
        problems.push(format!(
            "toolbox #{number}: must be an object with 'name' and 'kind', found {}",
            json_kind(entry)
        ));
        return None;
    };
    let name = match map.get("name") {
        Some(Json::String(name)) => Some(name.clone()),
        _ => None,
    };
    let at = match &name {
        Some(name) => format!("toolbox '{name}' (#{number})"),
        None => format!("toolbox #{number}"),
    };
    let mut fields = Fields {
        map,
        at: at.clone(),
        problems,
    };
    match (map.get("name"), &name) {
        (None, _) => fields.report("missing required field 'name'"),
        (Some(other), None) => fields.report(format!(
            "field 'name' must be a string, found {}",
            json_kind(other)
        )),
        (_, Some(name)) => {
            if name.is_empty() || !name.split('.').all(is_identifier) {
                fields.report(format!(
                    "field 'name' must be a name (letters, digits and '_', parts joined by '.'), found {}",
                    Json::String(name.clone())
                ));
            }
        }
    }
    let kind = fields.string("kind", true);
    let timeout = fields.positive("timeout_ms").map(Duration::from_millis);
    let (confirm, confirm_listed) = toolbox_confirm(&mut fields);
    let mut confirm_functions = Vec::new();
    // A name that is missing or of the wrong type does not hide the entry's other
    // problems: the rest is read under a stand-in, and the entry then dropped.
    let named = name.is_some();
    let name = name.unwrap_or_else(|| String::from("toolbox"));
    let kind = match kind.as_deref() {
        Some("file") => {
            fields.unknown(&[COMMON_FIELDS, FILE_FIELDS]);
            let root = fields.string("root", true).map(|r| dir.join(r));
            let max_read_bytes = fields.positive("max_read_bytes");
            KindSpec::File {
                root: root?,
                max_read_bytes,
            }
        }
        Some("command") => {
            fields.unknown(&[COMMON_FIELDS, COMMAND_FIELDS]);
            let env = fields.sources("env");
            let inherit_env = fields.boolean("inherit_env").unwrap_or(false);
            let pass_env = fields.variable_names("pass_env");
            let cwd = fields
                .string("cwd", false)
                .map_or_else(|| dir.to_owned(), |c| dir.join(c));
            let max_output_bytes = fields.positive("max_output_bytes").map(to_usize);
            let run_as = fields.user_and_group();
            let mut functions = Vec::new();
            let read = read_functions(&mut fields, &name, &["command", "confirm"], reading);
            for (interface, extra) in read {
                if function_confirm(&mut fields, &interface, &extra) {
                    confirm_functions.push(interface.qualified_name());
                }
                let command = match extra.get("command") {
                    Some(value) => string_list(value),
                    None => Err(String::from("missing required field 'command'")),
                };
                match command {
                    Ok(command) => functions.push((interface, resolve_program(command, dir))),
                    Err(message) => fields.report(format!(
                        "function '{}': {}",
                        interface.name,
                        message.replace("the value", "field 'command'")
                    )),
                }
            }
            for (interface, _) in &functions {
                if interface.has_body() && interface.params.iter().any(|p| p.name == "body") {
                    fields.report(format!(
                        "function '{}': a parameter named 'body' clashes with the request body, which the program receives under \"body\"",
                        interface.name
                    ));
                }
            }
            KindSpec::Command {
                functions,
                env,
                inherit_env,
                pass_env,
                cwd,
                max_output_bytes,
                run_as,
            }
        }
        Some("http") => {
            fields.unknown(&[COMMON_FIELDS, HTTP_FIELDS]);
            let base_url = fields.string("base_url", true);
            let headers = fields.sources("headers");
            let max_response_bytes = fields.positive("max_response_bytes").map(to_usize);
            let max_redirects = fields.count("max_redirects").map(to_usize);
            let mut functions = Vec::new();
            let read = read_functions(&mut fields, &name, &["method", "path", "confirm"], reading);
            for (interface, extra) in read {
                if function_confirm(&mut fields, &interface, &extra) {
                    confirm_functions.push(interface.qualified_name());
                }
                let method = match extra.get("method") {
                    None => Some(String::from("GET")),
                    Some(Json::String(method)) => Some(method.clone()),
                    Some(other) => {
                        fields.report(format!(
                            "function '{}': field 'method' must be a string, found {}",
                            interface.name,
                            json_kind(other)
                        ));
                        None
                    }
                };
                let path = match extra.get("path") {
                    Some(Json::String(path)) => Some(path.clone()),
                    Some(other) => {
                        fields.report(format!(
                            "function '{}': field 'path' must be a string, found {}",
                            interface.name,
                            json_kind(other)
                        ));
                        None
                    }
                    None => {
                        fields.report(format!(
                            "function '{}': missing required field 'path'",
                            interface.name
                        ));
                        None
                    }
                };
                if let (Some(method), Some(path)) = (method, path) {
                    functions.push((interface, method, path));
                }
            }
            let Some(base_url) = base_url else {
                // The endpoints are still checked, against a stand-in URL, so that every
                // problem is reported at once.
                check_http(&name, "http://127.0.0.1", &headers, &functions, &mut fields);
                return None;
            };
            check_http(&name, &base_url, &headers, &functions, &mut fields);
            KindSpec::Http {
                base_url,
                headers,
                functions,
                max_response_bytes,
                max_redirects,
            }
        }
        Some("mcp") => {
            fields.unknown(&[COMMON_FIELDS, MCP_FIELDS]);
            let env = fields.sources("env");
            let command = match map.get("command") {
                Some(value) => match string_list(value) {
                    Ok(command) => Some(resolve_program(command, dir)),
                    Err(message) => {
                        fields.report(message.replace("the value", "field 'command'"));
                        None
                    }
                },
                None => {
                    fields.report("missing required field 'command'");
                    None
                }
            };
            KindSpec::Mcp {
                command: command?,
                env,
            }
        }
        Some(other) => {
            fields.report(format!(
                "field 'kind' must be {KINDS}, found {}",
                Json::String(other.to_owned())
            ));
            read_any_kind(&mut fields, &name, reading);
            return None;
        }
        None => {
            read_any_kind(&mut fields, &name, reading);
            return None;
        }
    };
    if !named {
        return None;
    }
    let spec = ToolboxSpec {
        number,
        name,
        timeout,
        confirm,
        confirm_functions,
        confirm_listed,
        kind,
    };
    check_built_in(&spec, &mut fields);
    Some(spec)
}

/// A toolbox whose kind is not known still has its fields and functions checked, against
/// what any kind allows, so that its other problems are listed with the kind's.
fn read_any_kind(fields: &mut Fields<'_>, name: &str, reading: &mut Reading) {
    fields.unknown(&[
        COMMON_FIELDS,
        FILE_FIELDS,
        COMMAND_FIELDS,
        HTTP_FIELDS,
        MCP_FIELDS,
    ]);
    if fields.map.contains_key("functions") {
        read_functions(
            fields,
            name,
            &["command", "method", "path", "confirm"],
            reading,
        );
    }
}

/// Kinds this build leaves out are reported while reading, with the other problems.
pub(super) fn check_built_in(spec: &ToolboxSpec, fields: &mut Fields<'_>) {
    let missing = match spec.kind {
        KindSpec::Command { .. } if cfg!(not(feature = "command")) => Some(("command", "command")),
        KindSpec::Http { .. } if cfg!(not(feature = "http")) => Some(("HTTP", "http")),
        KindSpec::Mcp { .. } if cfg!(not(feature = "mcp")) => Some(("MCP", "mcp")),
        _ => None,
    };
    if let Some((what, feature)) = missing {
        fields.report(format!("field 'kind': {}", without(what, feature)));
    }
}

/// The static checks of an http box (URL, methods, paths, placeholders): an http box is
/// built with stand-in header values, which are read from the environment only later.
#[cfg(feature = "http")]
pub(super) fn check_http(
    name: &str,
    base_url: &str,
    headers: &[(String, Source)],
    functions: &[(Interface, String, String)],
    fields: &mut Fields<'_>,
) {
    let stand_in = headers
        .iter()
        .map(|(header, source)| match source {
            Source::Literal(value) => (header.clone(), value.clone(), false),
            Source::Env { .. } => (header.clone(), String::from("stand-in"), false),
        })
        .collect();
    let settings = HttpSettings {
        base_url,
        headers: stand_in,
        functions,
        timeout: None,
        max_response_bytes: None,
        max_redirects: None,
    };
    if let Err(problems) = build_http(name, settings) {
        for problem in problems {
            fields.report(problem);
        }
    }
}

#[cfg(not(feature = "http"))]
pub(super) fn check_http(
    _name: &str,
    _base_url: &str,
    _headers: &[(String, Source)],
    _functions: &[(Interface, String, String)],
    _fields: &mut Fields<'_>,
) {
}

/// A toolbox's `confirm`: `true` for every function, or a list of some functions' names.
pub(super) fn toolbox_confirm(fields: &mut Fields<'_>) -> (bool, Vec<String>) {
    match fields.map.get("confirm") {
        None => (false, Vec::new()),
        Some(Json::Bool(confirm)) => (*confirm, Vec::new()),
        Some(Json::Array(items)) => {
            let mut names = Vec::with_capacity(items.len());
            for item in items {
                match item {
                    Json::String(name) if !name.is_empty() => names.push(name.clone()),
                    other => {
                        fields.report(format!(
                            "field 'confirm' must list function names, found {}",
                            json_kind(other)
                        ));
                        return (false, Vec::new());
                    }
                }
            }
            (false, names)
        }
        Some(other) => {
            fields.report(format!(
                "field 'confirm' must be true, false or a list of the toolbox's function names, found {}",
                json_kind(other)
            ));
            (false, Vec::new())
        }
    }
}

/// Whether a function entry says `"confirm": true`.
pub(super) fn function_confirm(
    fields: &mut Fields<'_>,
    interface: &Interface,
    extra: &Map<String, Json>,
) -> bool {
    match extra.get("confirm") {
        None => false,
        Some(Json::Bool(confirm)) => *confirm,
        Some(other) => {
            fields.report(format!(
                "function '{}': field 'confirm' must be true or false, found {}",
                interface.name,
                json_kind(other)
            ));
            false
        }
    }
}

/// A program holding a `/` is relative to the config's folder; a bare name is looked up
/// in `PATH` when it runs.
pub(super) fn resolve_program(mut command: Vec<String>, dir: &Path) -> Vec<String> {
    if let Some(program) = command.first_mut() {
        if program.contains('/') && Path::new(program.as_str()).is_relative() {
            *program = dir.join(program.as_str()).to_string_lossy().into_owned();
        }
    }
    command
}

pub(super) fn string_list(value: &Json) -> Result<Vec<String>, String> {
    let Json::Array(items) = value else {
        return Err(format!(
            "the value must be a list of strings (the program, then its arguments), found {}",
            json_kind(value)
        ));
    };
    let mut list = Vec::with_capacity(items.len());
    for item in items {
        match item {
            Json::String(s) => list.push(s.clone()),
            other => {
                return Err(format!(
                    "the value must hold only strings, found {}",
                    json_kind(other)
                ))
            }
        }
    }
    match list.first() {
        None => Err(String::from(
            "the value must name a program: it is an empty list",
        )),
        Some(program) if program.is_empty() => Err(String::from(
            "the value must name a program: its first item is empty",
        )),
        Some(_) => Ok(list),
    }
}

/// Reads a box's `functions`: each entry's own keys (`extra`) taken out, the rest loaded as
/// an interface in the box's domain, as a tools file is loaded (with `reading`'s
/// strictness; what was worked around goes to its warnings).
pub(super) fn read_functions(
    fields: &mut Fields<'_>,
    toolbox: &str,
    extra_keys: &[&str],
    reading: &mut Reading,
) -> Vec<(Interface, Map<String, Json>)> {
    let entries = match fields.map.get("functions") {
        Some(Json::Array(items)) => items.clone(),
        Some(other) => {
            fields.report(format!(
                "field 'functions' must be a list of interfaces, found {}",
                json_kind(other)
            ));
            return Vec::new();
        }
        None => {
            fields.report("missing required field 'functions'");
            return Vec::new();
        }
    };
    let mut loaded = Vec::new();
    for (index, entry) in entries.into_iter().enumerate() {
        let number = index + 1;
        let Json::Object(mut map) = entry else {
            fields.report(format!(
                "function #{number}: must be an object (an interface), found {}",
                json_kind(&entry)
            ));
            continue;
        };
        let mut extra = Map::new();
        for key in extra_keys {
            if let Some(value) = map.remove(*key) {
                extra.insert((*key).to_owned(), value);
            }
        }
        // The standard format requires a domain; inside a toolbox it is the toolbox's name.
        let openai = matches!(map.get("function"), Some(Json::Object(_)));
        let schema = map.contains_key("parameters") && !map.contains_key("params");
        let standard = !openai && !schema;
        // A misspelt field would otherwise be dropped without a word.
        let shape: &[&str] = if openai {
            OPENAI_TOOL_FIELDS
        } else if schema {
            SCHEMA_FUNCTION_FIELDS
        } else {
            STANDARD_FIELDS
        };
        let known: Vec<&str> = shape.iter().chain(extra_keys).copied().collect();
        let elsewhere: Vec<(&str, &str)> = COMMON_FIELDS
            .iter()
            .map(|name| (*name, "toolbox"))
            .collect();
        let label = match map
            .get("name")
            .or_else(|| map.get("function").and_then(|f| f.get("name")))
        {
            Some(Json::String(name)) => format!("function '{name}'"),
            _ => format!("function #{number}"),
        };
        for key in map.keys().filter(|key| !known.contains(&key.as_str())) {
            let message = unknown_field(key, &known, &elsewhere);
            fields.report(format!("{label}: {message}"));
        }
        if standard && !map.contains_key("domain") {
            map.insert("domain".into(), Json::String(toolbox.to_owned()));
        }
        let label = |problem: &atfunc::interface::Problem| {
            if problem.function.is_empty() || problem.function.starts_with('#') {
                format!("function #{number}")
            } else {
                format!("function '{}'", problem.function)
            }
        };
        let entry = Json::Array(vec![Json::Object(map)]);
        let limits = LoadLimits::default();
        let options = LoadOptions::default()
            .with_limits(limits)
            .with_strictness(reading.strictness);
        let mut interfaces = match options.load(&entry) {
            Ok(loaded) => {
                for warning in &loaded.warnings {
                    let at = &fields.at;
                    let function = label(warning);
                    reading
                        .warnings
                        .push(format!("{at}: {function}: {}", warning.message));
                }
                loaded.interfaces
            }
            Err(LoadError::Invalid(found)) => {
                for problem in found {
                    fields.report(format!("{}: {}", label(&problem), problem.message));
                }
                continue;
            }
            Err(other) => {
                fields.report(format!("function #{number}: {other}"));
                continue;
            }
        };
        let Some(mut interface) = interfaces.pop() else {
            continue;
        };
        match &interface.domain {
            None => interface.domain = Some(toolbox.to_owned()),
            Some(domain) if domain == toolbox => {}
            Some(domain) => {
                fields.report(format!(
                    "function '{}': its domain '{domain}' is not the toolbox's name '{toolbox}'; leave the domain out",
                    interface.qualified_name()
                ));
                continue;
            }
        }
        loaded.push((interface, extra));
    }
    let interfaces: Vec<Interface> = loaded.iter().map(|(i, _)| i.clone()).collect();
    if let Err(errors) = validate_toolbox(toolbox, &interfaces) {
        for error in errors.0 {
            fields.report(format!("function '{}': {}", error.function, error.message));
        }
    }
    loaded
}
