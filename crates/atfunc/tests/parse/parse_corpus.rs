//! The tricky-input corpus: each case runs whole and in 1-byte, 3-byte and random chunks
//! (all must agree and reproduce the input), and its events are snapshotted. Each case runs
//! again with the parser told which functions take a body, under the same checks.

use crate::parse_common;

use atfunc::parse::Bodies;
use atfunc::{Event, ParserConfig};
use parse_common::{calls, check, check_bytes, check_bytes_config};

/// The functions of the corpus that take a body, for the runs that are told.
const WITH_BODY: [&str; 2] = ["api.create_user", "API.POST"];

/// Runs `input` with the parser told that no function, and that only [`WITH_BODY`], takes
/// a body: every chunking must agree, and only calls to those have one.
fn check_bodies(input: &[u8], events: &[Event]) {
    let none = ParserConfig::default().with_bodies(Bodies::None);
    let bare = check_bytes_config(input, &none, true);
    assert!(calls(&bare).iter().all(|c| c.body.is_none()), "{bare:?}");
    let some = ParserConfig::default().with_bodies(Bodies::only(WITH_BODY));
    let told = check_bytes_config(input, &some, true);
    for call in calls(&told) {
        if some.bodies.allows(&call.name) {
            // Told nothing new about it, the parser reads such a call as before.
            assert!(calls(events).contains(&call), "{call:?} not in {events:?}");
        } else {
            assert_eq!(call.body, None, "{call:?}");
        }
    }
}

/// One snapshot test per case; the snapshot is named after the case.
macro_rules! corpus {
    ($($name:ident: $input:expr;)*) => {
        $(
            #[test]
            fn $name() {
                let events = check($input);
                insta::assert_json_snapshot!(stringify!($name), events);
                check_bodies($input.as_bytes(), &events);
            }
        )*
    };
}

corpus! {
    parens_and_commas_in_strings:
        r#"Result: @calc.eval("f(a, b)", 'x) y', note="), (") done"#;
    escaped_quotes:
        r#"@say("He said \"hi\" and \\ left", 'it\'s', "tab\there")"#;
    email_in_prose:
        "Write to bob@example.com, or café@x.y(1) or 名@a(2), not me.";
    mention_in_prose:
        "Ask @john said Sam, then @john (he knows) and @ alone and @.x( and @a..b(1).";
    call_in_code_fence:
        "Here is the app:\n```python\n@app.route('/')\ndef index():\n    return 'hi'\n```\n";
    call_in_inline_backticks:
        "Use `@weather.get(Paris)` to ask.";
    case_variants_of_names:
        "@Weather.Get_Temp(1) @WEATHER.GET_TEMP(2) @weather.get_temp(3) @año.función(4)";
    trailing_comma:
        "@a(1, 2,) @b(x=1, ) @c(,) @d( )";
    multi_line_arguments:
        "@weather.get(\n    location=\"Paris\",\n    unit: 'c',\n)\nDone.";
    crlf_line_ends:
        "@weather.get(\r\n  \"Paris\",\r\n  unit = c\r\n) with_body [[\r\n{}\r\n]]\r\nok\r\n";
    unicode_escapes_and_multibyte:
        r#"@echo("\uD83D\uDE00 caf\u00e9 \uDE00", "naïve 日本 😀", ключ="значение")"#;
    windows_path:
        r#"@fs.read("C:\Users\Public\new")"#;
    unterminated_string_at_end:
        r#"Calling @a("never closed"#;
    unterminated_arguments_at_end:
        "Calling @a(1, [2, 3";
    body_with_brackets_in_json_string:
        r#"@api.create_user("bob", "b@x.io") with_body [[ {"bio": "likes ]] and [[", "n": [[1,2],[3]]} ]] then text"#;
    body_with_nested_arrays:
        "@api.post(1) with_body [[ [[1,2],[3]] ]]";
    body_on_the_next_line_is_text:
        "@api.post(1)\nwith_body [[ [[1,2],[3]] ]] @api.post(2)\r\nwith_body [[]]";
    not_a_body:
        "@a(1)\n\nwith_body [[x]] @b(2) with_bodyx @c(3) with_body then";
    unterminated_body:
        "@a(1) with_body [[ {\"x\": 1}";
    prose_right_after_call:
        "Sure! @weather.get(Paris). It is sunny.";
    two_calls_on_one_line:
        r#"@a(1) @b("2")@c() and @d(x: [1, {"k": true}])"#;
    bare_words:
        "@weather.get(Paris) @weather.get(New York, unit=celsius) @calc(sqrt(2), (1+2)*3)";
    literal_values:
        r#"@v(-1.5, 2e3, +7, true, False, None, null, [1, 'a', {k: v, "q": 1, 'r': [],},], {})"#;
    url_values:
        r#"@fetch(https://x.org, url: "https://example.com/?a=1", u:/tmp)"#;
    positional_after_named:
        "@a(x=1, 2) then @b(3)";
    syntax_errors_resume:
        r#"@a(1 "x") @b([1 2]) @c({k 1}) @d(x=) @e(1, , 2) @f(a
b) @g(ok)"#;
    malformed_then_call_inside:
        r#"@a("x" @b(1)"#;
    at_signs_at_the_end:
        "end @";
    name_at_the_end:
        "end @weather.get";
}

#[test]
fn invalid_utf8_in_text_and_calls() {
    let input = b"ok \xff @a(\"\xfe\") @b(1) \xe2\x82(x) @c(\xe2\x82";
    let events = check_bytes(input);
    insta::assert_json_snapshot!("invalid_utf8_in_text_and_calls", events);
    check_bodies(input, &events);
}

#[test]
fn multibyte_split_everywhere() {
    // Every chunking splits some character of this input; all must agree.
    let input = "é@a(1) 😀@b(2) @日本(\"😀\", k='é') ü";
    let events = check(input);
    insta::assert_json_snapshot!("multibyte_split_everywhere", events);
    check_bodies(input.as_bytes(), &events);
}
