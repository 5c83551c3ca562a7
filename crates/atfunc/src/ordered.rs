//! Removing from a serde_json object without changing the order of what stays.
//!
//! The core does not turn on serde_json's `preserve_order` (a Cargo feature is on for
//! every crate of a program once one crate turns it on), but a program may: then an
//! object keeps its written order, and `Map::remove` moves the last entry into the gap.
//! What the core removes from an object it passes on (a call's body field, a schema's
//! `type`) leaves the rest in its order either way.

use serde_json::{Map, Value};

/// Removes `key` from `map` and returns its value; the other entries keep their order.
pub(crate) fn remove_in_order(map: &mut Map<String, Value>, key: &str) -> Option<Value> {
    let value = map.get_mut(key).map(Value::take)?;
    map.retain(|k, _| k != key);
    Some(value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_stays_keeps_its_order() {
        let mut map = Map::new();
        for (i, key) in ["d", "a", "c", "b"].into_iter().enumerate() {
            map.insert(key.into(), Value::from(i));
        }
        let before: Vec<String> = map.keys().filter(|k| *k != "a").cloned().collect();
        assert_eq!(remove_in_order(&mut map, "a"), Some(Value::from(1)));
        assert_eq!(remove_in_order(&mut map, "z"), None);
        let after: Vec<String> = map.keys().cloned().collect();
        assert_eq!(after, before);
    }
}
