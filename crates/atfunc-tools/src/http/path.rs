//! An endpoint's path: its template, and a call's values put into it so that they stay
//! under the base URL.

use atfunc::interface::{Interface, Param};
use percent_encoding::AsciiSet;
use percent_encoding::NON_ALPHANUMERIC;
use reqwest::Url;
use serde_json::Value as Json;

/// Bytes of a path value left as they are; everything else, `/` and `%` included, is
/// percent-encoded. `.` stays readable, and a segment that is only dots is refused.
pub(super) const SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~');

/// A part of an endpoint's path: text as written, or a parameter's value.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Piece {
    Text(String),
    Param(String),
}

/// `/users/{org}/repos` → text and parameter pieces.
pub(super) fn parse_template(path: &str) -> Result<Vec<Piece>, String> {
    let quoted = || Json::String(path.to_owned());
    if !path.starts_with('/') {
        return Err(format!("must start with '/', found {}", quoted()));
    }
    if path.contains(['?', '#']) || path.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err(format!(
            "must be a plain path (no query, fragment or spaces), found {}",
            quoted()
        ));
    }
    let mut pieces = Vec::new();
    let mut rest = path;
    while let Some(open) = rest.find(['{', '}']) {
        let (text, after) = rest.split_at(open);
        if after.starts_with('}') {
            return Err(format!("has a '}}' without its '{{' in {}", quoted()));
        }
        let after = after.get(1..).unwrap_or_default();
        let Some(close) = after.find('}') else {
            return Err(format!("has a '{{' without its '}}' in {}", quoted()));
        };
        let name = after.get(..close).unwrap_or_default();
        // The API's own spelling (`{user-id}`) is fine: it names the parameter as defined.
        if name.trim().is_empty() || name.contains('/') {
            return Err(format!(
                "has a placeholder {{{name}}} that is not a parameter name, in {}",
                quoted()
            ));
        }
        if !text.is_empty() {
            pieces.push(Piece::Text(text.to_owned()));
        }
        pieces.push(Piece::Param(name.to_owned()));
        rest = after.get(close + 1..).unwrap_or_default();
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest.to_owned()));
    }
    Ok(pieces)
}

/// The parameter a path placeholder names: by its name as defined (`{user-id}`) or as a
/// call writes it (`{user_id}`).
pub(super) fn path_param<'a>(interface: &'a Interface, placeholder: &str) -> Option<&'a Param> {
    interface
        .params
        .iter()
        .find(|p| p.original_name() == placeholder)
        .or_else(|| interface.params.iter().find(|p| p.name == placeholder))
}

/// Whether `path` is `base` (without its trailing `/`) or below it, segment-wise: `/api`
/// holds `/api/x`, not `/apix`.
pub(super) fn under_path(base: &str, path: &str) -> bool {
    base.is_empty()
        || path
            .strip_prefix(base)
            .is_some_and(|rest| rest.is_empty() || rest.starts_with('/'))
}

/// Appends `path` to the base URL's path; `None` if the result leaves the base.
pub(super) fn join_url(base: &Url, path: &str) -> Option<Url> {
    let base_path = base.path().trim_end_matches('/');
    let mut url = base.clone();
    url.set_path(&format!("{base_path}{path}"));
    let stays = url.origin() == base.origin()
        && url.path().starts_with(base_path)
        && url.path().len() >= base_path.len();
    stays.then_some(url)
}

pub(super) fn path_value(value: &Json) -> Option<String> {
    match value {
        Json::String(s) => Some(s.clone()),
        Json::Number(n) => Some(n.to_string()),
        Json::Bool(b) => Some(b.to_string()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use percent_encoding::utf8_percent_encode;

    #[test]
    fn templates_split_into_text_and_parameters() {
        assert_eq!(
            parse_template("/users/{org}/repos/{repo}.json"),
            Ok(vec![
                Piece::Text("/users/".into()),
                Piece::Param("org".into()),
                Piece::Text("/repos/".into()),
                Piece::Param("repo".into()),
                Piece::Text(".json".into()),
            ])
        );
        assert!(parse_template("users").is_err());
        assert!(parse_template("/a/{b").is_err());
        assert!(parse_template("/a/b}").is_err());
        assert!(parse_template("/a/{}").is_err());
        assert!(parse_template("/a?x=1").is_err());
    }

    #[test]
    fn path_values_cannot_add_segments() {
        let encoded: String = utf8_percent_encode("../a/b%2F c", SEGMENT).collect();
        assert_eq!(encoded, "..%2Fa%2Fb%252F%20c");
    }

    #[test]
    fn joined_urls_stay_under_the_base() {
        let base = Url::parse("http://127.0.0.1:1/api/v1/").unwrap();
        assert_eq!(
            join_url(&base, "/users/x").unwrap().as_str(),
            "http://127.0.0.1:1/api/v1/users/x"
        );
        assert!(join_url(&base, "/../../etc").is_none());
    }
}
