//! Blanking out secrets in text a tool box hands back to the model.
//!
//! A secret may come back in another spelling than the one that was sent: an API that
//! echoes a header as Basic auth holds it in base64, a URL holds it percent-encoded, and
//! JSON may spell any character as a `\u` escape. [`Redactor`] looks for each secret
//!
//! - as written,
//! - in hexadecimal, in upper, lower or mixed case (a hex dump, `od`, a digest tool's
//!   `--hex` mode of the raw value),
//! - in base64 and base64url, at each of the three byte alignments it can have inside a
//!   longer encoded text (Basic auth's `user:password`, whatever the user): every
//!   character that carries a bit of the secret is blanked, the one at each end that
//!   mixes its bits with a neighbour's too, so what stays decodes to none of its bits,
//! - in the text with its percent-escapes decoded, and in the text with its JSON escapes
//!   decoded, anywhere (not only inside one JSON document), so a mix of escaped and plain
//!   characters is found too.
//!
//! What it cannot find: a secret split by line breaks (MIME base64 wrapped at 76
//! columns), hashed, encrypted, compressed, reversed, in another encoding layered on top of
//! these (base64 of a percent-encoded secret), or cut into pieces a program reassembles.

use serde_json::Value as Json;

/// What stands in for a secret.
pub(crate) const REDACTED: &str = "[redacted]";

/// Secrets shorter than this are not searched for: the search would blank out ordinary
/// text.
pub(crate) const MIN_SECRET_LEN: usize = 4;

/// The spellings of a set of secrets, searched for in text.
#[derive(Clone, Default)]
pub(crate) struct Redactor {
    /// Every secret as written.
    needles: Vec<Vec<u8>>,
    /// Every secret in lower-case hexadecimal, searched for in the text with its ASCII
    /// letters lowered (the same length, so offsets carry over): any mix of cases matches.
    hex_needles: Vec<Vec<u8>>,
    /// Every secret in base64 and base64url at each alignment.
    base64_needles: Vec<Base64Needle>,
}

/// A secret's base64 at one alignment: the characters that carry its bits only, and
/// whether a character that mixes its bits with a neighbour's stands before or after
/// them.
///
/// Inside encoded text a secret of `n` bytes starting `a` bytes into a three-byte group
/// covers bits `8a..8(a+n)` of the group's run, and character `i` carries bits
/// `6i..6i+6`. The characters wholly inside are the same wherever the secret is (the
/// needle); one starting before `8a` (when `8a` is not a multiple of 6: `a` is 1 or 2)
/// holds 4 or 2 of the secret's first bits under a neighbour's, and one ending past
/// `8(a+n)` holds the secret's last bits over a neighbour's (or the zero bits of the
/// text's end). Those two cannot be searched for, as they depend on bytes that are not
/// the secret, but they always stand right beside the needle, and are blanked with it.
///
/// A secret of 4 bytes, the shortest redacted, leaves at least 4 characters wholly
/// inside at any alignment (`(32 - 4) / 6`), as specific a needle as the 4 bytes as
/// written; no shorter secret is searched for.
#[derive(Clone, PartialEq, Eq)]
struct Base64Needle {
    chars: Vec<u8>,
    /// The character before `chars` holds bits of the secret.
    mixed_before: bool,
    /// The character after `chars` holds bits of the secret.
    mixed_after: bool,
}

impl Base64Needle {
    /// `secret` at alignment `a` (0, 1 or 2 bytes into a group) in `alphabet`.
    fn new(secret: &[u8], a: usize, alphabet: &[u8; 64]) -> Base64Needle {
        let start_bit = 8 * a;
        let end_bit = 8 * (a + secret.len());
        // Whole groups of zeros around it: the characters wholly inside the secret do not
        // depend on them, and no padding is written.
        let mut stream = vec![0u8; a];
        stream.extend_from_slice(secret);
        stream.resize(stream.len().div_ceil(3) * 3, 0);
        let encoded = base64(&stream, alphabet).into_bytes();
        let first = start_bit.div_ceil(6);
        let last = end_bit / 6;
        Base64Needle {
            chars: encoded.get(first..last).unwrap_or_default().to_vec(),
            mixed_before: !start_bit.is_multiple_of(6),
            mixed_after: !end_bit.is_multiple_of(6),
        }
    }

    /// The range `at..end` of a match in `haystack` grown over the mixed characters
    /// beside it, and over the padding that may follow the last (it carries no bits, but
    /// a lone `=` after the blank would only puzzle a reader).
    fn grow(&self, haystack: &[u8], at: usize, end: usize) -> (usize, usize) {
        let is_char = |i: usize| haystack.get(i).copied().is_some_and(is_base64_char);
        let mut start = at;
        if self.mixed_before && at > 0 && is_char(at - 1) {
            start = at - 1;
        }
        let mut end = end;
        if self.mixed_after && is_char(end) {
            end += 1;
            for _ in 0..2 {
                if haystack.get(end) != Some(&b'=') {
                    break;
                }
                end += 1;
            }
        }
        (start, end)
    }
}

/// Whether `byte` is a character of base64 or of base64url.
fn is_base64_char(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'+' | b'/' | b'-' | b'_')
}

impl Redactor {
    /// A redactor for `secrets`; those shorter than [`MIN_SECRET_LEN`] are ignored. A
    /// bearer-style value (`Bearer abc…`) is also searched for without its scheme, as it is
    /// often echoed that way.
    pub(crate) fn new<I, S>(secrets: I) -> Redactor
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        let mut needles = Vec::new();
        let mut hex_needles = Vec::new();
        let mut base64_needles = Vec::new();
        let mut values = Vec::new();
        for secret in secrets {
            let secret = secret.as_ref();
            if let Some((_, credential)) = secret.split_once(' ') {
                values.push(credential.to_owned());
            }
            values.push(secret.to_owned());
        }
        for secret in values {
            let secret = secret.as_bytes();
            if secret.len() < MIN_SECRET_LEN {
                continue;
            }
            needles.push(secret.to_vec());
            hex_needles.push(hex_lower(secret));
            for a in 0..3 {
                for alphabet in [STANDARD, URL_SAFE] {
                    let needle = Base64Needle::new(secret, a, alphabet);
                    // A secret without `>`, `?` or their kin encodes the same in both.
                    if !base64_needles.contains(&needle) {
                        base64_needles.push(needle);
                    }
                }
            }
        }
        needles.sort_unstable();
        needles.dedup();
        hex_needles.sort_unstable();
        hex_needles.dedup();
        Redactor {
            needles,
            hex_needles,
            base64_needles,
        }
    }

    /// `text` with every spelling of every secret replaced by `[redacted]`.
    pub(crate) fn redact(&self, text: &str) -> String {
        let spans = self.spans(text);
        if spans.is_empty() {
            return text.to_owned();
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for (start, end) in spans {
            // Spans come from matches of whole UTF-8 needles (or whole escapes), so they
            // fall on character boundaries; `get` keeps a surprise from panicking.
            out.push_str(text.get(at..start).unwrap_or_default());
            out.push_str(REDACTED);
            at = end;
        }
        out.push_str(text.get(at..).unwrap_or_default());
        out
    }

    /// The byte ranges of `text` that [`Redactor::redact`] blanks, in order, apart and
    /// not touching.
    fn spans(&self, text: &str) -> Vec<(usize, usize)> {
        if self.needles.is_empty() {
            return Vec::new();
        }
        let bytes = text.as_bytes();
        let mut spans = Vec::new();
        self.find(bytes, None, &mut spans);
        find_all(
            &self.hex_needles,
            &bytes.to_ascii_lowercase(),
            None,
            &mut spans,
        );
        if bytes.contains(&b'%') {
            let view = Decoded::percent(bytes);
            self.find(&view.bytes, Some(&view.starts), &mut spans);
        }
        if bytes.contains(&b'\\') {
            let view = Decoded::json(bytes);
            self.find(&view.bytes, Some(&view.starts), &mut spans);
        }
        spans.sort_unstable();
        // Overlapping and touching spans become one.
        let mut merged: Vec<(usize, usize)> = Vec::with_capacity(spans.len());
        for (start, end) in spans {
            match merged.last_mut() {
                Some(last) if start <= last.1 => last.1 = last.1.max(end),
                _ => merged.push((start, end)),
            }
        }
        merged
    }

    /// Whether raw bytes (a binary body, which is not redacted) hold a secret as written,
    /// in hexadecimal or in base64.
    pub(crate) fn holds_secret(&self, bytes: &[u8]) -> bool {
        let holds =
            |needle: &[u8], haystack: &[u8]| memchr::memmem::find(haystack, needle).is_some();
        self.needles.iter().any(|needle| holds(needle, bytes))
            || self
                .base64_needles
                .iter()
                .any(|needle| holds(&needle.chars, bytes))
            || (!self.hex_needles.is_empty() && {
                let lowered = bytes.to_ascii_lowercase();
                self.hex_needles
                    .iter()
                    .any(|needle| holds(needle, &lowered))
            })
    }

    /// Redacts every string (keys included) of a JSON value; whether anything changed.
    pub(crate) fn redact_json(&self, value: &mut Json) -> bool {
        if self.needles.is_empty() {
            return false;
        }
        match value {
            Json::String(text) => {
                let redacted = self.redact(text);
                let changed = redacted != *text;
                *text = redacted;
                changed
            }
            Json::Array(items) => items
                .iter_mut()
                .fold(false, |changed, item| self.redact_json(item) | changed),
            Json::Object(map) => {
                let mut changed = false;
                for (key, mut item) in std::mem::take(map) {
                    changed |= self.redact_json(&mut item);
                    let redacted = self.redact(&key);
                    changed |= redacted != key;
                    map.insert(redacted, item);
                }
                changed
            }
            _ => false,
        }
    }

    /// Adds the source spans of every needle found in `haystack`. `starts[i]` is where the
    /// `i`th byte of a decoded view came from (one entry more than the view's length);
    /// `None` means the haystack is the source itself.
    fn find(&self, haystack: &[u8], starts: Option<&[usize]>, spans: &mut Vec<(usize, usize)>) {
        find_all(&self.needles, haystack, starts, spans);
        for needle in &self.base64_needles {
            for at in memchr::memmem::find_iter(haystack, &needle.chars) {
                let (start, end) = needle.grow(haystack, at, at + needle.chars.len());
                push_span(start, end, starts, spans);
            }
        }
    }
}

/// Adds the source spans of every one of `needles` found in `haystack` (see
/// [`Redactor::find`] for `starts`).
fn find_all(
    needles: &[Vec<u8>],
    haystack: &[u8],
    starts: Option<&[usize]>,
    spans: &mut Vec<(usize, usize)>,
) {
    for needle in needles {
        for at in memchr::memmem::find_iter(haystack, needle) {
            push_span(at, at + needle.len(), starts, spans);
        }
    }
}

/// Adds the source span of the match `at..end` in a haystack (see [`Redactor::find`] for
/// `starts`).
fn push_span(at: usize, end: usize, starts: Option<&[usize]>, spans: &mut Vec<(usize, usize)>) {
    let span = match starts {
        None => Some((at, end)),
        Some(starts) => starts.get(at).copied().zip(starts.get(end).copied()),
    };
    if let Some(span) = span {
        spans.push(span);
    }
}

/// `bytes` as lower-case hexadecimal, two digits a byte.
fn hex_lower(bytes: &[u8]) -> Vec<u8> {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = Vec::with_capacity(bytes.len() * 2);
    for byte in bytes {
        out.push(DIGITS[usize::from(byte >> 4)]);
        out.push(DIGITS[usize::from(byte & 15)]);
    }
    out
}

/// A text with one kind of escape decoded, and where each decoded byte came from.
struct Decoded {
    bytes: Vec<u8>,
    /// `starts[i]`: the source offset of the escape (or plain byte) that gave `bytes[i]`;
    /// a last entry holds the source length, so a match `a..b` maps to `starts[a]..starts[b]`.
    starts: Vec<usize>,
}

impl Decoded {
    fn push(&mut self, decoded: &[u8], from: usize) {
        self.bytes.extend_from_slice(decoded);
        self.starts.extend(std::iter::repeat_n(from, decoded.len()));
    }

    fn finish(mut self, len: usize) -> Decoded {
        self.starts.push(len);
        self
    }

    fn new(capacity: usize) -> Decoded {
        Decoded {
            bytes: Vec::with_capacity(capacity),
            starts: Vec::with_capacity(capacity + 1),
        }
    }

    /// `%41` read as `A`; a `%` without two hex digits stays as it is.
    fn percent(text: &[u8]) -> Decoded {
        let mut view = Decoded::new(text.len());
        let mut i = 0;
        while let Some(&byte) = text.get(i) {
            let escaped = (byte == b'%')
                .then(|| Some(hex(*text.get(i + 1)?)? << 4 | hex(*text.get(i + 2)?)?))
                .flatten();
            match escaped {
                Some(decoded) => {
                    view.push(&[decoded], i);
                    i += 3;
                }
                None => {
                    view.push(&[byte], i);
                    i += 1;
                }
            }
        }
        view.finish(text.len())
    }

    /// `\u0041`, `\/`, `\n` and the other JSON escapes read as what they stand for;
    /// surrogate pairs are joined. Anything else stays as it is.
    fn json(text: &[u8]) -> Decoded {
        let mut view = Decoded::new(text.len());
        let mut i = 0;
        while let Some(&byte) = text.get(i) {
            if byte != b'\\' {
                view.push(&[byte], i);
                i += 1;
                continue;
            }
            let simple = match text.get(i + 1) {
                Some(b'"') => Some(b'"'),
                Some(b'\\') => Some(b'\\'),
                Some(b'/') => Some(b'/'),
                Some(b'b') => Some(0x08),
                Some(b'f') => Some(0x0c),
                Some(b'n') => Some(b'\n'),
                Some(b'r') => Some(b'\r'),
                Some(b't') => Some(b'\t'),
                _ => None,
            };
            if let Some(decoded) = simple {
                view.push(&[decoded], i);
                i += 2;
                continue;
            }
            match unicode_escape(text, i) {
                Some((ch, used)) => {
                    let mut buf = [0u8; 4];
                    view.push(ch.encode_utf8(&mut buf).as_bytes(), i);
                    i += used;
                }
                None => {
                    view.push(&[byte], i);
                    i += 1;
                }
            }
        }
        view.finish(text.len())
    }
}

/// The character a `\uXXXX` (or a `\uD8xx\uDCxx` pair) at `at` stands for, and its length.
fn unicode_escape(text: &[u8], at: usize) -> Option<(char, usize)> {
    let unit = |from: usize| -> Option<u32> {
        if text.get(from..from + 2)? != b"\\u" {
            return None;
        }
        let digits = text.get(from + 2..from + 6)?;
        digits
            .iter()
            .try_fold(0u32, |acc, d| Some(acc << 4 | u32::from(hex(*d)?)))
    };
    let first = unit(at)?;
    if (0xD800..0xDC00).contains(&first) {
        let second = unit(at + 6)?;
        if !(0xDC00..0xE000).contains(&second) {
            return None;
        }
        let code = 0x10000 + ((first - 0xD800) << 10) + (second - 0xDC00);
        return char::from_u32(code).map(|ch| (ch, 12));
    }
    char::from_u32(first).map(|ch| (ch, 6))
}

fn hex(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        b'A'..=b'F' => Some(digit - b'A' + 10),
        _ => None,
    }
}

/// The standard base64 alphabet (RFC 4648 section 4).
pub(crate) const STANDARD: &[u8; 64] =
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
const URL_SAFE: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";

/// Base64 in `alphabet`, a short last group padded with `=` (RFC 4648). Redaction passes
/// whole three-byte groups only; elements carry any bytes.
pub(crate) fn base64(bytes: &[u8], alphabet: &[u8; 64]) -> String {
    let mut out = String::with_capacity(bytes.len().div_ceil(3) * 4);
    for chunk in bytes.chunks(3) {
        let byte = |i: usize| u32::from(chunk.get(i).copied().unwrap_or(0));
        let n = byte(0) << 16 | byte(1) << 8 | byte(2);
        // A chunk of k bytes fills k + 1 characters; `=` pads the group to four.
        for (i, shift) in [18u32, 12, 6, 0].into_iter().enumerate() {
            if i <= chunk.len() {
                out.push(char::from(alphabet[(n >> shift & 63) as usize]));
            } else {
                out.push('=');
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::strategy::Strategy;

    const SECRET: &str = "s3cr3t-t0ken-value";

    fn std_b64(bytes: &[u8]) -> String {
        // A full encoder with padding, written independently of the one above.
        let mut out = String::new();
        for chunk in bytes.chunks(3) {
            let b = [
                chunk[0],
                *chunk.get(1).unwrap_or(&0),
                *chunk.get(2).unwrap_or(&0),
            ];
            let n = (b[0] as u32) << 16 | (b[1] as u32) << 8 | b[2] as u32;
            for (i, shift) in [18, 12, 6, 0].into_iter().enumerate() {
                if i <= chunk.len() {
                    out.push(STANDARD[(n >> shift & 63) as usize] as char);
                } else {
                    out.push('=');
                }
            }
        }
        out
    }

    fn leaks(text: &str) -> bool {
        let redacted = Redactor::new([SECRET]).redact(text);
        redacted.contains(SECRET) || !redacted.contains(REDACTED)
    }

    #[test]
    fn plain_text_is_blanked() {
        assert_eq!(
            Redactor::new([SECRET]).redact(&format!("token={SECRET}.")),
            "token=[redacted]."
        );
    }

    #[test]
    fn base64_at_every_alignment_is_blanked() {
        for prefix in ["", "u", "us", "user:"] {
            let encoded = std_b64(format!("{prefix}{SECRET}").as_bytes());
            let redactor = Redactor::new([SECRET]);
            let out = redactor.redact(&format!("Basic {encoded}"));
            assert!(out.contains(REDACTED), "{prefix:?}: {out}");
            // What stays is the prefix's own groups and at most the two characters at
            // each end mixing secret and neighbour bits (and padding).
            let kept = out.replace("Basic ", "").replace(REDACTED, "");
            assert!(kept.len() <= prefix.len() / 3 * 4 + 8, "{prefix:?}: {out}");
            let url = encoded.replace('+', "-").replace('/', "_");
            assert!(redactor.redact(&url).contains(REDACTED), "{url}");
        }
    }

    /// A secret that ends the encoded text fills its last group alone (padding, or none in
    /// unpadded base64url): no neighbour's bits mix in, so the group is the secret's and
    /// must go too (`dWU=` is "ue").
    #[test]
    fn base64_ending_with_the_secret_keeps_none_of_its_bytes() {
        let redactor = Redactor::new([SECRET]);
        for prefix in ["", "u", "us", "user:"] {
            let padded = std_b64(format!("{prefix}{SECRET}").as_bytes());
            let bare = padded.trim_end_matches('=');
            let url = bare.replace('+', "-").replace('/', "_");
            for encoded in [padded.as_str(), bare, &url] {
                let out = redactor.redact(&format!("Basic {encoded}"));
                assert!(out.ends_with(REDACTED), "{prefix:?} {encoded}: {out}");
                // Followed by more text, the last group mixes in its bits and stays.
                let out = redactor.redact(&format!("{encoded}.x"));
                assert!(out.contains(REDACTED), "{prefix:?} {encoded}: {out}");
            }
        }
    }

    /// `prefix + secret + suffix` in base64 (`url`: base64url; `padded`: with `=`), set
    /// between `<` and `>`.
    fn encoded_text(prefix: &[u8], secret: &str, suffix: &[u8], url: bool, padded: bool) -> String {
        let mut stream = prefix.to_vec();
        stream.extend_from_slice(secret.as_bytes());
        stream.extend_from_slice(suffix);
        let mut encoded = std_b64(&stream);
        if !padded {
            encoded = encoded.trim_end_matches('=').to_owned();
        }
        if url {
            encoded = encoded.replace('+', "-").replace('/', "_");
        }
        format!("<{encoded}>")
    }

    /// The promise for base64, checked for one text: every character of the encoded text
    /// that carries a bit of the secret lies in a blanked span. Character `i` carries bits
    /// `6i..6i+6` of the encoded bytes, the secret is bits `8p..8(p+n)` (`p` bytes of
    /// prefix, `n` of secret): a character kept holds its neighbours' bits only, so
    /// no byte of the secret, nor any of its bits, can be read from what is left.
    /// (Saying it as "no window of the output decodes to 3 bytes of the secret" would be
    /// weaker, and would fail by chance: random neighbours may spell 3 of its bytes
    /// themselves.)
    fn assert_no_secret_bit_kept(
        prefix: &[u8],
        secret: &str,
        suffix: &[u8],
        url: bool,
        padded: bool,
    ) {
        let text = encoded_text(prefix, secret, suffix, url, padded);
        let spans = Redactor::new([secret]).spans(&text);
        let secret_bits = 8 * prefix.len()..8 * (prefix.len() + secret.len());
        // Padding characters sit past every bit of the stream: they carry none.
        for i in 0..text.len() - 2 {
            let bits = 6 * i..6 * i + 6;
            if bits.start >= secret_bits.end || secret_bits.start >= bits.end {
                continue;
            }
            let at = i + 1; // after the `<`
            assert!(
                spans.iter().any(|&(start, end)| start <= at && at < end),
                "character {i} of {text} carries bits of {secret:?} and was kept \
                 (prefix {prefix:?}, spans {spans:?}): {}",
                Redactor::new([secret]).redact(&text)
            );
        }
    }

    /// A secret between two bytes of other data, starting one byte into a group and
    /// ending one before a group's end. What stays is exactly the characters that carry
    /// only the neighbours' bits: the first (P's top six) and the last (Q's low six).
    /// The characters around the secret mix in two or four of its bits and go too: kept,
    /// their group decoded to its first and last two bytes ("Su", "en").
    #[test]
    fn base64_between_neighbours_keeps_no_bit_of_the_secret() {
        let secret = "Sunflower-Garden";
        let redactor = Redactor::new([secret]);
        for (url, padded) in [(false, true), (true, false)] {
            let text = encoded_text(b"P", secret, b"Q", url, padded);
            let encoded = text.trim_start_matches('<').trim_end_matches('>');
            assert_eq!(encoded.len(), 24);
            let kept = |range: std::ops::Range<usize>| encoded.get(range).unwrap_or_default();
            assert_eq!(
                redactor.redact(&text),
                format!("<{}{REDACTED}{}>", kept(0..1), kept(23..24)),
                "{text}"
            );
            assert_no_secret_bit_kept(b"P", secret, b"Q", url, padded);
        }
    }

    /// Four- and five-byte secrets give too few whole groups for a search of whole
    /// groups; at every alignment, with every ending, they go all the same.
    #[test]
    fn short_secrets_are_blanked_in_base64_at_every_alignment() {
        for secret in ["k3Y!", "k3Y!z"] {
            for prefix in [&b""[..], b"a", b"ab", b"abc"] {
                for suffix in [&b""[..], b".", b"..", b"..."] {
                    for (url, padded) in [(false, true), (false, false), (true, false)] {
                        assert_no_secret_bit_kept(prefix, secret, suffix, url, padded);
                    }
                }
            }
        }
    }

    /// Basic auth holds `base64(user:password)`; the password goes whatever the user's
    /// name, and the name (here `user:`, whose `:` shares a character with the password)
    /// keeps the characters that are its own.
    #[test]
    fn basic_auth_blanks_a_short_password_after_any_user() {
        let redactor = Redactor::new(["abcdef"]);
        let header = format!("Authorization: Basic {}", std_b64(b"user:abcdef"));
        assert_eq!(header, "Authorization: Basic dXNlcjphYmNkZWY=");
        assert_eq!(
            redactor.redact(&header),
            "Authorization: Basic dXNlcj[redacted]"
        );
        for user in ["", "a", "al", "ali", "alice", "a-much-longer-user-name"] {
            for (url, padded) in [(false, true), (true, false)] {
                assert_no_secret_bit_kept(
                    format!("{user}:").as_bytes(),
                    "abcdef",
                    b"",
                    url,
                    padded,
                );
            }
        }
    }

    proptest::proptest! {
        /// For random secrets of 4 to 64 bytes (ASCII, or any characters), between random
        /// bytes, in either alphabet, padded or not: no kept character carries a bit of
        /// the secret.
        #[test]
        fn no_kept_base64_character_carries_a_bit_of_the_secret(
            secret in proptest::prop_oneof![
                "[!-~]{4,64}",
                proptest::string::string_regex("\\PC{1,16}")
                    .expect("a valid regex")
                    .prop_filter("4 to 64 bytes", |s| (4..=64).contains(&s.len())),
            ],
            prefix in proptest::collection::vec(proptest::arbitrary::any::<u8>(), 0..8),
            suffix in proptest::collection::vec(proptest::arbitrary::any::<u8>(), 0..8),
            url: bool,
            padded: bool,
        ) {
            assert_no_secret_bit_kept(&prefix, &secret, &suffix, url, padded);
        }
    }

    #[test]
    fn percent_and_json_escapes_anywhere_are_blanked() {
        let percent: String = SECRET.bytes().map(|b| format!("%{b:02X}")).collect();
        assert!(!leaks(&format!("GET /x?t={percent} HTTP/1.1")));
        let lower: String = SECRET.bytes().map(|b| format!("%{b:02x}")).collect();
        assert!(!leaks(&lower));
        assert!(!leaks("s%33cr3t-t0ken-value and more"));
        let escaped: String = SECRET
            .chars()
            .map(|c| format!("\\u{:04x}", c as u32))
            .collect();
        // NDJSON lines and trailing text: not one JSON document.
        assert!(!leaks(&format!(
            "{{\"a\":\"{escaped}\"}}\n{{\"b\":1}}\ntrailing \\u0073"
        )));
        let slash = Redactor::new(["ab/cd/ef"]);
        assert_eq!(slash.redact("x ab\\/cd\\/ef y"), "x [redacted] y");
    }

    #[test]
    fn surrogate_pairs_and_broken_escapes_do_not_panic() {
        let redactor = Redactor::new(["😀secret😀"]);
        assert_eq!(
            redactor.redact("\\ud83d\\ude00secret\\ud83d\\ude00!"),
            "[redacted]!"
        );
        for text in ["\\", "\\u12", "%", "%4", "\\ud800", "%zz", "é%C3%A9\\u00e9"] {
            let _ = redactor.redact(text);
        }
    }

    #[test]
    fn hex_in_any_case_is_blanked() {
        let lower: String = SECRET.bytes().map(|b| format!("{b:02x}")).collect();
        let upper: String = SECRET.bytes().map(|b| format!("{b:02X}")).collect();
        let mixed: String = SECRET
            .bytes()
            .enumerate()
            .map(|(i, b)| match i % 2 {
                0 => format!("{b:02x}"),
                _ => format!("{b:02X}"),
            })
            .collect();
        let redactor = Redactor::new([SECRET]);
        for hex in [&lower, &upper, &mixed] {
            assert_eq!(
                redactor.redact(&format!("digest: 00{hex}ff.")),
                "digest: 00[redacted]ff."
            );
            assert!(redactor.holds_secret(hex.as_bytes()), "{hex}");
        }
        // Hex of something else is left alone.
        assert_eq!(redactor.redact("deadbeef DEADBEEF"), "deadbeef DEADBEEF");
    }

    #[test]
    fn unrelated_text_is_unchanged() {
        let text = "nothing to see %41 \\u0041 QUJD";
        assert_eq!(Redactor::new([SECRET]).redact(text), text);
    }
}
