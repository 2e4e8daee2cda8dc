//! Text in, text out: a Hugging Face model directory's tokenizer, stop tokens and chat
//! template, and text decoded as it streams.
//!
//! A model directory as transformers saves it holds, beside `config.json` and the weights:
//! - `tokenizer.json`, the tokenizer (read by the Hugging Face `tokenizers` crate);
//! - `tokenizer_config.json`, with the chat template (`chat_template`) and the special tokens
//!   the template names (`bos_token`, `eos_token`); transformers 5 saves the template in a
//!   file of its own, `chat_template.jinja`, which is read first where it exists;
//! - `generation_config.json`, with the stop tokens (`eos_token_id`, one id or a list).
//!
//! [`TextIo::from_dir`] reads all three, checks them against the model's config, and gives
//! prompts as token ids and generated ids back as text. Everything is read and checked before
//! anything is returned: a bad file is a typed error naming the file and the field, never a
//! half-loaded tokenizer.
//!
//! ## Walkthrough
//! ```no_run
//! # fn main() -> capture_candle::Result<()> {
//! use std::io::Write;
//! use candle_core::{DType, Device};
//! use capture_candle::decode::SamplingParams;
//! use capture_candle::generate::{generate_eager, Request};
//! use capture_candle::model::Model;
//! use capture_candle::text::{Message, TextIo};
//!
//! let dir = "Llama-3.2-1B-Instruct"; // a Hugging Face model directory
//! let model = Model::from_dir(dir, DType::F32, 1024, &Device::Cpu)?;
//! let text = TextIo::from_dir(dir, model.config())?;
//!
//! // Text in: a chat (with the model's chat template and the generation prompt) or plain
//! // text (with the tokenizer's own special tokens, such as Llama 3's <|begin_of_text|>).
//! let prompt = if text.chat_template().is_some() {
//!     text.chat_prompt(&[Message::system("Be brief."), Message::user("What is a CUDA graph?")])?
//! } else {
//!     text.prompt("A CUDA graph is")?
//! };
//! let request = Request { prompt, sampling: SamplingParams::GREEDY, seed: 1, max_new_tokens: 64 };
//!
//! // Text out, as it is made: each new token goes into a stream that prints only complete
//! // UTF-8 text (a character split over several tokens waits for its last byte).
//! let mut stream = text.tokenizer().stream(true);
//! let mut failed = None;
//! let out = generate_eager(&model, text.stop_tokens(), &[request], |step| {
//!     if let Some(id) = step.tokens[0] {
//!         match stream.push(id) {
//!             Ok(Some(piece)) => print!("{piece}"),
//!             Ok(None) => {}
//!             Err(e) => failed = Some(e),
//!         }
//!         let _ = std::io::stdout().flush();
//!     }
//! })?;
//! if let Some(e) = failed {
//!     return Err(e);
//! }
//! println!("{}", stream.finish()?); // anything still held back (an unfinished character)
//! println!("stopped: {:?}", out[0].stop);
//! # Ok(()) }
//! ```
//! On a GPU, [`Generator::generate_stream`](crate::generate::Generator::generate_stream)
//! gives the same per-step tokens while it replays CUDA graphs; the `generate` example does
//! both (`--model DIR --prompt "..."`).
//!
//! ## How templates are rendered
//! As transformers renders them: Jinja with `trim_blocks` and `lstrip_blocks` on, loop controls
//! (`break`, `continue`), Python's string methods (`.strip()`, `.startswith()`, ...),
//! `raise_exception(message)` (a [`Error::ChatTemplate`] with the message) and
//! `strftime_now(format)` (the date now, in UTC). The template is given `messages` (a list of
//! `role`/`content` maps), `add_generation_prompt`, and the special tokens of
//! `tokenizer_config.json` that are set (`bos_token`, `eos_token`, `unk_token`, `pad_token`).
//! Templates that take tools or documents get neither.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value as Json;

use crate::error::{Error, Result};
use crate::model::Config;

/// A `tokenizer.json`, read by the Hugging Face `tokenizers` crate.
pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
    path: PathBuf,
    /// One above the largest id, added tokens included.
    size: usize,
}

impl std::fmt::Debug for Tokenizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tokenizer").field("path", &self.path).field("size", &self.size).finish()
    }
}

fn display(p: &Path) -> String {
    p.display().to_string()
}

fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).map_err(|source| Error::Io { path: display(path), source })
}

/// A file that is wrong in `field` (`None`: as a whole).
fn bad<'f>(path: &Path, field: impl Into<Option<&'f str>>, detail: impl std::fmt::Display) -> Error {
    Error::BadModelFile { path: display(path), field: field.into().map(String::from), detail: detail.to_string() }
}

impl Tokenizer {
    /// Reads a `tokenizer.json`.
    ///
    /// # Errors
    /// [`Error::Io`] for a file that cannot be read; [`Error::BadModelFile`] for one that is not
    /// a tokenizer (the tokenizers crate's message says where).
    pub fn from_file(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let bytes = read(path)?;
        Self::from_bytes(&bytes, path)
    }

    fn from_bytes(bytes: &[u8], path: &Path) -> Result<Self> {
        // Check that it is JSON first: the tokenizers crate's message for a file that is not
        // JSON at all is less clear than serde_json's.
        if let Err(e) = serde_json::from_slice::<serde::de::IgnoredAny>(bytes) {
            return Err(bad(path, None, format_args!("not valid JSON: {e}")));
        }
        let inner = tokenizers::Tokenizer::from_bytes(bytes)
            .map_err(|e| bad(path, None, format_args!("the tokenizers crate cannot read it: {e}")))?;
        let size = inner.get_vocab(true).values().map(|&id| id as usize + 1).max().unwrap_or(0);
        if size == 0 {
            return Err(bad(path, "model.vocab", "the tokenizer has no tokens"));
        }
        Ok(Self { inner, path: path.to_path_buf(), size })
    }

    /// The file it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// One above its largest token id, added tokens included: the vocabulary size the model's
    /// embedding must have at least.
    pub fn vocab_size(&self) -> usize {
        self.size
    }

    /// The id of a token (an added token such as `<|eot_id|>`, or one of the vocabulary).
    pub fn token_id(&self, token: &str) -> Option<u32> {
        self.inner.token_to_id(token)
    }

    /// The token of an id.
    pub fn token(&self, id: u32) -> Option<String> {
        self.inner.id_to_token(id)
    }

    /// Encodes `text`. With `add_special_tokens`, the tokenizer's post-processor adds its
    /// special tokens (Llama 3's `<|begin_of_text|>` in front, say): right for plain text,
    /// wrong for a rendered chat template, which writes them itself.
    ///
    /// # Errors
    /// [`Error::Tokenizer`] if the tokenizer fails.
    pub fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Vec<u32>> {
        let enc = self.inner.encode(text, add_special_tokens).map_err(|e| Error::Tokenizer(e.to_string()))?;
        Ok(enc.get_ids().to_vec())
    }

    /// Decodes `ids` into text; ids outside the vocabulary (a model's padding rows) give
    /// nothing. An incomplete UTF-8 sequence at the end decodes as U+FFFD: for text that
    /// arrives token by token, use [`stream`](Self::stream).
    ///
    /// # Errors
    /// [`Error::Tokenizer`] if the tokenizer fails.
    pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        self.inner.decode(ids, skip_special_tokens).map_err(|e| Error::Tokenizer(e.to_string()))
    }

    /// An incremental decoder of one sequence's new tokens. With `skip_special_tokens`, special
    /// tokens (the stop token, say) give no text.
    pub fn stream(&self, skip_special_tokens: bool) -> TextStream<'_> {
        TextStream { tokenizer: self, ids: Vec::new(), context: 0, emitted: 0, skip_special_tokens }
    }
}

/// Text decoded as tokens arrive: [`push`](Self::push) gives only complete text.
///
/// Each push decodes a short window of the latest tokens twice, with and without the tokens
/// not yet shown, and gives the difference once it is longer and does not end in U+FFFD, the
/// replacement character a decoder writes for an incomplete UTF-8 sequence: a character split
/// over several byte-level (or SentencePiece byte-fallback, `<0xE2>`) tokens is held back
/// until its last byte arrives. Decoding a window rather than each token alone keeps what
/// depends on the tokens before (a SentencePiece word's leading space).
#[derive(Debug)]
pub struct TextStream<'t> {
    tokenizer: &'t Tokenizer,
    ids: Vec<u32>,
    /// Start of the window decoded: tokens before it were shown and are no longer needed.
    context: usize,
    /// Tokens whose text has been given.
    emitted: usize,
    skip_special_tokens: bool,
}

/// Prompt tokens kept as context by [`TextStream::after`].
const CONTEXT: usize = 5;

impl<'t> TextStream<'t> {
    /// Starts after `prompt`: its last few tokens are decoded as context, not shown.
    pub fn after(mut self, prompt: &[u32]) -> Self {
        let keep = &prompt[prompt.len().saturating_sub(CONTEXT)..];
        self.ids = keep.to_vec();
        self.context = 0;
        self.emitted = keep.len();
        self
    }

    /// Adds a token; returns the text it completes, if any.
    ///
    /// # Errors
    /// [`Error::Tokenizer`] if the tokenizer fails.
    pub fn push(&mut self, id: u32) -> Result<Option<String>> {
        self.ids.push(id);
        let shown = self.tokenizer.decode(&self.ids[self.context..self.emitted], self.skip_special_tokens)?;
        let all = self.tokenizer.decode(&self.ids[self.context..], self.skip_special_tokens)?;
        if all.len() <= shown.len() || all.ends_with('\u{FFFD}') || !all.starts_with(&shown) {
            return Ok(None);
        }
        let new = all[shown.len()..].to_string();
        self.context = self.emitted;
        self.emitted = self.ids.len();
        // Keep only the window: a long generation does not grow the decoded text.
        if self.context > 0 {
            self.ids.drain(..self.context);
            self.emitted -= self.context;
            self.context = 0;
        }
        Ok(Some(new))
    }

    /// Ends the stream: the text held back, if any (an incomplete character at the very end
    /// decodes as U+FFFD).
    ///
    /// # Errors
    /// [`Error::Tokenizer`] if the tokenizer fails.
    pub fn finish(&mut self) -> Result<String> {
        let shown = self.tokenizer.decode(&self.ids[self.context..self.emitted], self.skip_special_tokens)?;
        let all = self.tokenizer.decode(&self.ids[self.context..], self.skip_special_tokens)?;
        self.context = self.ids.len();
        self.emitted = self.ids.len();
        Ok(match all.strip_prefix(&shown) {
            Some(rest) => rest.to_string(),
            None if all.len() > shown.len() => all.get(shown.len()..).unwrap_or_default().to_string(),
            None => String::new(),
        })
    }
}

/// One message of a chat: a role (`system`, `user`, `assistant`, or another the template
/// knows) and its text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Message {
    /// `system`, `user`, `assistant`, ...
    pub role: String,
    /// The text.
    pub content: String,
}

impl Message {
    /// A message of `role`.
    pub fn new(role: impl Into<String>, content: impl Into<String>) -> Self {
        Self { role: role.into(), content: content.into() }
    }
    /// A `system` message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new("system", content)
    }
    /// A `user` message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new("user", content)
    }
    /// An `assistant` message.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new("assistant", content)
    }
}

/// A chat template, compiled.
pub struct ChatTemplate {
    env: minijinja::Environment<'static>,
    path: PathBuf,
    field: Option<String>,
    tokens: BTreeMap<String, String>,
}

impl std::fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatTemplate").field("path", &self.path).field("field", &self.field).finish()
    }
}

const TEMPLATE: &str = "chat_template";

impl ChatTemplate {
    /// The template engine's steps one render may take (well under a second of work).
    pub const FUEL: u64 = 20_000_000;

    /// Compiles `source`, read from `path` (field `field`: `Some("chat_template")` for
    /// `tokenizer_config.json`, `None` for `chat_template.jinja`; both only name it in
    /// errors). `special_tokens` are given to the template as variables (`bos_token`,
    /// `eos_token`, ...).
    ///
    /// # Errors
    /// [`Error::ChatTemplate`] for a template that does not compile.
    pub fn new(
        source: &str,
        path: impl Into<PathBuf>,
        field: Option<&str>,
        special_tokens: BTreeMap<String, String>,
    ) -> Result<Self> {
        let path = path.into();
        let field = field.map(String::from);
        let mut env = minijinja::Environment::new();
        let syntax = minijinja::syntax::SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()
            .map_err(|e| template_error(&path, &field, "to compile", &e))?;
        env.set_syntax(syntax);
        // A model's template is someone else's code: bounded, so that a runaway loop is an
        // error rather than a hang. Real templates take a few thousand steps a message.
        env.set_fuel(Some(Self::FUEL));
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        env.add_function("raise_exception", |message: String| -> std::result::Result<String, minijinja::Error> {
            Err(minijinja::Error::new(minijinja::ErrorKind::InvalidOperation, format!("raise_exception: {message}")))
        });
        env.add_function("strftime_now", |format: String| strftime(&format, now_utc()));
        env.add_template_owned(TEMPLATE, source.to_string())
            .map_err(|e| template_error(&path, &field, "to compile", &e))?;
        Ok(Self { env, path, field, tokens: special_tokens })
    }

    /// Renders `messages`, with the prompt that starts the assistant's answer at the end when
    /// `add_generation_prompt` is set.
    ///
    /// # Errors
    /// [`Error::ChatTemplate`] naming the file and the template's error (a
    /// `raise_exception` included, and a render past [`FUEL`](Self::FUEL) steps).
    pub fn render(&self, messages: &[Message], add_generation_prompt: bool) -> Result<String> {
        let list: Vec<minijinja::Value> = messages
            .iter()
            .map(|m| {
                let mut map = BTreeMap::new();
                map.insert("role".to_string(), minijinja::Value::from(m.role.as_str()));
                map.insert("content".to_string(), minijinja::Value::from(m.content.as_str()));
                minijinja::Value::from(map)
            })
            .collect();
        let mut ctx: BTreeMap<String, minijinja::Value> =
            self.tokens.iter().map(|(k, v)| (k.clone(), minijinja::Value::from(v.as_str()))).collect();
        ctx.insert("messages".into(), minijinja::Value::from(list));
        ctx.insert("add_generation_prompt".into(), minijinja::Value::from(add_generation_prompt));
        let t = self.env.get_template(TEMPLATE).map_err(|e| template_error(&self.path, &self.field, "to load", &e))?;
        t.render(minijinja::Value::from(ctx)).map_err(|e| template_error(&self.path, &self.field, "to render", &e))
    }

    /// The file it was read from.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

fn template_error(path: &Path, field: &Option<String>, stage: &'static str, e: &minijinja::Error) -> Error {
    let mut detail = e.to_string();
    let mut source = std::error::Error::source(e);
    while let Some(s) = source {
        detail.push_str(&format!(": {s}"));
        source = s.source();
    }
    Error::ChatTemplate { path: display(path), field: field.clone(), stage, detail }
}

/// Seconds since 1970 (UTC), split into a civil date and time.
struct Civil {
    year: i64,
    month: u32,
    day: u32,
    hour: u64,
    minute: u64,
    second: u64,
    weekday: usize,
    yday: u32,
}

fn now_utc() -> Civil {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map(|d| d.as_secs()).unwrap_or(0);
    civil(secs)
}

fn is_leap(y: i64) -> bool {
    (y % 4 == 0 && y % 100 != 0) || y % 400 == 0
}

fn civil(secs: u64) -> Civil {
    let mut days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    // 1970-01-01 was a Thursday (weekday 4, Sunday = 0).
    let weekday = ((days + 4) % 7) as usize;
    let mut year = 1970;
    loop {
        let len = if is_leap(year) { 366 } else { 365 };
        if days < len {
            break;
        }
        days -= len;
        year += 1;
    }
    let yday = days as u32;
    let lens = [31, if is_leap(year) { 29 } else { 28 }, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31];
    let mut month = 1;
    for len in lens {
        if days < len {
            break;
        }
        days -= len;
        month += 1;
    }
    Civil {
        year,
        month,
        day: days as u32 + 1,
        hour: rem / 3600,
        minute: rem / 60 % 60,
        second: rem % 60,
        weekday,
        yday,
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
const DAYS: [&str; 7] = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"];

/// The conversions of Python's `strftime` that chat templates use; another `%x` is an error.
fn strftime(format: &str, t: Civil) -> std::result::Result<String, minijinja::Error> {
    let mut out = String::new();
    let mut chars = format.chars();
    let month = MONTHS[(t.month as usize).saturating_sub(1) % 12];
    let day = DAYS[t.weekday % 7];
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match chars.next() {
            Some('Y') => out.push_str(&t.year.to_string()),
            Some('y') => out.push_str(&format!("{:02}", t.year.rem_euclid(100))),
            Some('m') => out.push_str(&format!("{:02}", t.month)),
            Some('d') => out.push_str(&format!("{:02}", t.day)),
            Some('-') if chars.clone().next() == Some('d') => {
                chars.next();
                out.push_str(&t.day.to_string());
            }
            Some('j') => out.push_str(&format!("{:03}", t.yday + 1)),
            Some('B') => out.push_str(month),
            Some('b') => out.push_str(&month[..3]),
            Some('A') => out.push_str(day),
            Some('a') => out.push_str(&day[..3]),
            Some('H') => out.push_str(&format!("{:02}", t.hour)),
            Some('M') => out.push_str(&format!("{:02}", t.minute)),
            Some('S') => out.push_str(&format!("{:02}", t.second)),
            Some('%') => out.push('%'),
            other => {
                return Err(minijinja::Error::new(
                    minijinja::ErrorKind::InvalidOperation,
                    format!(
                        "strftime_now: %{} is not supported (supported: %Y %y %m %d %-d %j %B %b %A %a %H %M %S %%)",
                        other.map(String::from).unwrap_or_default()
                    ),
                ))
            }
        }
    }
    Ok(out)
}

/// A model directory's text files, read and checked together: the tokenizer, the stop
/// tokens and the chat template (where the model has one).
#[derive(Debug)]
pub struct TextIo {
    tokenizer: Tokenizer,
    stop_tokens: Vec<u32>,
    chat_template: Option<ChatTemplate>,
}

/// Reads a JSON object from `path`, or `None` if there is no such file.
fn json_object(path: &Path) -> Result<Option<serde_json::Map<String, Json>>> {
    let bytes = match std::fs::read(path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(Error::Io { path: display(path), source }),
    };
    match serde_json::from_slice::<Json>(&bytes) {
        Ok(Json::Object(map)) => Ok(Some(map)),
        Ok(other) => Err(bad(path, None, format_args!("a JSON object is needed, not {}", kind(&other)))),
        Err(e) => Err(bad(path, None, format_args!("not valid JSON: {e}"))),
    }
}

fn kind(v: &Json) -> &'static str {
    match v {
        Json::Null => "null",
        Json::Bool(_) => "a boolean",
        Json::Number(_) => "a number",
        Json::String(_) => "a string",
        Json::Array(_) => "a list",
        Json::Object(_) => "an object",
    }
}

/// `eos_token_id`: one id, a list of ids, or null (none).
fn token_ids(path: &Path, field: &str, v: &Json) -> Result<Option<Vec<u32>>> {
    let one = |x: &Json| {
        x.as_u64().and_then(|n| u32::try_from(n).ok()).ok_or_else(|| {
            bad(path, field, format_args!("a token id (a whole number from 0 to 2^32 - 1) is needed, not {x}"))
        })
    };
    match v {
        Json::Null => Ok(None),
        Json::Array(list) => Ok(Some(list.iter().map(one).collect::<Result<_>>()?)),
        x => Ok(Some(vec![one(x)?])),
    }
}

/// A special token of `tokenizer_config.json`: a string, an `AddedToken` object with a
/// `content`, or null.
fn special_token(path: &Path, field: &str, v: &Json) -> Result<Option<String>> {
    match v {
        Json::Null => Ok(None),
        Json::String(s) => Ok(Some(s.clone())),
        Json::Object(o) => match o.get("content") {
            Some(Json::String(s)) => Ok(Some(s.clone())),
            _ => Err(bad(path, format!("{field}.content").as_str(), "a string is needed (the token's text)")),
        },
        other => {
            Err(bad(path, field, format_args!("a string or an object with a `content` is needed, not {}", kind(other))))
        }
    }
}

impl TextIo {
    /// Reads `dir`'s `tokenizer.json`, the stop tokens of `generation_config.json`
    /// (`eos_token_id`; without the file or the field, `cfg.eos_token_ids` from `config.json`),
    /// and the chat template (`chat_template.jinja`, else `tokenizer_config.json`'s
    /// `chat_template`; a list of named templates gives the one named `default`), and checks
    /// that the tokenizer's ids fit `cfg.vocab_size`. A checkpoint's `vocab_size` may be larger
    /// than the tokenizer (padded for the hardware); never smaller.
    ///
    /// # Errors
    /// - [`Error::MissingTokenizer`] for a directory without `tokenizer.json`;
    /// - [`Error::TokenizerVocab`] for a tokenizer with ids at or above `cfg.vocab_size`;
    /// - [`Error::BadModelFile`] for a `tokenizer.json`, `tokenizer_config.json` or
    ///   `generation_config.json` that cannot be read as such, naming the file and the field;
    /// - [`Error::ChatTemplate`] for a template that does not compile;
    /// - [`Error::Io`] for a file that exists but cannot be read.
    pub fn from_dir(dir: impl AsRef<Path>, cfg: &Config) -> Result<Self> {
        let dir = dir.as_ref();
        let tok_path = dir.join("tokenizer.json");
        let bytes = match std::fs::read(&tok_path) {
            Ok(b) => b,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return Err(Error::MissingTokenizer { dir: display(dir) })
            }
            Err(source) => return Err(Error::Io { path: display(&tok_path), source }),
        };
        let tokenizer = Tokenizer::from_bytes(&bytes, &tok_path)?;
        if tokenizer.vocab_size() > cfg.vocab_size {
            return Err(Error::TokenizerVocab {
                path: display(&tok_path),
                tokens: tokenizer.vocab_size(),
                vocab_size: cfg.vocab_size,
            });
        }

        let gen_path = dir.join("generation_config.json");
        let stop_tokens = match json_object(&gen_path)? {
            Some(map) => match map.get("eos_token_id") {
                Some(v) => token_ids(&gen_path, "eos_token_id", v)?,
                None => None,
            },
            None => None,
        }
        .unwrap_or_else(|| cfg.eos_token_ids.clone());

        let tc_path = dir.join("tokenizer_config.json");
        let tc = json_object(&tc_path)?;
        let mut tokens = BTreeMap::new();
        if let Some(map) = &tc {
            for field in ["bos_token", "eos_token", "unk_token", "pad_token"] {
                if let Some(v) = map.get(field) {
                    if let Some(t) = special_token(&tc_path, field, v)? {
                        tokens.insert(field.to_string(), t);
                    }
                }
            }
        }
        let jinja_path = dir.join("chat_template.jinja");
        let chat_template = match std::fs::read(&jinja_path) {
            Ok(b) => {
                let source =
                    String::from_utf8(b).map_err(|e| bad(&jinja_path, None, format_args!("not UTF-8 text: {e}")))?;
                Some(ChatTemplate::new(&source, &jinja_path, None, tokens)?)
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match tc.as_ref().and_then(|m| m.get(TEMPLATE)) {
                None | Some(Json::Null) => None,
                Some(Json::String(s)) => Some(ChatTemplate::new(s, &tc_path, Some(TEMPLATE), tokens)?),
                Some(Json::Array(list)) => {
                    let named = list.iter().find(|t| t.get("name").and_then(Json::as_str) == Some("default"));
                    match named.and_then(|t| t.get("template")) {
                        Some(Json::String(s)) => {
                            Some(ChatTemplate::new(s, &tc_path, Some("chat_template[default]"), tokens)?)
                        }
                        _ => {
                            return Err(bad(
                                &tc_path,
                                TEMPLATE,
                                "a list of named templates needs one named \"default\" with a string `template`",
                            ))
                        }
                    }
                }
                Some(other) => {
                    return Err(bad(
                        &tc_path,
                        TEMPLATE,
                        format_args!("a string (or a list of named templates) is needed, not {}", kind(other)),
                    ))
                }
            },
            Err(source) => return Err(Error::Io { path: display(&jinja_path), source }),
        };
        Ok(Self { tokenizer, stop_tokens, chat_template })
    }

    /// The tokenizer.
    pub fn tokenizer(&self) -> &Tokenizer {
        &self.tokenizer
    }

    /// The tokens that end a sequence: give them to
    /// [`Generator::with_stop_tokens`](crate::generate::Generator::with_stop_tokens) or
    /// [`generate_eager`](crate::generate::generate_eager).
    pub fn stop_tokens(&self) -> &[u32] {
        &self.stop_tokens
    }

    /// The chat template, if the model has one.
    pub fn chat_template(&self) -> Option<&ChatTemplate> {
        self.chat_template.as_ref()
    }

    /// Plain text as a prompt: encoded with the tokenizer's special tokens.
    ///
    /// # Errors
    /// As [`Tokenizer::encode`].
    pub fn prompt(&self, text: &str) -> Result<Vec<u32>> {
        self.tokenizer.encode(text, true)
    }

    /// A chat as a prompt: rendered by the chat template with the generation prompt, then
    /// encoded without adding special tokens (the template writes them), as transformers'
    /// `apply_chat_template` does.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] if the model has no chat template; as
    /// [`ChatTemplate::render`] and [`Tokenizer::encode`].
    pub fn chat_prompt(&self, messages: &[Message]) -> Result<Vec<u32>> {
        let Some(t) = &self.chat_template else {
            return Err(Error::invalid(
                "chat template",
                "none",
                format!(
                    "a model with a chat template (`chat_template` in tokenizer_config.json, or chat_template.jinja, \
                     beside {}); give this one plain text",
                    self.tokenizer.path.display()
                ),
            ));
        };
        self.tokenizer.encode(&t.render(messages, true)?, false)
    }

    /// Decodes generated ids into text, special tokens (the stop token) left out.
    ///
    /// # Errors
    /// As [`Tokenizer::decode`].
    pub fn decode(&self, ids: &[u32]) -> Result<String> {
        self.tokenizer.decode(ids, true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        let t = civil(0);
        assert_eq!((t.year, t.month, t.day, t.weekday), (1970, 1, 1, 4));
        // 2024-02-29 12:34:56 UTC, a Thursday.
        let t = civil(1_709_210_096);
        assert_eq!((t.year, t.month, t.day, t.hour, t.minute, t.second, t.weekday), (2024, 2, 29, 12, 34, 56, 4));
        assert_eq!(strftime("%d %b %Y, %A %H:%M:%S %j %%", t).unwrap(), "29 Feb 2024, Thursday 12:34:56 060 %");
        assert!(strftime("%Q", civil(0)).is_err());
    }
}
