"""The first job's model, as numbers: its parameters, its FLOPs per token and its model FLOPs utilisation (MFU).

Pure Python (no torch): the training script beside it (``first_job_train.py``) imports it on the nodes, and
fmcluster's tests import it from the package (``fmcluster.templates.acceptance.first_job_flops``).

The model is a decoder-only transformer: a token and a learned position embedding, ``layers`` blocks (pre-norm
LayerNorm without bias; attention with one ``d_model x 3 d_model`` QKV and one ``d_model x d_model`` output
projection; an MLP of ``d_model x ffn_mult d_model`` and back, GELU; no biases), a final LayerNorm and an untied
``d_model x vocab`` output head.

FLOPs per token of one training step (forward and backward), as PaLM counts "model FLOPs" (Chowdhery et al., 2022,
"PaLM: Scaling Language Modeling with Pathways", appendix B):

    6 N + 12 L H Q T

- ``N``: the parameters that take part in a matrix multiply, i.e. every weight but the two embedding tables (a
  lookup costs no FLOPs) and the LayerNorm scales (elementwise). 2 FLOPs per parameter forward (a multiply and an
  add), 4 backward (the gradients of the input and of the weight): 6 N.
- ``12 L H Q T``: self-attention's own matrix multiplies (Q K^T and the scores times V), per token, over ``L``
  layers of ``H`` heads of ``Q`` dimensions (``H Q = d_model``) at sequence length ``T``: forward 2 x 2 H Q T per
  layer, times 3 with the backward. Counted over the whole T x T score matrix, as PaLM does: no discount for the
  causal mask.
- Model FLOPs, not hardware FLOPs: recomputed activations are not counted (the job recomputes none).

MFU = tokens per second x FLOPs per token / (GPUs x peak dense BF16 FLOPS per GPU), the peak from fmcluster's
instance catalog (``fmcluster/catalog.py``, ``bf16_dense_pflops_per_gpu``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class ModelShape:
    vocab: int
    d_model: int
    layers: int
    heads: int
    seq_len: int
    ffn_mult: int = 4

    def __post_init__(self) -> None:
        for name, value in asdict(self).items():
            if not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive whole number, not {value!r}")
        if self.d_model % self.heads:
            raise ValueError(f"d_model {self.d_model} is not a multiple of heads {self.heads}")

    @property
    def head_dim(self) -> int:
        return self.d_model // self.heads

    @property
    def tag(self) -> str:
        """A short name of the shape (checkpoints of another shape are not resumed)."""
        return f"v{self.vocab}-d{self.d_model}-l{self.layers}-h{self.heads}-t{self.seq_len}-f{self.ffn_mult}"


def block_matmul_params(shape: ModelShape) -> int:
    """One block's matrix-multiply weights: QKV (3 d^2), the output projection (d^2), the MLP (2 ffn_mult d^2)."""
    d = shape.d_model
    return 4 * d * d + 2 * shape.ffn_mult * d * d


def matmul_params(shape: ModelShape) -> int:
    """``N`` of ``6 N``: every block's matrix-multiply weights and the output head."""
    return shape.layers * block_matmul_params(shape) + shape.d_model * shape.vocab


def total_params(shape: ModelShape) -> int:
    """Every parameter of the model: ``N``, the two embedding tables and the LayerNorm scales (2 a block, 1 final)."""
    d = shape.d_model
    embeddings = shape.vocab * d + shape.seq_len * d
    norms = (2 * shape.layers + 1) * d
    return matmul_params(shape) + embeddings + norms


def attention_flops_per_token(shape: ModelShape) -> int:
    """``12 L H Q T``."""
    return 12 * shape.layers * shape.heads * shape.head_dim * shape.seq_len


def flops_per_token(shape: ModelShape) -> int:
    """Model FLOPs of one token through a training step: ``6 N + 12 L H Q T``."""
    return 6 * matmul_params(shape) + attention_flops_per_token(shape)


def mfu(tokens_per_second: float, flops_per_token_: float, gpus: int, peak_flops_per_gpu: float) -> float:
    """Model FLOPs utilisation, a fraction: the model FLOPs done per second over the GPUs' dense peak."""
    if gpus < 1 or peak_flops_per_gpu <= 0:
        raise ValueError(f"gpus ({gpus}) and the peak ({peak_flops_per_gpu} FLOPS) must be positive")
    return tokens_per_second * flops_per_token_ / (gpus * peak_flops_per_gpu)
