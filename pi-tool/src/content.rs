//! What a tool returns to the model: text and image blocks, and token usage.

use serde::{Deserialize, Serialize};

/// One block of a tool result, as the model sees it.
///
/// Serializes exactly as pi's content blocks:
/// `{"type":"text","text":".."}` and `{"type":"image","data":"<base64>","mimeType":"image/png"}`.
///
/// Not `#[non_exhaustive]`, on purpose: every provider and host must send every kind of block
/// to the model, so a new kind is a change each of them has to make (a `_` arm would drop the
/// block silently).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum Content {
    /// Plain text.
    Text {
        /// The text itself.
        text: String,
    },
    /// An image, base64-encoded.
    Image {
        /// The image bytes, base64-encoded (standard alphabet, with padding).
        data: String,
        /// The MIME type, e.g. `image/png`.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
}

impl Content {
    /// A text block.
    pub fn text(text: impl Into<String>) -> Self {
        Content::Text { text: text.into() }
    }

    /// An image block from already base64-encoded data.
    pub fn image(data: impl Into<String>, mime_type: impl Into<String>) -> Self {
        Content::Image {
            data: data.into(),
            mime_type: mime_type.into(),
        }
    }

    /// The text of a text block, `None` for an image.
    pub fn as_text(&self) -> Option<&str> {
        match self {
            Content::Text { text } => Some(text),
            Content::Image { .. } => None,
        }
    }
}

impl From<String> for Content {
    fn from(text: String) -> Self {
        Content::Text { text }
    }
}

impl From<&str> for Content {
    fn from(text: &str) -> Self {
        Content::text(text)
    }
}

/// Token usage and cost, pi's `Usage` shape (`cacheRead`, `totalTokens`, ...).
///
/// A tool that itself calls a model can report what it spent in [`ToolResult::usage`](crate::ToolResult::usage).
///
/// Built with [`Usage::new`] (or `Default`) and the `with_*` methods; `#[non_exhaustive]`, so a
/// field added later (a kind of token) is not a breaking change.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct Usage {
    /// Input (prompt) tokens.
    pub input: u64,
    /// Output (completion) tokens.
    pub output: u64,
    /// Tokens read from a prompt cache.
    pub cache_read: u64,
    /// Tokens written to a prompt cache.
    pub cache_write: u64,
    /// All tokens counted by the provider.
    pub total_tokens: u64,
    /// Cost in US dollars.
    pub cost: Cost,
}

/// Cost in US dollars, split like [`Usage`]. Built with [`Cost::new`] (or `Default`) and the
/// `with_*` methods; `#[non_exhaustive]`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
#[non_exhaustive]
pub struct Cost {
    /// Cost of input tokens.
    pub input: f64,
    /// Cost of output tokens.
    pub output: f64,
    /// Cost of cache reads.
    pub cache_read: f64,
    /// Cost of cache writes.
    pub cache_write: f64,
    /// Total cost.
    pub total: f64,
}

impl Usage {
    /// `input` and `output` tokens, counted in `total_tokens` too; no cache, no cost.
    pub fn new(input: u64, output: u64) -> Self {
        Usage {
            input,
            output,
            total_tokens: input + output,
            ..Usage::default()
        }
    }

    /// Sets the tokens read from and written to a prompt cache (`total_tokens` is left as is).
    #[must_use]
    pub fn with_cache(mut self, cache_read: u64, cache_write: u64) -> Self {
        self.cache_read = cache_read;
        self.cache_write = cache_write;
        self
    }

    /// Sets [`total_tokens`](Self::total_tokens), as the provider counted them.
    #[must_use]
    pub fn with_total_tokens(mut self, total_tokens: u64) -> Self {
        self.total_tokens = total_tokens;
        self
    }

    /// Sets [`cost`](Self::cost).
    #[must_use]
    pub fn with_cost(mut self, cost: Cost) -> Self {
        self.cost = cost;
        self
    }

    /// Adds another usage to this one, field by field.
    pub fn add(&mut self, other: &Usage) {
        self.input += other.input;
        self.output += other.output;
        self.cache_read += other.cache_read;
        self.cache_write += other.cache_write;
        self.total_tokens += other.total_tokens;
        self.cost.input += other.cost.input;
        self.cost.output += other.cost.output;
        self.cost.cache_read += other.cost.cache_read;
        self.cost.cache_write += other.cost.cache_write;
        self.cost.total += other.cost.total;
    }
}

impl Cost {
    /// The cost of input and output tokens, in US dollars; `total` is their sum.
    pub fn new(input: f64, output: f64) -> Self {
        Cost {
            input,
            output,
            total: input + output,
            ..Cost::default()
        }
    }

    /// Sets the cost of cache reads and writes; `total` becomes the sum of all four.
    #[must_use]
    pub fn with_cache(mut self, cache_read: f64, cache_write: f64) -> Self {
        self.cache_read = cache_read;
        self.cache_write = cache_write;
        self.total = self.input + self.output + cache_read + cache_write;
        self
    }
}
