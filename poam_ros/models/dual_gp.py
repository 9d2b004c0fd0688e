"""The memory-based dual GP (Chang, Verma, John, Solin, Khan, "Memory-Based Dual Gaussian
Processes for Sequential Learning", ICML 2023): OVC++'s carried site terms plus a small
memory of past samples, re-conditioned exactly at every update.

**Dual parameters and sites.** The paper writes q(u) through its dual parameters (Eqs. 7-11)
α_u = Σ_i k_zi α̂_i and B_u = Σ_i k_zi β̂_i k_ziᵀ, α̂_i = E_q[∇_f log p(y_i | f_i)],
β̂_i = E_q[−∇²_f log p(y_i | f_i)]; at a stationary point m = α_u and
V = (K⁻¹B_uK⁻¹ + K⁻¹)⁻¹ (K = K_uu). This module carries the equivalent **site
(natural-parameter) form** instead, as the authors' code does:

    λ₁ = Σ_i k_zi β̂_i ŷ_i,   λ₂ = Σ_i k_zi β̂_i k_ziᵀ,   ŷ_i = μ_i + α̂_i / β̂_i
    q(u): precision K⁻¹ + K⁻¹λ₂K⁻¹, V⁻¹m = K⁻¹λ₁, i.e. m = K(K + λ₂)⁻¹λ₁, V = K(K + λ₂)⁻¹K

with μ_i, v_i the marginal of f_i under q. For a Gaussian likelihood β̂_i = 1/σ² and ŷ_i = y_i:
λ₁ = K_uf y/σ², λ₂ = K_uf K_fu/σ², exactly OVC++'s cached terms. The α_u form equals the
site form only at stationarity (α̂_i depends on q): the paper's updates and projection written
in α_u (Eqs. 23, 27), taken literally away from stationarity, land about 0.18 off the exact
posterior on a field of amplitude 1 (the small check reported in issue 20), and one undamped
step diverges. The site
form has no such error: the sites of a Gaussian likelihood do not depend on q at all, so a
batch is added exactly in one step (the reference code's two damped steps at r = 0.8 add only
1 − (1 − r)² = 96 % of it).

**Per update** (Alg. 1), with the newest batch and the memory 𝓜 of earlier samples:

1. Inducing inputs Z' by pivoted Cholesky on [Z; X_new] (shared selection).
2. The sites of the data *not in the memory*, kept at the anchor Z_b, are carried to Z' by the
   Nyström projection P = K_bb⁻¹K_bu' (OVC++'s carry, Eq. 27 in site form).
3. The memory's sites are recomputed at the current posterior (Eqs. 19-20) and the new batch's
   sites added: q(u) from carried + memory + batch sites. Keeping the non-memory sites apart is
   the paper's "subtract the memory's old sites, add its new ones" without the subtraction.
   Gaussian sites are formed at the noise variance of their time (OVC++), so the memory's
   are at the current one and the carried ones at theirs.
4. Memory: ``dual.memory_per_batch`` samples of the batch drawn without replacement in
   proportion to their leverage h_i = β̂_i v_i (Eq. 31, v_i the marginal variance of f_i at
   the posterior just formed; it is Eq. 30's ridge leverage [K_ff(K_ff + Λ⁻¹)⁻¹]_ii,
   Λ = diag β̂, where the samples are inducing inputs), or uniformly (``dual.memory_pick``);
   with a bound ``dual.memory_max`` the lowest-leverage samples leave the memory and their
   sites join the carried ones. The samples that join leave the carried sites.
5. Hyper-parameters (``dual.objective``): the dual objective (Eqs. 25-26, :class:`DualObjective`:
   q(u) moves with θ through fixed sites; the old data's expected log-likelihood estimated from
   the memory) or POAM's all-data mini-batch ELBO with q(u) fixed.

With an empty memory this is OVC++; with every past sample in the memory it is FULL.

**Where the paper and its published code (AaltoML/sequential-gp) disagree**, and the choice:

* Hyper-parameters weigh the memory by n_old/|𝓜| here (the paper); the code scales by
  n_old/(memory per batch) while its memory grows every batch.
* Memory samples are drawn without replacement here (the paper); the code draws with
  replacement (``np.random.choice``), so a sample may enter twice.
* The code removes only the sites of the memory of before the last batch, so the samples
  that joined from the last batch are counted twice (their batch sites stay); here every memory
  sample's site is in the memory part only.
* The code projects the memory sites with the kernel after the M-step on both sides of P; here
  K_bb⁻¹ is that of the kernel that formed the sites (OVC++'s consistent carry).
* The code picks the memory after the hyper-parameter steps; here in the E-step, at the
  posterior just conditioned on the batch (the M-step then sees the memory of the old data
  only, as its n_old weighting assumes). The code's magnetometer run fixes a grid of inducing
  inputs and trains them; here they are the pivoted-Cholesky selection, as the paper states.
* The paper's memory grows without end; ``dual.memory_max`` optionally bounds it.

``UpdateReport.extra`` keys: ``memory_size`` (samples in the memory after the update),
``memory_added`` (samples of this batch that joined it), ``memory_leverage_mean`` (their mean
leverage β̂_i v_i; NaN when none joined).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import torch
from torch import Tensor

from poam_ros.models.batch_terms import CrossCovariance, KernelCross
from poam_ros.models.linalg import robust_cholesky, solve_lower
from poam_ros.models.objectives import TrainingObjective
from poam_ros.models.ovc import OVCPlusPlus
from poam_ros.models.posterior import (
    TERMS_DTYPE,
    PredictionCache,
    VariationalPosterior,
    optimal_posterior,
    prediction_cache,
    whiten_terms,
    whitened_optimal_posterior,
)
from poam_ros.models.report import UpdateReport
from poam_ros.models.selection import InducingUpdate


def site_terms(cross: CrossCovariance, precision: Tensor, shift: Tensor) -> tuple[Tensor, Tensor]:
    """λ₁ = Σ_i k_zi s_i (M,) and λ₂ = Σ_i k_zi β_i k_ziᵀ (M × M) of per-sample sites with
    precision β_i and shift s_i = β_i ŷ_i (both (N,)), over the blocks of K_zf (TERMS_DTYPE)."""
    vector = torch.zeros(cross.num_inducing, dtype=TERMS_DTYPE, device=cross.device)
    matrix = torch.zeros(cross.num_inducing, cross.num_inducing, dtype=TERMS_DTYPE,
                         device=cross.device)
    for rows, block in cross.blocks():
        vector.addmv_(block, shift[rows].to(TERMS_DTYPE))
        matrix.addmm_(block * precision[rows].to(TERMS_DTYPE), block.transpose(0, 1))
    return vector, matrix


def marginals(cross: CrossCovariance, cache: PredictionCache,
              prior_var: Tensor) -> tuple[Tensor, Tensor]:
    """Mean and variance (N,) of f_i under q(u) (Eq. 10), over the blocks of K_zf: μ = K_fu α,
    v = a − k_iᵀ(K⁻¹ − K⁻¹SK⁻¹)k_i, the variance floored at 1e-12 a (round-off)."""
    means, variances = [], []
    alpha, q = cache.alpha.to(TERMS_DTYPE), cache.q.to(TERMS_DTYPE)
    for _, block in cross.blocks():
        means.append(block.transpose(0, 1) @ alpha)
        variances.append(prior_var - (block * (q @ block)).sum(0))
    floor = 1e-12 * float(prior_var)
    empty = alpha.new_empty(0)
    return (torch.cat(means) if means else empty,
            (torch.cat(variances) if variances else empty).clamp_min(floor))


def dual_negative_elbo(k_uu: Tensor, k_uf: Tensor, prior_var: Tensor, vector: Tensor,
                       matrix: Tensor, expected_log_lik, y: Tensor, weights: Tensor,
                       num_data: float, jitter: float, max_tries: int) -> Tensor:
    """−(Σ_b w_b E_q[log p(y_b | f_b)] − KL(q_θ ‖ p_θ)) / N, the dual objective (Eqs. 25-26).

    q_θ(u) is q(u) of the fixed sites λ₁ = ``vector``, λ₂ = ``matrix`` under the current
    K = K_uu: with L = chol K, A = L⁻¹λ₂L⁻ᵀ, B = chol(I + A), w = (I + A)⁻¹L⁻¹λ₁ and
    V = L⁻¹K_uf,

        μ = Vᵀw,   v = a − |V_b|² + |B⁻¹V_b|²
        KL = ½ [tr (I + A)⁻¹ + wᵀw − M + 2 log|B|]

    ``expected_log_lik(μ, v, y)`` is the likelihood's E_q[log p(y | f)] per sample (B,);
    ``weights`` (B,) how many samples each stands for, ``num_data`` N their total. At the θ that
    formed the sites q_θ is the model's q(u), and the value that of the fixed-q ELBO.
    """
    chol = robust_cholesky(k_uu, jitter, max_tries, "K_uu of the dual objective")
    whitened = solve_lower(chol, solve_lower(chol, matrix).transpose(-1, -2))
    eye = torch.eye(len(vector), dtype=k_uu.dtype, device=k_uu.device)
    b_chol = robust_cholesky(eye + 0.5 * (whitened + whitened.transpose(-1, -2)), 0.0,
                             max_tries, "I + A of the dual objective")
    c = solve_lower(chol, vector.unsqueeze(-1))
    w = torch.cholesky_solve(c, b_chol)
    v = solve_lower(chol, k_uf)
    mean = (v.transpose(0, 1) @ w).squeeze(-1)
    var = prior_var - v.square().sum(0) + solve_lower(b_chol, v).square().sum(0)
    trace = torch.cholesky_inverse(b_chol).diagonal().sum()
    kl = 0.5 * (trace + w.square().sum() - len(vector)) + b_chol.diagonal().log().sum()
    return -((weights * expected_log_lik(mean, var, y)).sum() - kl) / num_data


def draw_without_replacement(weights: Tensor, count: int, generator: torch.Generator) -> Tensor:
    """``count`` distinct indices drawn one after another in proportion to ``weights`` (N,) among
    those not yet drawn (Eq. 31's sampling). Zero weights are raised to 1e-12 of the largest so
    that any ``count`` ≤ N can be drawn."""
    weights = weights.detach().double().cpu()
    weights = weights.clamp_min(1e-12 * float(weights.max()) if len(weights) else 0.0)
    if not float(weights.max()) > 0.0:
        weights = torch.ones_like(weights)
    return torch.multinomial(weights, count, replacement=False, generator=generator)


@dataclass
class Conditioned:
    """q(u) from carried, memory and batch sites, with each sample's site (β_i, β_i ŷ_i)."""

    posterior: VariationalPosterior  # TERMS_DTYPE
    total: tuple[Tensor, Tensor]  # λ₁, λ₂ that formed it
    batch_terms: tuple[Tensor, Tensor]  # the batch's share of them
    batch_sites: tuple[Tensor, Tensor]  # (N_new,) precisions β_i and shifts β_i ŷ_i
    memory_sites: tuple[Tensor, Tensor]  # (K,) the same for the memory


class DualGP(OVCPlusPlus):
    """The memory-based dual GP with a Gaussian likelihood (see the module docstring).

    Beyond OVC++'s state it keeps the memory (buffer rows, and each sample's site as last
    recomputed), and its own generator for the memory draws, so that they leave the M-step's
    mini-batch sequence as OVC++'s.
    """

    method = "dual-gp"

    def __init__(self, config=None, input_dim: int = 2):
        super().__init__(config, input_dim)
        self.memory_rows = np.zeros(0, dtype=np.int64)  # buffer rows of the memory, (K,)
        self.memory_sites = torch.zeros(0, 2, dtype=TERMS_DTYPE)  # (K, 2): β_i, β_i ŷ_i
        self.memory_generator = torch.Generator().manual_seed(self.config.seed)
        self._site_terms: tuple[Tensor, Tensor] | None = None  # λ₁, λ₂ that formed q(u)
        self._memory_report: dict = {}

    def memory_samples(self) -> tuple[np.ndarray, np.ndarray]:
        """The memory samples in world units: inputs (K × D) and targets (K,), as measured
        (the mapper's ``map/memory`` cloud)."""
        return self.buffer.x[self.memory_rows], self.buffer.y[self.memory_rows]

    # ------------------------------------------------------------------ E-step
    def _update_posterior(self, x_new: Tensor, y_new: Tensor, report: UpdateReport) -> None:
        super()._update_posterior(x_new, y_new, report)
        report.extra.update(self._memory_report)

    def _update_variational(self, selection: InducingUpdate, x_new: Tensor, y_new: Tensor) -> None:
        """Steps 2-4 of the module docstring, in TERMS_DTYPE; assigned once all is computed."""
        z, config = selection.inducing, self.config
        k_chol = robust_cholesky(selection.k_new.to(TERMS_DTYPE), config.jitter,
                                 config.max_jitter_tries, "K_u'u' of the new inducing inputs")
        if self.data_vector is None:
            rest = (torch.zeros(len(z), dtype=TERMS_DTYPE, device=self.device),
                    torch.zeros(len(z), len(z), dtype=TERMS_DTYPE, device=self.device))
        else:
            rest = self._carried_terms(selection)
        x_mem, y_mem = self._scaled(self.memory_rows)
        mem_cross = KernelCross(self.covariance, z, x_mem)
        done = self._condition(k_chol, rest, selection.cross, y_new, mem_cross, y_mem)
        kept, added, evicted, leverage = self._next_memory(
            selection.cross, mem_cross, prediction_cache(k_chol, done.posterior), done)
        rest = tuple(r + b for r, b in zip(rest, done.batch_terms))
        if len(added):  # joining the memory: their sites leave the carried ones
            joining = site_terms(KernelCross(self.covariance, z, x_new[added.to(self.device)]),
                                 *(s[added] for s in done.batch_sites))
            rest = tuple(r - j for r, j in zip(rest, joining))
        if len(evicted):  # leaving it: their sites of now join the carried ones
            leaving = site_terms(KernelCross(self.covariance, z, x_mem[evicted.to(self.device)]),
                                 *(s[evicted] for s in done.memory_sites))
            rest = tuple(r + e for r, e in zip(rest, leaving))
        self.memory_rows = np.concatenate([self.memory_rows[kept.numpy()],
                                           self.num_fitted + added.numpy()])
        self.memory_sites = torch.cat([torch.stack(done.memory_sites, 1)[kept],
                                       torch.stack(done.batch_sites, 1)[added]])
        self.posterior = done.posterior.to(self.dtype)
        self.inducing = self.data_inducing = z
        self.data_vector, self.data_matrix, self.data_chol = rest[0], rest[1], k_chol
        self._whitened = None  # the next carry whitens the non-memory sites
        self._site_terms = done.total
        self._memory_report = dict(
            memory_size=len(self.memory_rows), memory_added=len(added),
            memory_leverage_mean=float(leverage.mean()) if len(added) else math.nan)

    def _condition(self, k_chol: Tensor, rest: tuple[Tensor, Tensor], cross: CrossCovariance,
                   y_new: Tensor, mem_cross: CrossCovariance, y_mem: Tensor) -> Conditioned:
        """Gaussian likelihood: every site is β_i = 1/σ², β_i ŷ_i = y_i/σ² (σ² of now) whatever
        q(u), so carried + memory + batch sites give the exact q(u) in one step."""
        noise = self.noise.to(TERMS_DTYPE)
        batch = self._batch_terms(cross, y_new)  # OVC++'s K_uf y/σ², K_uf K_fu/σ²
        vector, matrix = rest[0] + batch[0], rest[1] + batch[1]
        memory_sites = (noise.reciprocal().expand(len(y_mem)), y_mem.to(TERMS_DTYPE) / noise)
        if len(y_mem):
            mem_vector, mem_matrix = site_terms(mem_cross, *memory_sites)
            vector, matrix = vector + mem_vector, matrix + mem_matrix
        one = torch.ones((), dtype=TERMS_DTYPE, device=self.device)
        posterior = whitened_optimal_posterior(k_chol, whiten_terms(k_chol, vector, matrix), one,
                                               self.config.max_jitter_tries)
        batch_sites = (noise.reciprocal().expand(len(y_new)), y_new.to(TERMS_DTYPE) / noise)
        return Conditioned(posterior, (vector, matrix), batch, batch_sites, memory_sites)

    def _next_memory(self, cross: CrossCovariance, mem_cross: CrossCovariance,
                     cache: PredictionCache, done: Conditioned
                     ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
        """Which old memory samples stay (``kept``, ``evicted``: indices into the memory), which
        batch samples join (``added``, sorted) and their leverage h_i = β̂_i v_i (Eq. 31)."""
        config = self.config
        prior_var = self.amplitude.detach().to(TERMS_DTYPE)
        num_new, num_old = cross.num_data, len(self.memory_rows)
        count = min(config.dual.memory_per_batch, num_new)
        added = torch.zeros(0, dtype=torch.int64)
        leverage = torch.zeros(0, dtype=TERMS_DTYPE)
        if count:
            leverage = (done.batch_sites[0] * marginals(cross, cache, prior_var)[1]).cpu()
            if count == num_new:
                added = torch.arange(num_new)
            elif config.dual.memory_pick == "leverage":
                added = draw_without_replacement(leverage, count, self.memory_generator)
            else:
                added = torch.randperm(num_new, generator=self.memory_generator)[:count]
            added = added.sort().values
        kept, evicted = torch.arange(num_old), torch.zeros(0, dtype=torch.int64)
        bound = config.dual.memory_max
        if bound and num_old + len(added) > bound:
            old = (done.memory_sites[0] * marginals(mem_cross, cache, prior_var)[1]).cpu()
            ranked = torch.cat([old, leverage[added]]).argsort(descending=True, stable=True)
            stay = torch.zeros(num_old + len(added), dtype=torch.bool)
            stay[ranked[:bound]] = True
            kept, evicted = kept[stay[:num_old]], kept[~stay[:num_old]]
            added = added[stay[num_old:]]
        return kept, added, evicted, leverage[added]

    # ------------------------------------------------------------------ M-step
    def _training_objective(self, x_new: Tensor, y_new: Tensor) -> TrainingObjective:
        if self.config.dual.objective == "all-data":
            return super()._training_objective(x_new, y_new)
        num_old = self.num_fitted - len(y_new)
        old_memory = self.memory_rows[self.memory_rows < num_old]
        x_mem, y_mem = self._scaled(old_memory)
        return DualObjective(self, x_new, y_new, x_mem, y_mem, num_old)

    def _expected_log_lik(self, mean: Tensor, var: Tensor, y: Tensor) -> Tensor:
        """E_{N(μ, v)}[log N(y | f, σ²)] = −½ [log 2πσ² + ((y − μ)² + v)/σ²] per sample."""
        noise = self.noise
        return -0.5 * (math.log(2 * math.pi) + noise.log() + ((y - mean).square() + var) / noise)

    # ------------------------------------------------------------------ state
    def _method_state(self) -> dict[str, Tensor]:
        state = super()._method_state()
        if not state:
            return state
        return {**state, "memory_rows": torch.from_numpy(self.memory_rows.copy()),
                "memory_sites": self.memory_sites,
                "memory_generator": self.memory_generator.get_state()}

    def _load_method_state(self, state: dict[str, Tensor]) -> None:
        super()._load_method_state(state)
        if not state:
            self.memory_rows = np.zeros(0, dtype=np.int64)
            self.memory_sites = torch.zeros(0, 2, dtype=TERMS_DTYPE)
            self.memory_generator.manual_seed(self.config.seed)
            return
        self.memory_rows = state["memory_rows"].cpu().numpy().astype(np.int64)
        self.memory_sites = state["memory_sites"].to(TERMS_DTYPE)
        self.memory_generator.set_state(state["memory_generator"].cpu())


class DualObjective(TrainingObjective):
    """−(dual objective) / N (Eqs. 25-26, :func:`dual_negative_elbo`) with the sites that formed
    q(u) fixed: the new batch, and the memory of the old data with each sample standing for
    n_old/|𝓜| of them (nothing for the old data without a memory: they are in the sites only).

    When batch and memory fit in one mini-batch (``batch_size``), and always under the L-BFGS
    M-step (which needs a deterministic objective), every step evaluates them all with those
    weights: the paper's objective. Otherwise each step draws ``batch_size`` of them with
    replacement in proportion to their weights (from the model's generator, all steps at once),
    each then standing for N / ``batch_size`` samples. After the steps q(u) is that of the
    sites under the trained hyper-parameters.
    """

    def __init__(self, model: DualGP, x_new: Tensor, y_new: Tensor, x_mem: Tensor, y_mem: Tensor,
                 num_old: int):
        self.model = model
        self.vector, self.matrix = (t.to(model.dtype) for t in model._site_terms)
        num_new, num_mem = len(y_new), len(y_mem)
        self.num_data = float(num_new + (num_old if num_mem else 0))
        x, y = torch.cat([x_new, x_mem]), torch.cat([y_new, y_mem])
        size, steps = model.config.batch_size, model.trainer.steps()
        if num_new + num_mem <= size or model.config.m_step == "lbfgs":
            weights = torch.cat([torch.ones(num_new), torch.full((num_mem,), num_old / max(
                num_mem, 1))]).to(x)
            self._batches = itertools.repeat((x, y, weights))
        else:
            draws = torch.randint(int(self.num_data), (steps, size), generator=model.generator)
            index = torch.where(draws < num_new, draws,
                                num_new + (draws - num_new) * num_mem // max(num_old, 1))
            weights = torch.full((size,), self.num_data / size).to(x)
            index = index.to(x.device)
            self._batches = iter([(x[rows], y[rows], weights) for rows in index])

    def loss(self) -> Tensor:
        model, z = self.model, self.model.inducing
        x, y, weights = next(self._batches)
        return dual_negative_elbo(model.covariance(z, z), model.covariance(z, x), model.amplitude,
                                  self.vector, self.matrix, model._expected_log_lik, y, weights,
                                  self.num_data, model.config.jitter,
                                  model.config.max_jitter_tries)

    def commit(self) -> None:
        model = self.model
        chol = model.k_uu_cholesky(model.inducing, dtype=TERMS_DTYPE)
        one = torch.ones((), dtype=TERMS_DTYPE, device=model.device)
        model.posterior = optimal_posterior(chol, *model._site_terms, one,
                                            model.config.max_jitter_tries).to(model.dtype)
