"""The attention-weighted sum over fixed base RBF kernels, the hot loop of the attentive kernel.

mix_ij = Σ_m w1_im · w2_jm · B_m(x1_i, x2_j),   B_m(x, x') = exp(-|x - x'|² / (2 l_m²))

Evaluated without a Python loop over the K base kernels: each block of rows of x1 is one
batched matrix product over the K × rows × N2 stack. Rows are processed in blocks so that the
stack stays cache-sized (whole-matrix temporaries of tens of MB cost more in page faults than
in arithmetic on a small CPU). The pass is memory-bound (a few flops per stack element), so a
Gram matrix (same inputs, same weights) reads only the blocks on and above the diagonal, in the
forward and the backward pass: half the traffic. The backward pass is written by hand: the base
stack does not depend on trainable parameters (fixed lengthscales), so autograd's generic
graph, which would also keep and differentiate the stack, is avoided. Gradients with respect to
the inputs (for methods that optimise inducing inputs) come from the same blocks:

    ∂mix_ij/∂x1_i = Σ_m w1_im w2_jm B_m(x1_i, x2_j) (x2_j − x1_i) / l_m²

Off the CPU (``block_rows=None``) the pass is one whole-matrix product: a GPU is bound by
kernel launches, not by cache size, at these sizes.
"""

from __future__ import annotations

import math

import torch
from torch import Tensor


def squared_distances(x1: Tensor, x2: Tensor) -> Tensor:
    """|x1_i - x2_j|², N1 × N2, accumulated one input dimension at a time.

    Explicit differences are exact for nearby points (the |x|² + |x'|² - 2xᵀx' expansion is
    not), and accumulating over the D (typically 2) dimensions avoids a reduction over a tiny
    inner axis, which is ten times slower.
    """
    out = (x1[:, 0, None] - x2[None, :, 0]).square_()
    for d in range(1, x1.shape[1]):
        out.add_((x1[:, d, None] - x2[None, :, d]).square_())
    return out


def exp_floor(dtype: torch.dtype) -> float:
    """The smallest argument :func:`base_kernel_stack` gives ``exp``: half the log of the
    smallest normal number, −354 in float64 and −43.7 in float32.

    torch's CPU ``exp`` leaves its vectorised path for arguments whose result is subnormal or
    zero (below −708 in float64, −87 in float32) and is 6–25× slower there; the smallest base
    lengthscale puts 0.6 % (float64) to 11 % (float32) of a stack between inputs spread over
    [−1, 1]² there, which made the float32 stack 4× slower and left 1.3 % of it subnormal
    (slow again in the products). e^floor = √tiny is not 0, but it stays normal multiplied by
    two attention weights down to √tiny, so nothing subnormal reaches the products; and each
    kernel value is a sum that also holds the largest base lengthscale's term (at least
    e^−16 · w̄w̄' between inputs in [−1, 1]² with lengthscales up to 0.5), beside which a
    change of √tiny (1e-154 in float64) is far below half an ulp: the sum rounds to the same
    number, and float64 kernel matrices and predictions come out bit for bit unchanged.
    """
    return 0.5 * math.log(torch.finfo(dtype).tiny)


def base_kernel_stack(x1: Tensor, x2: Tensor, lengthscales: Tensor) -> Tensor:
    """B_m(x1_i, x2_j) for every base lengthscale: K × N1 × N2 (arguments of ``exp`` clamped at
    :func:`exp_floor`)."""
    scale = (-0.5 / lengthscales.square()).view(-1, 1, 1)
    arg = torch.mul(squared_distances(x1, x2).unsqueeze(0), scale)
    return arg.clamp_min_(exp_floor(arg.dtype)).exp_()


class MixBaseKernels(torch.autograd.Function):
    """mix = Σ_m w1[:, m] w2[:, m]ᵀ ⊙ B_m, with gradients for w1, w2, x1 and x2.

    ``stack`` is the precomputed K × N1 × N2 base stack, or None to compute each block's
    slice on the fly from x1, x2 and the lengthscales (bounded memory for large N1). A stack is
    a cache of B(x1, x2): input gradients are those of B(x1, x2) either way. ``block_rows``
    rows of x1 are evaluated at a time, all of them with None. With w1 is w2 and x1 is x2 the
    result is a Gram matrix and only its upper block triangle is evaluated.
    """

    @staticmethod
    def forward(ctx, w1: Tensor, w2: Tensor, x1: Tensor, x2: Tensor, lengthscales: Tensor,
                stack: Tensor | None, block_rows: int | None) -> Tensor:
        ctx.save_for_backward(w1, w2, x1, x2, lengthscales)
        ctx.stack, ctx.block_rows = stack, block_rows
        ctx.symmetric = w1 is w2 and x1 is x2
        rows = w1.shape[0]
        w2t = w2.transpose(0, 1).unsqueeze(0)  # 1 × K × N2
        out = None
        for start, stop, first, block in _blocks(rows, block_rows, stack, x1, x2, lengthscales,
                                                 ctx.symmetric):
            # rows × 1 × K  @  rows × K × cols  →  rows × 1 × cols
            part = torch.bmm(w1[start:stop].unsqueeze(1),
                             block.transpose(0, 1) * w2t[:, :, first:]).squeeze(1)
            if stop - start == rows:  # one block: the whole matrix
                return part
            if out is None:
                out = w1.new_empty(rows, w2.shape[0])
            out[start:stop, first:] = part
            if ctx.symmetric:  # mirror the block row's right part into the block column below
                out[stop:, start:stop] = out[start:stop, stop:].transpose(0, 1)
        return w1.new_zeros(rows, w2.shape[0]) if out is None else out

    @staticmethod
    def backward(ctx, grad: Tensor):
        w1, w2, x1, x2, lengthscales = ctx.saved_tensors
        need_w1, need_w2, need_x1, need_x2 = ctx.needs_input_grad[:4]
        symmetric, rows = ctx.symmetric, w1.shape[0]
        if symmetric:
            # With G symmetrised, both slots of a Gram matrix get the same gradients: one pass
            # over the upper blocks serves both, each block also feeding the rows below it.
            grad = 0.5 * (grad + grad.transpose(0, 1))
            need_w1, need_x1 = need_w1 or need_w2, need_x1 or need_x2
            need_w2 = need_x2 = False
        grad_w1 = grad_w2 = grad_x1 = grad_x2 = None
        w2_cols = w2.transpose(0, 1).unsqueeze(2)  # K × N2 × 1
        w2t = w2.transpose(0, 1).unsqueeze(0)  # 1 × K × N2
        if need_x1 or need_x2:
            inv_sq = lengthscales.square().reciprocal().view(-1, 1, 1)
        for start, stop, first, block in _blocks(rows, ctx.block_rows, ctx.stack, x1, x2,
                                                 lengthscales, symmetric):
            weighted = block * grad[start:stop, first:].unsqueeze(0)  # K × rows × cols
            w1_rows = w1[start:stop].transpose(0, 1).unsqueeze(1)  # K × 1 × rows
            if need_w1:
                grad_w1 = _add_rows(grad_w1, w1, start, stop,
                                    torch.bmm(weighted, w2_cols[:, first:]).squeeze(2).T)
            if need_w2:
                grad_w2 = _add_rows(grad_w2, w2, 0, w2.shape[0],
                                    torch.bmm(w1_rows, weighted).squeeze(1).transpose(0, 1))
            elif symmetric and need_w1 and stop < rows:  # the mirrored part below
                below = weighted[:, :, stop - first:]
                grad_w1 = _add_rows(grad_w1, w1, stop, rows,
                                    torch.bmm(w1_rows, below).squeeze(1).transpose(0, 1))
            if need_x1 or need_x2:
                # h_ij = G_ij Σ_m w1_im w2_jm B_m,ij / l_m², then the distance derivative.
                h = torch.bmm(w1[start:stop].unsqueeze(1),
                              (weighted * inv_sq).transpose(0, 1) * w2t[:, :, first:]).squeeze(1)
                part, cols = x1[start:stop], x2[first:]
                if need_x1:
                    grad_x1 = _add_rows(grad_x1, x1, start, stop,
                                        h @ cols - part * h.sum(1, keepdim=True))
                if need_x2:
                    grad_x2 = _add_rows(grad_x2, x2, 0, x2.shape[0],
                                        h.transpose(0, 1) @ part - x2 * h.sum(0).unsqueeze(1))
                elif symmetric and stop < rows:
                    below = h[:, stop - first:]
                    grad_x1 = _add_rows(grad_x1, x1, stop, rows, below.transpose(0, 1) @ part
                                        - x1[stop:] * below.sum(0).unsqueeze(1))
        if symmetric:
            grad_w2, grad_x2 = grad_w1, grad_x1
        return grad_w1, grad_w2, grad_x1, grad_x2, None, None, None


def _add_rows(total: Tensor | None, like: Tensor, start: int, stop: int, value: Tensor) -> Tensor:
    """``total[start:stop] += value``, with ``total`` None before the first block: the value
    itself when it covers every row (one block, nothing to add to), zeros like ``like`` else."""
    if total is None:
        if start == 0 and stop == like.shape[0]:
            return value
        total = torch.zeros_like(like)
    total[start:stop] += value
    return total


def _blocks(rows: int, block_rows: int | None, stack, x1, x2, lengthscales, upper: bool):
    """Yield (first row, stop row, first column, K × block × columns base stack) over blocks of
    ``block_rows`` rows of x1 (one block of all rows with None); the columns start at the
    block's first row when ``upper`` (a Gram matrix)."""
    step = block_rows or max(rows, 1)
    for start in range(0, rows, step):
        stop = min(rows, start + step)
        first = start if upper else 0
        if stack is not None:
            yield start, stop, first, stack[:, start:stop, first:]
        else:
            yield start, stop, first, base_kernel_stack(x1[start:stop], x2[first:], lengthscales)
