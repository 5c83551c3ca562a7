//! The tool lists the gateway has read, kept so that a list sent again costs a hash.
//!
//! Agents send the same `tools` with every request of a conversation. Reading them
//! (parsing the JSON, loading each schema), rendering them as the prompt and building
//! their grammars cost some 15 µs a tool, 30 µs under `--constrain`: 3 to 6 ms a request
//! for 200 tools. The gateway keeps what it read of a list ([`ToolSet`](crate::turn::ToolSet),
//! which keeps its prompt and grammars as they are built) under the list's exact text: a
//! request whose `tools` are the same bytes gets it after a hash and a comparison of the
//! bytes, so a hash shared by two lists never gives one the other's tools.
//!
//! The cache is bounded twice ([`GatewayLimits`](super::GatewayLimits)): at most
//! `tool_cache_lists` lists, and at most `tool_cache_bytes` bytes together, counted for a
//! list as twelve times its text (the text, kept to compare, and the interfaces read from
//! it, as measured) plus the texts of the prompt and grammars built from it, counted again
//! each time a request has built what it needs. Past either bound the list used longest ago
//! goes; a list larger than the byte bound alone is not kept. A client sending ever-new
//! lists therefore costs the gateway no more memory than the bounds, and a list it drove
//! out is read again when it comes back. Requests under way keep what they hold.

use std::sync::{Arc, Mutex};

/// What a value kept in the cache holds beyond the text it was read from, in bytes.
pub(crate) trait Weighed {
    /// The bytes held now; may grow as the value builds more.
    fn held_bytes(&self) -> usize;
}

impl Weighed for crate::turn::ToolSet {
    fn held_bytes(&self) -> usize {
        self.built.held_bytes()
    }
}

/// How many times its text's length a list is counted as before anything is built from it:
/// the text itself, and the interfaces read from it. Measured: a list of 200 tools of 130 KB
/// held about 1.5 MB kept, prompt and grammars included (BENCHMARKS.md, Gateway, "A long
/// tool list sent again").
const TEXT_WEIGHT: usize = 12;

/// Tool lists read, by their text; see the module doc.
#[derive(Debug)]
pub(crate) struct ToolCache<T> {
    max_lists: usize,
    max_bytes: usize,
    slots: Mutex<Slots<T>>,
}

#[derive(Debug)]
struct Slots<T> {
    /// Invariant: at most `max_lists` slots, whose `bytes` add up to `bytes`, at most
    /// `max_bytes` once a call returns.
    list: Vec<Slot<T>>,
    bytes: usize,
    /// Counts lookups; a slot's `used` is the count at its last use.
    clock: u64,
}

#[derive(Debug)]
struct Slot<T> {
    hash: u64,
    text: Arc<str>,
    value: Arc<T>,
    /// What the slot was last counted as.
    bytes: usize,
    used: u64,
}

impl<T: Weighed> ToolCache<T> {
    /// A cache of at most `max_lists` lists and `max_bytes` bytes; 0 for either keeps none.
    pub(crate) fn new(max_lists: usize, max_bytes: usize) -> ToolCache<T> {
        ToolCache {
            max_lists,
            max_bytes,
            slots: Mutex::new(Slots {
                list: Vec::new(),
                bytes: 0,
                clock: 0,
            }),
        }
    }

    /// What was read from `text` before, if it is still kept.
    pub(crate) fn get(&self, text: &str) -> Option<Arc<T>> {
        if self.max_lists == 0 {
            return None;
        }
        let hash = hash(text);
        let (kept, value) = {
            let mut slots = self.slots.lock().ok()?;
            slots.clock += 1;
            let now = slots.clock;
            let slot = slots.list.iter_mut().find(|slot| slot.hash == hash)?;
            slot.used = now;
            (Arc::clone(&slot.text), Arc::clone(&slot.value))
        };
        // Compared outside the lock: other requests need not wait on a long list's bytes.
        (*kept == *text).then_some(value)
    }

    /// Keeps `value`, read from `text`, driving out the lists used longest ago as the
    /// bounds require. A list already kept under the same hash is replaced.
    pub(crate) fn put(&self, text: &str, value: &Arc<T>) {
        let bytes = weight(text, &**value);
        if self.max_lists == 0 || bytes > self.max_bytes {
            return;
        }
        let hash = hash(text);
        let text: Arc<str> = Arc::from(text);
        let Ok(mut slots) = self.slots.lock() else {
            return;
        };
        if let Some(at) = slots.list.iter().position(|slot| slot.hash == hash) {
            let old = slots.list.swap_remove(at);
            slots.bytes -= old.bytes;
        }
        slots.clock += 1;
        let used = slots.clock;
        slots.bytes += bytes;
        slots.list.push(Slot {
            hash,
            text,
            value: Arc::clone(value),
            bytes,
            used,
        });
        self.drive_out(&mut slots);
    }

    /// Counts `value` again, if it is kept, after it built more.
    pub(crate) fn recount(&self, value: &Arc<T>) {
        let Ok(mut slots) = self.slots.lock() else {
            return;
        };
        let Some(slot) = slots
            .list
            .iter_mut()
            .find(|slot| Arc::ptr_eq(&slot.value, value))
        else {
            return;
        };
        let (old, new) = (slot.bytes, weight(&slot.text, &*slot.value));
        slot.bytes = new;
        slots.bytes = slots.bytes - old + new;
        self.drive_out(&mut slots);
    }

    /// Drops the lists used longest ago until both bounds hold.
    fn drive_out(&self, slots: &mut Slots<T>) {
        while slots.list.len() > self.max_lists || slots.bytes > self.max_bytes {
            let oldest = slots
                .list
                .iter()
                .enumerate()
                .min_by_key(|(_, slot)| slot.used)
                .map(|(at, _)| at);
            let Some(at) = oldest else {
                break;
            };
            let old = slots.list.swap_remove(at);
            slots.bytes -= old.bytes;
        }
    }

    /// How many lists are kept, and their bytes.
    #[cfg(test)]
    fn held(&self) -> (usize, usize) {
        let slots = self.slots.lock().unwrap();
        (slots.list.len(), slots.bytes)
    }
}

fn weight<T: Weighed>(text: &str, value: &T) -> usize {
    text.len()
        .saturating_mul(TEXT_WEIGHT)
        .saturating_add(value.held_bytes())
}

/// A hash of `text`'s bytes, four lanes of 8-byte words at a time: the list is hashed for
/// every request that sends one, and a cryptographic hash would cost several times as
/// much. Two lists of one hash cost a comparison, never a wrong list ([`ToolCache::get`]
/// compares the bytes); a client that makes its list's hash meet another's can only
/// drive that list out, as sending new lists would.
fn hash(text: &str) -> u64 {
    const K: u64 = 0x9e37_79b9_7f4a_7c15;
    let mix = |lane: u64, word: u64| (lane.rotate_left(23) ^ word).wrapping_mul(K);
    let word = |bytes: &[u8]| <[u8; 8]>::try_from(bytes).map_or(0, u64::from_le_bytes);
    let bytes = text.as_bytes();
    let mut lanes = [1u64, 2, 3, 4];
    let mut blocks = bytes.chunks_exact(32);
    for block in &mut blocks {
        for (lane, bytes) in lanes.iter_mut().zip(block.chunks_exact(8)) {
            *lane = mix(*lane, word(bytes));
        }
    }
    let mut hash = mix(0, bytes.len() as u64);
    for lane in lanes {
        hash = mix(hash, lane);
    }
    for rest in blocks.remainder().chunks(8) {
        let mut padded = [0u8; 8];
        padded[..rest.len()].copy_from_slice(rest);
        hash = mix(hash, u64::from_le_bytes(padded));
    }
    hash ^ (hash >> 29)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// A value that holds as many bytes as it is told to.
    #[derive(Debug, Default)]
    struct Held(AtomicUsize);

    impl Weighed for Held {
        fn held_bytes(&self) -> usize {
            self.0.load(Ordering::Relaxed)
        }
    }

    fn held(bytes: usize) -> Arc<Held> {
        Arc::new(Held(AtomicUsize::new(bytes)))
    }

    #[test]
    fn the_same_bytes_hit_and_a_changed_byte_misses() {
        let cache = ToolCache::new(4, 1 << 20);
        let value = held(0);
        cache.put(r#"[{"name": "a"}]"#, &value);
        let hit = cache.get(r#"[{"name": "a"}]"#).unwrap();
        assert!(Arc::ptr_eq(&hit, &value));
        assert!(cache.get(r#"[{"name": "b"}]"#).is_none());
        assert!(cache.get(r#"[{"name": "a"}] "#).is_none());
    }

    #[test]
    fn a_hash_shared_by_two_lists_never_gives_one_the_others_value() {
        let cache = ToolCache::new(4, 1 << 20);
        let value = held(0);
        cache.put("first", &value);
        // Another text under the first one's hash, as a collision would leave it.
        cache.slots.lock().unwrap().list[0].text = Arc::from("second");
        assert!(cache.get("first").is_none());
    }

    #[test]
    fn at_most_max_lists_are_kept_the_one_used_longest_ago_going_first() {
        let cache = ToolCache::new(3, 1 << 20);
        for name in ["a", "b", "c"] {
            cache.put(name, &held(0));
        }
        assert!(cache.get("a").is_some());
        cache.put("d", &held(0));
        assert_eq!(cache.held().0, 3);
        assert!(cache.get("b").is_none(), "b was used longest ago");
        for name in ["a", "c", "d"] {
            assert!(cache.get(name).is_some(), "{name}");
        }
        for i in 0..100 {
            cache.put(&format!("list {i}"), &held(0));
            assert!(cache.held().0 <= 3);
        }
    }

    #[test]
    fn at_most_max_bytes_are_kept_counting_what_was_built_since() {
        let each = 10 * TEXT_WEIGHT + 10;
        let cache = ToolCache::new(100, 2 * each + 5);
        // 10 bytes of text, and 10 built.
        let (a, b) = (held(10), held(10));
        cache.put("aaaaaaaaaa", &a);
        cache.put("bbbbbbbbbb", &b);
        assert_eq!(cache.held(), (2, 2 * each));
        // A list larger than the bound alone is not kept.
        cache.put(&"c".repeat(2 * each), &held(0));
        assert_eq!(cache.held(), (2, 2 * each));
        // `a` builds more: past the bound, the list used longest ago goes.
        assert!(cache.get("bbbbbbbbbb").is_some());
        a.0.store(20, Ordering::Relaxed);
        cache.recount(&a);
        assert_eq!(cache.held(), (1, each));
        assert!(cache.get("aaaaaaaaaa").is_none());
        assert!(cache.get("bbbbbbbbbb").is_some());
        for i in 0..100 {
            cache.put(&format!("list {i:5}"), &held(i));
            assert!(cache.held().1 <= 2 * each + 5);
        }
    }

    #[test]
    fn every_byte_and_the_length_change_the_hash() {
        let text = "[{\"type\": \"function\", \"function\": {\"name\": \"lookup\"}}] and more";
        let mut hashes = std::collections::HashSet::new();
        assert!(hashes.insert(hash(text)));
        for at in 0..text.len() {
            let mut changed = text.as_bytes().to_vec();
            changed[at] ^= 1;
            assert!(
                hashes.insert(hash(std::str::from_utf8(&changed).unwrap())),
                "{at}"
            );
        }
        for len in 0..text.len() {
            assert!(hashes.insert(hash(&text[..len])), "{len}");
        }
    }

    #[test]
    fn a_cache_of_nothing_keeps_nothing() {
        let cache = ToolCache::new(0, 1 << 20);
        cache.put("a", &held(0));
        assert!(cache.get("a").is_none());
        let cache = ToolCache::new(4, 0);
        cache.put("a", &held(0));
        assert!(cache.get("a").is_none());
    }
}
