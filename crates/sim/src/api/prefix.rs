//! The prefix cache of the simulated vLLM: which leading blocks of a prompt the server has
//! computed before. Like vLLM, a prompt is cut into blocks of `block_size` tokens, each block's
//! hash chains the one before, and a hit is a run of leading full blocks already cached, never
//! the prompt's last token (vLLM computes at least one token of every prompt). Blocks are kept
//! until the pool's worth of newer ones has pushed them out. Tokens here are the simulator's:
//! one per word of a text prompt, one per id of a token-id prompt.

use std::collections::hash_map::DefaultHasher;
use std::collections::{HashSet, VecDeque};
use std::hash::{Hash, Hasher};

/// The chained hashes of a prompt's full blocks, in order.
pub fn block_hashes<T: Hash>(tokens: &[T], block_size: u32) -> Vec<u64> {
    let size = block_size.max(1) as usize;
    let mut out = Vec::with_capacity(tokens.len() / size);
    let mut parent = 0u64;
    for block in tokens.chunks_exact(size) {
        let mut h = DefaultHasher::new();
        parent.hash(&mut h);
        block.hash(&mut h);
        parent = h.finish();
        out.push(parent);
    }
    out
}

/// One engine's cached blocks, the oldest first out.
#[derive(Debug, Default)]
pub struct PrefixCache {
    blocks: HashSet<u64>,
    order: VecDeque<u64>,
    capacity: usize,
}

impl PrefixCache {
    /// A cache of at most `capacity` blocks (the pool's usable blocks); 0 caches nothing
    /// (`--no-enable-prefix-caching`).
    pub fn new(capacity: usize) -> PrefixCache {
        PrefixCache {
            capacity,
            ..PrefixCache::default()
        }
    }

    /// Forgets every cached block (a successful reset): the next prompts miss.
    pub fn clear(&mut self) {
        self.blocks.clear();
        self.order.clear();
    }

    /// The prompt tokens served from the cache for a prompt of `prompt_tokens` tokens whose full
    /// blocks hash to `hashes`; then its blocks are cached.
    pub fn lookup_and_insert(
        &mut self,
        hashes: &[u64],
        prompt_tokens: u32,
        block_size: u32,
    ) -> u32 {
        if self.capacity == 0 {
            return 0;
        }
        let hit = self.run_from(hashes, 0, usable_blocks(prompt_tokens, block_size));
        self.insert(hashes);
        hit as u32 * block_size
    }

    /// How many of `hashes[from..usable]` are cached, counted from `from` up to the first miss.
    pub fn run_from(&self, hashes: &[u64], from: usize, usable: usize) -> usize {
        hashes
            .iter()
            .take(usable)
            .skip(from)
            .take_while(|h| self.blocks.contains(h))
            .count()
    }

    /// Caches the blocks, the oldest pushed out past the capacity; returns how many were new.
    pub fn insert(&mut self, hashes: &[u64]) -> usize {
        if self.capacity == 0 {
            return 0;
        }
        let mut new = 0;
        for &h in hashes {
            if self.blocks.insert(h) {
                self.order.push_back(h);
                new += 1;
            }
        }
        while self.order.len() > self.capacity {
            if let Some(old) = self.order.pop_front() {
                self.blocks.remove(&old);
            }
        }
        new
    }
}

/// The leading full blocks of a prompt a cache may serve: the last token is always computed,
/// so a prompt of exactly k blocks may hit k - 1 at most.
pub fn usable_blocks(prompt_tokens: u32, block_size: u32) -> usize {
    (prompt_tokens.saturating_sub(1) / block_size.max(1)) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_prompt_hits_its_full_blocks_but_never_its_last_token() {
        let words: Vec<String> = (0..300).map(|i| format!("w{i}")).collect();
        let h = block_hashes(&words, 128);
        assert_eq!(h.len(), 2);
        let mut c = PrefixCache::new(100);
        assert_eq!(c.lookup_and_insert(&h, 300, 128), 0);
        // The recording's 300-token prompts hit 2 blocks of 128 on their second pass.
        assert_eq!(c.lookup_and_insert(&h, 300, 128), 256);
        // A prompt of exactly 2 blocks keeps its last token to compute: 1 block.
        let two = block_hashes(&words[..256], 128);
        assert_eq!(c.lookup_and_insert(&two, 256, 128), 128);
        // Shorter than a block: nothing to hit.
        assert_eq!(
            c.lookup_and_insert(&block_hashes(&words[..100], 128), 100, 128),
            0
        );
    }

    #[test]
    fn a_cleared_cache_misses_until_the_prompt_is_seen_again() {
        let a: Vec<u32> = (0..100).collect();
        let h = block_hashes(&a, 16);
        let mut c = PrefixCache::new(100);
        c.lookup_and_insert(&h, 100, 16);
        c.clear();
        assert_eq!(c.lookup_and_insert(&h, 100, 16), 0);
        assert_eq!(c.lookup_and_insert(&h, 100, 16), 96);
    }

    #[test]
    fn another_prefix_misses_and_old_blocks_are_pushed_out() {
        let a: Vec<u32> = (0..256).collect();
        let b: Vec<u32> = (1000..1256).collect();
        let mut c = PrefixCache::new(2);
        c.lookup_and_insert(&block_hashes(&a, 128), 257, 128);
        assert_eq!(c.lookup_and_insert(&block_hashes(&b, 128), 257, 128), 0);
        // b's two blocks pushed a's out.
        assert_eq!(c.lookup_and_insert(&block_hashes(&a, 128), 257, 128), 0);
        assert_eq!(
            PrefixCache::new(0).lookup_and_insert(&block_hashes(&a, 128), 257, 128),
            0
        );
    }
}
