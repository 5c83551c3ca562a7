//! The JSON Schema string formats atfunc checks when a call binds.

use serde::Serialize;
use std::fmt;

/// A JSON Schema `format` that binding checks (see [`crate::bind()`]): a string parameter
/// declaring one of these must hold such a value, or the call is refused with a message that
/// says what is wrong with it. Other formats are kept on the [`Param`](super::Param) and not
/// checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Format {
    /// A calendar date, `2026-02-28` (RFC 3339 `full-date`).
    Date,
    /// A date and a time with its offset, `2026-02-28T14:30:00Z` (RFC 3339 `date-time`).
    DateTime,
    /// A time of day, `14:30:00`, with an optional fraction and offset.
    Time,
    /// An email address, `ada@example.com`.
    Email,
    /// An absolute URI with a scheme, `https://example.com/a?b=c`.
    Uri,
    /// A UUID in its hyphenated form, `123e4567-e89b-12d3-a456-426614174000`.
    Uuid,
    /// A dotted-decimal IPv4 address, `192.0.2.1`.
    Ipv4,
    /// An IPv6 address, `2001:db8::1`.
    Ipv6,
}

impl Format {
    /// Every format atfunc checks, in the order the docs list them.
    pub const ALL: [Format; 8] = [
        Format::Date,
        Format::DateTime,
        Format::Time,
        Format::Email,
        Format::Uri,
        Format::Uuid,
        Format::Ipv4,
        Format::Ipv6,
    ];

    /// The name as JSON Schema spells it (`date-time`).
    pub fn name(self) -> &'static str {
        match self {
            Format::Date => "date",
            Format::DateTime => "date-time",
            Format::Time => "time",
            Format::Email => "email",
            Format::Uri => "uri",
            Format::Uuid => "uuid",
            Format::Ipv4 => "ipv4",
            Format::Ipv6 => "ipv6",
        }
    }

    /// The format a declared name means, ignoring case; `None` for one atfunc does not check.
    ///
    /// ```
    /// use atfunc::Format;
    ///
    /// assert_eq!(Format::from_name("date-time"), Some(Format::DateTime));
    /// assert_eq!(Format::from_name("password"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<Format> {
        let name = name.trim();
        Format::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(name))
    }

    /// A value of this format, for messages that show the model what to write.
    pub fn example(self) -> &'static str {
        match self {
            Format::Date => "2026-02-28",
            Format::DateTime => "2026-02-28T14:30:00Z",
            Format::Time => "14:30:00",
            Format::Email => "ada@example.com",
            Format::Uri => "https://example.com/path",
            Format::Uuid => "123e4567-e89b-12d3-a456-426614174000",
            Format::Ipv4 => "192.0.2.1",
            Format::Ipv6 => "2001:db8::1",
        }
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
