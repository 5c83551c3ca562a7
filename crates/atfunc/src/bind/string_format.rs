//! The checks behind JSON Schema `format`, one small function per format.
//!
//! Each check answers `Err(reason)` with the reason worded for the model: what is wrong with
//! the value and how to write it (`February 2026 has 28 days`, `write it as YYYY-MM-DD, as in
//! 2026-02-28`). The reason follows `"<value>" is not a date: ` in the bind error.
//!
//! The grammars are those of RFC 3339 (dates and times), RFC 3986 (URIs) and RFC 5321's
//! `local@domain` (email, without quoted local parts or comments), read as JSON Schema's
//! format validators do, with two choices made for models' sake: a `time` may leave out its
//! offset (a `date-time` may not: without one the instant is unknown), and the reasons name
//! the first thing to fix rather than every rule.

use crate::interface::StringFormat;
use std::net::{Ipv4Addr, Ipv6Addr};

/// Checks `text` against `format`; the error is the reason it is not one.
pub(super) fn check(format: StringFormat, text: &str) -> Result<(), String> {
    match format {
        StringFormat::Date => date(text),
        StringFormat::DateTime => date_time(text),
        StringFormat::Time => time(text, false),
        StringFormat::Email => email(text),
        StringFormat::Uri => uri(text),
        StringFormat::Uuid => uuid(text),
        StringFormat::Ipv4 => text.parse::<Ipv4Addr>().map(drop).map_err(|_| {
            "write it as four numbers from 0 to 255 separated by dots, as in 192.0.2.1".to_owned()
        }),
        StringFormat::Ipv6 => text.parse::<Ipv6Addr>().map(drop).map_err(|_| {
            "write it as eight groups of up to four hex digits separated by colons, :: standing for a run of zero groups, as in 2001:db8::1".to_owned()
        }),
    }
}

/// The noun phrase for a value of `format`, after "is not".
pub(super) fn noun(format: StringFormat) -> &'static str {
    match format {
        StringFormat::Date => "a date",
        StringFormat::DateTime => "a date and time",
        StringFormat::Time => "a time",
        StringFormat::Email => "an email address",
        StringFormat::Uri => "a URI",
        StringFormat::Uuid => "a UUID",
        StringFormat::Ipv4 => "an IPv4 address",
        StringFormat::Ipv6 => "an IPv6 address",
    }
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

/// `digits` ASCII digits as a number; `None` unless every byte is a digit.
fn digits(text: &str) -> Option<u32> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn days_in(year: u32, month: u32) -> u32 {
    let leap = year.is_multiple_of(4) && (!year.is_multiple_of(100) || year.is_multiple_of(400));
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// `full-date = date-fullyear "-" date-month "-" date-mday` (RFC 3339).
fn date(text: &str) -> Result<(), String> {
    let shape = || "write it as YYYY-MM-DD, as in 2026-02-28".to_owned();
    let mut parts = text.split('-');
    let (Some(y), Some(m), Some(d), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(shape());
    };
    if (y.len(), m.len(), d.len()) != (4, 2, 2) {
        return Err(shape());
    }
    let (Some(year), Some(month), Some(day)) = (digits(y), digits(m), digits(d)) else {
        return Err(shape());
    };
    let Some(name) = month.checked_sub(1).and_then(|i| MONTHS.get(i as usize)) else {
        return Err(format!("there is no month {m}: months run from 01 to 12"));
    };
    let last = days_in(year, month);
    if day == 0 {
        return Err("days run from 01".to_owned());
    }
    if day > last {
        return Err(format!("{name} {year} has {last} days"));
    }
    Ok(())
}

/// `date-time = full-date "T" full-time` (RFC 3339; `t` too, as the RFC allows).
fn date_time(text: &str) -> Result<(), String> {
    let shape = "write it as YYYY-MM-DDTHH:MM:SS with its offset, as in 2026-02-28T14:30:00Z";
    let (day, rest) = match (text.get(..10), text.get(10..)) {
        (Some(day), Some(rest)) => (day, rest),
        _ if date(text).is_ok() => {
            return Err(format!("it has no time of day: {shape}"));
        }
        _ => return Err(shape.to_owned()),
    };
    if let Err(reason) = date(day) {
        // A day that is a date but not a real one says why; any other shape gets this one.
        return Err(if reason.starts_with("write it as") {
            shape.to_owned()
        } else {
            reason
        });
    }
    let time_part = match rest.strip_prefix(['T', 't']) {
        Some(time_part) => time_part,
        None if rest.starts_with(' ') => {
            return Err(format!(
                "put a T between the date and the time, as in {day}T{}",
                rest.trim_start()
            ));
        }
        None if rest.is_empty() => return Err(format!("it has no time of day: {shape}")),
        None => return Err(shape.to_owned()),
    };
    time(time_part, true)
}

/// `full-time = partial-time time-offset` (RFC 3339), the offset optional unless
/// `offset_required`.
fn time(text: &str, offset_required: bool) -> Result<(), String> {
    let shape = "write it as HH:MM:SS, as in 14:30:00";
    let (Some(h), Some(m), Some(s)) = (text.get(..2), text.get(3..5), text.get(6..8)) else {
        return Err(shape.to_owned());
    };
    if text.get(2..3) != Some(":") || text.get(5..6) != Some(":") {
        return Err(shape.to_owned());
    }
    let (Some(hour), Some(minute), Some(second)) = (digits(h), digits(m), digits(s)) else {
        return Err(shape.to_owned());
    };
    if hour > 23 {
        return Err("hours run from 00 to 23".to_owned());
    }
    if minute > 59 {
        return Err("minutes run from 00 to 59".to_owned());
    }
    // 60 is a leap second.
    if second > 60 {
        return Err("seconds run from 00 to 59".to_owned());
    }
    let mut rest = text.get(8..).unwrap_or_default();
    if let Some(fraction) = rest.strip_prefix('.') {
        let end = fraction
            .find(|c: char| !c.is_ascii_digit())
            .unwrap_or(fraction.len());
        if end == 0 {
            return Err("a '.' after the seconds must be followed by digits".to_owned());
        }
        rest = fraction.get(end..).unwrap_or_default();
    }
    if rest.is_empty() {
        return if offset_required {
            Err(
                "it has no time zone offset: end it with Z for UTC or with one like +01:00"
                    .to_owned(),
            )
        } else {
            Ok(())
        };
    }
    if rest == "Z" || rest == "z" {
        return Ok(());
    }
    let offset_shape =
        || format!("the offset {rest} must be Z or written +HH:MM or -HH:MM, as in +01:00");
    let Some(offset) = rest.strip_prefix(['+', '-']) else {
        return Err(offset_shape());
    };
    let (Some(oh), Some(om)) = (offset.get(..2), offset.get(3..)) else {
        return Err(offset_shape());
    };
    if offset.get(2..3) != Some(":") || om.len() != 2 {
        return Err(offset_shape());
    }
    match (digits(oh), digits(om)) {
        (Some(oh), Some(om)) if oh <= 23 && om <= 59 => Ok(()),
        _ => Err(offset_shape()),
    }
}

/// `local@domain`: a dot-atom local part and a domain of labels (or an address literal).
fn email(text: &str) -> Result<(), String> {
    let Some((local, domain)) = text.rsplit_once('@') else {
        return Err("it has no @: write it as name@domain, as in ada@example.com".to_owned());
    };
    if text.chars().any(char::is_whitespace) {
        return Err("it contains a space".to_owned());
    }
    if local.is_empty() {
        return Err("nothing comes before the @".to_owned());
    }
    if local.contains('@') {
        return Err("it has more than one @".to_owned());
    }
    if local.len() > 64 {
        return Err("the part before the @ is longer than 64 bytes".to_owned());
    }
    const SPECIALS: &str = "!#$%&'*+-/=?^_`{|}~";
    if let Some(c) = local
        .chars()
        .find(|&c| !(c.is_alphanumeric() || c == '.' || SPECIALS.contains(c)))
    {
        return Err(format!("'{c}' cannot stand before the @"));
    }
    if local.starts_with('.') || local.ends_with('.') || local.contains("..") {
        return Err(
            "the part before the @ cannot start or end with a dot or hold two in a row".to_owned(),
        );
    }
    if domain.is_empty() {
        return Err("nothing comes after the @: add the domain, as in ada@example.com".to_owned());
    }
    if let Some(literal) = domain.strip_prefix('[').and_then(|d| d.strip_suffix(']')) {
        let ip = literal.strip_prefix("IPv6:");
        let valid = match ip {
            Some(v6) => v6.parse::<Ipv6Addr>().is_ok(),
            None => literal.parse::<Ipv4Addr>().is_ok(),
        };
        return if valid {
            Ok(())
        } else {
            Err(format!(
                "{domain} is not an address literal such as [192.0.2.1]"
            ))
        };
    }
    hostname(domain)
}

/// A domain name: labels of letters, digits and hyphens, 1 to 63 bytes each, no hyphen at
/// either end. Letters may be any script's, as internationalised names are written.
fn hostname(domain: &str) -> Result<(), String> {
    if domain.len() > 253 {
        return Err("the domain is longer than 253 bytes".to_owned());
    }
    for label in domain.split('.') {
        if label.is_empty() {
            return Err(format!(
                "the domain {domain} has an empty label (two dots in a row, or one at an end)"
            ));
        }
        if label.len() > 63 {
            return Err("a label of the domain is longer than 63 bytes".to_owned());
        }
        if let Some(c) = label.chars().find(|&c| !(c.is_alphanumeric() || c == '-')) {
            return Err(format!("'{c}' cannot stand in the domain {domain}"));
        }
        if label.starts_with('-') || label.ends_with('-') {
            return Err(format!(
                "a label of the domain {domain} starts or ends with '-'"
            ));
        }
    }
    Ok(())
}

/// `URI = scheme ":" hier-part [ "?" query ] [ "#" fragment ]` (RFC 3986): a scheme, then
/// only characters a URI may hold, `%` followed by two hex digits.
fn uri(text: &str) -> Result<(), String> {
    let no_scheme = "it has no scheme: write an absolute URI, as in https://example.com/path";
    let Some((scheme, rest)) = text.split_once(':') else {
        return Err(no_scheme.to_owned());
    };
    let mut chars = scheme.chars();
    let valid_scheme = chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    if !valid_scheme {
        return Err(no_scheme.to_owned());
    }
    const ALLOWED: &str = "-._~:/?#[]@!$&'()*+,;=%";
    let mut chars = rest.char_indices();
    while let Some((i, c)) = chars.next() {
        if c == ' ' {
            return Err("it contains a space: write it as %20".to_owned());
        }
        if !c.is_ascii() {
            let mut buf = [0u8; 4];
            let encoded: String = c
                .encode_utf8(&mut buf)
                .bytes()
                .map(|b| format!("%{b:02X}"))
                .collect();
            return Err(format!("write '{c}' percent-encoded, as {encoded}"));
        }
        if !(c.is_ascii_alphanumeric() || ALLOWED.contains(c)) {
            return Err(format!(
                "'{}' cannot stand in a URI: percent-encode it, as %{:02X}",
                c.escape_default(),
                c as u32
            ));
        }
        if c == '%' {
            let hex = rest.get(i + 1..i + 3);
            if !hex.is_some_and(|h| h.bytes().all(|b| b.is_ascii_hexdigit())) {
                return Err(
                    "'%' must be followed by two hex digits (write a % sign as %25)".to_owned(),
                );
            }
            chars.nth(1);
        }
    }
    let web = ["http", "https", "ws", "wss", "ftp"];
    if web.iter().any(|w| w.eq_ignore_ascii_case(scheme)) {
        let host = rest.strip_prefix("//").map(|r| {
            let end = r.find(['/', '?', '#']).unwrap_or(r.len());
            r.get(..end).unwrap_or_default()
        });
        if host.is_none_or(|h| h.rsplit('@').next().unwrap_or_default().is_empty()) {
            return Err(format!(
                "a {scheme} URI needs a host, as in {scheme}://example.com/path"
            ));
        }
    }
    Ok(())
}

/// `8-4-4-4-12` hex digits (RFC 9562), either case.
fn uuid(text: &str) -> Result<(), String> {
    let groups: Vec<&str> = text.split('-').collect();
    let lengths: Vec<usize> = groups.iter().map(|g| g.len()).collect();
    let hex = groups
        .iter()
        .all(|g| g.bytes().all(|b| b.is_ascii_hexdigit()));
    if lengths == [8, 4, 4, 4, 12] && hex {
        Ok(())
    } else {
        Err("write it as 32 hex digits in groups of 8-4-4-4-12, as in 123e4567-e89b-12d3-a456-426614174000".to_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ok(format: StringFormat, text: &str) {
        assert_eq!(check(format, text), Ok(()), "{format} {text:?}");
    }

    fn bad(format: StringFormat, text: &str) -> String {
        match check(format, text) {
            Ok(()) => panic!("{format} {text:?} passed"),
            Err(reason) => reason,
        }
    }

    #[test]
    fn dates() {
        for text in [
            "2026-02-28",
            "2024-02-29",
            "2000-02-29",
            "0001-01-01",
            "9999-12-31",
        ] {
            ok(StringFormat::Date, text);
        }
        assert_eq!(
            bad(StringFormat::Date, "2026-02-30"),
            "February 2026 has 28 days"
        );
        assert_eq!(
            bad(StringFormat::Date, "1900-02-29"),
            "February 1900 has 28 days"
        );
        assert_eq!(
            bad(StringFormat::Date, "2026-04-31"),
            "April 2026 has 30 days"
        );
        assert_eq!(
            bad(StringFormat::Date, "2026-13-01"),
            "there is no month 13: months run from 01 to 12"
        );
        assert_eq!(
            bad(StringFormat::Date, "2026-00-01"),
            "there is no month 00: months run from 01 to 12"
        );
        assert_eq!(bad(StringFormat::Date, "2026-01-00"), "days run from 01");
        for text in [
            "26-02-01",
            "2026-2-1",
            "2026/02/01",
            "next friday",
            "",
            "2026-02-01T00:00:00Z",
            "２０２６-02-01",
            "+026-02-01",
        ] {
            assert!(
                bad(StringFormat::Date, text).starts_with("write it as YYYY-MM-DD"),
                "{text:?}"
            );
        }
    }

    #[test]
    fn times_and_date_times() {
        for text in [
            "14:30:00",
            "00:00:00.5",
            "23:59:60",
            "14:30:00Z",
            "14:30:00+01:00",
            "14:30:00.123-05:30",
        ] {
            ok(StringFormat::Time, text);
        }
        assert_eq!(
            bad(StringFormat::Time, "24:00:00"),
            "hours run from 00 to 23"
        );
        assert_eq!(
            bad(StringFormat::Time, "12:60:00"),
            "minutes run from 00 to 59"
        );
        assert!(bad(StringFormat::Time, "14:30").starts_with("write it as HH:MM:SS"));
        assert!(bad(StringFormat::Time, "14:30:00+1").starts_with("the offset +1 must be"));
        assert!(bad(StringFormat::Time, "14:30:00.").starts_with("a '.'"));
        for text in [
            "2026-02-28T14:30:00Z",
            "2026-02-28t14:30:00.25+01:00",
            "2024-02-29T00:00:00-00:00",
        ] {
            ok(StringFormat::DateTime, text);
        }
        assert!(bad(StringFormat::DateTime, "2026-02-28T14:30:00")
            .starts_with("it has no time zone offset"));
        assert!(bad(StringFormat::DateTime, "2026-02-28").starts_with("it has no time of day"));
        assert_eq!(
            bad(StringFormat::DateTime, "2026-02-28 14:30:00Z"),
            "put a T between the date and the time, as in 2026-02-28T14:30:00Z"
        );
        assert_eq!(
            bad(StringFormat::DateTime, "2026-02-29T10:00:00Z"),
            "February 2026 has 28 days"
        );
        assert!(bad(StringFormat::DateTime, "tomorrow at noon").starts_with("write it as"));
        // Multi-byte text never splits a character.
        assert!(bad(StringFormat::DateTime, "2026-02-2é8T1").starts_with("write it as"));
        assert!(bad(StringFormat::Time, "1é:00:00").starts_with("write it as"));
    }

    #[test]
    fn emails() {
        for text in [
            "ada@example.com",
            "a.b+tag@mail.example.org",
            "x@localhost",
            "josé@correo.es",
            "u@[192.0.2.1]",
            "u@[IPv6:2001:db8::1]",
        ] {
            ok(StringFormat::Email, text);
        }
        assert!(bad(StringFormat::Email, "ada at example.com").starts_with("it has no @"));
        assert_eq!(
            bad(StringFormat::Email, "@example.com"),
            "nothing comes before the @"
        );
        assert!(bad(StringFormat::Email, "ada@").starts_with("nothing comes after the @"));
        assert_eq!(
            bad(StringFormat::Email, "a@b@c.com"),
            "it has more than one @"
        );
        assert_eq!(
            bad(StringFormat::Email, "ada @example.com"),
            "it contains a space"
        );
        assert!(bad(StringFormat::Email, "ada@example..com").contains("empty label"));
        assert!(bad(StringFormat::Email, "ada@-example.com").contains("starts or ends with '-'"));
        assert!(bad(StringFormat::Email, ".ada@example.com").contains("dot"));
        assert!(bad(StringFormat::Email, "ad,a@example.com").starts_with("',' cannot stand"));
    }

    #[test]
    fn uris() {
        for text in [
            "https://example.com/a?b=c#d",
            "mailto:ada@example.com",
            "urn:isbn:0451450523",
            "file:///etc/hosts",
            "https://example.com/%C3%9F",
            "http://[::1]:8080/",
        ] {
            ok(StringFormat::Uri, text);
        }
        assert!(bad(StringFormat::Uri, "example.com/path").starts_with("it has no scheme"));
        assert!(bad(StringFormat::Uri, "/relative/path").starts_with("it has no scheme"));
        assert_eq!(
            bad(StringFormat::Uri, "https://example.com/a b"),
            "it contains a space: write it as %20"
        );
        assert_eq!(
            bad(StringFormat::Uri, "https://de.example.org/Straße"),
            "write 'ß' percent-encoded, as %C3%9F"
        );
        assert!(
            bad(StringFormat::Uri, "https://example.com/100%").starts_with("'%' must be followed")
        );
        assert!(bad(StringFormat::Uri, "https:///path").starts_with("a https URI needs a host"));
        assert!(bad(StringFormat::Uri, "http:example.com").starts_with("a http URI needs a host"));
        assert!(bad(StringFormat::Uri, "https://example.com/<x>").starts_with("'<' cannot stand"));
    }

    #[test]
    fn uuids_and_ips() {
        ok(StringFormat::Uuid, "123e4567-e89b-12d3-a456-426614174000");
        ok(StringFormat::Uuid, "123E4567-E89B-12D3-A456-426614174000");
        for text in [
            "123e4567e89b12d3a456426614174000",
            "123e4567-e89b-12d3-a456-42661417400g",
            "{123e4567-e89b-12d3-a456-426614174000}",
            "",
        ] {
            assert!(
                bad(StringFormat::Uuid, text).starts_with("write it as 32 hex digits"),
                "{text:?}"
            );
        }
        ok(StringFormat::Ipv4, "192.0.2.1");
        for text in ["256.0.0.1", "1.2.3", "01.2.3.4", "::1"] {
            assert!(
                bad(StringFormat::Ipv4, text).starts_with("write it as four numbers"),
                "{text:?}"
            );
        }
        ok(StringFormat::Ipv6, "2001:db8::1");
        ok(StringFormat::Ipv6, "::ffff:192.0.2.1");
        for text in ["2001:db8:::1", "192.0.2.1", "fe80::1%eth0"] {
            assert!(
                bad(StringFormat::Ipv6, text).starts_with("write it as eight groups"),
                "{text:?}"
            );
        }
    }
}
