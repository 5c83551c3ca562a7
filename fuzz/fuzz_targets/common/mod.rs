//! What several targets share: cutting an input into arbitrary chunks, and merging the
//! text events a chunking splits, so that chunked and whole runs compare equal.

use atfunc::Event;

/// `events` with each run of text events merged into one.
#[allow(dead_code)] // Not every target that cuts inputs compares events.
pub fn merge(events: Vec<Event>) -> Vec<Event> {
    let mut out: Vec<Event> = Vec::new();
    for e in events {
        if let (Some(Event::Text { text: prev }), Event::Text { text }) = (out.last_mut(), &e) {
            prev.push_str(text);
            continue;
        }
        out.push(e);
    }
    out
}

/// `input` cut into chunks of `sizes` (each byte `s` a chunk of `s + 1` bytes, cycled;
/// no sizes: one chunk, the whole input).
pub fn chunks<'a>(input: &'a [u8], sizes: &'a [u8]) -> impl Iterator<Item = &'a [u8]> + 'a {
    let mut rest = input;
    let mut k = 0;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let size = sizes
            .get(k % sizes.len().max(1))
            .map_or(rest.len(), |&s| s as usize + 1);
        k += 1;
        let (chunk, tail) = rest.split_at(size.min(rest.len()));
        rest = tail;
        Some(chunk)
    })
}
