//! Text in, text out (issue #31 parts 3 and 4), on the CPU: the tokenizer, chat template and
//! stop tokens of a model directory against what the Python tokenizers and transformers give
//! for the same files (tests/fixtures/text, made by scripts/conformance/make_tokenizer.py),
//! text decoded as it streams, each bad input as a typed error, and generation from text
//! end to end with a tiny random model.

use std::path::{Path, PathBuf};

use candle_core::{DType, Device};
use capture_candle::decode::SamplingParams;
use capture_candle::generate::{generate_eager, Request, StopReason};
use capture_candle::model::{Config, Family, Model};
use capture_candle::text::{Message, TextIo};
use capture_candle::Error;
use serde_json::Value;

fn fixtures() -> PathBuf {
    // `CAPTURE_CANDLE_FIXTURES`: where the binary runs on another machine (a GPU machine).
    std::env::var_os("CAPTURE_CANDLE_FIXTURES")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures"))
        .join("text")
}

fn expected() -> Value {
    serde_json::from_str(&std::fs::read_to_string(fixtures().join("expected.json")).unwrap()).unwrap()
}

/// A tiny Llama whose vocabulary covers the tokenizer's 305 ids, padded above them as real
/// checkpoints pad theirs.
fn config(vocab: usize) -> Config {
    let mut cfg = Config::tiny(Family::Llama);
    cfg.vocab_size = vocab;
    cfg.eos_token_ids = vec![7];
    cfg
}

fn load() -> TextIo {
    TextIo::from_dir(fixtures(), &config(320)).unwrap()
}

fn ids(v: &Value) -> Vec<u32> {
    v.as_array().unwrap().iter().map(|x| x.as_u64().unwrap() as u32).collect()
}

fn messages(v: &Value) -> Vec<Message> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|m| Message::new(m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect()
}

/// A copy of the fixture directory to break one file of; removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("capture-candle-text-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for e in std::fs::read_dir(fixtures()).unwrap() {
            let e = e.unwrap();
            std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
        }
        Self(dir)
    }
    fn write(&self, file: &str, text: &str) -> &Self {
        std::fs::write(self.0.join(file), text).unwrap();
        self
    }
    fn remove(&self, file: &str) -> &Self {
        std::fs::remove_file(self.0.join(file)).unwrap();
        self
    }
    /// Changes one field of a JSON file.
    fn set(&self, file: &str, field: &str, value: Value) -> &Self {
        let path = self.0.join(file);
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        match value {
            Value::Null if field.starts_with('-') => {
                v.as_object_mut().unwrap().remove(&field[1..]);
            }
            value => v[field] = value,
        }
        std::fs::write(&path, serde_json::to_string(&v).unwrap()).unwrap();
        self
    }
    fn load(&self) -> capture_candle::Result<TextIo> {
        TextIo::from_dir(&self.0, &config(320))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

#[test]
fn text_round_trips_through_the_ids_pythons_tokenizers_gives() {
    let text = load();
    let e = expected();
    assert_eq!(text.tokenizer().vocab_size(), e["vocab_size"].as_u64().unwrap() as usize);
    for (token, id) in e["special_ids"].as_object().unwrap() {
        assert_eq!(text.tokenizer().token_id(token), Some(id.as_u64().unwrap() as u32), "{token}");
    }
    for case in e["texts"].as_array().unwrap() {
        let s = case["text"].as_str().unwrap();
        let with = text.prompt(s).unwrap();
        assert_eq!(with, ids(&case["ids"]), "{s:?} with special tokens");
        assert_eq!(text.tokenizer().encode(s, false).unwrap(), ids(&case["ids_no_special"]), "{s:?}");
        assert_eq!(text.decode(&with).unwrap(), s, "decoded, the special tokens left out");
        assert_eq!(text.tokenizer().decode(&with, false).unwrap(), format!("<|begin_of_text|>{s}"));
    }
}

#[test]
fn the_chat_template_renders_as_transformers_apply_chat_template() {
    let text = load();
    let e = expected();
    let chat = &e["chat"];
    let t = text.chat_template().expect("the fixture has a chat template");
    assert!(t.path().ends_with("tokenizer_config.json"));
    assert_eq!(t.render(&messages(&chat["messages"]), true).unwrap(), chat["rendered"].as_str().unwrap());
    assert_eq!(text.chat_prompt(&messages(&chat["messages"])).unwrap(), ids(&chat["ids"]));
    let plain = &e["chat_no_system"];
    let m = messages(&plain["messages"]);
    assert_eq!(m, [Message::user("Hi")]);
    assert_eq!(t.render(&m, true).unwrap(), plain["rendered"].as_str().unwrap());
    assert_eq!(t.render(&m, false).unwrap(), plain["rendered_no_generation_prompt"].as_str().unwrap());
}

#[test]
fn a_chat_template_jinja_file_comes_before_tokenizer_config() {
    let s = Scratch::new("jinja");
    s.write(
        "chat_template.jinja",
        "{% for m in messages %}[{{ m.role }}] {{ m.content.upper() }}\n{% endfor %}{{ eos_token }}",
    );
    let text = s.load().unwrap();
    let t = text.chat_template().unwrap();
    assert!(t.path().ends_with("chat_template.jinja"));
    assert_eq!(
        t.render(&[Message::user("hé"), Message::assistant("ok")], true).unwrap(),
        "[user] HÉ\n[assistant] OK\n<|eot_id|>"
    );
    // Without any template: no chat, plain text still works.
    let s = Scratch::new("no-template");
    s.set("tokenizer_config.json", "-chat_template", Value::Null);
    let text = s.load().unwrap();
    assert!(text.chat_template().is_none());
    let err = text.chat_prompt(&[Message::user("hi")]).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
    assert!(text.prompt("hi").is_ok());
}

#[test]
fn streamed_text_is_whole_characters_and_exactly_the_text() {
    let text = load();
    let tok = text.tokenizer();
    let eot = tok.token_id("<|eot_id|>").unwrap();
    for s in ["héllo 🙂", "東京 ça Ελληνικά — 🙂🙂", "Hello world!\n\nDone"] {
        let ids = tok.encode(s, false).unwrap();
        let mut stream = tok.stream(true);
        let (mut out, mut held) = (String::new(), 0);
        for &id in ids.iter().chain([eot].iter()) {
            match stream.push(id).unwrap() {
                Some(piece) => {
                    assert!(!piece.contains('\u{FFFD}'), "{s:?}: a piece with a replacement character: {piece:?}");
                    out.push_str(&piece);
                }
                None => held += 1,
            }
        }
        assert_eq!(stream.finish().unwrap(), "", "{s:?}: nothing left once the last character is complete");
        assert_eq!(out, s, "{s:?}: the pieces make the text, the stop token none");
        if !s.is_ascii() {
            assert!(held > 1, "{s:?}: the bytes of a multi-byte character are held back until complete");
        }
    }
    // A character cut off at the end comes out, as U+FFFD, only at the finish.
    let ids = tok.encode("a🙂", false).unwrap();
    let mut stream = tok.stream(true);
    let first: String = ids[..ids.len() - 1].iter().filter_map(|&id| stream.push(id).unwrap()).collect();
    assert_eq!(first, "a");
    assert_eq!(stream.finish().unwrap(), "\u{FFFD}");
    // With special tokens kept, the stop token is text too.
    let mut stream = tok.stream(false);
    assert_eq!(stream.push(eot).unwrap().as_deref(), Some("<|eot_id|>"));
    // After a prompt: its tokens are context, not output.
    let prompt = text.prompt("Say").unwrap();
    let mut stream = tok.stream(true).after(&prompt);
    let more = tok.encode(" héllo", false).unwrap();
    let out: String = more.iter().filter_map(|&id| stream.push(id).unwrap()).collect();
    assert_eq!(out + &stream.finish().unwrap(), " héllo");
}

#[test]
fn stop_tokens_come_from_generation_config_then_config() {
    assert_eq!(load().stop_tokens(), [301, 304], "generation_config.json's list");
    let s = Scratch::new("stops");
    s.set("generation_config.json", "eos_token_id", Value::from(304));
    assert_eq!(s.load().unwrap().stop_tokens(), [304], "one id");
    s.set("generation_config.json", "-eos_token_id", Value::Null);
    assert_eq!(s.load().unwrap().stop_tokens(), [7], "without the field: config.json's");
    s.remove("generation_config.json");
    assert_eq!(s.load().unwrap().stop_tokens(), [7], "without the file: config.json's");
}

/// The error of loading `s`, with its message checked to name `file` and `field`.
fn refused(s: &Scratch, file: &str, field: &str) -> Error {
    let err = s.load().expect_err("bad input is refused");
    let msg = err.to_string();
    eprintln!("{msg}\n");
    assert!(msg.contains(file), "the message names {file}: {msg}");
    assert!(msg.contains(field), "the message names {field}: {msg}");
    err
}

#[test]
fn a_directory_without_a_tokenizer_is_a_typed_error() {
    let s = Scratch::new("missing");
    s.remove("tokenizer.json");
    let err = refused(&s, "tokenizer.json", "there is no tokenizer.json");
    assert!(matches!(err, Error::MissingTokenizer { .. }), "{err:?}");
}

#[test]
fn a_tokenizer_larger_than_the_vocabulary_is_a_typed_error() {
    let err = TextIo::from_dir(fixtures(), &config(300)).unwrap_err();
    assert!(
        matches!(err, Error::TokenizerVocab { tokens: 305, vocab_size: 300, .. }),
        "the added tokens count: {err:?}"
    );
    assert!(err.to_string().contains("tokenizer.json") && err.to_string().contains("vocab_size"), "{err}");
    // Exactly the tokenizer's size, or padded above it, is fine.
    TextIo::from_dir(fixtures(), &config(305)).unwrap();
    TextIo::from_dir(fixtures(), &config(128_256)).unwrap();
}

#[test]
fn chat_templates_that_fail_are_typed_errors_naming_the_file() {
    let text = load();
    // The fixture's template refuses a role it does not know.
    let err = text.chat_prompt(&[Message::system("s"), Message::new("tool", "x")]).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::ChatTemplate { stage: "to render", .. }), "{err:?}");
    assert!(msg.contains("tokenizer_config.json") && msg.contains("chat_template"), "{msg}");
    assert!(msg.contains("roles are user or assistant, not tool"), "the template's own message: {msg}");

    // A template that does not compile is refused when the directory is read.
    let s = Scratch::new("syntax");
    s.set("tokenizer_config.json", "chat_template", Value::from("{% for m in messages %}{{ m.content }"));
    let err = refused(&s, "tokenizer_config.json", "chat_template");
    assert!(matches!(err, Error::ChatTemplate { stage: "to compile", .. }), "{err:?}");

    // One that fails while rendering (an unknown method), from chat_template.jinja.
    let s = Scratch::new("render");
    s.write("chat_template.jinja", "{{ messages[0].content.no_such_method() }}");
    let text = s.load().unwrap();
    let err = text.chat_prompt(&[Message::user("hi")]).unwrap_err();
    assert!(matches!(err, Error::ChatTemplate { stage: "to render", .. }), "{err:?}");
    assert!(err.to_string().contains("chat_template.jinja"), "{err}");

    // One that would run for days (10^15 loop turns) stops with an error, out of fuel.
    let s = Scratch::new("endless");
    s.write(
        "chat_template.jinja",
        "{% for a in range(100000) %}{% for b in range(100000) %}{% for c in range(100000) %}{% endfor %}{% endfor %}{% endfor %}{{ messages[0].content }}",
    );
    let text = s.load().unwrap();
    let err = text.chat_prompt(&[Message::user("hi")]).unwrap_err();
    assert!(matches!(err, Error::ChatTemplate { stage: "to render", .. }), "{err:?}");
    assert!(err.to_string().contains("fuel"), "{err}");
}

/// How a file is broken: all of it replaced, or one field set.
enum Break {
    Write(&'static str),
    Set(&'static str, Value),
}

#[test]
fn malformed_files_are_typed_errors_naming_the_file_and_field() {
    use Break::{Set, Write};
    let cases = [
        ("tokenizer.json", Write("{\"version\": \"1.0\", \"model\": "), "JSON"),
        ("tokenizer.json", Write("{\"version\": \"1.0\"}"), "tokenizers crate"),
        ("generation_config.json", Write("{\"eos_token_id\": [1, "), "JSON"),
        ("generation_config.json", Set("eos_token_id", Value::from("<|eot_id|>")), "eos_token_id"),
        ("generation_config.json", Set("eos_token_id", Value::from(-1)), "eos_token_id"),
        ("tokenizer_config.json", Write("[1, 2]"), "JSON"),
        ("tokenizer_config.json", Set("bos_token", Value::from(5)), "bos_token"),
        ("tokenizer_config.json", Set("chat_template", Value::from(5)), "chat_template"),
    ];
    for (i, (file, how, named)) in cases.into_iter().enumerate() {
        let s = Scratch::new(&format!("bad-{i}"));
        match how {
            Set(field, value) => s.set(file, field, value),
            Write(text) => s.write(file, text),
        };
        let err = refused(&s, file, named);
        assert!(matches!(err, Error::BadModelFile { .. }), "case {i} ({file}): {err:?}");
    }
    // A special token given as transformers 4's AddedToken object is read.
    let s = Scratch::new("added-token");
    s.set(
        "tokenizer_config.json",
        "bos_token",
        serde_json::json!({"__type": "AddedToken", "content": "<|begin_of_text|>"}),
    );
    let e = expected();
    assert_eq!(s.load().unwrap().chat_prompt(&messages(&e["chat"]["messages"])).unwrap(), ids(&e["chat"]["ids"]));
}

#[test]
fn text_in_text_out_end_to_end_on_the_cpu() {
    let text = load();
    let cfg = config(320);
    let model = Model::random(&cfg, DType::F32, 128, &Device::Cpu, 5).unwrap();
    let chat = text.chat_prompt(&[Message::user("Say héllo 🙂")]).unwrap();
    let plain = text.prompt("Text in, text out:").unwrap();
    let requests: Vec<Request> = [chat.clone(), plain.clone()]
        .into_iter()
        .enumerate()
        .map(|(i, prompt)| Request {
            prompt,
            sampling: SamplingParams::new(1.0, 0, 1.0).unwrap(),
            seed: 11 + i as u64,
            max_new_tokens: 40,
        })
        .collect();
    let mut streams = [text.tokenizer().stream(true).after(&chat), text.tokenizer().stream(true).after(&plain)];
    let mut streamed = [String::new(), String::new()];
    let mut seen = [Vec::new(), Vec::new()];
    let mut calls = 0;
    let out = generate_eager(&model, text.stop_tokens(), &requests, |step| {
        assert_eq!(step.progress.steps, calls, "called once after the prefill, then after each step");
        calls += 1;
        for row in 0..2 {
            if let Some(id) = step.tokens[row] {
                seen[row].push(id);
                if let Some(piece) = streams[row].push(id).unwrap() {
                    streamed[row].push_str(&piece);
                }
            }
        }
    })
    .unwrap();
    for row in 0..2 {
        let g = &out[row];
        assert_eq!(seen[row], g.tokens, "row {row}: the callback saw every token, in order");
        assert!(!g.tokens.is_empty() && g.tokens.len() <= 40);
        match g.stop {
            StopReason::StopToken(t) => assert!(text.stop_tokens().contains(&t)),
            StopReason::Limit => assert_eq!(g.tokens.len(), 40),
            other => panic!("row {row}: {other:?}"),
        }
        streamed[row].push_str(&streams[row].finish().unwrap());
        assert_eq!(streamed[row], text.decode(&g.tokens).unwrap(), "row {row}: the stream gives the decoded text");
    }
    // Bad prompts are refused before any work.
    let mut bad = requests[0].clone();
    bad.prompt = vec![1, 2, 999];
    let err = generate_eager(&model, text.stop_tokens(), &[bad], |_| panic!("no work")).unwrap_err();
    assert!(matches!(err, Error::InvalidArgument { .. }), "{err}");
}
