//! The crate as a Rust user meets it: what docs.rs shows, the features a build pulls in,
//! and the small conveniences a tool written in Rust leans on.

use std::path::Path;

fn manifest() -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("Cargo.toml"))
        .expect("Cargo.toml is readable")
}

/// The `[features]` line that defines `name`.
fn feature_line(manifest: &str, name: &str) -> String {
    let prefix = format!("{name} = [");
    manifest
        .lines()
        .find(|line| line.starts_with(&prefix))
        .unwrap_or_else(|| panic!("no feature '{name}' in Cargo.toml"))
        .to_owned()
}

#[test]
fn docs_rs_documents_every_feature_with_badges() {
    let manifest = manifest();
    let metadata = manifest
        .split("[package.metadata.docs.rs]")
        .nth(1)
        .expect("a [package.metadata.docs.rs] table");
    let table = metadata.split("\n[").next().unwrap_or_default();
    assert!(table.contains("all-features = true"), "{table}");
    assert!(
        table.contains(r#"rustdoc-args = ["--cfg", "docsrs"]"#),
        "{table}"
    );
    let lib = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("src/lib.rs"))
        .expect("src/lib.rs is readable");
    assert!(
        lib.contains("#![cfg_attr(docsrs, feature(doc_cfg))]"),
        "the crate turns on feature badges under docsrs"
    );
}

/// The library turns on only the tokio features it uses: a program's runtime flavour, its
/// macros and its file and terminal I/O are its own choice.
#[test]
fn the_library_turns_on_only_the_tokio_features_it_uses() {
    let manifest = manifest();
    let dependencies = manifest
        .split("\n[dependencies]\n")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .expect("a [dependencies] table");
    let tokio = dependencies
        .lines()
        .find(|line| line.starts_with("tokio ="))
        .expect("a tokio line");
    for feature in ["rt-multi-thread", "macros", "fs", "io-std", "full"] {
        assert!(!tokio.contains(&format!("\"{feature}\"")), "{tokio}");
    }
    // The command box's `select!` brings the macros with it.
    assert!(feature_line(&manifest, "command").contains("tokio/macros"));
}

#[test]
fn running_calls_does_not_pull_in_the_file_box() {
    let manifest = manifest();
    assert!(feature_line(&manifest, "file").contains("dep:cap-std"));
    // Running calls needs none of the tool kinds: no optional dependency is on by default.
    assert_eq!(feature_line(&manifest, "default"), "default = []");
    // A program that only parses depends on the core, which has no async runtime.
    let core =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("../atfunc/Cargo.toml"))
            .expect("the core's Cargo.toml is readable");
    let dependencies = core
        .split("\n[dependencies]\n")
        .nth(1)
        .and_then(|rest| rest.split("\n[").next())
        .expect("a [dependencies] table");
    for runtime in ["tokio", "async-std", "futures", "async-trait"] {
        assert!(
            !dependencies.lines().any(|line| line.starts_with(runtime)),
            "the core depends on {runtime}"
        );
    }
}

mod errors {
    use atfunc::{BindError, Interface, Param, ParamType};
    use atfunc_tools::{FnBox, Registry, ToolError};
    use serde_json::{json, Value};

    fn parse_number(text: &str) -> Result<Value, ToolError> {
        let value: Value = serde_json::from_str(text)?;
        if !value.is_number() {
            return Err("not a number".into());
        }
        if value.as_f64() == Some(0.0) {
            return Err(format!("{value} is zero").into());
        }
        Ok(value)
    }

    #[test]
    fn tool_errors_convert_from_strings_and_json_errors() {
        assert_eq!(
            parse_number("\"x\""),
            Err(ToolError::Failed("not a number".into()))
        );
        assert_eq!(
            parse_number("0"),
            Err(ToolError::Failed("0 is zero".into()))
        );
        let broken = parse_number("{").unwrap_err();
        assert!(broken.to_string().contains("EOF while parsing"), "{broken}");
        assert_eq!(parse_number("2"), Ok(json!(2)));
    }

    #[tokio::test]
    async fn a_streamed_outcome_keeps_the_structured_error() {
        let registry = Registry::new();
        registry
            .register(
                FnBox::new("math").function(
                    Interface::new("half")
                        .in_domain("math")
                        .param(Param::new("x", ParamType::Number).required()),
                    |_, _| Err("odd".into()),
                ),
            )
            .unwrap();
        let mut stream = registry.stream();
        let mut outcomes = stream
            .feed_str("@math.half() @math.half(3) @math.half(")
            .await;
        outcomes.extend(stream.finish().await.outcomes);
        let direct = registry.call("math.half", Value::Null).await.unwrap_err();
        // The same error, structured, whether the call came in an answer or directly.
        assert!(
            matches!(
                &outcomes[0].result,
                Err(ToolError::Bind(BindError::MissingParameters { .. }))
            ),
            "{:?}",
            outcomes[0].result
        );
        assert_eq!(outcomes[0].result.as_ref().unwrap_err(), &direct);
        assert_eq!(outcomes[1].result, Err(ToolError::Failed("odd".into())));
        assert!(
            matches!(outcomes[2].result, Err(ToolError::Unreadable(_))),
            "{:?}",
            outcomes[2].result
        );
        assert!(outcomes[2].block.contains("This call could not be read: "));
    }
}

mod arguments {
    use atfunc::{Interface, Param, ParamType};
    use atfunc_tools::{FnBox, Registry};
    use serde_json::json;

    #[tokio::test]
    async fn closures_read_arguments_as_rust_types_and_a_missing_optional_one_is_none() {
        let registry = Registry::new();
        let scale = Interface::new("scale")
            .in_domain("math")
            .param(Param::new("x", ParamType::Number).required())
            .param(Param::new("factor", ParamType::Number))
            .param(Param::new("label", ParamType::String));
        registry
            .register(FnBox::new("math").function(scale, |args, _ctx| {
                let x: f64 = args.get("x")?;
                let factor = args.opt::<f64>("factor")?.unwrap_or(2.0);
                // A Rust type the interface does not promise: an error for the model.
                let _small: Option<u8> = args.opt("label")?;
                Ok(json!(x * factor))
            }))
            .unwrap();
        let report = registry
            .execute_response("@math.scale(21) @math.scale(1, 3) @math.scale(1, label=\"big\")")
            .await;
        assert_eq!(report.calls[0].result, Ok(json!(42.0)));
        assert_eq!(report.calls[1].result, Ok(json!(3.0)));
        assert_eq!(
            report.calls[2].result.as_ref().unwrap_err().to_string(),
            "Invalid value for parameter 'label' of function 'math.scale': expected u8, got \"big\""
        );
    }
}

mod streaming {
    use atfunc::{Interface, Param, ParamType};
    use atfunc_tools::{FnBox, Registry};
    use futures::StreamExt;
    use serde_json::json;
    use std::sync::{Arc, Mutex};
    use std::time::{Duration, Instant};

    fn slow_and_fast(finished: Arc<Mutex<Option<Instant>>>) -> FnBox {
        FnBox::new("t")
            .async_function(Interface::new("slow").in_domain("t"), move |_, _| {
                let finished = Arc::clone(&finished);
                async move {
                    tokio::time::sleep(Duration::from_millis(500)).await;
                    *finished.lock().unwrap() = Some(Instant::now());
                    Ok(json!("slow done"))
                }
            })
            .function(
                Interface::new("echo")
                    .in_domain("t")
                    .param(Param::new("text", ParamType::String).required()),
                |args, _| Ok(json!(args.get::<String>("text")?)),
            )
    }

    #[tokio::test]
    async fn reading_goes_on_while_a_slow_tool_runs() {
        let finished = Arc::new(Mutex::new(None));
        let registry = Registry::new();
        registry
            .register(slow_and_fast(Arc::clone(&finished)))
            .unwrap();
        let read = Arc::new(Mutex::new(Vec::new()));
        let log = Arc::clone(&read);
        // The model writes a chunk every 50 ms; the slow call is complete in the first.
        let chunks = [
            "@t.slow() and ",
            "then ",
            "@t.echo(\"a\") and ",
            "@t.ec",
            "ho(\"b\").",
        ];
        let input = futures::stream::iter(chunks).then(move |chunk| {
            let log = Arc::clone(&log);
            async move {
                tokio::time::sleep(Duration::from_millis(50)).await;
                log.lock().unwrap().push(Instant::now());
                Ok::<_, std::io::Error>(chunk)
            }
        });
        let started = Instant::now();
        let mut outcomes = registry.stream().run(input);
        let mut results = Vec::new();
        while let Some(outcome) = outcomes.next().await {
            results.push(outcome.unwrap().result);
        }
        let slow_done = finished.lock().unwrap().expect("the slow tool ran");
        let read = read.lock().unwrap();
        assert_eq!(read.len(), chunks.len());
        // Every later chunk was read while the slow tool was still running.
        assert!(
            read.iter().all(|at| *at < slow_done),
            "{read:?} {slow_done:?}"
        );
        assert!(started.elapsed() < Duration::from_millis(500 + 4 * 50));
        // Results in the order of the calls; the calls themselves one after another.
        assert_eq!(
            results,
            [Ok(json!("slow done")), Ok(json!("a")), Ok(json!("b"))]
        );
        let report = outcomes.report();
        assert_eq!(report.call_count, 3);
        assert!(report
            .output
            .ends_with("Function call: t.echo(\"b\")\nReturned: b\n"));
    }

    /// Input that comes faster than its calls run is read only so far ahead of them:
    /// memory does not grow with the input (a file of a million calls).
    #[tokio::test]
    async fn reading_ahead_stops_at_a_bounded_queue_of_calls() {
        let registry = Registry::new();
        registry
            .register(slow_and_fast(Arc::new(Mutex::new(None))))
            .unwrap();
        let pulled = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = Arc::clone(&pulled);
        let input = futures::stream::iter(0..10_000).map(move |i| {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok::<_, std::io::Error>(format!("@t.echo(\"{i}\") "))
        });
        let mut outcomes = registry.stream().run(input);
        let first = outcomes.next().await.unwrap().unwrap();
        assert_eq!(first.result, Ok(json!("0")));
        let ahead = pulled.load(std::sync::atomic::Ordering::SeqCst);
        assert!(ahead < 200, "{ahead} calls read before the first result");
        let rest = outcomes.count().await;
        assert_eq!(rest, 9_999);
    }

    /// An input error ends the stream after the outcome of every call read before it,
    /// and says how far the answer was read: a `?` on each item loses no call that ran.
    #[tokio::test]
    async fn an_input_error_comes_after_the_outcomes_of_the_calls_read() {
        let registry = Registry::new();
        registry
            .register(slow_and_fast(Arc::new(Mutex::new(None))))
            .unwrap();
        let first = "done: @t.echo(\"A\") partial: @t.echo(\"Os";
        let input = futures::stream::iter([
            Ok(first.as_bytes().to_vec()),
            Err("upstream reset"),
            Ok("lo\") @t.echo(\"never read\")".as_bytes().to_vec()),
        ]);
        let items: Vec<_> = registry.stream().run(input).collect().await;
        assert_eq!(items.len(), 2, "{items:?}");
        assert_eq!(items[0].as_ref().unwrap().result, Ok(json!("A")));
        let error = items[1].as_ref().unwrap_err();
        assert_eq!(error.error, "upstream reset");
        assert_eq!(error.bytes_read, first.len());
        assert_eq!(
            error.to_string(),
            format!(
                "reading the answer failed after {} bytes: upstream reset",
                first.len()
            )
        );
        // The pattern of examples/library.rs keeps the call that completed.
        let input = futures::stream::iter([Ok(first), Err(std::io::Error::other("reset"))]);
        let mut outcomes = registry.stream().run(input);
        let mut done = Vec::new();
        let read = async {
            while let Some(outcome) = outcomes.next().await {
                done.push(outcome?.name);
            }
            Ok::<_, atfunc_tools::InputError<std::io::Error>>(())
        }
        .await;
        assert!(read.is_err());
        assert_eq!(done, ["t.echo"]);
    }

    /// A box whose `slow` call waits for the test's word, and whose `fast` call returns at
    /// once: the order calls finish in is the test's, not the clock's.
    fn gated(gate: Arc<Mutex<Option<tokio::sync::oneshot::Receiver<()>>>>) -> FnBox {
        FnBox::new("g")
            .async_function(Interface::new("slow").in_domain("g"), move |_, _| {
                let gate = gate.lock().unwrap().take();
                async move {
                    if let Some(gate) = gate {
                        let _ = gate.await;
                    }
                    Ok(json!("slow"))
                }
            })
            .function(Interface::new("fast").in_domain("g"), |_, _| {
                Ok(json!("fast"))
            })
    }

    /// A stream of a registry holding [`gated`] (four calls at once), in completion order
    /// or in call order, and the sender that lets its slow call finish.
    fn gated_stream(
        completion: bool,
    ) -> (
        tokio::sync::oneshot::Sender<()>,
        atfunc_tools::ResponseStream,
    ) {
        let (open, gate) = tokio::sync::oneshot::channel();
        let registry = Registry::new();
        registry.set_concurrency(4);
        registry
            .register(gated(Arc::new(Mutex::new(Some(gate)))))
            .unwrap();
        let stream = registry.stream();
        let stream = if completion {
            stream.in_completion_order()
        } else {
            stream
        };
        (open, stream)
    }

    /// A piece as a test compares it: its text, or `[name]` of its call.
    fn label(piece: atfunc_tools::Piece) -> String {
        match piece {
            atfunc_tools::Piece::Text(text) => text,
            atfunc_tools::Piece::Outcome(outcome) => format!("[{}]", outcome.name),
            _ => unreachable!("text and outcomes only"),
        }
    }

    /// In call order (the default) a slow call holds back the outcome of a quick call
    /// after it; in completion order each outcome comes as soon as its call is done,
    /// carrying its call's index, and the report keeps call order.
    #[tokio::test]
    async fn outcomes_come_in_call_order_or_as_calls_finish() {
        use futures::FutureExt;
        let answer = "@g.slow() then @g.fast()";
        for completion in [false, true] {
            let (open, stream) = gated_stream(completion);
            let input = futures::stream::iter([Ok::<_, std::io::Error>(answer)]);
            let mut outcomes = stream.run(input);
            // Both calls start; the fast one is done, the slow one waits for the gate.
            let first = outcomes.next().now_or_never();
            if completion {
                let fast = first.flatten().expect("the fast call's outcome").unwrap();
                assert_eq!((fast.index, fast.result), (1, Ok(json!("fast"))));
            } else {
                assert!(first.is_none(), "the fast call waits for the slow one");
            }
            open.send(()).unwrap();
            let rest: Vec<_> = outcomes.by_ref().map(Result::unwrap).collect().await;
            let order: Vec<usize> = rest.iter().map(|outcome| outcome.index).collect();
            assert_eq!(order, if completion { vec![0] } else { vec![0, 1] });
            let report = outcomes.report();
            let calls: Vec<(usize, &str)> = report
                .calls
                .iter()
                .map(|call| (call.index, call.name.as_str()))
                .collect();
            assert_eq!(calls, [(0, "g.slow"), (1, "g.fast")]);
            assert!(report.output.starts_with("Function call: g.slow()\n"));
            assert!(report
                .output
                .ends_with("Function call: g.fast()\nReturned: fast\n"));
        }
    }

    /// The answer's pieces, adjacent text joined: text as `Ok`, outcomes as
    /// `Err((name, result or error))`.
    async fn pieces_of(
        stream: atfunc_tools::ResponseStream,
        chunks: Vec<String>,
    ) -> Vec<Result<String, (String, String)>> {
        use atfunc_tools::Piece;
        let input = futures::stream::iter(chunks.into_iter().map(Ok::<_, std::io::Error>));
        let mut shown: Vec<Result<String, (String, String)>> = Vec::new();
        let mut pieces = stream.run_with_text(input);
        while let Some(piece) = pieces.next().await {
            match piece.unwrap() {
                Piece::Text(text) => match shown.last_mut() {
                    Some(Ok(last)) => last.push_str(&text),
                    _ => shown.push(Ok(text)),
                },
                Piece::Outcome(outcome) => {
                    let result = match &outcome.result {
                        Ok(value) => value.to_string(),
                        Err(error) => error.to_string(),
                    };
                    shown.push(Err((outcome.name.clone(), result)));
                }
                _ => unreachable!("text and outcomes only"),
            }
        }
        shown
    }

    /// Text and outcomes in the answer's order, the same at every chunking: whole, in
    /// 1-, 3-byte and random 1-7-byte pieces (cut at character boundaries).
    #[tokio::test]
    async fn text_and_outcomes_come_in_the_answers_order_at_every_chunking() {
        let answer = "Café: @t.echo(\"a\") and @t.nope(1) then @t.echo(text=\"b\"). Done, @t.echo(";
        let registry = Registry::new();
        registry
            .register(slow_and_fast(Arc::new(Mutex::new(None))))
            .unwrap();
        let cut = |sizes: &mut dyn FnMut() -> usize| {
            let (mut pieces, mut rest) = (Vec::new(), answer);
            while !rest.is_empty() {
                let mut at = sizes().min(rest.len());
                while !rest.is_char_boundary(at) {
                    at += 1;
                }
                pieces.push(rest[..at].to_owned());
                rest = &rest[at..];
            }
            pieces
        };
        let whole = pieces_of(registry.stream(), vec![answer.to_owned()]).await;
        let expected: Vec<Result<String, (String, String)>> = vec![
            Ok("Café: ".into()),
            Err(("t.echo".into(), "\"a\"".into())),
            Ok(" and ".into()),
            Err(("t.nope".into(), "".into())),
            Ok(" then ".into()),
            Err(("t.echo".into(), "\"b\"".into())),
            Ok(". Done, ".into()),
            // The call cut short by the end of the answer: refused, not dropped.
            Err(("t.echo".into(), "".into())),
        ];
        assert_eq!(whole.len(), expected.len(), "{whole:#?}");
        for (got, want) in whole.iter().zip(&expected) {
            match (got, want) {
                (Err((name, _)), Err((wanted, w))) if w.is_empty() => assert_eq!(name, wanted),
                _ => assert_eq!(got, want),
            }
        }
        let mut seed = 7u64;
        let mut random = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            1 + (seed % 7) as usize
        };
        for chunks in [cut(&mut || 1), cut(&mut || 3), cut(&mut random)] {
            let pieces = pieces_of(registry.stream(), chunks.clone()).await;
            assert_eq!(pieces, whole, "{chunks:?}");
        }
    }

    /// In completion order the text after a slow call comes before its outcome, with the
    /// outcome of a quick call after it; in call order it waits where the call stood.
    #[tokio::test]
    async fn with_text_a_slow_call_holds_the_rest_back_in_call_order_only() {
        use futures::FutureExt;
        let answer = "Go: @g.slow() then @g.fast() end";
        for completion in [false, true] {
            let (open, stream) = gated_stream(completion);
            let input = futures::stream::iter([Ok::<_, std::io::Error>(answer)]);
            let mut pieces = stream.run_with_text(input);
            let mut before: Vec<String> = Vec::new();
            while let Some(Some(piece)) = pieces.next().now_or_never() {
                before.push(label(piece.unwrap()));
            }
            if completion {
                assert_eq!(before, ["Go: ", " then ", " end", "[g.fast]"]);
            } else {
                assert_eq!(before, ["Go: "], "the rest waits for the slow call");
            }
            open.send(()).unwrap();
            let rest: Vec<String> = pieces.map(|piece| label(piece.unwrap())).collect().await;
            if completion {
                assert_eq!(rest, ["[g.slow]"]);
            } else {
                assert_eq!(rest, ["[g.slow]", " then ", "[g.fast]", " end"]);
            }
        }
    }

    /// An input error comes last, after the text and outcomes read before it; the call it
    /// cut short does not run, and its text does not come.
    #[tokio::test]
    async fn with_text_an_input_error_comes_after_everything_read_before_it() {
        use atfunc_tools::Piece;
        let registry = Registry::new();
        registry
            .register(slow_and_fast(Arc::new(Mutex::new(None))))
            .unwrap();
        let input = futures::stream::iter([
            Ok("done: @t.echo(\"A\") partial: @t.echo(\"Os"),
            Err(std::io::Error::other("upstream reset")),
            Ok("lo\")"),
        ]);
        let pieces: Vec<_> = registry.stream().run_with_text(input).collect().await;
        let shown: Vec<String> = pieces
            .iter()
            .map(|piece| match piece {
                Ok(Piece::Text(text)) => text.clone(),
                Ok(Piece::Outcome(outcome)) => format!("[{}]", outcome.result.as_ref().unwrap()),
                Ok(_) => unreachable!(),
                Err(error) => format!("error after {} bytes", error.bytes_read),
            })
            .collect();
        assert_eq!(
            shown,
            ["done: ", "[\"A\"]", " partial: ", "error after 39 bytes"]
        );
    }

    /// Input that is always ready and holds no call is not read whole in one poll: the
    /// stream yields to the runtime after a budget, and reads on at the next poll.
    #[tokio::test]
    async fn ready_input_without_calls_yields_to_the_runtime() {
        use futures::FutureExt;
        let registry = Registry::new();
        let pulled = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let count = Arc::clone(&pulled);
        let input = futures::stream::iter(0..100_000).map(move |_| {
            count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            Ok::<_, std::io::Error>("plain prose, no call. ")
        });
        let mut outcomes = registry.stream().run(input);
        assert!(
            outcomes.next().now_or_never().is_none(),
            "one poll read it all"
        );
        let read = pulled.load(std::sync::atomic::Ordering::SeqCst);
        assert!((1..=1000).contains(&read), "{read} chunks in one poll");
        // Polled on, it reads the rest and ends.
        assert!(outcomes.next().await.is_none());
        assert_eq!(pulled.load(std::sync::atomic::Ordering::SeqCst), 100_000);
    }

    /// What an axum SSE body or a forwarding task asks of a stream.
    fn owned<T: futures::Stream + Send + 'static>(stream: T) -> T {
        stream
    }

    #[tokio::test]
    async fn a_shared_registry_gives_an_owned_stream_that_a_task_can_take() {
        let registry = Arc::new(Registry::new());
        registry
            .register(slow_and_fast(Arc::new(Mutex::new(None))))
            .unwrap();
        let input = futures::stream::iter(["@t.echo(\"a\") @t.ec", "ho(\"b\") @t.nope()"])
            .map(Ok::<_, std::io::Error>);
        let outcomes = owned(Arc::clone(&registry).stream().run(input));
        // The stream outlives the handle it was made from, on a task of its own.
        let forwarded = tokio::spawn(async move {
            let blocks: Vec<String> = outcomes.map(|o| o.unwrap().block).collect().await;
            blocks
        });
        let blocks = forwarded.await.unwrap();
        assert_eq!(
            blocks[..2],
            [
                "Function call: t.echo(\"a\")\nReturned: a\n",
                "Function call: t.echo(\"b\")\nReturned: b\n"
            ]
        );
        // What it ran is counted in the registry it came from.
        let stats = registry.stats();
        assert_eq!((stats.calls, stats.refused), (3, 1));
    }
}

/// `crates/atfunc-tools/examples/sse.rs`: an owned stream of text and outcomes served over
/// SSE, read here by a plain HTTP/1.0 client (no chunked encoding, the body ends when the
/// stream does).
#[path = "../../examples/sse.rs"]
#[allow(dead_code)] // its `main`, which the example binary runs
mod sse_example;

#[tokio::test]
async fn the_sse_example_serves_the_text_and_each_outcome_in_order_then_the_blocks() {
    use std::sync::Arc;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    let app = sse_example::app(Arc::new(sse_example::registry().unwrap()));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    let mut client = tokio::net::TcpStream::connect(address).await.unwrap();
    client
        .write_all(b"GET /answer HTTP/1.0\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    let mut response = String::new();
    client.read_to_string(&mut response).await.unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.0 200"), "{head}");
    assert!(head.contains("content-type: text/event-stream"), "{head}");
    let events: Vec<(&str, Vec<&str>)> = body
        .split("\n\n")
        .filter(|event| !event.is_empty())
        .map(|event| {
            let mut name = "";
            let mut data = Vec::new();
            for line in event.lines() {
                if let Some(value) = line.strip_prefix("event: ") {
                    name = value;
                } else if let Some(value) = line.strip_prefix("data: ") {
                    data.push(value);
                }
            }
            (name, data)
        })
        .collect();
    // The words and the outcomes in the answer's order (a run of text may come in more
    // than one event), then the blocks.
    let mut shown: Vec<(&str, String)> = Vec::new();
    for (name, data) in &events {
        let data = data.join("\n");
        match shown.last_mut() {
            Some(("text", text)) if *name == "text" => text.push_str(&data),
            _ => shown.push((name, data)),
        }
    }
    let names: Vec<&str> = shown.iter().map(|(name, _)| *name).collect();
    assert_eq!(
        names,
        ["text", "outcome", "text", "outcome", "text", "outcome", "text", "done"],
        "{body}"
    );
    let texts: Vec<&str> = shown
        .iter()
        .filter(|(name, _)| *name == "text")
        .map(|(_, text)| text.as_str())
        .collect();
    assert_eq!(texts, ["Oslo: ", ", Bergen: ", ", and ", "."]);
    let first: serde_json::Value = serde_json::from_str(&shown[1].1).unwrap();
    assert_eq!(
        first,
        serde_json::json!({"name": "weather.get_temp", "args": {"city": "Oslo"},
                           "result": {"city": "Oslo", "celsius": 4}})
    );
    let third: serde_json::Value = serde_json::from_str(&shown[5].1).unwrap();
    assert!(third["error"]
        .as_str()
        .unwrap()
        .starts_with("Unknown function 'weather.get_rain'"));
    // The blocks for the model's next turn, one `data` line per line of text.
    let done = &events.last().unwrap().1;
    assert_eq!(
        done[..2],
        [
            "Function call: weather.get_temp(\"Oslo\")",
            "Returned: {\"city\":\"Oslo\",\"celsius\":4}"
        ]
    );
}

/// docs/library.md shows `crates/atfunc-tools/examples/library.rs`, which runs here.
#[cfg(feature = "typed")]
#[path = "../../examples/library.rs"]
#[allow(dead_code)] // its `main`, which the example binary runs
mod library_example;

#[cfg(feature = "typed")]
#[tokio::test]
async fn the_readme_library_example_runs_and_is_the_readme_s() {
    let out = library_example::run().await.unwrap();
    assert!(out.contains("@weather.get_temp( <*city> )"), "{out}");
    assert!(
        out.contains("@units.to_fahrenheit( <*celsius{number}> )"),
        "{out}"
    );
    assert!(
        out.ends_with(
            "Function call: weather.get_temp(\"Oslo\")\nReturned: {\"city\":\"Oslo\",\"celsius\":4}\n\n\
             Function call: units.to_fahrenheit(4)\nReturned: 39.2\n\n\
             Function call: weather.get_temp(\"Atlantis\")\nReturned: Error: no weather station in Atlantis; try Oslo\n"
        ),
        "{out}"
    );
    let example = include_str!("../../examples/library.rs");
    assert!(
        crate::pages::text().contains(&format!("```rust\n{example}```\n")),
        "the documentation's library example is crates/atfunc-tools/examples/library.rs, word for word"
    );
}

/// The README states the minimum Rust version `Cargo.toml` declares, as does every page of
/// the documentation that states one, and nothing silences the lint that checks the code
/// against it (clippy's `incompatible_msrv`, which CI runs).
#[test]
fn the_stated_msrv_is_the_declared_one_and_its_lint_is_on() {
    // The workspace's Cargo.toml declares it for every crate.
    let root = Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/../.."));
    let manifest =
        std::fs::read_to_string(root.join("Cargo.toml")).expect("Cargo.toml is readable");
    let declared = manifest
        .lines()
        .find_map(|line| line.strip_prefix("rust-version = \""))
        .and_then(|rest| rest.strip_suffix('"'))
        .expect("Cargo.toml declares rust-version");
    assert_eq!(declared, env!("CARGO_PKG_RUST_VERSION"));
    let stated = format!("**Minimum Rust version: {declared}**");
    for (page, text) in crate::pages::all() {
        assert!(
            text.matches("**Minimum Rust version: ").count() == text.matches(&stated).count(),
            "{page} states another minimum Rust version than rust-version {declared}"
        );
        if page == "README.md" {
            assert!(
                text.contains(&stated),
                "the README states rust-version {declared}"
            );
        }
    }
    let mut sources: Vec<_> = std::fs::read_dir(root.join("crates"))
        .expect("crates/ is readable")
        .map(|entry| entry.expect("a crates/ entry").path().join("src"))
        .collect();
    while let Some(dir) = sources.pop() {
        for entry in std::fs::read_dir(&dir).expect("a source folder is readable") {
            let path = entry.expect("a folder entry").path();
            if path.is_dir() {
                sources.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("a source file is readable");
                assert!(
                    !text.contains("incompatible_msrv"),
                    "{} silences the MSRV lint",
                    path.display()
                );
            }
        }
    }
}

/// Options read as what they do, not as a bare `true`: a builder method where turning
/// something on is all there is, a small enum where a caller picks; and loading takes one
/// options value, with a plain form for the defaults.
#[cfg(feature = "command")]
#[tokio::test]
async fn options_are_named_not_bare_bools() {
    use atfunc::batch::{RecordStream, TextRecords};
    use atfunc::interface::{LoadLimits, LoadOptions};
    use atfunc::{json, Interface};
    use atfunc_tools::{CallContext, EnvInheritance, FnBox, MultiBox, ToolBox};

    let flat = MultiBox::new("all")
        .with(FnBox::new("a").function(Interface::new("f").in_domain("a"), |_, _| Ok(json!(1))))
        .flat_names();
    let names: Vec<String> = flat
        .interfaces(&CallContext::new())
        .into_iter()
        .map(|i| i.name)
        .collect();
    assert_eq!(names, ["a_f"]);

    assert_eq!(EnvInheritance::default(), EnvInheritance::Listed);

    let mut records = Vec::new();
    let mut calls_only = RecordStream::new(None);
    calls_only.feed(b"Hi @a.f()", &mut records);
    calls_only.finish(&mut records);
    assert_eq!(records.len(), 1);
    assert_eq!(TextRecords::default(), TextRecords::Omitted);
    let mut records = Vec::new();
    let mut with_text = RecordStream::new(None).with_text(TextRecords::Included);
    with_text.feed(b"Hi @a.f()", &mut records);
    with_text.finish(&mut records);
    assert_eq!(records[0]["text"], "Hi ");

    let text = r#"[{"name": "get_temp", "parameters": {"type": "object"}}]"#;
    let plain = atfunc::load_interfaces_str(text).expect("valid");
    let limited = LoadOptions::default()
        .with_limits(LoadLimits::default())
        .load_str(text)
        .expect("valid");
    assert_eq!(plain, limited.interfaces);
    let value: serde_json::Value = serde_json::from_str(text).expect("JSON");
    assert_eq!(atfunc::load_interfaces(&value).expect("valid"), plain);
}
