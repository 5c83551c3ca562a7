//! Values as a grammar writes them: each declared type as the JSON-shaped literal that the
//! parser reads and the binder accepts for it.
//!
//! Every value is written the way `serde_json` would write it (strings with JSON escapes,
//! numbers in JSON syntax, objects with `"key": value` members), because that text means the
//! same to the call parser (arguments), to `serde_json` (bodies) and to a model that has
//! read a lot of JSON.

use super::tree::{Builder, Node};
use crate::interface::{Param, ParamType, StringFormat};
use serde_json::Value as Json;

/// Nesting the parser accepts by default ([`crate::ParserConfig::max_depth`]): arrays and
/// objects deeper than this never parse, so the grammar does not offer them.
pub(crate) const MAX_NESTING: usize = 64;

/// Digits of a whole number before the grammar stops offering more: 18 keep every integer
/// inside `i64`, so no value the grammar allows is rounded on its way to a tool.
const INT_DIGITS: u32 = 18;

/// The largest whole number offered, `10^INT_DIGITS - 1`.
const INT_LIMIT: i128 = 999_999_999_999_999_999;

/// Fraction digits and exponent digits of a number. With at most 15 + 15 digits and a
/// two-digit exponent every number the grammar allows is finite as an `f64` (the binder
/// refuses `1e999`).
const NUMBER_INT_DIGITS: u32 = 15;
const FRACTION_DIGITS: u32 = 15;
const EXPONENT_DIGITS: u32 = 2;

/// What a value is written for, which decides whether `null` may stand there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Slot {
    /// A parameter or an object field: `null` there means "left out", which the grammar
    /// expresses by leaving it out instead.
    Named,
    /// An array element: `null` binds only where the item type is `any`.
    Element,
}

/// The grammar's values, with the depth `any` is unrolled to.
pub(crate) struct Values {
    /// How deep `any` values (and objects without declared fields) nest.
    pub any_depth: usize,
    /// Whether a string's first character may not be `,` or `)`
    /// (`GrammarOptions::with_guard_string_start`).
    pub guard_string_start: bool,
    /// Whether a text parameter may be a bare word
    /// ([`GrammarOptions::with_bare_strings`](super::GrammarOptions::with_bare_strings)).
    pub bare_strings: bool,
    /// The most characters of a string
    /// ([`GrammarOptions::with_max_string_chars`](super::GrammarOptions::with_max_string_chars)).
    pub max_string_chars: Option<u32>,
    /// The most items of a list, and entries of an object of any keys
    /// ([`GrammarOptions::with_max_list_items`](super::GrammarOptions::with_max_list_items)).
    pub max_list_items: Option<u32>,
    /// The numbers a number parameter may take
    /// ([`GrammarOptions::with_grounded_numbers`](super::GrammarOptions::with_grounded_numbers)).
    pub grounded_numbers: Option<Vec<String>>,
    /// The text whose runs of words a text parameter's value must be
    /// ([`GrammarOptions::with_grounded_text`](super::GrammarOptions::with_grounded_text)).
    pub grounded_text: Option<String>,
}

fn digit() -> Node {
    Node::chars(&[('0', '9')])
}

fn digits(min: u32, max: u32) -> Node {
    Node::repeat(digit(), min, Some(max))
}

impl Values {
    /// The value of `param`, nested `depth` containers deep; `None` when no value binds (a
    /// choice list none of whose entries fits the type, bounds that exclude every number,
    /// a required field that cannot be written, nesting past [`MAX_NESTING`]).
    pub(crate) fn param(
        &self,
        b: &mut Builder,
        param: &Param,
        depth: usize,
        slot: Slot,
    ) -> Option<Node> {
        if let Some(choices) = whole_choices(param) {
            let allowed: Vec<Node> = choices
                .iter()
                .filter(|choice| choice_fits(choice, param, slot))
                .map(|choice| Node::text(choice.to_string()))
                .collect();
            return (!allowed.is_empty()).then(|| Node::alt(allowed));
        }
        let bounded = param.min.is_some() || param.max.is_some();
        if let Some(grounded) = self.grounded(param) {
            return Some(grounded);
        }
        match &param.ty {
            ParamType::String => Some(
                match param
                    .known_format()
                    .and_then(|format| self.formatted(b, format))
                {
                    Some(formatted) => formatted,
                    None if self.grounded_text.is_some() => {
                        let spans = self
                            .grounded_text
                            .as_deref()
                            .and_then(|text| super::grounded::text_spans(b, text));
                        spans.unwrap_or_else(|| self.string(b))
                    }
                    // Only a call's own argument (depth 0): inside a JSON object or list
                    // an unquoted word is read as a JSON token, not as text.
                    None if self.bare_strings && slot == Slot::Named && depth == 0 => {
                        Node::alt([self.string(b), bare_word(b)])
                    }
                    None => self.string(b),
                },
            ),
            ParamType::Boolean => Some(b.rule("boolean", |_| {
                Node::alt([Node::text("true"), Node::text("false")])
            })),
            ParamType::Integer if bounded => integer_between(param.min, param.max),
            ParamType::Integer => Some(self.integer(b)),
            ParamType::Number if bounded => number_between(param.min, param.max),
            ParamType::Number => Some(self.number(b)),
            ParamType::Any => {
                let levels = self.any_depth.min(MAX_NESTING.saturating_sub(depth));
                let null = slot == Slot::Element;
                if bounded {
                    // Bounds apply when the value is a number: the other kinds stay free.
                    let mut kinds = vec![number_between(param.min, param.max)?];
                    kinds.extend(self.any_kinds(b, levels, null, false));
                    Some(Node::alt(kinds))
                } else {
                    Some(self.any(b, levels, null))
                }
            }
            ParamType::Array { items } => {
                if depth >= MAX_NESTING {
                    return None;
                }
                let item = match (param.element(), items) {
                    // The array's choices apply to each element, and so do the items' own:
                    // an element must be in both lists, none when they share nothing.
                    (Some(element), _) if param.element_choices().is_some() => {
                        match element.choices.as_deref() {
                            Some([]) => None,
                            _ => self.param(b, &element, depth + 1, Slot::Element),
                        }
                    }
                    (_, Some(item)) => self.param(b, item, depth + 1, Slot::Element),
                    (_, None) => {
                        Some(self.any(b, self.any_depth.min(MAX_NESTING - depth - 1), true))
                    }
                };
                Some(match item {
                    Some(item) => list(b, "[", item, "]", self.max_list_items),
                    // No element binds: only the empty list does.
                    None => Node::text("[]"),
                })
            }
            ParamType::Object { properties } if properties.is_empty() => {
                if depth >= MAX_NESTING {
                    return None;
                }
                let levels = self.any_depth.min(MAX_NESTING - depth);
                Some(self.any_object(b, levels.max(1)))
            }
            ParamType::Object { properties } => {
                if depth >= MAX_NESTING {
                    return None;
                }
                self.object(b, properties, depth + 1)
            }
        }
    }

    /// The numbers of [`Values::grounded_numbers`] that fit a number or integer `param`,
    /// as alternatives; `None` for another type, or when none fits.
    fn grounded(&self, param: &Param) -> Option<Node> {
        let fitting = self.grounded_fitting(param)?;
        Some(Node::alt(fitting.into_iter().map(Node::text)))
    }

    /// The numbers of [`Values::grounded_numbers`] that fit a number or integer `param`;
    /// `None` for another type, or when none fits.
    fn grounded_fitting(&self, param: &Param) -> Option<Vec<String>> {
        let numbers = self.grounded_numbers.as_ref()?;
        if !matches!(param.ty, ParamType::Integer | ParamType::Number) {
            return None;
        }
        // Each number as a declared choice would be: of the type, within the bounds.
        let fitting: Vec<String> = numbers
            .iter()
            .filter(|n| {
                serde_json::from_str::<Json>(n)
                    .is_ok_and(|value| choice_fits(&value, param, Slot::Named))
            })
            .cloned()
            .collect();
        (!fitting.is_empty()).then_some(fitting)
    }

    /// Every value the grammar lets a call give `param`, each as written, when it lists
    /// them: declared choices, `true` and `false`, grounded numbers, runs of grounded text
    /// (up to `most` of them). `None` for a value the grammar leaves free (text, a number,
    /// a list, an object, a checked format): "not listed" is always a safe answer, so the
    /// order of the checks is [`Values::param`]'s.
    pub(crate) fn listed(&self, param: &Param, most: usize) -> Option<Vec<String>> {
        if let Some(choices) = whole_choices(param) {
            return Some(
                choices
                    .iter()
                    .filter(|choice| choice_fits(choice, param, Slot::Named))
                    .map(Json::to_string)
                    .collect(),
            );
        }
        if let Some(fitting) = self.grounded_fitting(param) {
            return Some(fitting);
        }
        match &param.ty {
            ParamType::Boolean => Some(vec!["true".into(), "false".into()]),
            ParamType::String if param.known_format().is_none() => {
                super::grounded::span_values(self.grounded_text.as_deref()?, most)
            }
            _ => None,
        }
    }

    /// `value` (JSON text) as the grammar spells it for `param`, when the grammar lets a
    /// call give it, as far as can be told without the grammar: JSON of the parameter's
    /// type within its bounds; one of its choices, grounded numbers (as the question
    /// writes it: `112.0740`) or runs of grounded text when it has them; not a string the
    /// guard keeps out; `None` otherwise. Used for values a grammar writes out as given,
    /// so that none widens the grammar past what binds. An object is checked by its type:
    /// its fields are the binder's.
    pub(crate) fn spelled(&self, param: &Param, value: &str) -> Option<String> {
        let json = serde_json::from_str::<Json>(value).ok()?;
        self.spell(param, &json, Slot::Named)
    }

    fn spell(&self, param: &Param, json: &Json, slot: Slot) -> Option<String> {
        let object = matches!(
            (&param.ty, json),
            (ParamType::Object { .. }, Json::Object(_))
        );
        if !object && !choice_fits(json, param, slot) {
            return None;
        }
        if let Some(choices) = whole_choices(param) {
            return choices.contains(json).then(|| json.to_string());
        }
        if let Some(fitting) = self.grounded_fitting(param) {
            let number = json.as_f64()?;
            return fitting
                .into_iter()
                .find(|n| n.parse::<f64>().is_ok_and(|own| own == number));
        }
        match (json, param.element()) {
            (Json::Array(items), Some(element)) => {
                let items: Option<Vec<String>> = items
                    .iter()
                    .map(|item| self.spell(&element, item, Slot::Element))
                    .collect();
                Some(format!("[{}]", items?.join(", ")))
            }
            (Json::String(text), _) if param.ty == ParamType::String => {
                let grounded = param.known_format().is_none()
                    && self
                        .grounded_text
                        .as_deref()
                        .is_some_and(super::grounded::has_words);
                let fits = match self.grounded_text.as_deref() {
                    Some(said) if grounded => super::grounded::is_span(said, text),
                    _ => {
                        !(self.guard_string_start
                            && (text.starts_with(',') || text.starts_with(')')))
                    }
                };
                fits.then(|| json.to_string())
            }
            _ => Some(written(json)),
        }
    }

    /// `{"a": 1, "b": 2}` with the declared fields in declared order, the required ones
    /// present; `depth` is the object's own nesting level.
    pub(crate) fn object(&self, b: &mut Builder, fields: &[Param], depth: usize) -> Option<Node> {
        let mut members = Vec::new();
        for field in fields {
            match self.param(b, field, depth, Slot::Named) {
                Some(value) => members.push((
                    Node::seq([
                        Node::text(format!("{}: ", Json::from(field.name.as_str()))),
                        value,
                    ]),
                    field.required,
                )),
                None if field.required => return None,
                None => {}
            }
        }
        Some(Node::seq([
            Node::text("{"),
            separated(b, members, ", "),
            Node::text("}"),
        ]))
    }

    /// A string of a checked `format`, for the formats whose values form a regular language
    /// small enough to write out: exactly the values binding accepts, so every sample binds
    /// and every value that binds is offered. `None` for `email`, `uri` and `ipv6`, which
    /// stay any string: binding checks them, and a model sampled from the grammar may
    /// still write one the binder refuses.
    fn formatted(&self, b: &mut Builder, format: StringFormat) -> Option<Node> {
        let quoted = |node: Node| Node::seq([Node::text("\""), node, Node::text("\"")]);
        match format {
            StringFormat::Date => Some(quoted(Self::date(b))),
            StringFormat::Time => {
                let time = Self::time(b);
                Some(quoted(Node::seq([time, Node::optional(Self::offset(b))])))
            }
            StringFormat::DateTime => {
                let date = Self::date(b);
                let time = Self::time(b);
                let offset = Self::offset(b);
                Some(quoted(Node::seq([
                    date,
                    Node::chars(&[('T', 'T'), ('t', 't')]),
                    time,
                    offset,
                ])))
            }
            StringFormat::Uuid => Some(b.rule("format-uuid", |_| {
                let hex = |n| {
                    Node::repeat(
                        Node::chars(&[('0', '9'), ('a', 'f'), ('A', 'F')]),
                        n,
                        Some(n),
                    )
                };
                quoted(Node::seq([
                    hex(8),
                    Node::text("-"),
                    hex(4),
                    Node::text("-"),
                    hex(4),
                    Node::text("-"),
                    hex(4),
                    Node::text("-"),
                    hex(12),
                ]))
            })),
            StringFormat::Ipv4 => Some(b.rule("format-ipv4", |b| {
                // octet ::= "25" [0-5] | "2" [0-4] [0-9] | "1" [0-9] [0-9] | [1-9]? [0-9]
                let octet = b.rule("format-ipv4-octet", |_| {
                    Node::alt([
                        Node::seq([Node::text("25"), Node::chars(&[('0', '5')])]),
                        Node::seq([Node::text("2"), Node::chars(&[('0', '4')]), digit()]),
                        Node::seq([Node::text("1"), digit(), digit()]),
                        Node::seq([Node::optional(Node::chars(&[('1', '9')])), digit()]),
                    ])
                });
                let dotted = Node::seq([Node::text("."), octet.clone()]);
                quoted(Node::seq([octet, Node::repeat(dotted, 3, Some(3))]))
            })),
            _ => None,
        }
    }

    /// A calendar date, month lengths and leap years included:
    /// date ::= [0-9]{4} "-" (long-month "-" (day28 | "29" | "30" | "31") | short-month "-"
    /// (day28 | "29" | "30") | "02-" day28) | leap-year "-02-29"
    fn date(b: &mut Builder) -> Node {
        b.rule("format-date", |_| {
            let two = |first: &[(char, char)], second: &[(char, char)]| {
                Node::seq([Node::chars(first), Node::chars(second)])
            };
            // 01-28, then what longer months add.
            let day28 = Node::alt([
                two(&[('0', '0')], &[('1', '9')]),
                two(&[('1', '1')], &[('0', '9')]),
                two(&[('2', '2')], &[('0', '8')]),
            ]);
            let long_month = Node::alt([
                two(
                    &[('0', '0')],
                    &[('1', '1'), ('3', '3'), ('5', '5'), ('7', '8')],
                ),
                two(&[('1', '1')], &[('0', '0'), ('2', '2')]),
            ]);
            let short_month = Node::alt([
                two(&[('0', '0')], &[('4', '4'), ('6', '6'), ('9', '9')]),
                Node::text("11"),
            ]);
            // Two digits divisible by 4 other than 00: 04 08, 12 16, 20 24 28, ...
            let by_four_not_zero = Node::alt([
                two(&[('0', '0')], &[('4', '4'), ('8', '8')]),
                two(
                    &[('2', '2'), ('4', '4'), ('6', '6'), ('8', '8')],
                    &[('0', '0'), ('4', '4'), ('8', '8')],
                ),
                two(
                    &[('1', '1'), ('3', '3'), ('5', '5'), ('7', '7'), ('9', '9')],
                    &[('2', '2'), ('6', '6')],
                ),
            ]);
            let by_four = Node::alt([Node::text("00"), by_four_not_zero.clone()]);
            // Leap: divisible by 4 and not by 100, or by 400.
            let leap_year = Node::alt([
                Node::seq([digits(2, 2), by_four_not_zero]),
                Node::seq([by_four, Node::text("00")]),
            ]);
            Node::alt([
                Node::seq([
                    digits(4, 4),
                    Node::text("-"),
                    Node::alt([
                        Node::seq([
                            long_month,
                            Node::text("-"),
                            Node::alt([
                                day28.clone(),
                                Node::text("29"),
                                Node::text("30"),
                                Node::text("31"),
                            ]),
                        ]),
                        Node::seq([
                            short_month,
                            Node::text("-"),
                            Node::alt([day28.clone(), Node::text("29"), Node::text("30")]),
                        ]),
                        Node::seq([Node::text("02-"), day28]),
                    ]),
                ]),
                Node::seq([leap_year, Node::text("-02-29")]),
            ])
        })
    }

    /// time ::= hour ":" minute ":" second ("." [0-9]+)?, the leap second 60 included.
    fn time(b: &mut Builder) -> Node {
        b.rule("format-time", |_| {
            let hour = Node::alt([
                Node::seq([Node::chars(&[('0', '1')]), digit()]),
                Node::seq([Node::text("2"), Node::chars(&[('0', '3')])]),
            ]);
            let sixty = Node::seq([Node::chars(&[('0', '5')]), digit()]);
            Node::seq([
                hour,
                Node::text(":"),
                sixty.clone(),
                Node::text(":"),
                Node::alt([sixty, Node::text("60")]),
                Node::optional(Node::seq([Node::text("."), Node::repeat(digit(), 1, None)])),
            ])
        })
    }

    /// offset ::= [Zz] | [+-] hour ":" minute
    fn offset(b: &mut Builder) -> Node {
        b.rule("format-offset", |_| {
            let hour = Node::alt([
                Node::seq([Node::chars(&[('0', '1')]), digit()]),
                Node::seq([Node::text("2"), Node::chars(&[('0', '3')])]),
            ]);
            Node::alt([
                Node::chars(&[('Z', 'Z'), ('z', 'z')]),
                Node::seq([
                    Node::chars(&[('+', '+'), ('-', '-')]),
                    hour,
                    Node::text(":"),
                    Node::chars(&[('0', '5')]),
                    digit(),
                ]),
            ])
        })
    }

    /// string ::= "\"" char* "\"": JSON's escapes, which the parser resolves the same way.
    pub(crate) fn string(&self, b: &mut Builder) -> Node {
        if self.guard_string_start {
            return self.guarded_string(b);
        }
        b.rule("string", |b| {
            let char = b.rule("string-char", |b| {
                let hex = b.rule("hex", |_| {
                    Node::chars(&[('0', '9'), ('a', 'f'), ('A', 'F')])
                });
                Node::alt([
                    Node::not_chars(&[('"', '"'), ('\\', '\\'), ('\u{0}', '\u{1f}')]),
                    json_escape(hex),
                ])
            });
            Node::seq([
                Node::text("\""),
                Node::repeat(char, 0, self.max_string_chars),
                Node::text("\""),
            ])
        })
    }

    /// With `guard_string_start`: string ::= "\"" (string-first string-char*)? "\"", where
    /// string-first is a string-char other than `,` and `)`.
    fn guarded_string(&self, b: &mut Builder) -> Node {
        b.rule("string", |b| {
            let hex = b.rule("hex", |_| {
                Node::chars(&[('0', '9'), ('a', 'f'), ('A', 'F')])
            });
            let escape = b.rule("string-escape", |_| json_escape(hex));
            let plain = [('"', '"'), ('\\', '\\'), ('\u{0}', '\u{1f}')];
            let char = b.rule("string-char", |_| {
                Node::alt([Node::not_chars(&plain), escape.clone()])
            });
            let first = b.rule("string-first", |_| {
                let mut ranges = plain.to_vec();
                ranges.extend([(',', ','), (')', ')')]);
                Node::alt([Node::not_chars(&ranges), escape])
            });
            let rest = self.max_string_chars.map(|max| max.saturating_sub(1));
            let body = match self.max_string_chars {
                Some(0) => Node::Seq(Vec::new()),
                _ => Node::optional(Node::seq([first, Node::repeat(char, 0, rest)])),
            };
            Node::seq([Node::text("\""), body, Node::text("\"")])
        })
    }

    /// integer ::= "-"? ("0" | [1-9] [0-9]{0,17})
    fn integer(&self, b: &mut Builder) -> Node {
        b.rule("integer", |_| {
            Node::seq([
                Node::optional(Node::text("-")),
                Node::alt([
                    Node::text("0"),
                    Node::seq([Node::chars(&[('1', '9')]), digits(0, INT_DIGITS - 1)]),
                ]),
            ])
        })
    }

    /// number ::= "-"? ("0" | [1-9] [0-9]{0,14}) ("." [0-9]{1,15})? ([eE] [-+]? [0-9]{1,2})?
    fn number(&self, b: &mut Builder) -> Node {
        b.rule("number", |_| {
            Node::seq([
                Node::optional(Node::text("-")),
                Node::alt([
                    Node::text("0"),
                    Node::seq([Node::chars(&[('1', '9')]), digits(0, NUMBER_INT_DIGITS - 1)]),
                ]),
                Node::optional(fraction()),
                Node::optional(Node::seq([
                    Node::chars(&[('e', 'e'), ('E', 'E')]),
                    Node::optional(Node::chars(&[('-', '-'), ('+', '+')])),
                    digits(1, EXPONENT_DIGITS),
                ])),
            ])
        })
    }

    /// Any JSON value nesting at most `levels` deep; `null` only when `null` says so
    /// (inside containers it is always allowed: `any` keeps it).
    pub(crate) fn any(&self, b: &mut Builder, levels: usize, null: bool) -> Node {
        let name = format!("any{}{levels}", if null { "-or-null-" } else { "-" });
        if b.has(&name) {
            return b.rule(&name, |_| Node::Seq(Vec::new()));
        }
        let kinds = self.any_kinds(b, levels, null, true);
        b.rule(&name, |_| Node::alt(kinds))
    }

    fn any_kinds(&self, b: &mut Builder, levels: usize, null: bool, number: bool) -> Vec<Node> {
        let mut kinds = vec![self.string(b)];
        if number {
            kinds.push(self.number(b));
        }
        kinds.push(Node::text("true"));
        kinds.push(Node::text("false"));
        if null {
            kinds.push(Node::text("null"));
        }
        if levels > 0 {
            let inner = self.any(b, levels - 1, true);
            kinds.push(list(b, "[", inner, "]", self.max_list_items));
            kinds.push(self.any_object(b, levels));
        }
        kinds
    }

    /// An object with any string keys and `any` values, at most `levels` deep (itself
    /// included).
    fn any_object(&self, b: &mut Builder, levels: usize) -> Node {
        let inner = self.any(b, levels.saturating_sub(1), true);
        let key = self.string(b);
        list(
            b,
            "{",
            Node::seq([key, Node::text(": "), inner]),
            "}",
            self.max_list_items,
        )
    }
}

/// The declared choices of `param` as whole values (not an array's choices per element),
/// when it has any.
fn whole_choices(param: &Param) -> Option<&[Json]> {
    param
        .choices
        .as_deref()
        .filter(|c| !c.is_empty() && param.element_choices().is_none())
}

/// `value` as the grammar spells it: JSON, with `", "` between the items of a list and the
/// members of an object and `": "` after a key.
pub(crate) fn written(value: &Json) -> String {
    match value {
        Json::Array(items) => {
            let items: Vec<String> = items.iter().map(written).collect();
            format!("[{}]", items.join(", "))
        }
        Json::Object(members) => {
            let members: Vec<String> = members
                .iter()
                .map(|(key, value)| format!("{}: {}", Json::from(key.as_str()), written(value)))
                .collect();
            format!("{{{}}}", members.join(", "))
        }
        scalar => scalar.to_string(),
    }
}

/// `open (item (", " item){0,max-1})? close`; `item` is written twice, so a large one
/// becomes a rule.
fn list(b: &mut Builder, open: &str, item: Node, close: &str, max: Option<u32>) -> Node {
    if max == Some(0) {
        return Node::text(format!("{open}{close}"));
    }
    let item = b.share("item", item);
    Node::seq([
        Node::text(open),
        Node::optional(Node::seq([
            item.clone(),
            Node::repeat(
                Node::seq([Node::text(", "), item]),
                0,
                max.map(|max| max - 1),
            ),
        ])),
        Node::text(close),
    ])
}

/// Items in order, joined by `sep`: the required ones always, the optional ones maybe.
///
/// The first item written is any optional item up to the first required one (or the first
/// required one itself); every later item is written with `sep` before it. Without a
/// required item the whole list may be empty.
///
/// `start ::= item-0 tail-1 | item-1 tail-2 | ... ` up to the first required item, where
/// `tail-i ::= (sep item-i)? tail-i+1` (no `?` for a required item). The tails an
/// alternative shares with the next tail, and the items written both first and later, are
/// rules of their own when they are not small, so the size grows with the number of items,
/// not with its square (2,000 optional fields were 51 MB of GBNF written out in full).
pub(crate) fn separated(b: &mut Builder, items: Vec<(Node, bool)>, sep: &str) -> Node {
    let count = items.len();
    let first_required = items.iter().position(|(_, required)| *required);
    // How many items may come first.
    let starts = first_required.map_or(count, |at| at + 1);
    let items: Vec<(Node, bool)> = items
        .into_iter()
        .enumerate()
        .map(|(i, (item, required))| {
            // Items 1..starts are written twice: first, and after an earlier one.
            if i >= 1 && i < starts {
                (b.share("item", item), required)
            } else {
                (item, required)
            }
        })
        .collect();
    // tails[i - 1]: items i.. each preceded by `sep`, for i in 1..=starts.
    let mut tails: Vec<Node> = Vec::with_capacity(starts);
    let mut tail = Node::Seq(Vec::new());
    for i in (1..count).rev() {
        let Some((item, required)) = items.get(i) else {
            continue;
        };
        let with_sep = Node::seq([Node::text(sep), item.clone()]);
        let this = if *required {
            with_sep
        } else {
            Node::optional(with_sep)
        };
        tail = flatten(this, tail);
        // tail-i is part of tail-(i-1) and follows item i-1 when it comes first.
        if i >= 2 && i <= starts {
            tail = b.share("rest", tail);
        }
        if i <= starts {
            tails.push(tail.clone());
        }
    }
    tails.reverse();
    let mut choices = Vec::new();
    for (k, (item, _)) in items.iter().enumerate().take(starts) {
        let rest = tails.get(k).cloned().unwrap_or(Node::Seq(Vec::new()));
        choices.push(flatten(item.clone(), rest));
    }
    if choices.is_empty() {
        return Node::Seq(Vec::new());
    }
    let choice = Node::alt(choices);
    if first_required.is_none() {
        Node::optional(choice)
    } else {
        choice
    }
}

/// `first` then the items of `rest`, as one flat sequence.
fn flatten(first: Node, rest: Node) -> Node {
    let mut nodes = vec![first];
    match rest {
        Node::Seq(items) => nodes.extend(items),
        other => nodes.push(other),
    }
    Node::seq(nodes)
}

fn fraction() -> Node {
    Node::seq([Node::text("."), digits(1, FRACTION_DIGITS)])
}

/// Whether a declared choice binds when written as its JSON text: the binder converts the
/// written value to the declared type and then compares it with the choices, so a choice
/// of another type (`2` for a string parameter) can never match.
fn choice_fits(choice: &Json, param: &Param, slot: Slot) -> bool {
    let in_range = |n: f64| param.min.is_none_or(|m| n >= m) && param.max.is_none_or(|m| n <= m);
    match (&param.ty, choice) {
        (_, Json::Null) => param.ty == ParamType::Any && slot == Slot::Element,
        (ParamType::String, Json::String(_)) => true,
        (ParamType::Boolean, Json::Bool(_)) => true,
        (ParamType::Number, Json::Number(n)) => n.as_f64().is_some_and(in_range),
        (ParamType::Integer, Json::Number(n)) => {
            (n.is_i64() || n.is_u64()) && n.as_f64().is_some_and(in_range)
        }
        (ParamType::Any, Json::Number(n)) => n.as_f64().is_some_and(in_range),
        (ParamType::Any, _) => true,
        (ParamType::Object { properties }, Json::Object(_)) => properties.is_empty(),
        (ParamType::Array { .. }, Json::Array(_)) => true,
        _ => false,
    }
}

/// Whole numbers from `min` to `max` (either may be open), exactly.
fn integer_between(min: Option<f64>, max: Option<f64>) -> Option<Node> {
    let (lo, hi) = whole_bounds(min, max)?;
    int_range(lo, hi)
}

/// `ceil(min)..=floor(max)`, open ends at the largest whole number offered; `None` when
/// empty.
fn whole_bounds(min: Option<f64>, max: Option<f64>) -> Option<(i128, i128)> {
    let clamp = |v: f64| (v as i128).clamp(-INT_LIMIT, INT_LIMIT);
    let lo = min.map_or(-INT_LIMIT, |m| clamp(m.ceil()));
    let hi = max.map_or(INT_LIMIT, |m| clamp(m.floor()));
    (lo <= hi && !min.is_some_and(f64::is_nan) && !max.is_some_and(f64::is_nan)).then_some((lo, hi))
}

/// Numbers from `min` to `max`, where a grammar can say it: whole numbers in range, and
/// for non-negative whole parts below the upper bound any fraction (`2.75` within 0..3).
/// Negative numbers with fractions and exponents are left out: a subset of the range,
/// never a value outside it. A range holding no whole number offers `min` itself.
fn number_between(min: Option<f64>, max: Option<f64>) -> Option<Node> {
    let Some((lo, hi)) = whole_bounds(min, max) else {
        let only = min.or(max).filter(|v| v.is_finite())?;
        let fits = min.is_none_or(|m| only >= m) && max.is_none_or(|m| only <= m);
        return fits.then(|| Node::text(format!("{only}")));
    };
    let mut kinds = Vec::new();
    let hi_int = hi.min(INT_LIMIT / 1000);
    if hi_int > lo.max(0) {
        // Whole parts in [max(lo, 0), hi - 1] take any fraction and stay below hi.
        if let Some(whole) = int_range(lo.max(0), hi_int - 1) {
            kinds.push(Node::seq([whole, Node::optional(fraction())]));
        }
        kinds.push(Node::text(hi_int.to_string()));
        if lo < 0 {
            kinds.extend(int_range(lo, -1));
        }
    } else {
        kinds.extend(int_range(lo, hi));
    }
    (!kinds.is_empty()).then(|| Node::alt(kinds))
}

/// The decimal numerals (no leading zeros, `-` for negatives) of `lo..=hi`.
pub(crate) fn int_range(lo: i128, hi: i128) -> Option<Node> {
    if lo > hi {
        return None;
    }
    let mut kinds = Vec::new();
    if lo < 0 {
        let (a, b) = (hi.min(-1).unsigned_abs(), lo.unsigned_abs());
        kinds.push(Node::seq([Node::text("-"), natural_range(a, b)]));
    }
    if hi >= 0 {
        kinds.push(natural_range(lo.max(0).unsigned_abs(), hi.unsigned_abs()));
    }
    Some(Node::alt(kinds))
}

/// The numerals of `a..=b`, `a <= b`, split by digit count.
fn natural_range(a: u128, b: u128) -> Node {
    let len = |n: u128| n.to_string().len();
    let mut kinds = Vec::new();
    for digits in len(a)..=len(b) {
        let floor = if digits == 1 {
            0
        } else {
            10u128.pow(digits as u32 - 1)
        };
        let ceiling = 10u128.pow(digits as u32) - 1;
        let from = a.max(floor).to_string();
        let to = b.min(ceiling).to_string();
        kinds.push(same_length(from.as_bytes(), to.as_bytes()));
    }
    Node::alt(kinds)
}

/// Numerals of one length from `x` to `y` (ASCII digits, `x <= y`), digit by digit.
fn same_length(x: &[u8], y: &[u8]) -> Node {
    let (Some((&x0, xs)), Some((&y0, ys))) = (x.split_first(), y.split_first()) else {
        return Node::Seq(Vec::new());
    };
    let rest = xs.len() as u32;
    let any_rest = || Node::repeat(digit(), rest, Some(rest));
    let with_rest = |head: Node| {
        if rest == 0 {
            head
        } else {
            Node::seq([head, any_rest()])
        }
    };
    let class = |lo: u8, hi: u8| Node::chars(&[(char::from(lo), char::from(hi))]);
    if xs.iter().all(|&d| d == b'0') && ys.iter().all(|&d| d == b'9') {
        return with_rest(class(x0, y0));
    }
    if x0 == y0 {
        return Node::seq([Node::text(char::from(x0).to_string()), same_length(xs, ys)]);
    }
    let nines = vec![b'9'; xs.len()];
    let zeros = vec![b'0'; xs.len()];
    let mut kinds = vec![Node::seq([
        Node::text(char::from(x0).to_string()),
        same_length(xs, &nines),
    ])];
    if x0 + 1 < y0 {
        kinds.push(with_rest(class(x0 + 1, y0 - 1)));
    }
    kinds.push(Node::seq([
        Node::text(char::from(y0).to_string()),
        same_length(&zeros, ys),
    ]));
    Node::alt(kinds)
}

/// bare ::= an unquoted word as the call syntax reads it (see grammar/atfunc.ebnf),
/// narrowed to what cannot be misread: it starts with no blank, quote, bracket or `<`,
/// holds no parenthesis, comma or line break, and its first word is not `null` or
/// `None`. The parser reads those as null, which would leave the argument out; and a
/// model that writes `origin=None=None` or `substance=None[]` for a text parameter meant
/// to leave it out, not that text (SmolLM2-135M did, EVAL.md (y)), so such a value has to
/// be quoted. `true` and numbers stay: `refreshMetadata=true` and `width=800` are what a
/// model means for a Java `String` parameter that holds a literal. It ends at the `,` or
/// `)` after it.
fn bare_word(b: &mut Builder) -> Node {
    b.rule("bare", |b| {
        let rest = b.rule("bare-char", |_| Node::not_chars(BARE_STOP));
        bare_level(&["null", "None"], Level::First, &rest)
    })
}

/// What no character of a bare word is: parentheses, a comma, control characters (line
/// breaks among them).
const BARE_STOP: &[(char, char)] = &[('(', ')'), (',', ','), ('\u{0}', '\u{1f}')];

/// What a bare word's first character is not, besides [`BARE_STOP`]: a blank, a quote or
/// bracket (those begin other values), or `<` (the binder reads a bare `<...>` as a
/// placeholder copied from the prompt; a value that starts with `<` is written quoted).
const NOT_FIRST: &[(char, char)] = &[
    (' ', ' '),
    ('\t', '\t'),
    ('"', '"'),
    ('\'', '\''),
    ('[', '['),
    ('{', '{'),
    ('<', '<'),
];

/// What does not go on with a word: ASCII's blanks and signs, `_` among them (so ASCII
/// letters and digits, and any character beyond ASCII, do: `nullable`, `Nonesuch`).
const NOT_WORD: &[(char, char)] = &[('\u{0}', '/'), (':', '@'), ('[', '`'), ('{', '\u{7f}')];

/// Where in a bare word [`bare_level`] stands.
#[derive(Clone, Copy, PartialEq)]
enum Level {
    /// At its first character.
    First,
    /// Inside a prefix of one of the literals, which it may end on.
    Inside,
    /// Right after a whole literal: the word must go on (`nullable`, `Nonesuch`).
    AfterWord,
}

/// The rest of a bare word whose first word must not be one of `words` (their remaining
/// suffixes), as a small trie: a character that begins no suffix leaves the words behind
/// (any `bare-char`s follow), one that does goes a level down.
fn bare_level(words: &[&str], level: Level, rest: &Node) -> Node {
    let mut next: Vec<char> = words.iter().filter_map(|w| w.chars().next()).collect();
    next.sort_unstable();
    next.dedup();
    let mut stop: Vec<(char, char)> = match level {
        Level::First => [BARE_STOP, NOT_FIRST].concat(),
        Level::Inside => BARE_STOP.to_vec(),
        Level::AfterWord => NOT_WORD.to_vec(),
    };
    stop.extend(next.iter().map(|&c| (c, c)));
    let mut branches = vec![Node::seq([
        Node::not_chars(&stop),
        Node::repeat(rest.clone(), 0, None),
    ])];
    for c in next {
        let tails: Vec<&str> = words.iter().filter_map(|w| w.strip_prefix(c)).collect();
        let ends_word = tails.contains(&"");
        let longer: Vec<&str> = tails.into_iter().filter(|t| !t.is_empty()).collect();
        let below = if ends_word {
            bare_level(&longer, Level::AfterWord, rest)
        } else {
            Node::optional(bare_level(&longer, Level::Inside, rest))
        };
        branches.push(Node::seq([Node::text(c.to_string()), below]));
    }
    Node::alt(branches)
}

/// escape ::= "\\" (["\\/bfnrt] | "u" hex{4}): JSON's escapes, `hex` the rule of one hex
/// digit, without the surrogates (`\uD800` to `\uDFFF`): a lone one is not valid JSON to
/// serde (a call in a JSON call format would be malformed), and the character a pair
/// stands for can be written as itself.
fn json_escape(hex: Node) -> Node {
    Node::seq([
        Node::text("\\"),
        Node::alt([
            Node::chars(&[
                ('"', '"'),
                ('\\', '\\'),
                ('/', '/'),
                ('b', 'b'),
                ('f', 'f'),
                ('n', 'n'),
                ('r', 'r'),
                ('t', 't'),
            ]),
            Node::seq([
                Node::text("u"),
                Node::alt([
                    Node::seq([
                        Node::chars(&[('0', '9'), ('a', 'c'), ('A', 'C'), ('e', 'f'), ('E', 'F')]),
                        Node::repeat(hex.clone(), 3, Some(3)),
                    ]),
                    Node::seq([
                        Node::chars(&[('d', 'd'), ('D', 'D')]),
                        Node::chars(&[('0', '7')]),
                        Node::repeat(hex, 2, Some(2)),
                    ]),
                ]),
            ]),
        ]),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::grammar::tree::Builder;

    fn accepts_range(lo: i128, hi: i128) -> impl Fn(&str) -> bool {
        let mut b = Builder::default();
        let node = int_range(lo, hi).unwrap_or(Node::text("never"));
        b.rule("root", |_| node);
        let g = b.finish();
        move |text: &str| g.accepts(text)
    }

    #[test]
    fn integer_ranges_are_exact() {
        for (lo, hi) in [
            (0, 0),
            (-5, 17),
            (7, 1234),
            (-1000, -37),
            (99, 100),
            (0, 1_000_000),
        ] {
            let accepts = accepts_range(lo, hi);
            for n in (lo - 150)..=(hi.min(lo + 3000) + 150) {
                assert_eq!(
                    accepts(&n.to_string()),
                    lo <= n && n <= hi,
                    "{n} in {lo}..={hi}"
                );
            }
            assert!(!accepts("-0"));
            assert!(!accepts("007"));
        }
    }

    #[test]
    fn separated_lists() {
        let item = |s: &str, required| (Node::text(s), required);
        let mut b = Builder::default();
        let node = separated(
            &mut b,
            vec![item("a", false), item("b", true), item("c", false)],
            ",",
        );
        b.rule("root", |_| node);
        let g = b.finish();
        for ok in ["a,b", "b", "b,c", "a,b,c"] {
            assert!(g.accepts(ok), "{ok}");
        }
        for bad in ["", "a", "c", "a,c", ",b", "b,a"] {
            assert!(!g.accepts(bad), "{bad}");
        }
    }
}
