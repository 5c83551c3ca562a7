//! Correctness side by side: `cargo run --release --manifest-path benches/peers/Cargo.toml
//! --bin agreement [-- --examples N]`.
//!
//! Every BFCL ground-truth answer in every form both crates read, fed whole and in random
//! 1–4-byte pieces (seeds 0, 1 and 2), read by atfunc and by `tool-parser`; a read is right
//! when it gives exactly the expected calls (names, and arguments as JSON values). Prints a
//! Markdown table of the share of right reads; a panic of either parser is caught, counted
//! and is a wrong read. The peer is also fed the same random pieces with no special token
//! cut ([`tokens_whole`]), as a model's stream gives them, to tell the two causes apart. `--examples N` writes up to N wrong reads per form and side to
//! stderr.

use atfunc_peers::{
    answers, atfunc_calls, atfunc_matches, atfunc_parser, cuts, peer_complete, peer_matches,
    peer_registry, peer_streamed, random_sizes, tokens_whole, Form,
};
use std::panic::{catch_unwind, AssertUnwindSafe};

/// The seeds of the random piece sizes.
const SEEDS: [u64; 3] = [0, 1, 2];

/// Right reads and panics of one side in one form.
#[derive(Default)]
struct Score {
    whole: usize,
    streamed: usize,
    /// Streamed with no special token cut (the peer only).
    tokens_whole: usize,
    panics: usize,
}

/// How a feed cuts the answer.
#[derive(Debug)]
enum Feed {
    Whole,
    Random(Vec<usize>),
    /// The peer only: the random cuts with no special token cut.
    TokensWhole(Vec<usize>),
}

fn percent(right: usize, of: usize) -> String {
    let share = 100.0 * right as f64 / of.max(1) as f64;
    if right == of {
        "100 %".into()
    } else {
        format!("{share:.2} % ({right}/{of})")
    }
}

fn main() -> Result<(), String> {
    let args: Vec<String> = std::env::args().collect();
    let examples = match args.iter().position(|a| a == "--examples") {
        Some(i) => args
            .get(i + 1)
            .and_then(|n| n.parse().ok())
            .ok_or("--examples takes a number")?,
        None => 0,
    };
    let answers = answers()?;
    let registry = peer_registry();
    // A panic is counted, not printed: the peer's are expected.
    std::panic::set_hook(Box::new(|_| {}));
    println!(
        "| format | answers | atfunc whole | atfunc streamed | tool-parser whole | tool-parser streamed | tool-parser streamed, special tokens whole | tool-parser panics |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|");
    for form in Form::ALL {
        let name = form.peer();
        let (mut ours, mut peer) = (Score::default(), Score::default());
        let (mut shown_ours, mut shown_peer) = (0, 0);
        for answer in &answers {
            let text = form.render(&answer.calls);
            let mut feeds = vec![Feed::Whole];
            for seed in SEEDS {
                let random = cuts(&text, &random_sizes(seed));
                feeds.push(Feed::TokensWhole(tokens_whole(
                    &text,
                    &random,
                    form.special_tokens(),
                )));
                feeds.push(Feed::Random(random));
            }
            for feed in &feeds {
                let pieces = match feed {
                    Feed::Whole => None,
                    Feed::Random(cuts) => Some(cuts.as_slice()),
                    Feed::TokensWhole(cuts) => Some(cuts.as_slice()),
                };
                if !matches!(feed, Feed::TokensWhole(_)) {
                    let read = catch_unwind(|| {
                        let calls = atfunc_calls(&mut atfunc_parser(form), &text, pieces);
                        atfunc_matches(&calls, &answer.calls)
                    });
                    let right = read.unwrap_or_else(|_| {
                        ours.panics += 1;
                        false
                    });
                    match (right, feed) {
                        (true, Feed::Whole) => ours.whole += 1,
                        (true, _) => ours.streamed += 1,
                        (false, _) if shown_ours < examples => {
                            shown_ours += 1;
                            eprintln!("atfunc, {} ({feed:?}):\n{text}\n", form.label());
                        }
                        _ => {}
                    }
                }
                let read = catch_unwind(AssertUnwindSafe(|| {
                    let mut parser = registry
                        .create_parser(name)
                        .ok_or_else(|| format!("tool-parser has no parser {name}"))?;
                    let calls = match pieces {
                        None => peer_complete(parser.as_ref(), &text, &answer.tools),
                        Some(cuts) => peer_streamed(parser.as_mut(), &text, cuts, &answer.tools),
                    };
                    Ok::<_, String>((peer_matches(&calls, &answer.calls), calls))
                }));
                let (right, calls) = match read {
                    Ok(read) => read?,
                    Err(_) => {
                        peer.panics += 1;
                        (false, Vec::new())
                    }
                };
                match (right, feed) {
                    (true, Feed::Whole) => peer.whole += 1,
                    (true, Feed::Random(_)) => peer.streamed += 1,
                    (true, Feed::TokensWhole(_)) => peer.tokens_whole += 1,
                    (false, _) if shown_peer < examples => {
                        shown_peer += 1;
                        eprintln!(
                            "tool-parser {name}, {} ({feed:?}):\n{text}\nread {calls:?}\n",
                            form.label(),
                        );
                    }
                    _ => {}
                }
            }
        }
        let n = answers.len();
        let streams = n * SEEDS.len();
        println!(
            "| {} | {n} | {} | {} | {} (`{name}`) | {} | {} | {} |",
            form.label(),
            percent(ours.whole, n),
            percent(ours.streamed, streams),
            percent(peer.whole, n),
            percent(peer.streamed, streams),
            percent(peer.tokens_whole, streams),
            peer.panics,
        );
        if ours.panics > 0 {
            println!("atfunc panicked {} times on {}", ours.panics, form.label());
        }
    }
    Ok(())
}
