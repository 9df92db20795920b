//! The engine's prefix cache: which tokens the model's KV cache holds, and how much of the
//! next prompt they can serve, so a turn computes only what is new.

/// The tokens whose keys and values are in the model's cache, in order.
#[derive(Debug, Default, Clone)]
pub struct PrefixCache {
    tokens: Vec<u32>,
}

impl PrefixCache {
    pub fn tokens(&self) -> &[u32] {
        &self.tokens
    }

    /// How many leading tokens of `prompt` are already cached. At least one prompt token is
    /// always left to compute, because the next token's logits come from the last one.
    pub fn reusable_prefix(&self, prompt: &[u32]) -> usize {
        let common = self
            .tokens
            .iter()
            .zip(prompt)
            .take_while(|(a, b)| a == b)
            .count();
        common.min(prompt.len().saturating_sub(1))
    }

    pub fn truncate(&mut self, len: usize) {
        self.tokens.truncate(len);
    }

    pub fn extend(&mut self, tokens: &[u32]) {
        self.tokens.extend_from_slice(tokens);
    }

    pub fn clear(&mut self) {
        self.tokens.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reuse_is_the_common_prefix_but_leaves_one_token() {
        let mut c = PrefixCache::default();
        c.extend(&[1, 2, 3, 4]);
        assert_eq!(c.reusable_prefix(&[1, 2, 3, 4, 5, 6]), 4);
        assert_eq!(c.reusable_prefix(&[1, 2, 9, 4]), 2);
        assert_eq!(c.reusable_prefix(&[1, 2, 3, 4]), 3);
        assert_eq!(c.reusable_prefix(&[7]), 0);
    }
}
