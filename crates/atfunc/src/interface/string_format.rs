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
pub enum StringFormat {
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

impl StringFormat {
    /// Every format atfunc checks, in the order the docs list them.
    pub const ALL: [StringFormat; 8] = [
        StringFormat::Date,
        StringFormat::DateTime,
        StringFormat::Time,
        StringFormat::Email,
        StringFormat::Uri,
        StringFormat::Uuid,
        StringFormat::Ipv4,
        StringFormat::Ipv6,
    ];

    /// The name as JSON Schema spells it (`date-time`).
    pub fn name(self) -> &'static str {
        match self {
            StringFormat::Date => "date",
            StringFormat::DateTime => "date-time",
            StringFormat::Time => "time",
            StringFormat::Email => "email",
            StringFormat::Uri => "uri",
            StringFormat::Uuid => "uuid",
            StringFormat::Ipv4 => "ipv4",
            StringFormat::Ipv6 => "ipv6",
        }
    }

    /// The format a declared name means, ignoring case; `None` for one atfunc does not check.
    ///
    /// ```
    /// use atfunc::interface::StringFormat;
    ///
    /// assert_eq!(StringFormat::from_name("date-time"), Some(StringFormat::DateTime));
    /// assert_eq!(StringFormat::from_name("password"), None);
    /// ```
    pub fn from_name(name: &str) -> Option<StringFormat> {
        let name = name.trim();
        StringFormat::ALL
            .into_iter()
            .find(|f| f.name().eq_ignore_ascii_case(name))
    }

    /// A value of this format, for messages that show the model what to write.
    pub fn example(self) -> &'static str {
        match self {
            StringFormat::Date => "2026-02-28",
            StringFormat::DateTime => "2026-02-28T14:30:00Z",
            StringFormat::Time => "14:30:00",
            StringFormat::Email => "ada@example.com",
            StringFormat::Uri => "https://example.com/path",
            StringFormat::Uuid => "123e4567-e89b-12d3-a456-426614174000",
            StringFormat::Ipv4 => "192.0.2.1",
            StringFormat::Ipv6 => "2001:db8::1",
        }
    }
}

impl fmt::Display for StringFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}
