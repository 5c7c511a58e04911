//! The multi-node rules (T2): `ray start` without `--block` under `srun`, a data-parallel or
//! multi-node vLLM with no cleanup of `/dev/shm/vllm-*`, `kill` of an `srun`'s pid. Each is
//! flagged on its trap and not on its fixed twin.

use super::{findings, hit, rules_of};

#[test]
fn ray_start_without_block_under_srun() {
    let bad = "#!/bin/bash\n#SBATCH --nodes=2\nsrun --nodes=1 --ntasks=1 -w \"$head\" ray start --head --port=6379 &\nsleep 30\nsrun -N1 -r1 ray start --address=\"$head:6379\" &\n";
    assert_eq!(
        findings(bad),
        [
            hit("T2", "fail", "ray-start-without-block", 3),
            hit("T2", "fail", "ray-start-without-block", 5)
        ]
    );
    let fixed = bad
        .replace("--port=6379", "--port=6379 --block")
        .replace(":6379\"", ":6379\" --block");
    assert_eq!(findings(&fixed), []);
    // Inside a shell string that srun runs.
    assert_eq!(
        rules_of(&findings(
            "srun -N1 bash -c 'source env.sh; ray start --head'\n"
        )),
        ["ray-start-without-block"]
    );
    assert_eq!(
        findings("srun -N1 bash -c 'source env.sh; ray start --head --block'\n"),
        []
    );
    // Not under srun (a workstation, a container): ray start's daemons are the point.
    assert_eq!(findings("ray start --head\nray status\n"), []);
    assert_eq!(findings("srun -N1 ray status\n"), []);
}

#[test]
fn data_parallel_vllm_without_shm_cleanup() {
    let head = "set -euo pipefail\nvllm serve m --data-parallel-size 4 --data-parallel-size-local 2 --data-parallel-address 10.0.0.1 --data-parallel-rpc-port 13345 > head.log 2>&1 &\ninferlint probe http://127.0.0.1:8000\n";
    assert_eq!(findings(head), [hit("T2", "warn", "shm-not-cleaned", 2)]);
    let cleaned = format!("trap 'srun --ntasks-per-node=1 rm -f /dev/shm/vllm-*' EXIT\n{head}");
    assert_eq!(findings(&cleaned), []);
    let found = format!("{head}find /dev/shm -name 'vllm-*' -delete\n");
    assert_eq!(findings(&found), []);
    // The other launch forms.
    for serve in [
        "vllm serve m --headless --data-parallel-start-rank 2 --data-parallel-size 4",
        "vllm serve m --nnodes 2 --node-rank 1 --master-addr 10.0.0.1 --headless",
        "vllm serve m -dp 2",
        "vllm serve m --data-parallel-size=2",
    ] {
        assert_eq!(
            rules_of(&findings(&format!("{serve} > log 2>&1\n"))),
            ["shm-not-cleaned"],
            "{serve}"
        );
    }
    // One engine on one node: nothing to clean between runs.
    assert_eq!(
        findings("vllm serve m --tensor-parallel-size 2 > log 2>&1\n"),
        []
    );
    assert_eq!(
        findings("vllm serve m --data-parallel-size 1 > log 2>&1\n"),
        []
    );
    // Not vLLM.
    assert_eq!(
        findings("python3 -m sglang.launch_server --model-path m --dp 2 > log 2>&1\n"),
        []
    );
}

#[test]
fn kill_of_an_srun_pid() {
    let bad = "srun --overlap -N1 vllm serve m > log 2>&1 &\nSRV=$!\nvllm bench serve --model m\nkill -TERM \"$SRV\"\nwait\n";
    assert_eq!(findings(bad), [hit("T2", "fail", "kill-of-srun", 4)]);
    // $! directly, and a job spec.
    assert_eq!(
        rules_of(&findings(
            "srun -N1 ray start --block --head &\nsleep 5\nkill $!\n"
        )),
        ["kill-of-srun"]
    );
    assert_eq!(
        rules_of(&findings(
            "srun -N1 ray start --block --head &\nsleep 5\nkill -9 %1\n"
        )),
        ["kill-of-srun"]
    );
    // scancel of the step beside the kill ends the step's processes.
    let fixed = bad.replace(
        "kill -TERM \"$SRV\"",
        "scancel --signal=TERM \"$SLURM_JOB_ID.0\"\nkill -TERM \"$SRV\"",
    );
    assert_eq!(findings(&fixed), []);
    // Asking whether it runs signals nothing; a kill of a local server is another rule's.
    assert_eq!(
        findings("srun -N1 ray start --block --head &\nP=$!\nkill -0 $P\n"),
        []
    );
    assert!(!rules_of(&findings("vllm serve m > log 2>&1 &\nkill $!\n")).contains(&"kill-of-srun"));
}
