//! The simulated vLLM (`sim serve`, the default engine): its process titles (`VLLM::EngineCore`,
//! `VLLM::Worker_TP{n}`, `VLLM::DPCoordinator`), its boot lines (`boot`), its endpoints
//! (`http`; `dev` for the development ones), its periodic stats and `[shutdown]` lines (`serving`). Its `/metrics` families
//! are [`crate::metrics::Registry`]'s and its start-up tracebacks [`crate::failures`]', which the
//! other engines' simulations build on.

mod boot;
mod dev;
mod http;
pub mod lines;
mod serving;
pub mod surface;
