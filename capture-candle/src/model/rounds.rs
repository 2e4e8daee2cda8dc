//! How a prefill cuts its prompts into rounds ([`PrefillRounds`]).

use crate::error::{Error, Result};

/// How [`Model::prefill_rows`](super::Model::prefill_rows) cuts its prompts into rounds: a
/// round takes at most [`row_tokens`](Self::row_tokens) tokens of each row, and at most
/// [`token_rows`](Self::token_rows) token rows in all (one token a row where its span has more
/// rows than that). A round's activations grow with its token rows; each round reads every
/// weight once, so fewer, larger rounds read them fewer times and give the products and the
/// tiled attention more work a launch.
///
/// The default is 2,048 of both: a single prompt of up to 2,049 tokens takes one round, and a
/// batch of 8 rounds of 256 tokens a row. Before 2026-12-02's fourth session a round took at most 256 tokens a
/// row at every batch (`PrefillRounds::new(2048, 256)`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, crate::Resources)]
pub struct PrefillRounds {
    token_rows: usize,
    row_tokens: usize,
}

impl PrefillRounds {
    /// The most tokens a row a round: the attention kernels' limit a call.
    pub const MAX_ROW_TOKENS: usize = 65_535;

    /// Rounds of at most `token_rows` token rows and `row_tokens` tokens a row.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for a `token_rows` of 0, or a `row_tokens` of 0 or past
    /// [`MAX_ROW_TOKENS`](Self::MAX_ROW_TOKENS).
    pub fn new(token_rows: usize, row_tokens: usize) -> Result<Self> {
        if token_rows == 0 {
            return Err(Error::invalid("prefill token rows a round", token_rows, "at least 1"));
        }
        if !(1..=Self::MAX_ROW_TOKENS).contains(&row_tokens) {
            return Err(Error::invalid(
                "prefill tokens a row a round",
                row_tokens,
                format!("from 1 to {}", Self::MAX_ROW_TOKENS),
            ));
        }
        Ok(Self { token_rows, row_tokens })
    }

    /// The most token rows a round.
    pub fn token_rows(&self) -> usize {
        self.token_rows
    }

    /// The most tokens a row a round.
    pub fn row_tokens(&self) -> usize {
        self.row_tokens
    }

    /// Tokens a row in a round over a span of `rows` rows whose busy rows have at least
    /// `fewest_left` tokens left (at least 1 when `fewest_left` is).
    pub(crate) fn tokens(&self, rows: usize, fewest_left: usize) -> usize {
        fewest_left.min(self.row_tokens).min((self.token_rows / rows.max(1)).max(1))
    }
}

impl Default for PrefillRounds {
    fn default() -> Self {
        Self { token_rows: 2048, row_tokens: 2048 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_take_the_fewest_left_the_row_cap_and_the_rows_share() {
        let r = PrefillRounds::default();
        assert_eq!(r.tokens(1, 5000), 2048, "one row: the whole budget");
        assert_eq!(r.tokens(1, 700), 700, "the fewest left");
        assert_eq!(r.tokens(8, 5000), 256, "8 rows share 2,048");
        assert_eq!(r.tokens(3000, 5000), 1, "more rows than the budget: one token a row");
        let old = PrefillRounds::new(2048, 256).unwrap();
        assert_eq!(old.tokens(1, 5000), 256, "the cap a row");
        assert_eq!(old.tokens(32, 5000), 64);
        assert_eq!(PrefillRounds::new(1, 1).unwrap().tokens(1, 9), 1);
    }

    #[test]
    fn bad_rounds_are_refused_with_what_to_pass() {
        for (rows, row) in [(0, 16), (16, 0), (16, PrefillRounds::MAX_ROW_TOKENS + 1)] {
            let e = PrefillRounds::new(rows, row).unwrap_err();
            assert!(matches!(e, Error::InvalidArgument { .. }), "{rows}, {row}: {e}");
            assert!(e.to_string().contains("at least 1") || e.to_string().contains("from 1 to 65535"), "{e}");
        }
        assert!(PrefillRounds::new(1, PrefillRounds::MAX_ROW_TOKENS).is_ok());
    }
}
