//! Errors of the candle integration.

/// A result whose error is this crate's [`Error`].
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// What went wrong, and what to do about it.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The candle device is not a CUDA device.
    #[error("candle device {device} is not a CUDA device: capture needs `Device::new_cuda_with_stream(ordinal)`")]
    NotCuda {
        /// The device, as candle describes it.
        device: String,
    },
    /// The candle device runs on the per-thread default stream, which cannot be captured
    /// alongside other work.
    #[error(
        "this candle device uses the per-thread default stream (candle's `Device::new_cuda`); \
         create it with `Device::new_cuda_with_stream(ordinal)` so its work runs on a stream of its own that can be captured"
    )]
    DefaultStream,
    /// The capture left graph memory allocated: a tensor created during the capture was
    /// still alive when it finished.
    #[error(
        "the captured step left {unfreed} graph allocation(s) alive at `finish` ({allocs} allocation node(s), {frees} free node(s)): \
         a tensor created during the capture (the step's result, say) is still held. Copy results into tensors \
         created before the capture (`Tensor::slice_set`) and drop every tensor the step created before `finish()`. \
         The refused graph ran once before it was destroyed, so dropping the tensor frees its memory"
    )]
    UnfreedGraphMemory {
        /// Allocation nodes in the graph.
        allocs: usize,
        /// Free nodes in the graph.
        frees: usize,
        /// Allocations without a free.
        unfreed: usize,
    },
    /// A tensor handed to a graph lives on another candle device than the stream being
    /// captured: each candle device has its own stream, which the capture does not record.
    #[error(
        "{what} lives on another candle device than the captured stream's: candle runs its work on that device's own \
         stream, which this capture does not record (its kernels would run once and never replay; its allocations fail \
         the capture). Create the `CandleStream` from the same `Device` the model and tensors were made on (each \
         `Device::new_cuda_with_stream` call is a new device), or move the tensor onto the stream's device first \
         (`tensor.to_device(&Device::Cuda(stream.device().clone()))`)"
    )]
    OtherDevice {
        /// The tensor, described.
        what: String,
    },
    /// The captured step recorded no work on the captured stream: its graph holds graph
    /// allocations, frees, event records or waits and empty nodes at most. Replaying its graph would do nothing, and every
    /// result the step should write would stay as it was.
    #[error(
        "the captured step recorded no work on the captured stream ({nodes} node(s) in the graph, all of them graph \
         allocations, frees, events or empty nodes): replaying it would do nothing. Its work ran \
         elsewhere (a tensor of another candle device or of the CPU, which the closure captured rather than took \
         from the resources, runs on that device's own stream, once, and never replays) or the step does nothing. \
         Make the step's tensors on the stream's own `Device` and pass them in the resources, which are checked"
    )]
    EmptyStep {
        /// Nodes in the graph (0 when the capture recorded none, which capture-core calls
        /// `EmptyCapture`).
        nodes: usize,
    },
    /// Tensors on the CPU larger than the memory and swap this process can have (the
    /// machine's, within its cgroup's limits): the allocation would abort the process or get
    /// it killed.
    #[error(
        "{what} needs {bytes} bytes of host memory, more than this process can have in all ({total} bytes of memory \
         and swap, within its cgroup's limits): the allocation would abort the process or get it killed. Use a \
         smaller dtype (bf16 halves f32), a smaller model, a smaller max_seq or batch for caches, or a CUDA device"
    )]
    HostMemory {
        /// What was to be allocated.
        what: &'static str,
        /// Its bytes.
        bytes: u64,
        /// The memory and swap this process can have, in bytes.
        total: u64,
    },
    /// An argument out of range: a size, a dtype, a sampling parameter.
    #[error("{what} = {value} is not valid: expected {expected}")]
    InvalidArgument {
        /// What was given.
        what: &'static str,
        /// Its value, printed.
        value: String,
        /// What is accepted.
        expected: String,
    },
    /// Tensors handed to a decode op do not fit together.
    #[error("{op}: {detail}")]
    BadOperands {
        /// The op.
        op: &'static str,
        /// What does not fit.
        detail: String,
    },
    /// A prompt longer than the KV cache.
    #[error("a prompt of {len} tokens does not fit a KV cache of {max_seq} positions: shorten it, or build the model with a larger max_seq")]
    PromptTooLong {
        /// Prompt length.
        len: usize,
        /// Cache positions.
        max_seq: usize,
    },
    /// More sequences than the largest batch bucket.
    #[error("a batch of {size} sequences is larger than the largest bucket ({largest}): split it, or capture a larger bucket")]
    BatchTooLarge {
        /// Sequences asked for.
        size: usize,
        /// The largest bucket.
        largest: usize,
    },
    /// A config field with a value the model does not support.
    #[error("config.json: {field} = {value} is not supported (supported: {supported})")]
    UnsupportedConfig {
        /// The field, as `config.json` names it.
        field: &'static str,
        /// Its value.
        value: String,
        /// What is supported.
        supported: &'static str,
    },
    /// A config field this crate does not know for the config's `model_type`.
    #[error(
        "config.json: the field `{field}` is not one this crate knows for this model_type (it may come from an \
         older or newer transformers, or from another model): find out what it changes; if it leaves the \
         computation as it is, delete it from config.json, otherwise the model is not supported"
    )]
    UnknownConfigField {
        /// The field, as `config.json` names it (`rope_parameters.beta_fast` inside an object).
        field: String,
    },
    /// Two fields that give one setting (transformers 4's form and transformers 5's, say)
    /// disagree.
    #[error(
        "config.json: {field} = {value} but {other} = {other_value}: both give one setting and they disagree; \
         keep the right value in one of them and delete the other"
    )]
    ConflictingConfig {
        /// One field, as `config.json` names it.
        field: &'static str,
        /// Its value.
        value: String,
        /// The other field.
        other: &'static str,
        /// Its value.
        other_value: String,
    },
    /// A config that cannot be read or is missing a field.
    #[error("config.json: {0}")]
    Config(String),
    /// A weight missing from the checkpoint.
    #[error("weights: tensor `{name}` is missing from the checkpoint")]
    MissingWeight {
        /// Its name in the Hugging Face layout.
        name: String,
    },
    /// A weight whose shape does not match the config.
    #[error("weights: tensor `{name}` has shape {found:?}, but the config needs {expected:?}")]
    WeightShape {
        /// Its name.
        name: String,
        /// What the config implies.
        expected: Vec<usize>,
        /// What the checkpoint holds.
        found: Vec<usize>,
    },
    /// A weight whose dtype does not match the config's `dtype` (or `torch_dtype`).
    #[error("weights: tensor `{name}` is {found}, but config.json says dtype (or torch_dtype) = {expected}")]
    WeightDtype {
        /// Its name.
        name: String,
        /// The config's dtype.
        expected: String,
        /// The checkpoint's.
        found: String,
    },
    /// A file that could not be read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// Why.
        source: std::io::Error,
    },
    /// A model directory without `tokenizer.json`, which text in and out needs.
    #[error(
        "{dir}: there is no tokenizer.json, which text prompts and text output need: copy the tokenizer.json \
         of the model's Hugging Face repository into this directory (for a model that has only a SentencePiece \
         tokenizer.model, transformers' `AutoTokenizer.from_pretrained(dir).save_pretrained(dir)` writes one), \
         or give the prompt as token ids"
    )]
    MissingTokenizer {
        /// The model directory.
        dir: String,
    },
    /// A tokenizer with token ids the model has no embedding for.
    #[error(
        "{path}: the tokenizer has {tokens} token ids (added tokens included), but config.json's vocab_size is \
         {vocab_size}: the model has no embedding for ids from {vocab_size} on, so this tokenizer is not the \
         model's. Use the tokenizer.json of the model's own repository (a vocab_size above the tokenizer's is \
         fine: checkpoints pad it)"
    )]
    TokenizerVocab {
        /// The tokenizer file.
        path: String,
        /// One above its largest id.
        tokens: usize,
        /// The config's `vocab_size`.
        vocab_size: usize,
    },
    /// A model-directory file (`tokenizer.json`, `tokenizer_config.json`,
    /// `generation_config.json`, `chat_template.jinja`) that is not as transformers writes it.
    #[error(
        "{path}{}: {detail}. The file is not as transformers writes it: download it again from the model's \
         repository, or fix {}",
        field_part(field), if field.is_some() { "that field" } else { "the file" }
    )]
    BadModelFile {
        /// The file.
        path: String,
        /// The field, where one is wrong (`None`: the file as a whole).
        field: Option<String>,
        /// What is wrong.
        detail: String,
    },
    /// A chat template that fails to compile or to render.
    #[error(
        "{path}{}: the chat template failed {stage}: {detail}. Fix the template (transformers \
         renders it with Jinja2, trim_blocks and lstrip_blocks on), or give the prompt as plain text instead \
         of a chat",
        field_part(field)
    )]
    ChatTemplate {
        /// The file it came from (`tokenizer_config.json` or `chat_template.jinja`).
        path: String,
        /// The field (`chat_template`; `None` for `chat_template.jinja`, all of which is the
        /// template).
        field: Option<String>,
        /// `to compile` or `to render`.
        stage: &'static str,
        /// The template engine's error, with the line.
        detail: String,
    },
    /// The tokenizer failed on an input.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// One of the two captures of [`CandleStream::capture_diff`](crate::CandleStream::capture_diff)
    /// failed: the step cannot be captured at all, which the error it carries names.
    #[error("capture {run} of the two a capture diff makes failed, so the graphs cannot be compared: {source}")]
    DiffCaptureFailed {
        /// Which capture failed: 1 (the first) or 2 (after the host inputs changed).
        run: u8,
        /// Why it failed.
        source: Box<Error>,
    },
    /// An error from capture-core: the capture, the graph or the stream.
    #[error(transparent)]
    Capture(#[from] capture_core::Error),
    /// An error from candle, raised by the step.
    #[error("candle: {0}")]
    Candle(#[from] candle_core::Error),
}

/// `, field `name`` for a message, or nothing.
fn field_part(field: &Option<String>) -> String {
    field.as_ref().map(|f| format!(", field `{f}`")).unwrap_or_default()
}

impl Error {
    pub(crate) fn invalid(what: &'static str, value: impl std::fmt::Display, expected: impl Into<String>) -> Self {
        Error::InvalidArgument { what, value: value.to_string(), expected: expected.into() }
    }
    pub(crate) fn operands(op: &'static str, detail: impl Into<String>) -> Self {
        Error::BadOperands { op, detail: detail.into() }
    }
}
