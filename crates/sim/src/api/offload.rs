//! vLLM's native KV offloading as the simulated vLLM runs it (`--kv-offloading-size`,
//! docs/design/engines.md#kv-offloading): the `OffloadingConnector` with its CPU spec stores
//! every full prompt block in CPU memory once it is computed (a block it holds already is not
//! stored again), and when a request is admitted, the prompt's blocks past the GPU's own prefix
//! hit are asked of the connector: the run of them it holds is loaded back instead of computed.
//! Its pool keeps the newest blocks, as the GPU's does. With `--kv-offload-never-loads` the
//! lookup finds nothing: every block is stored and none comes back.

use super::prefix::{usable_blocks, PrefixCache};

/// KV bytes per token of the simulated model (Qwen3-0.6B in bf16: 28 layers × 8 KV heads × 128
/// dimensions × 2 for K and V × 2 bytes), what one block's transfer moves per token.
pub const KV_BYTES_PER_TOKEN: u64 = 114_688;

/// Seconds one byte takes to cross PCIe at the simulated 25 GB/s, for the transfer-time counters.
const SECONDS_PER_BYTE: f64 = 1.0 / 25e9;

/// What the connector did for one admitted request, in vLLM's units.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct OffloadStep {
    /// Prompt tokens asked of the connector: those past the GPU's own hit
    /// (`vllm:external_prefix_cache_queries`; 0 asks nothing and records nothing).
    pub queried_tokens: u32,
    /// Of them, the tokens it loaded back (`vllm:external_prefix_cache_hits`).
    pub hit_tokens: u32,
    /// Bytes stored GPU → CPU and loaded CPU → GPU, and the seconds each took.
    pub stored_bytes: u64,
    pub loaded_bytes: u64,
    pub store_s: f64,
    pub load_s: f64,
}

/// One engine's offload pool.
#[derive(Debug)]
pub struct Offload {
    pool: PrefixCache,
    block_bytes: u64,
    never_loads: bool,
}

impl Offload {
    /// A pool of `gib` GiB of blocks of `block_size` tokens.
    pub fn new(gib: f64, block_size: u32, never_loads: bool) -> Offload {
        let block_bytes = KV_BYTES_PER_TOKEN * u64::from(block_size.max(1));
        let blocks = (gib * f64::from(1u32 << 30) / block_bytes as f64).floor() as usize;
        Offload {
            pool: PrefixCache::new(blocks.max(1)),
            block_bytes,
            never_loads,
        }
    }

    /// A request of `prompt_tokens` tokens whose full blocks hash to `hashes` is admitted with
    /// `gpu_hit` of them served by the GPU's prefix cache: the blocks loaded back after that
    /// hit, then every full block stored that the pool did not hold.
    pub fn admit(
        &mut self,
        hashes: &[u64],
        prompt_tokens: u32,
        block_size: u32,
        gpu_hit: u32,
    ) -> OffloadStep {
        let from = (gpu_hit / block_size.max(1)) as usize;
        let queried = prompt_tokens.saturating_sub(gpu_hit);
        let loaded = if self.never_loads {
            0
        } else {
            self.pool
                .run_from(hashes, from, usable_blocks(prompt_tokens, block_size))
        };
        let stored = self.pool.insert(hashes);
        let (stored_bytes, loaded_bytes) = (
            stored as u64 * self.block_bytes,
            loaded as u64 * self.block_bytes,
        );
        OffloadStep {
            queried_tokens: queried,
            hit_tokens: loaded as u32 * block_size,
            stored_bytes,
            loaded_bytes,
            store_s: stored_bytes as f64 * SECONDS_PER_BYTE,
            load_s: loaded_bytes as f64 * SECONDS_PER_BYTE,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::prefix::block_hashes;

    #[test]
    fn a_prompt_the_gpu_lost_loads_back_and_a_new_one_is_stored() {
        let a: Vec<u32> = (0..64).collect();
        let h = block_hashes(&a, 16);
        let mut o = Offload::new(1.0, 16, false);
        let first = o.admit(&h, 64, 16, 0);
        assert_eq!(first.stored_bytes, 4 * 16 * KV_BYTES_PER_TOKEN);
        assert_eq!(
            (first.loaded_bytes, first.hit_tokens, first.queried_tokens),
            (0, 0, 64)
        );
        // The GPU lost it: three blocks (never the last token's) come back, none is stored.
        let again = o.admit(&h, 64, 16, 0);
        assert_eq!((again.hit_tokens, again.stored_bytes), (48, 0));
        assert_eq!(again.loaded_bytes, 3 * 16 * KV_BYTES_PER_TOKEN);
        // The GPU kept two blocks: the connector is asked for the rest and loads one.
        let part = o.admit(&h, 64, 16, 32);
        assert_eq!((part.queried_tokens, part.hit_tokens), (32, 16));
    }

    #[test]
    fn a_lookup_that_never_hits_stores_and_never_loads() {
        let a: Vec<u32> = (0..64).collect();
        let h = block_hashes(&a, 16);
        let mut o = Offload::new(1.0, 16, true);
        o.admit(&h, 64, 16, 0);
        let again = o.admit(&h, 64, 16, 0);
        assert_eq!(
            (again.loaded_bytes, again.hit_tokens, again.stored_bytes),
            (0, 0, 0)
        );
    }
}
