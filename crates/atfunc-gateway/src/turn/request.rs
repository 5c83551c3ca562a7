//! A client's request as the gateway holds it: each top-level field and each message kept
//! as the JSON text it came in, parsed only where the gateway reads or rewrites it.
//!
//! Parsed whole, a request costs many times its size: every number of an array, every
//! string, becomes a value of its own (an 8 MB request of tools peaked at 219 MB). Kept as
//! text, what the gateway passes on unchanged costs its size once.

use serde::de::{Deserializer, MapAccess, Visitor};
use serde_json::value::RawValue;
use serde_json::{Map, Value as Json};
use std::collections::HashMap;
use std::fmt;

/// A request's top-level fields, in the order they came, each as JSON text; `messages`
/// as a list of messages, each as JSON text.
#[derive(Debug, Clone, Default)]
pub(crate) struct Request {
    /// Every field but `messages`. A key is never there twice: a later one replaced the
    /// earlier, as a parser that reads the request into a map does.
    fields: Vec<(String, Box<RawValue>)>,
    /// The messages, when the request had a `messages` list (or was given one).
    messages: Option<Vec<Box<RawValue>>>,
    /// Where `messages` goes among `fields` when the body is written: where it was, or,
    /// with `None`, at the end.
    messages_at: Option<usize>,
}

/// A JSON value as text (always valid: it came from a parser or a serializer).
pub(crate) fn raw(value: &Json) -> Box<RawValue> {
    // Serializing a `Value` cannot fail: its keys are strings.
    serde_json::value::to_raw_value(value).unwrap_or_else(|_| null())
}

fn null() -> Box<RawValue> {
    RawValue::from_string(String::from("null")).unwrap_or_default()
}

impl Request {
    /// Reads a request body: a JSON object. Fails with the parser's message otherwise.
    pub(crate) fn parse(body: &[u8]) -> Result<Request, RequestError> {
        let mut deserializer = serde_json::Deserializer::from_slice(body);
        let fields = deserializer
            .deserialize_any(FieldsVisitor)
            .map_err(|e| RequestError::Json(e.to_string()))?;
        deserializer
            .end()
            .map_err(|e| RequestError::Json(e.to_string()))?;
        let Some(fields) = fields else {
            return Err(RequestError::NotAnObject);
        };
        Ok(Request {
            fields,
            messages: None,
            messages_at: None,
        })
    }

    /// Whether the request has the field `key` (`messages` aside).
    pub(crate) fn contains(&self, key: &str) -> bool {
        self.fields.iter().any(|(k, _)| k == key)
    }

    /// The field `key`'s JSON text.
    pub(crate) fn raw(&self, key: &str) -> Option<&RawValue> {
        self.fields
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, value)| &**value)
    }

    /// The field `key`, parsed: for the small fields the gateway reads.
    pub(crate) fn get(&self, key: &str) -> Option<Json> {
        self.raw(key)
            .and_then(|value| serde_json::from_str(value.get()).ok())
    }

    /// Sets `key` to `value`, where it was or at the end.
    pub(crate) fn insert(&mut self, key: &str, value: &Json) {
        self.insert_raw(key, raw(value));
    }

    /// [`Request::insert`] of a value already written as JSON.
    pub(crate) fn insert_raw(&mut self, key: &str, value: Box<RawValue>) {
        match self.fields.iter_mut().find(|(k, _)| k == key) {
            Some((_, old)) => *old = value,
            None => self.fields.push((key.to_owned(), value)),
        }
    }

    /// A request of the messages and of the fields named `keys` alone (those present), in
    /// the order they came.
    pub(crate) fn keeping(&self, keys: &[&str]) -> Request {
        let mut fields = Vec::new();
        let mut messages_at = None;
        for (i, (key, value)) in self.fields.iter().enumerate() {
            if Some(i) == self.messages_at {
                messages_at = Some(fields.len());
            }
            if key == "messages" || keys.contains(&key.as_str()) {
                fields.push((key.clone(), value.clone()));
            }
        }
        if self.messages_at.is_some() && messages_at.is_none() {
            messages_at = Some(fields.len());
        }
        Request {
            fields,
            messages: self.messages.clone(),
            messages_at,
        }
    }

    /// Removes `key`; its text if it was there.
    pub(crate) fn remove(&mut self, key: &str) -> Option<Box<RawValue>> {
        let at = self.fields.iter().position(|(k, _)| k == key)?;
        if let Some(messages_at) = &mut self.messages_at {
            if at < *messages_at {
                *messages_at -= 1;
            }
        }
        Some(self.fields.remove(at).1)
    }

    /// Takes the `messages` field out to be rewritten; [`Request::set_messages`] puts the
    /// list back where it was.
    pub(crate) fn take_messages(&mut self) -> Option<Box<RawValue>> {
        let at = self.fields.iter().position(|(k, _)| k == "messages")?;
        self.messages_at = Some(at);
        Some(self.fields.remove(at).1)
    }

    /// Sets the messages (each as JSON text).
    pub(crate) fn set_messages(&mut self, messages: Vec<Box<RawValue>>) {
        self.messages = Some(messages);
    }

    /// Adds a message at the end of the conversation.
    pub(crate) fn push_message(&mut self, message: &Json) {
        self.messages
            .get_or_insert_with(Vec::new)
            .push(raw(message));
    }

    /// The messages (each as JSON text).
    pub(crate) fn messages(&self) -> &[Box<RawValue>] {
        self.messages.as_deref().unwrap_or_default()
    }

    /// Lets `change` work on the fields named `keys` as a JSON object (those present,
    /// parsed), then puts back what it left there.
    pub(crate) fn with_fields(
        &mut self,
        keys: &[&str],
        change: impl FnOnce(&mut Map<String, Json>),
    ) {
        let mut map = Map::new();
        for key in keys {
            if let Some(value) = self.get(key) {
                map.insert((*key).to_owned(), value);
            }
        }
        change(&mut map);
        for key in keys {
            match map.get(*key) {
                Some(value) => self.insert(key, value),
                None => {
                    self.remove(key);
                }
            }
        }
    }

    /// The body for the upstream: the fields as they came (or as set), `stream` set as
    /// given (without `stream_options` when not streaming), or left alone with `None`.
    pub(crate) fn body(&self, stream: Option<bool>) -> Vec<u8> {
        self.write_body(stream, false)
    }

    /// The body of a streamed request whose answer the gateway sends on whole: `stream`
    /// on, and the usage asked for (`stream_options.include_usage`), since the whole
    /// answer carries it.
    pub(crate) fn counted_stream_body(&self) -> Vec<u8> {
        self.write_body(Some(true), true)
    }

    fn write_body(&self, stream: Option<bool>, counted: bool) -> Vec<u8> {
        let mut body = Vec::with_capacity(self.size() + 64);
        body.push(b'{');
        let mut first = true;
        for (i, (key, value)) in self.fields.iter().enumerate() {
            if Some(i) == self.messages_at {
                self.write_messages(&mut body, &mut first);
            }
            match (key.as_str(), stream) {
                ("stream", Some(_)) | ("stream_options", Some(false)) => {}
                ("stream_options", _) if counted => {}
                _ => {
                    write_key(&mut body, &mut first, key);
                    body.extend_from_slice(value.get().as_bytes());
                }
            }
        }
        if self.messages_at.is_none_or(|at| at >= self.fields.len()) {
            self.write_messages(&mut body, &mut first);
        }
        if let Some(stream) = stream {
            write_key(&mut body, &mut first, "stream");
            body.extend_from_slice(if stream { b"true" } else { b"false" });
        }
        if counted {
            write_key(&mut body, &mut first, "stream_options");
            body.extend_from_slice(br#"{"include_usage":true}"#);
        }
        body.push(b'}');
        body
    }

    /// About the size of [`Request::body`] in bytes (a few bytes more, never less).
    pub(crate) fn size(&self) -> usize {
        self.fields
            .iter()
            .map(|(k, v)| k.len() + v.get().len() + 4)
            .chain(self.messages().iter().map(|m| m.get().len() + 1))
            .sum::<usize>()
            + 16
    }

    fn write_messages(&self, body: &mut Vec<u8>, first: &mut bool) {
        let Some(messages) = &self.messages else {
            return;
        };
        write_key(body, first, "messages");
        body.push(b'[');
        for (i, message) in messages.iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(message.get().as_bytes());
        }
        body.push(b']');
    }
}

/// Writes `"key":`, after a comma unless it is the first field.
fn write_key(body: &mut Vec<u8>, first: &mut bool, key: &str) {
    if !*first {
        body.push(b',');
    }
    *first = false;
    // A string always serializes.
    let _ = serde_json::to_writer(&mut *body, key);
    body.push(b':');
}

/// A request body that is not a JSON object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum RequestError {
    /// Not JSON: the parser's message.
    Json(String),
    /// JSON, but not an object.
    NotAnObject,
}

/// Reads a JSON object's fields as text; `None` for any other JSON value.
struct FieldsVisitor;

impl<'de> Visitor<'de> for FieldsVisitor {
    type Value = Option<Vec<(String, Box<RawValue>)>>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut fields: Vec<(String, Box<RawValue>)> = Vec::new();
        let mut seen: HashMap<String, usize> = HashMap::new();
        while let Some(key) = map.next_key::<String>()? {
            let value: Box<RawValue> = map.next_value()?;
            match seen.get(&key) {
                Some(&at) => fields[at].1 = value,
                None => {
                    seen.insert(key.clone(), fields.len());
                    fields.push((key, value));
                }
            }
        }
        Ok(Some(fields))
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(None)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_str<E>(self, _: &str) -> Result<Self::Value, E> {
        Ok(None)
    }
    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(None)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn body(request: &Request, stream: Option<bool>) -> Json {
        serde_json::from_slice(&request.body(stream)).unwrap()
    }

    #[test]
    fn a_counted_stream_asks_for_the_usage_whatever_the_client_said() {
        for options in ["", r#""stream_options": {"include_usage": false}, "#] {
            let text = format!(r#"{{"model": "m", {options}"messages": [], "stream": false}}"#);
            let request = Request::parse(text.as_bytes()).unwrap();
            let sent: Json = serde_json::from_slice(&request.counted_stream_body()).unwrap();
            assert_eq!(sent["stream"], true);
            assert_eq!(sent["stream_options"], json!({"include_usage": true}));
            assert_eq!(sent["model"], "m");
            assert_eq!(sent.as_object().unwrap().len(), 4, "{sent}");
        }
    }

    #[test]
    fn fields_come_back_as_they_came_and_as_set() {
        let text = br#"{"model": "m", "messages": [{"role": "user", "content": "hi"}], "x": [1, 2], "stream_options": {"include_usage": true}, "stream": false}"#;
        let mut request = Request::parse(text).unwrap();
        assert_eq!(request.get("model"), Some(json!("m")));
        assert_eq!(request.raw("x").unwrap().get(), "[1, 2]");
        let messages = request.take_messages().unwrap();
        let list: Vec<Box<RawValue>> = serde_json::from_str(messages.get()).unwrap();
        request.set_messages(list);
        request.push_message(&json!({"role": "assistant", "content": "yes"}));
        let keys = |v: &Json| v.as_object().unwrap().keys().cloned().collect::<Vec<_>>();
        let streamed = body(&request, Some(true));
        assert_eq!(
            keys(&streamed),
            ["model", "messages", "x", "stream_options", "stream"]
        );
        assert_eq!(streamed["messages"][1]["content"], "yes");
        assert_eq!(streamed["stream"], true);
        let whole = body(&request, Some(false));
        assert_eq!(keys(&whole), ["model", "messages", "x", "stream"]);
        let as_is = body(&request, None);
        assert_eq!(as_is["stream"], false);
        request.remove("model");
        request.insert("grammar", &json!("root ::= x"));
        assert_eq!(
            keys(&body(&request, None)),
            ["messages", "x", "stream_options", "stream", "grammar"]
        );
    }

    #[test]
    fn a_request_keeping_some_fields_keeps_their_order_and_the_messages() {
        let text = br#"{"model": "m", "stop": ["x"], "messages": [{"role": "user", "content": "hi"}], "n_predict": 9, "tools": []}"#;
        let mut request = Request::parse(text).unwrap();
        let messages = request.take_messages().unwrap();
        request.set_messages(serde_json::from_str(messages.get()).unwrap());
        let kept = request.keeping(&["tools", "model", "absent"]);
        assert_eq!(
            String::from_utf8(kept.body(None)).unwrap(),
            r#"{"model":"m","messages":[{"role": "user", "content": "hi"}],"tools":[]}"#
        );
    }

    #[test]
    fn a_later_key_replaces_an_earlier_one() {
        let request = Request::parse(br#"{"a": 1, "b": 2, "a": 3}"#).unwrap();
        assert_eq!(request.body(None), br#"{"a":3,"b":2}"#);
    }

    #[test]
    fn only_an_object_is_a_request() {
        assert_eq!(
            Request::parse(b"[1]").unwrap_err(),
            RequestError::NotAnObject
        );
        assert_eq!(
            Request::parse(b"\"x\"").unwrap_err(),
            RequestError::NotAnObject
        );
        assert!(matches!(
            Request::parse(b"{\"a\": }"),
            Err(RequestError::Json(_))
        ));
        assert!(matches!(
            Request::parse(b"{} x"),
            Err(RequestError::Json(_))
        ));
    }
}
