//! BFCL cases: a questions file and its possible-answer file, both JSON Lines.

use super::literal::Language;
use atfunc::interface::{Interface, LoadOptions};
use serde_json::Value as Json;
use std::collections::HashMap;

/// One question with its tools and its possible answer.
#[derive(Debug, Clone)]
pub struct Case {
    /// The case's id (`simple_python_12`).
    pub id: String,
    /// The BFCL category: the id without its number (`simple_python`, and `live_simple`
    /// for a live id such as `live_simple_200-116-8`).
    pub category: String,
    /// The conversation the model answers (every turn of the question, in order).
    pub messages: Vec<Json>,
    /// The functions as the questions file writes them (the scorer reads their types).
    pub functions: Vec<Json>,
    /// The same functions as interfaces, as BFCL presents them to a model: in the Java
    /// and JavaScript categories every parameter is a string holding a literal of its
    /// declared type, which the description names.
    pub interfaces: Vec<Interface>,
    /// The possible answer: a list of `{name: {param: [acceptable values]}}`. Empty for
    /// an `irrelevance` case, whose right answer has no call.
    pub ground_truth: Vec<Json>,
}

impl Case {
    /// Whether the right answer has no call: BFCL's `irrelevance` categories
    /// (`irrelevance`, `live_irrelevance`), whose functions cannot answer the question.
    pub fn wants_no_call(&self) -> bool {
        wants_no_call(&self.category)
    }
}

/// Whether a category's right answers have no call.
pub(crate) fn wants_no_call(category: &str) -> bool {
    category == "irrelevance" || category.ends_with("_irrelevance")
}

/// A case that could not be loaded, and why.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Skipped {
    /// The case's id, or `line N` when the line has none.
    pub id: String,
    /// What is wrong with it.
    pub reason: String,
}

/// The cases of a pair of files, in the questions file's order, and those skipped.
#[derive(Debug, Clone, Default)]
pub struct LoadedCases {
    /// The cases that loaded.
    pub cases: Vec<Case>,
    /// The cases that did not, with the reason.
    pub skipped: Vec<Skipped>,
}

/// Reads BFCL questions (`{"id", "question": [[messages]], "function": [...]}` per line)
/// and possible answers (`{"id", "ground_truth": [...]}` per line), matched by id. A line
/// that does not load is reported in [`LoadedCases::skipped`] and the others go on. An
/// `irrelevance` question needs no possible answer (its right answer has no call).
///
/// ```
/// let questions = concat!(
///     r#"{"id": "simple_0", "question": [[{"role": "user", "content": "sqrt of 2?"}]], "#,
///     r#""function": [{"name": "math.sqrt", "parameters": {"type": "dict", "#,
///     r#""properties": {"x": {"type": "float"}}, "required": ["x"]}}]}"#,
///     "\nnot json\n",
/// );
/// let answers = r#"{"id": "simple_0", "ground_truth": [{"math.sqrt": {"x": [2.0]}}]}"#;
/// let loaded = atfunc_lab::eval::load_cases(questions, answers);
/// assert_eq!(loaded.cases[0].category, "simple");
/// assert_eq!(loaded.skipped[0].id, "line 2");
/// ```
pub fn load_cases(questions: &str, answers: &str) -> LoadedCases {
    let mut loaded = LoadedCases::default();
    let mut truth: HashMap<String, Vec<Json>> = HashMap::new();
    for (n, line) in numbered(answers) {
        match serde_json::from_str::<Json>(line) {
            Ok(answer) => {
                let id = answer.get("id").and_then(Json::as_str);
                let list = answer.get("ground_truth").and_then(Json::as_array);
                match (id, list) {
                    (Some(id), Some(list)) => {
                        truth.insert(id.to_owned(), list.clone());
                    }
                    _ => loaded.skipped.push(Skipped {
                        id: id.map_or_else(|| format!("answers line {n}"), str::to_owned),
                        reason: String::from(
                            "the answer line needs an \"id\" and a \"ground_truth\" list",
                        ),
                    }),
                }
            }
            Err(error) => loaded.skipped.push(Skipped {
                id: format!("answers line {n}"),
                reason: format!("not valid JSON: {error}"),
            }),
        }
    }
    for (n, line) in numbered(questions) {
        let question = match serde_json::from_str::<Json>(line) {
            Ok(question) => question,
            Err(error) => {
                loaded.skipped.push(Skipped {
                    id: format!("line {n}"),
                    reason: format!("not valid JSON: {error}"),
                });
                continue;
            }
        };
        let id = question
            .get("id")
            .and_then(Json::as_str)
            .map_or_else(|| format!("line {n}"), str::to_owned);
        match case(&question, &id, &mut truth) {
            Ok(case) => loaded.cases.push(case),
            Err(reason) => loaded.skipped.push(Skipped { id, reason }),
        }
    }
    loaded
}

/// Non-blank lines with their 1-based numbers.
fn numbered(text: &str) -> impl Iterator<Item = (usize, &str)> {
    text.lines()
        .enumerate()
        .map(|(i, line)| (i + 1, line.trim()))
        .filter(|(_, line)| !line.is_empty())
}

fn case(question: &Json, id: &str, truth: &mut HashMap<String, Vec<Json>>) -> Result<Case, String> {
    if question.get("id").and_then(Json::as_str).is_none() {
        return Err(String::from("the question has no \"id\""));
    }
    let turns = question
        .get("question")
        .and_then(Json::as_array)
        .ok_or("\"question\" must be a list of turns, each a list of messages")?;
    let mut messages = Vec::new();
    for turn in turns {
        let turn = turn
            .as_array()
            .ok_or("each turn of \"question\" must be a list of messages")?;
        messages.extend(turn.iter().cloned());
    }
    if messages.is_empty() {
        return Err(String::from("the question has no messages"));
    }
    let functions = match question.get("function") {
        Some(Json::Array(list)) => list.clone(),
        Some(one @ Json::Object(_)) => vec![one.clone()],
        _ => {
            return Err(String::from(
                "\"function\" must be a list of function definitions",
            ))
        }
    };
    let category = category(id);
    let shown = presented(&functions, Language::of(&category));
    // Each function as the case gives it, unchecked as a set: a case is scored as BFCL
    // wrote it, even where two of its functions share a name.
    let interfaces = LoadOptions::default()
        .with_validation(false)
        .load(&Json::Array(shown))
        .map_err(|e| e.to_string())?
        .interfaces;
    if interfaces.is_empty() {
        return Err(String::from("no function loaded"));
    }
    let ground_truth = match truth.remove(id) {
        Some(truth) => truth,
        None if wants_no_call(&category) => Vec::new(),
        None => {
            return Err(String::from(
                "no possible answer with this id in the answers file",
            ))
        }
    };
    Ok(Case {
        id: id.to_owned(),
        category,
        messages,
        functions,
        interfaces,
        ground_truth,
    })
}

/// The functions as BFCL shows them to a model in a category of `language`. Python's are
/// unchanged. A Java or JavaScript function's description says the language's syntax, and
/// each parameter becomes a `string`, its description saying which type of the language
/// the string's literal has; an array's item type and (in JavaScript) an object's fields
/// move from the schema into the description, where BFCL writes them.
pub(crate) fn presented(functions: &[Json], language: Language) -> Vec<Json> {
    let (hint, name) = match language {
        Language::Python => return functions.to_vec(),
        Language::Java => (
            " Note that the provided function is in Java 8 SDK syntax.",
            "Java",
        ),
        Language::JavaScript => (
            " Note that the provided function is in JavaScript syntax.",
            "JavaScript",
        ),
    };
    let mut functions = functions.to_vec();
    for function in &mut functions {
        let Some(function) = function.as_object_mut() else {
            continue;
        };
        append(function, "description", hint);
        let Some(properties) = function
            .get_mut("parameters")
            .and_then(|p| p.get_mut("properties"))
            .and_then(Json::as_object_mut)
        else {
            continue;
        };
        for param in properties.values_mut() {
            let Some(param) = param.as_object_mut() else {
                continue;
            };
            let ty = param
                .get("type")
                .and_then(Json::as_str)
                .unwrap_or_default()
                .to_owned();
            if ty == "any" {
                append(
                    param,
                    "description",
                    &format!(" This parameter can be of any type of {name} object in string representation."),
                );
            } else {
                append(
                    param,
                    "description",
                    &format!(" This is {name} {ty} type parameter in string representation."),
                );
            }
            let array = match language {
                Language::Java => ty == "ArrayList" || ty == "Array",
                _ => ty == "array",
            };
            if array {
                let items = param
                    .shift_remove("items")
                    .and_then(|items| items.get("type").and_then(Json::as_str).map(str::to_owned))
                    .unwrap_or_default();
                append(
                    param,
                    "description",
                    &format!(" The list elements are of type {items}; they are not in string representation."),
                );
            }
            if language == Language::JavaScript && ty == "dict" {
                if let Some(fields) = param.shift_remove("properties") {
                    append(
                        param,
                        "description",
                        &format!(
                            " The dictionary entries have the following schema; they are not in string representation. {}",
                            python_json(&fields)
                        ),
                    );
                }
            }
            param.insert("type".into(), Json::String("string".into()));
        }
    }
    functions
}

/// Appends to a string field (a missing one counts as empty).
fn append(object: &mut serde_json::Map<String, Json>, key: &str, text: &str) {
    let mut value = object
        .get(key)
        .and_then(Json::as_str)
        .unwrap_or_default()
        .to_owned();
    value.push_str(text);
    object.insert(key.to_owned(), Json::String(value));
}

/// JSON as Python's `json.dumps` writes it by default: `", "` and `": "` between items,
/// and every character outside ASCII escaped.
fn python_json(value: &Json) -> String {
    match value {
        Json::Array(items) => {
            let items: Vec<String> = items.iter().map(python_json).collect();
            format!("[{}]", items.join(", "))
        }
        Json::Object(fields) => {
            let fields: Vec<String> = fields
                .iter()
                .map(|(k, v)| format!("{}: {}", python_string(k), python_json(v)))
                .collect();
            format!("{{{}}}", fields.join(", "))
        }
        Json::String(text) => python_string(text),
        other => other.to_string(),
    }
}

fn python_string(text: &str) -> String {
    let mut out = String::from("\"");
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            ' '..='\u{7f}' => out.push(c),
            c => {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
    out.push('"');
    out
}

/// `simple_python_12` → `simple_python`; a live id's number has dashed parts:
/// `live_simple_200-116-8` → `live_simple`. An id without a number is its own category.
pub(crate) fn category(id: &str) -> String {
    match id.rsplit_once('_') {
        Some((head, number))
            if !head.is_empty()
                && number.starts_with(|c: char| c.is_ascii_digit())
                && number.bytes().all(|b| b.is_ascii_digit() || b == b'-') =>
        {
            head.to_owned()
        }
        _ => id.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::category;

    #[test]
    fn categories_from_every_id_shape() {
        assert_eq!(category("simple_python_12"), "simple_python");
        assert_eq!(category("parallel_multiple_0"), "parallel_multiple");
        assert_eq!(category("irrelevance_239"), "irrelevance");
        assert_eq!(category("live_simple_200-116-8"), "live_simple");
        assert_eq!(category("live_irrelevance_5-0-1"), "live_irrelevance");
        assert_eq!(category("live_multiple_0-0-0"), "live_multiple");
        // Not a number: the id is its own category.
        assert_eq!(category("custom"), "custom");
        assert_eq!(category("simple_x1"), "simple_x1");
        assert_eq!(category("simple_-1"), "simple_-1");
        assert_eq!(category("_7"), "_7");
    }
}
