"""fmcluster's first job: a small synthetic decoder-only transformer trained with FSDP (``fully_shard``).

Launched by ``torchrun`` on every node (``first-job/GROUP.sbatch`` does it through ``srun``). It

1. writes a synthetic token data set once to ``--data-dir`` (shared storage: FSx for Lustre), global rank 0 alone,
   and reads it memory-mapped on every rank;
2. resumes from the newest checkpoint of this model shape in ``--checkpoint-dir`` if there is one;
3. trains ``--steps`` steps, each rank on its own slice of the data, in BF16 on GPUs (FP32 on CPUs);
4. prints, on rank 0, every ``--log-every`` steps::

       fmc-first-job step 20/50 loss 2.3141 step 0.160 s tokens/s 819,200 (51,200 per GPU) MFU 31.3% of 989.5 TFLOPS
       BF16 dense per GPU (p5.48xlarge, 16 GPUs)

   (the format; the figures are an example of the arithmetic, not a measurement)

   and at the end one ``FMC-FIRST-JOB`` line of ``key=value`` fields (the averages over the steps after warm-up);
5. saves a distributed checkpoint (``torch.distributed.checkpoint``) every ``--checkpoint-every`` steps and at the
   end.

The FLOPs and MFU arithmetic is in ``first_job_flops.py`` beside this file. Runs on CPUs with the gloo backend too
(``fmcluster``'s tests run it with 2 processes).
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import sys
import time
from datetime import timedelta
from pathlib import Path

import torch
import torch.distributed as dist
import torch.distributed.checkpoint as dcp
import torch.nn.functional as F  # noqa: N812 - torch's own convention
from torch import nn
from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

sys.path.insert(0, str(Path(__file__).resolve().parent))
from first_job_flops import ModelShape, flops_per_token, mfu, total_params

PREFIX = "fmc-first-job"
RESULT = "FMC-FIRST-JOB"
NEXT = 2654435761  # the synthetic data's rule: token[i + 1] = (token[i] * NEXT + 12345) % vocab (learnable)


class Block(nn.Module):
    def __init__(self, shape: ModelShape) -> None:
        super().__init__()
        d = shape.d_model
        self.heads = shape.heads
        self.norm1 = nn.LayerNorm(d, bias=False)
        self.qkv = nn.Linear(d, 3 * d, bias=False)
        self.proj = nn.Linear(d, d, bias=False)
        self.norm2 = nn.LayerNorm(d, bias=False)
        self.up = nn.Linear(d, shape.ffn_mult * d, bias=False)
        self.down = nn.Linear(shape.ffn_mult * d, d, bias=False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        q, k, v = self.qkv(self.norm1(x)).split(d, dim=-1)
        q, k, v = (y.view(b, t, self.heads, d // self.heads).transpose(1, 2) for y in (q, k, v))
        attn = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attn.transpose(1, 2).reshape(b, t, d))
        return x + self.down(F.gelu(self.up(self.norm2(x))))


class Model(nn.Module):
    def __init__(self, shape: ModelShape) -> None:
        super().__init__()
        self.tokens = nn.Embedding(shape.vocab, shape.d_model)
        self.positions = nn.Embedding(shape.seq_len, shape.d_model)
        self.blocks = nn.ModuleList(Block(shape) for _ in range(shape.layers))
        self.norm = nn.LayerNorm(shape.d_model, bias=False)
        self.head = nn.Linear(shape.d_model, shape.vocab, bias=False)

    def forward(self, idx: torch.Tensor) -> torch.Tensor:
        pos = torch.arange(idx.shape[1], device=idx.device)
        x = self.tokens(idx) + self.positions(pos)
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x))


def say(rank: int, message: str) -> None:
    if rank == 0:
        print(f"{PREFIX} {message}", flush=True)


def data_file(data_dir: Path, shape: ModelShape, sequences: int, seed: int) -> Path:
    return data_dir / f"tokens-{shape.vocab}v-{shape.seq_len + 1}t-{sequences}s-{seed}.pt"


def write_data(path: Path, shape: ModelShape, sequences: int, seed: int) -> None:
    """A synthetic data set a model can learn: each sequence starts at a random token and follows a fixed rule."""
    gen = torch.Generator().manual_seed(seed)
    rows = torch.empty(sequences, shape.seq_len + 1, dtype=torch.int64)
    rows[:, 0] = torch.randint(0, shape.vocab, (sequences,), generator=gen)
    for i in range(shape.seq_len):
        rows[:, i + 1] = (rows[:, i] * NEXT + 12345) % shape.vocab
    tmp = path.with_suffix(f".tmp{os.getpid()}")
    torch.save(rows, tmp)
    tmp.replace(path)  # atomic: a rank never reads a half-written file


def checkpoints(root: Path) -> list[tuple[int, Path]]:
    """The complete checkpoints under ``root`` (a ``done.json`` is written last), oldest first."""
    found = []
    for done in root.glob("step-*/done.json"):
        found.append((int(json.loads(done.read_text())["step"]), done.parent))
    return sorted(found)


def save(model: nn.Module, optimizer: torch.optim.Optimizer, root: Path, step: int, rank: int) -> None:
    start = time.perf_counter()
    path = root / f"step-{step:07d}"
    model_sd, optim_sd = get_state_dict(model, optimizer)
    dcp.save({"model": model_sd, "optim": optim_sd}, checkpoint_id=str(path))
    dist.barrier()
    if rank == 0:
        (path / "done.json").write_text(json.dumps({"step": step}) + "\n")
        size = sum(f.stat().st_size for f in path.rglob("*") if f.is_file())
        say(rank, f"checkpoint step {step} saved to {path} in {time.perf_counter() - start:.1f} s "
                  f"({size / 1e9:.2f} GB)")


def load(model: nn.Module, optimizer: torch.optim.Optimizer, path: Path) -> None:
    model_sd, optim_sd = get_state_dict(model, optimizer)
    state = {"model": model_sd, "optim": optim_sd}
    dcp.load(state, checkpoint_id=str(path))
    set_state_dict(model, optimizer, model_state_dict=state["model"], optim_state_dict=state["optim"])


def arguments(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--data-dir", type=Path, required=True, help="Shared folder for the synthetic data set.")
    p.add_argument("--checkpoint-dir", type=Path, required=True, help="Shared folder for the checkpoints.")
    p.add_argument("--steps", type=int, default=50, help="Steps to run in this job (a resumed job runs as many more).")
    p.add_argument("--warmup-steps", type=int, default=3, help="Steps left out of the averages (allocation, tuning).")
    p.add_argument("--log-every", type=int, default=10)
    p.add_argument("--checkpoint-every", type=int, default=0, help="0: only at the end.")
    p.add_argument("--micro-batch", type=int, default=4, help="Sequences per GPU per step.")
    p.add_argument("--vocab", type=int, default=32768)
    p.add_argument("--d-model", type=int, default=2048)
    p.add_argument("--layers", type=int, default=16)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--seq-len", type=int, default=2048)
    p.add_argument("--sequences", type=int, default=8192, help="Sequences in the synthetic data set.")
    p.add_argument("--lr", type=float, default=3e-4)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--peak-tflops-per-gpu", type=float, default=None,
                   help="Dense BF16 peak of one GPU, from fmcluster's catalog; without it no MFU is printed.")
    p.add_argument("--instance-type", default="unknown", help="A label for the log lines.")
    args = p.parse_args(argv)
    if args.steps < 1 or args.log_every < 1 or args.micro_batch < 1 or args.warmup_steps < 0:
        p.error("--steps, --log-every and --micro-batch must be at least 1, --warmup-steps at least 0")
    return args


def main(argv: list[str] | None = None) -> int:
    args = arguments(argv)
    shape = ModelShape(vocab=args.vocab, d_model=args.d_model, layers=args.layers, heads=args.heads,
                       seq_len=args.seq_len)
    cuda = torch.cuda.is_available()
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if cuda:
        torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl" if cuda else "gloo", timeout=timedelta(minutes=10))
    rank, world = dist.get_rank(), dist.get_world_size()
    device = torch.device("cuda", local_rank) if cuda else torch.device("cpu")
    torch.manual_seed(args.seed)

    data = data_file(args.data_dir, shape, args.sequences, args.seed)
    if rank == 0 and not data.exists():
        args.data_dir.mkdir(parents=True, exist_ok=True)
        start = time.perf_counter()
        write_data(data, shape, args.sequences, args.seed)
        say(rank, f"data: wrote {args.sequences} sequences of {shape.seq_len + 1} tokens to {data} "
                  f"in {time.perf_counter() - start:.1f} s")
    dist.barrier()
    rows = torch.load(data, mmap=True)
    say(rank, f"data: {data} ({rows.shape[0]} sequences), read memory-mapped by {world} ranks")

    model = Model(shape).to(device)
    dtype = torch.bfloat16 if cuda else torch.float32
    policy = MixedPrecisionPolicy(param_dtype=dtype, reduce_dtype=torch.float32)
    for block in model.blocks:
        fully_shard(block, mp_policy=policy)
    fully_shard(model, mp_policy=policy)
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr)
    params = sum(p.numel() for p in model.parameters())  # the global count: FSDP's parameters are DTensors
    if params != total_params(shape):
        raise SystemExit(f"{PREFIX}: the model has {params} parameters, first_job_flops counts {total_params(shape)}")

    ckpt_root = args.checkpoint_dir / shape.tag
    done = checkpoints(ckpt_root)
    first = 0
    if done:
        first, path = done[-1]
        load(model, optimizer, path)
        say(rank, f"resumed from step {first} ({path})")
    last = first + args.steps
    per_token = flops_per_token(shape)
    peak = args.peak_tflops_per_gpu * 1e12 if args.peak_tflops_per_gpu else None
    tokens_per_step = args.micro_batch * shape.seq_len * world
    say(rank, f"model: {params / 1e6:.1f} M parameters ({shape.tag}), {per_token / 1e9:.3f} GFLOPs per token "
              f"(6N + 12LHQT), FSDP over {world} ranks ({device.type}, {str(dtype).removeprefix('torch.')}), "
              f"{tokens_per_step:,} tokens per step")

    times: list[float] = []
    loss_value = math.nan
    for step in range(first + 1, last + 1):
        start = time.perf_counter()
        index = (torch.arange(args.micro_batch) + ((step - 1) * world + rank) * args.micro_batch) % rows.shape[0]
        batch = rows[index].to(device, non_blocking=True)
        logits = model(batch[:, :-1])
        loss = F.cross_entropy(logits.float().reshape(-1, shape.vocab), batch[:, 1:].reshape(-1))
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        mean_loss = loss.detach().clone()
        dist.all_reduce(mean_loss)  # a sum (gloo has no average)
        loss_value = mean_loss.item() / world
        elapsed = time.perf_counter() - start  # .item() waited for the GPU
        if step - first > args.warmup_steps:
            times.append(elapsed)
        if step % args.log_every == 0 or step == last:
            say(rank, f"step {step}/{last} loss {loss_value:.4f} " + rates(elapsed, tokens_per_step, per_token, world,
                                                                            peak, args.instance_type))
        if args.checkpoint_every and step % args.checkpoint_every == 0 and step != last:
            save(model, optimizer, ckpt_root, step, rank)
    save(model, optimizer, ckpt_root, last, rank)

    mean = sum(times) / len(times) if times else math.nan
    tps = tokens_per_step / mean if times else math.nan
    share = mfu(tps, per_token, world, peak) if peak and times else None
    say(rank, f"done: {len(times)} steps after warm-up, mean " + rates(mean, tokens_per_step, per_token, world, peak,
                                                                       args.instance_type))
    if rank == 0:
        fields = {"steps": args.steps, "first_step": first + 1, "last_step": last, "measured_steps": len(times),
                  "step_time_s": f"{mean:.4f}", "tokens_per_s": f"{tps:.0f}", "gpus": world,
                  "mfu": f"{share:.6g}" if share is not None else "none", "loss": f"{loss_value:.4f}",
                  "params": params, "flops_per_token": per_token, "instance_type": args.instance_type,
                  "peak_tflops_per_gpu": args.peak_tflops_per_gpu or "none"}
        print(RESULT + " " + " ".join(f"{k}={v}" for k, v in fields.items()), flush=True)
    # Every rank is past its last collective before any tears the process group down, and the model's and optimizer's
    # references to it (FSDP's device mesh) go first, so the group is destroyed here and not at interpreter exit: left
    # to exit, a rank aborted at random after its work was done ("terminate called without an active exception",
    # SIGABRT; 3 of 8 runs on a loaded 2-core machine), and Slurm would call a finished job failed.
    dist.barrier()
    del model, optimizer
    gc.collect()
    dist.destroy_process_group()
    return 0


def rates(seconds: float, tokens: int, per_token: int, gpus: int, peak: float | None, instance_type: str) -> str:
    """``step 0.160 s tokens/s 819,200 (51,200 per GPU) MFU 31.3% of ...``."""
    tps = tokens / seconds
    text = f"step {seconds:.3f} s tokens/s {tps:,.0f} ({tps / gpus:,.0f} per GPU)"
    if peak is None:
        return text + " MFU n/a (no peak for this instance type in fmcluster's catalog)"
    return (text + f" MFU {mfu(tps, per_token, gpus, peak):.1%} of {peak / 1e12:.1f} TFLOPS BF16 dense per GPU "
                   f"({instance_type}, {gpus} GPUs)")


if __name__ == "__main__":
    sys.exit(main())
