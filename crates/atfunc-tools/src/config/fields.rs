//! One object's fields, read with problems reported, and the hint for an unknown field.

use super::*;

/// One object's fields, read with problems reported against `at`.
pub(super) struct Fields<'a> {
    pub(super) map: &'a Map<String, Json>,
    /// `toolbox 'api' (#3)`, or empty at the top level.
    pub(super) at: String,
    pub(super) problems: &'a mut Vec<String>,
}

impl Fields<'_> {
    pub(super) fn report(&mut self, message: impl Into<String>) {
        let message = message.into();
        if self.at.is_empty() {
            self.problems.push(message);
        } else {
            self.problems.push(format!("{}: {message}", self.at));
        }
    }

    pub(super) fn unknown(&mut self, known: &[&[&str]]) {
        let mut unknown = Vec::new();
        for key in self.map.keys() {
            if !known.iter().any(|set| set.contains(&key.as_str())) {
                unknown.push(key.clone());
            }
        }
        let mut all: Vec<&str> = Vec::new();
        for name in known.iter().flat_map(|set| set.iter().copied()) {
            if !all.contains(&name) {
                all.push(name);
            }
        }
        for key in unknown {
            let message = unknown_field(&key, &all, &[]);
            self.report(message);
        }
    }

    pub(super) fn string(&mut self, key: &str, required: bool) -> Option<String> {
        match self.map.get(key) {
            Some(Json::String(s)) => Some(s.clone()),
            None if required => {
                self.report(format!("missing required field '{key}'"));
                None
            }
            None => None,
            Some(other) => {
                self.report(format!(
                    "field '{key}' must be a string, found {}",
                    json_kind(other)
                ));
                None
            }
        }
    }

    pub(super) fn boolean(&mut self, key: &str) -> Option<bool> {
        match self.map.get(key) {
            None => None,
            Some(Json::Bool(b)) => Some(*b),
            Some(other) => {
                self.report(format!(
                    "field '{key}' must be true or false, found {}",
                    json_kind(other)
                ));
                None
            }
        }
    }

    /// A whole number, at least 1.
    pub(super) fn positive(&mut self, key: &str) -> Option<u64> {
        let value = self.count(key)?;
        if value == 0 {
            self.report(format!("field '{key}' must be at least 1, found 0"));
            return None;
        }
        Some(value)
    }

    /// `uid` and `gid`, both or neither: the user and group a command box's programs run
    /// as.
    pub(super) fn user_and_group(&mut self) -> Option<(u32, u32)> {
        let mut id = |key: &str| {
            let value = self.count(key)?;
            match u32::try_from(value) {
                Ok(id) => Some(id),
                Err(_) => {
                    self.report(format!(
                        "field '{key}' must be a user or group id (at most {}), found {value}",
                        u32::MAX
                    ));
                    None
                }
            }
        };
        let (uid, gid) = (id("uid"), id("gid"));
        match (uid, gid) {
            (Some(uid), Some(gid)) => Some((uid, gid)),
            (Some(_), None) if !self.map.contains_key("gid") => {
                self.report(String::from(
                    "field 'uid' needs 'gid' beside it: the group the programs run as",
                ));
                None
            }
            (None, Some(_)) if !self.map.contains_key("uid") => {
                self.report(String::from(
                    "field 'gid' needs 'uid' beside it: the user the programs run as",
                ));
                None
            }
            _ => None,
        }
    }

    /// A whole number, 0 or more.
    pub(super) fn count(&mut self, key: &str) -> Option<u64> {
        match self.map.get(key) {
            None => None,
            Some(Json::Number(n)) if n.as_u64().is_some() => n.as_u64(),
            Some(other) => {
                let found = match other {
                    Json::Number(n) => n.to_string(),
                    other => json_kind(other).to_owned(),
                };
                self.report(format!(
                    "field '{key}' must be a whole number, found {found}"
                ));
                None
            }
        }
    }

    /// `["NAME", ...]`: names of environment variables.
    pub(super) fn variable_names(&mut self, key: &str) -> Vec<String> {
        let names = match self.map.get(key) {
            None => return Vec::new(),
            Some(Json::Array(items)) => items
                .iter()
                .map(|item| match item {
                    Json::String(name) if !name.is_empty() && !name.contains(['=', '\0']) => {
                        Some(name.clone())
                    }
                    _ => None,
                })
                .collect::<Option<Vec<String>>>(),
            Some(_) => None,
        };
        names.unwrap_or_else(|| {
            self.report(format!(
                "field '{key}' must be a list of environment variable names, such as [\"LANG\"]"
            ));
            Vec::new()
        })
    }

    /// `{"NAME": "value" | {"env": "VAR", "prefix": "..."}}`.
    pub(super) fn sources(&mut self, key: &str) -> Vec<(String, Source)> {
        let map = match self.map.get(key) {
            None => return Vec::new(),
            Some(Json::Object(map)) => map,
            Some(other) => {
                self.report(format!(
                    "field '{key}' must be an object of names to values, found {}",
                    json_kind(other)
                ));
                return Vec::new();
            }
        };
        let mut sources = Vec::new();
        for (name, value) in map {
            let field = format!("{key}.{name}");
            match value {
                Json::String(s) => sources.push((name.clone(), Source::Literal(s.clone()))),
                Json::Object(spec) => {
                    let variable = match spec.get("env") {
                        Some(Json::String(v)) if !v.is_empty() && !v.contains(['=', '\0']) => {
                            v.clone()
                        }
                        _ => {
                            self.report(format!(
                                "field '{field}' must be a string or {{\"env\": \"VARIABLE\"}}, and 'env' must name an environment variable"
                            ));
                            continue;
                        }
                    };
                    let prefix = match spec.get("prefix") {
                        None => String::new(),
                        Some(Json::String(p)) => p.clone(),
                        Some(other) => {
                            self.report(format!(
                                "field '{field}.prefix' must be a string, found {}",
                                json_kind(other)
                            ));
                            continue;
                        }
                    };
                    if let Some(extra) = spec
                        .keys()
                        .find(|k| !matches!(k.as_str(), "env" | "prefix"))
                    {
                        self.report(format!(
                            "field '{field}.{extra}' is not known here; the fields are env, prefix"
                        ));
                    }
                    sources.push((
                        name.clone(),
                        Source::Env {
                            name: variable,
                            prefix,
                        },
                    ));
                }
                other => self.report(format!(
                    "field '{field}' must be a string or {{\"env\": \"VARIABLE\"}}, found {}",
                    json_kind(other)
                )),
            }
        }
        sources
    }
}

/// `field 'timout_ms' is not known here (did you mean 'timeout_ms'?); the fields are ...`.
/// `elsewhere` are fields of the enclosing object, named when the key is one of them (or
/// close to one) and none of `known` is closer.
pub(super) fn unknown_field(key: &str, known: &[&str], elsewhere: &[(&str, &str)]) -> String {
    let closest = messages::closest(key, known.iter().copied());
    let outside = messages::closest(key, elsewhere.iter().map(|(name, _)| *name)).and_then(
        |(score, name)| {
            let (_, owner) = elsewhere.iter().find(|(other, _)| *other == name)?;
            Some((score, name, *owner))
        },
    );
    let hint = match (closest, outside) {
        (Some((here, _)), Some((there, name, owner))) if there > here => {
            format!(" ('{name}' is a field of the {owner})")
        }
        (Some((_, name)), _) => format!(" (did you mean '{name}'?)"),
        (None, Some((_, name, owner))) => format!(" ('{name}' is a field of the {owner})"),
        (None, None) => String::new(),
    };
    format!(
        "field '{key}' is not known here{hint}; the fields are {}",
        known.join(", ")
    )
}

pub(super) fn to_usize(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}
