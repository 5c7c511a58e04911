//! The simulated engines by key: the one place that names them all. The generic layers ask it
//! for an engine's [`Surface`] and its flags; each engine's folder implements the rest.

use inferlint_core::Engine;

use crate::settings::EngineOptions;
use crate::surface::Surface;
use crate::{sglang, trtllm, vllm};

/// The engine `engine` as the simulator shows it.
pub fn surface(engine: Engine) -> &'static dyn Surface {
    match engine {
        Engine::Vllm => &vllm::surface::Vllm,
        Engine::Sglang => &sglang::surface::Sglang,
        Engine::Trtllm => &trtllm::surface::Trtllm,
        // `sim serve --engine` refuses llama.cpp before a configuration exists.
        Engine::Llamacpp => unreachable!("the simulator has no llama.cpp"),
    }
}

// Every engine's own flags, in `sim serve --help`'s order (no doc comment: clap would take a
// flattened struct's as the command's description).
#[derive(clap::Args, Debug, Clone, Default)]
pub struct EngineFlags {
    #[command(flatten)]
    pub sglang: sglang::SglangArgs,
    #[command(flatten)]
    pub trtllm: trtllm::TrtllmArgs,
}

impl EngineFlags {
    /// What the engines' flags set, read once (a TensorRT-LLM `--config` file that cannot be
    /// read or parsed is an error naming it, whatever the engine).
    pub fn options(&self) -> Result<EngineOptions, String> {
        let mut options = EngineOptions::default();
        self.sglang.apply(&mut options);
        self.trtllm.apply(&mut options)?;
        Ok(options)
    }
}
