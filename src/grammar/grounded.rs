//! The numbers a conversation writes, for grammars whose numbers must be among them
//! ([`GrammarOptions::grounded_numbers`](super::GrammarOptions::grounded_numbers)).

/// The numbers written in `text`, in order of first appearance, each once, as the grammar
/// offers them: `213,000` as `213000`, `1.5`, `-4`, `1e-9`; a number that is not finite
/// as an `f64` is left out.
///
/// ```
/// use atfunc::grammar::numbers_in;
/// assert_eq!(
///     numbers_in("A base of 10 units, height 2.5, 1,200 m, -4 degrees, 1e-9 C and 10 again."),
///     ["10", "2.5", "1200", "-4", "1e-9"]
/// );
/// assert!(numbers_in("no digits here").is_empty());
/// ```
pub fn numbers_in(text: &str) -> Vec<String> {
    let bytes = text.as_bytes();
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if !bytes[i].is_ascii_digit() {
            i += 1;
            continue;
        }
        // A minus sign counts when it stands alone before the digits (`-4`, not `a-4`).
        let negative =
            i > 0 && bytes[i - 1] == b'-' && (i < 2 || !bytes[i - 2].is_ascii_alphanumeric());
        let mut number = String::new();
        if negative {
            number.push('-');
        }
        let mut j = i;
        let digits = |j: &mut usize, into: &mut String| {
            while *j < bytes.len() && bytes[*j].is_ascii_digit() {
                into.push(char::from(bytes[*j]));
                *j += 1;
            }
        };
        digits(&mut j, &mut number);
        // Thousands: a comma followed by exactly three digits.
        while j + 3 < bytes.len()
            && bytes[j] == b','
            && bytes[j + 1..]
                .iter()
                .take(3)
                .filter(|b| b.is_ascii_digit())
                .count()
                == 3
            && bytes.get(j + 4).is_none_or(|b| !b.is_ascii_digit())
        {
            number.extend(bytes[j + 1..j + 4].iter().map(|&b| char::from(b)));
            j += 4;
        }
        if j + 1 < bytes.len() && bytes[j] == b'.' && bytes[j + 1].is_ascii_digit() {
            number.push('.');
            j += 1;
            digits(&mut j, &mut number);
        }
        if j + 1 < bytes.len() && matches!(bytes[j], b'e' | b'E') {
            let sign = matches!(bytes[j + 1], b'-' | b'+');
            let first = j + 1 + usize::from(sign);
            if bytes.get(first).is_some_and(u8::is_ascii_digit) {
                number.push('e');
                if sign {
                    number.push(char::from(bytes[j + 1]));
                }
                j = first;
                digits(&mut j, &mut number);
            }
        }
        i = j;
        // JSON writes no leading zeros: `007` is offered as `7`.
        let sign = usize::from(negative);
        let zeros = number[sign..].bytes().take_while(|&b| b == b'0').count();
        let keep = number[sign + zeros..]
            .bytes()
            .next()
            .is_none_or(|b| !b.is_ascii_digit());
        let zeros = zeros - usize::from(keep && zeros > 0);
        number.replace_range(sign..sign + zeros, "");
        let finite = number.parse::<f64>().is_ok_and(f64::is_finite);
        if finite && !out.contains(&number) {
            out.push(number);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_read_as_written_and_kept_once() {
        assert_eq!(numbers_in("5 5.0 5"), ["5", "5.0"]);
        assert_eq!(numbers_in("x-1 and -2, (3)"), ["1", "-2", "3"]);
        assert_eq!(numbers_in("1,2,3"), ["1", "2", "3"]);
        assert_eq!(numbers_in("12,3456"), ["12", "3456"]);
        assert_eq!(numbers_in("v1.2.3"), ["1.2", "3"]);
        assert_eq!(numbers_in("3e 4E+2 9e999"), ["3", "4e+2"]);
        assert_eq!(numbers_in("end 7."), ["7"]);
        assert_eq!(numbers_in("007 0.5 -00 000.25"), ["7", "0.5", "-0", "0.25"]);
        // As the grammar offers them to an integer parameter: whole numbers only.
        let tools = crate::load_interfaces(&serde_json::json!([{"name": "f", "parameters":
            {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}}]))
        .unwrap();
        let options = super::super::GrammarOptions {
            choice: super::super::Choice::Required,
            grounded_numbers: Some(numbers_in("-12 1.0 1e3")),
            ..super::super::GrammarOptions::default()
        };
        let grammar = super::super::grammar(&tools, &options).unwrap();
        assert!(grammar.accepts("@f(n=-12)"));
        assert!(!grammar.accepts("@f(n=1.0)") && !grammar.accepts("@f(n=1e3)"));
    }
}
