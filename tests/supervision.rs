//! Process-tree ownership and GPU holders: the shepherd, /proc, NVML and nvidia-smi readings, the scopes, Slurm.
//!
//! One test binary of the root package's tests (docs/design/testing.md#test-binaries): each
//! module below was a test binary of its own; they share one build and link.

mod serial;
mod sim_support;
mod smi_support;

mod gpu_holders;
mod gpu_inspect_scope;
mod gpu_scope;
mod slurm;
mod supervision_gpu;
mod supervision_procs;
mod supervision_shepherd;
mod supervision_shm;
