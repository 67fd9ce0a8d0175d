#!/usr/bin/env python3
"""PyTorch eager's side of bench/gpu's training table (bench/gpu/README.md).

The models, data and step of gpu_bench.cpp: the 784-100-100-10 MLP, the
784-1000-1000-10 MLP and bench/train's convnet, float32, SGD lr 0.01, batch 100,
a few batches kept on the device (pixels uniform in [0, 1), labels in 0..9),
the loss not read during the run. Per model, in one process each (so that the
peak is that model's alone): milliseconds per step over --steps timed steps
after 5 warm-up steps, torch.cuda.max_memory_allocated, and the CUDA kernels
one step launches (torch.profiler's CUDA kernel events over one step; memcpy
and memset are not counted). TF32 is off for matmuls and cuDNN convolutions,
as chainerc's default (ch_config_allow_tf32).

Prints one line per model, read by gpu_bench --peer FILE:
    about <versions>
    train MODEL STEP_MS PEAK_MIB KERNELS LOSS

--device cpu (with --smoke: tiny batch, one step) checks the script without a
GPU; then nothing is timed, the memory and kernel figures are 0 and -1, and
the models run in this one process.
"""
import argparse
import subprocess
import sys
import time

MODELS = ("mlp", "mlp-large", "convnet")
LAUNCH_CALLS = {"cudalaunchkernel", "culaunchkernel", "cudalaunchkernelexc", "culaunchkernelex"}


def build(torch, name):
    nn = torch.nn
    if name == "convnet":
        return nn.Sequential(
            nn.Conv2d(1, 20, 5), nn.MaxPool2d(2),
            nn.Conv2d(20, 50, 5), nn.MaxPool2d(2),
            nn.Flatten(), nn.Linear(800, 500), nn.ReLU(), nn.Linear(500, 10))
    hidden = 100 if name == "mlp" else 1000
    return nn.Sequential(nn.Linear(784, hidden), nn.ReLU(),
                         nn.Linear(hidden, hidden), nn.ReLU(),
                         nn.Linear(hidden, 10))


def count_kernels(torch, step, on_gpu):
    """CUDA kernels launched by one call of step(), from torch.profiler."""
    if not on_gpu:
        return -1
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        step()
        torch.cuda.synchronize()
    kernels = launches = 0
    for e in prof.events():
        name = e.name.lower()
        if str(getattr(e, "device_type", "")).endswith("CUDA"):
            if "memcpy" not in name and "memset" not in name:
                kernels += 1
        elif name in LAUNCH_CALLS:
            launches += 1
    # The kernels seen on the device; the host's launch calls where a profiler
    # version lists no device events.
    return kernels if kernels > 0 else launches


def run_model(name, device, steps, smoke):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(1)
    on_gpu = device.startswith("cuda")
    dev = torch.device(device)
    batch = 4 if smoke else 100
    n_batches = 2 if smoke else 10
    gen = torch.Generator().manual_seed(1234)
    shape = (batch, 1, 28, 28) if name == "convnet" else (batch, 784)
    xs = [torch.rand(shape, generator=gen).to(dev) for _ in range(n_batches)]
    ts = [torch.randint(0, 10, (batch,), generator=gen).to(dev) for _ in range(n_batches)]
    if on_gpu:
        torch.cuda.reset_peak_memory_stats(dev)
    model = build(torch, name).to(dev)
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = torch.nn.CrossEntropyLoss()
    state = {"next": 0, "loss": None}

    def step():
        i = state["next"]
        opt.zero_grad()  # PyTorch 2's default: set_to_none
        loss = loss_fn(model(xs[i]), ts[i])
        loss.backward()
        opt.step()
        state["loss"] = loss.detach()
        state["next"] = (i + 1) % n_batches

    def sync():
        if on_gpu:
            torch.cuda.synchronize(dev)

    for _ in range(1 if smoke else 5):
        step()
    sync()
    kernels = count_kernels(torch, step, on_gpu)
    sync()
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    step_ms = (time.perf_counter() - t0) * 1e3 / steps
    peak = torch.cuda.max_memory_allocated(dev) / 2**20 if on_gpu else 0.0
    if smoke:
        step_ms = 0.0
    print(f"train {name} {step_ms:.6f} {peak:.3f} {kernels} {state['loss'].item():.6f}",
          flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cuda:0")
    ap.add_argument("--models", default=",".join(MODELS))
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    a = ap.parse_args()
    steps = a.steps if a.steps > 0 else (1 if a.smoke else 200)
    if a.child:
        run_model(a.child, a.device, steps, a.smoke)
        return 0
    import torch
    gpu = torch.cuda.get_device_name(torch.device(a.device)) if a.device.startswith("cuda") \
        else "the CPU"
    print(f"about torch {torch.__version__}, CUDA {torch.version.cuda}, "
          f"cuDNN {torch.backends.cudnn.version()}, on {gpu}", flush=True)
    status = 0
    for name in a.models.split(","):
        if name not in MODELS:
            sys.exit(f"torch_peer.py: unknown model {name}")
        if a.smoke:  # one import of torch for all: CI's seconds
            run_model(name, a.device, steps, a.smoke)
            continue
        # A fresh process per model: its own peak, its own caches.
        cmd = [sys.executable, __file__, "--child", name, "--device", a.device,
               "--steps", str(steps)] + (["--smoke"] if a.smoke else [])
        r = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
        sys.stdout.write(r.stdout)
        sys.stdout.flush()
        if r.returncode != 0:
            print(f"torch_peer.py: {name} failed (exit {r.returncode})", file=sys.stderr)
            status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
