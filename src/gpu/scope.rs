//! The GPUs a run judges (docs/supervision.md, "Which GPUs a run judges"): `--gpus LIST`, else
//! CUDA_VISIBLE_DEVICES, else Slurm's step/job GPUs, else every GPU; and the processes holding
//! memory on those cards, each attributed to a pid, user and command.

use serde::Serialize;

use super::{Gpu, GpuError, GpuSource};

/// Where the run's GPU list came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum ScopeOrigin {
    /// `--gpus`.
    Flag,
    CudaVisibleDevices,
    SlurmStepGpus,
    SlurmJobGpus,
    All,
}

/// One entry of a GPU list: an ordinal or a (GPU-/MIG-) UUID or UUID prefix.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub enum GpuId {
    Index(u32),
    Uuid(String),
}

/// The GPUs a run judges. `ids == None` means every GPU.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GpuScope {
    pub ids: Option<Vec<GpuId>>,
    pub origin: ScopeOrigin,
}

/// A GPU list that cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum ScopeError {
    #[error("{origin}: {entry:?} is not a GPU index or UUID")]
    BadEntry { origin: String, entry: String },
}

impl GpuScope {
    pub fn all() -> GpuScope {
        GpuScope {
            ids: None,
            origin: ScopeOrigin::All,
        }
    }

    /// --gpus LIST, else CUDA_VISIBLE_DEVICES, else SLURM_STEP_GPUS, else SLURM_JOB_GPUS, else all.
    pub fn resolve(
        _flag: Option<&str>,
        _env: &dyn Fn(&str) -> Option<String>,
    ) -> Result<GpuScope, ScopeError> {
        // Provisional (skeleton): every GPU.
        Ok(GpuScope::all())
    }

    /// resolve() with the process environment.
    pub fn from_env(flag: Option<&str>) -> Result<GpuScope, ScopeError> {
        GpuScope::resolve(flag, &|k| std::env::var(k).ok())
    }

    /// Whether a card (by index or uuid) is in the scope.
    pub fn includes(&self, _gpu: &Gpu) -> bool {
        true
    }

    /// "GPUs 0,1 (from CUDA_VISIBLE_DEVICES)", "every GPU".
    pub fn describe(&self) -> String {
        "every GPU".into()
    }
}

/// A process holding memory on a card in the scope.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GpuHolder {
    /// The card's index (as in `Gpu::index`).
    pub gpu: u32,
    /// As the driver reported it.
    pub pid: u32,
    pub used_mib: Option<u64>,
    pub uid: Option<u32>,
    pub user: Option<String>,
    pub command: Option<String>,
    /// false: the pid is not in this pid namespace ("a process outside this pid namespace").
    pub visible: bool,
}

impl GpuHolder {
    /// "pid 4711 (alice) VLLM::EngineCore, 21768 MiB on GPU 1" or "a process outside this pid
    /// namespace, 900 MiB on GPU 0".
    pub fn describe(&self) -> String {
        let mib = self
            .used_mib
            .map_or("? MiB".to_string(), |m| format!("{m} MiB"));
        format!("pid {}, {mib} on GPU {}", self.pid, self.gpu)
    }
}

/// One reading of the scope's cards.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct ScopeReading {
    /// Only the cards in the scope.
    pub gpus: Vec<Gpu>,
    /// None: the source cannot attribute memory.
    pub holders: Option<Vec<GpuHolder>>,
}

impl ScopeReading {
    /// The largest used MiB over the scope's cards; None when a card is unreadable or there is
    /// no card.
    pub fn max_used_mib(&self) -> Option<u64> {
        self.gpus
            .iter()
            .map(|g| g.memory_used_mib)
            .collect::<Option<Vec<u64>>>()?
            .into_iter()
            .max()
    }
}

/// Reads the scope's cards and their compute processes from the source (NVML, nvidia-smi, sim).
pub fn read_scope(source: &GpuSource, scope: &GpuScope) -> Result<ScopeReading, GpuError> {
    // Provisional (skeleton): the cards in the scope, holders from mib_by_pid on card 0.
    let gpus: Vec<Gpu> = super::read_gpus(source)?
        .into_iter()
        .filter(|g| scope.includes(g))
        .collect();
    let holders = super::mib_by_pid(source)
        .into_iter()
        .map(|(pid, mib)| GpuHolder {
            gpu: 0,
            pid,
            used_mib: Some(mib),
            uid: None,
            user: None,
            command: None,
            visible: true,
        })
        .collect();
    Ok(ScopeReading {
        gpus,
        holders: Some(holders),
    })
}
