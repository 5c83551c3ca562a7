//! One side of the `peers` bench, once, for a profiler:
//! `cargo run --release --manifest-path benches/peers/Cargo.toml --bin feed --
//! FORM FEED [SIDE] [ROUNDS]`.
//!
//! Reads the bench's input of one form (about 1 MiB of answers, see [`streams`]) in the
//! bench's pieces (`1`, `1t`, `16`, `16t` or `whole`) `ROUNDS` times (1 unless given) by atfunc
//! (`SIDE` `atfunc`, the default) or by `tool-parser` (`peer`), and prints the calls read.
//! Under `valgrind --tool=callgrind` it gives an instruction count that a loaded machine does
//! not move; the setup (reading BFCL, rendering, cutting) is outside the reading, in its own
//! functions.
//!
//! FORM is a form's label as the tables write it without spaces and punctuation
//! (`hermes`, `hermesarray`, `llama3`, `mistralarray`, `mistralargs`, `pythonic`,
//! `deepseekv3`, `deepseekv31`, `qwen3xml`).

use atfunc_peers::{
    atfunc_calls, atfunc_parser, peer_complete, peer_registry, peer_streamed, streams, Form, Stream,
};
use std::hint::black_box;

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let usage = "usage: feed FORM (1|1t|16|16t|whole) [atfunc|peer] [ROUNDS]";
    let key = |f: Form| {
        f.label()
            .chars()
            .filter(char::is_ascii_alphanumeric)
            .collect::<String>()
            .to_lowercase()
    };
    let form = args
        .first()
        .and_then(|name| Form::ALL.into_iter().find(|&f| key(f) == *name))
        .ok_or(usage)?;
    let feed = args.get(1).map(String::as_str).ok_or(usage)?;
    let side = args.get(2).map_or("atfunc", String::as_str);
    let rounds: usize = match args.get(3) {
        Some(n) => n.parse().map_err(|_| usage)?,
        None => 1,
    };
    let input = streams(form, 1 << 20);
    let cuts: Vec<Option<&[usize]>> = input
        .iter()
        .map(|s| s.cuts(feed))
        .collect::<Option<_>>()
        .ok_or(usage)?;
    let calls = match side {
        "atfunc" => read_atfunc(form, &input, &cuts, rounds),
        "peer" => read_peer(form, &input, &cuts, rounds),
        _ => return Err(usage.into()),
    };
    println!("{} {feed} {side}: {calls} calls", form.label());
    Ok(())
}

/// The reading the bench times on atfunc's side, `rounds` times.
#[inline(never)]
fn read_atfunc(form: Form, input: &[Stream], cuts: &[Option<&[usize]>], rounds: usize) -> usize {
    let mut calls = 0;
    for _ in 0..rounds {
        for (s, cuts) in input.iter().zip(cuts) {
            let mut parser = atfunc_parser(form);
            calls += atfunc_calls(&mut parser, black_box(&s.text), *cuts).len();
        }
    }
    calls
}

/// The reading the bench times on the peer's side, `rounds` times.
#[inline(never)]
fn read_peer(form: Form, input: &[Stream], cuts: &[Option<&[usize]>], rounds: usize) -> usize {
    let registry = peer_registry();
    let name = form.peer();
    let mut parser = registry.create_parser(name).expect("peer parser");
    let mut calls = 0;
    for _ in 0..rounds {
        for (s, cuts) in input.iter().zip(cuts) {
            calls += match cuts {
                None => peer_complete(parser.as_ref(), &s.text, &s.tools).len(),
                Some(cuts) => {
                    if name == "pythonic" {
                        parser = registry.create_parser(name).expect("peer parser");
                    } else {
                        parser.reset();
                    }
                    peer_streamed(parser.as_mut(), &s.text, cuts, &s.tools).len()
                }
            };
        }
    }
    calls
}
