"""Training objectives of the shared M-step: what Adam minimises, and which extra tensors it moves.

The M-step (:class:`~.training.Trainer`) always trains the kernel's and the likelihood's
hyper-parameters with the model's persistent Adam. A method picks the objective
(``_training_objective``) and with it any further trainable tensors (inducing inputs Z, whitened
variational parameters), which get their own Adam groups. An objective is used as:

    objective.loss()      # once per step; backward() and the optimiser steps follow
    objective.commit()    # after the last step: write the trained extras into the model
    objective.rollback()  # after a numerical failure: undo changes to persistent extras

Objectives:

* :class:`FixedPosteriorElbo`: the uncollapsed SVGP ELBO on mini-batches of all data with q(u)
  held fixed (POAM's M-step); optionally Z trained too (OVC, POAM-Z-OPT).
* :class:`WhitenedElbo`: the same ELBO with q(u) trained, whitened (SVGP, POAM-VAR-OPT).
* :class:`OnlineElbo`: Bui et al.'s collapsed online ELBO on the newest batch with the old
  posterior as prior (SSGP, SSGP++, POAM-ONLINE-ELBO).
"""

from __future__ import annotations

import torch
from torch import Tensor

from poam_ros.models.elbo import NegativeElbo, online_elbo, whitened_negative_elbo
from poam_ros.models.padding import masked_gram
from poam_ros.models.posterior import StreamingPrior, posterior_from_whitened


class TrainingObjective:
    """Base: no extra trainable tensors."""

    #: Adam over the extra tensors (None: only the hyper-parameters are trained).
    optimizer: torch.optim.Optimizer | None = None
    #: Whether :meth:`loss` takes a mini-batch from ``model.trainer.minibatch()`` in every step
    #: (the M-step then draws all steps' batches at once, from the same generator sequence).
    uses_minibatches: bool = False
    #: Whether the steps can be captured as a CUDA graph (:mod:`.captured`).
    capturable: bool = False

    def loss(self) -> Tensor:
        raise NotImplementedError

    def inducing_cache(self) -> tuple[Tensor, Tensor] | None:
        """(Z, the kernel's precomputed part of K(Z, Z)) when Z stays the model's inducing
        inputs, for the prediction factors after the M-step; None otherwise."""
        return None

    def commit(self) -> None:
        """Write the trained extras into the model (called under ``torch.no_grad``)."""

    def rollback(self) -> None:
        """Undo changes to extras that outlive the update (fresh ones are simply dropped)."""


def _trainable_inducing(model) -> tuple[Tensor, torch.optim.Optimizer]:
    z = model.inducing.detach().clone().requires_grad_(True)
    return z, torch.optim.Adam([z], lr=model.config.lr_inducing)


class FixedPosteriorElbo(TrainingObjective):
    """−ELBO / N on a mini-batch of all data, q(u) = N(m, S) fixed (see :mod:`.elbo`).

    With fixed inducing inputs the base-kernel stack of Z is computed once and reused in every
    step: only the attention weights, amplitude and noise change between steps. A step is
    :func:`fixed_posterior_blocks` and the ELBO, on Z padded to its bucket when the trainer asks
    for static shapes (:meth:`~.training.Trainer.padding`), the blocks compiled when so
    configured (:meth:`~.training.Trainer.step_function`). With ``train_inducing`` Z is a
    leaf trained by Adam (rate ``lr_inducing``) and the kernel is evaluated afresh in each
    step; q(u) stays attached to the moving Z, as in an unwhitened SVGP whose variational
    parameters are frozen.
    """

    uses_minibatches = True

    def __init__(self, model, train_inducing: bool = False):
        self.model = model
        posterior = model.posterior
        self.mean, self.logdet = posterior.mean, posterior.logdet
        self.cov_u = posterior.sqrt @ posterior.sqrt.transpose(0, 1)
        self.padding = self.mask = None
        if train_inducing:
            self.inducing, self.optimizer = _trainable_inducing(model)
            self.z, self.cache = self.inducing, None
            return
        self.inducing = self.z = model.inducing
        self.padding = model.trainer.padding(len(self.z))
        if self.padding is not None and self.padding.extra:  # a full bucket needs no mask
            pad = self.padding
            self.z, self.mask = pad.rows(self.z), pad.mask
            self.mean, self.cov_u = pad.rows(self.mean), pad.block(self.cov_u)
        self.cache = model.kernel.base_kernel.precompute(self.z, self.z)
        self.blocks = model.trainer.step_function(fixed_posterior_blocks)
        self.capturable = self.padding is not None

    def loss(self) -> Tensor:
        model, z = self.model, self.z
        x, y = model.trainer.minibatch()
        config = model.config
        if self.cache is None:
            k_uu, k_uf, cov, logdet = (model.covariance(z, z), model.covariance(z, x),
                                       self.cov_u, self.logdet)
        else:
            k_uu, k_uf, cov, logdet = self.blocks(model.kernel.base_kernel, model.amplitude, z,
                                                  self.cache, x, self.cov_u, self.logdet,
                                                  self.mask, config.jitter)
        return NegativeElbo.apply(k_uu, k_uf, model.amplitude, model.noise, y, self.mean, cov,
                                  logdet, model.num_fitted, config.jitter,
                                  config.max_jitter_tries)

    def inducing_cache(self) -> tuple[Tensor, Tensor] | None:
        """None where Z was trained or padded (a padded cache is not Z's: the prediction
        factors then make their own)."""
        if self.cache is None or self.z is not self.inducing:
            return None
        return self.inducing, self.cache

    def commit(self) -> None:
        if self.optimizer is not None:
            self.model.inducing = self.inducing.detach().clone()


def fixed_posterior_blocks(base, amplitude: Tensor, z: Tensor, cache: Tensor, x: Tensor,
                           cov: Tensor, logdet: Tensor, mask: Tensor | None, jitter: float
                           ) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The kernel blocks of one :class:`FixedPosteriorElbo` step at fixed Z (M × D; ``cache``
    its base stack) and a mini-batch x (B × D): K_uu, K_uf, and q(u)'s covariance and
    log-determinant as the ELBO takes them. K_uu and K_uf share the features of Z: the
    attention network runs once on it. With ``mask`` (M,) Z and q(u) are padded
    (:mod:`.padding`): the kernel blocks are masked and q(u)'s padded block completed to s·I,
    s = κ(1 + jitter), so that the padded rows add nothing to the bound. The elementwise chains
    of the attentive kernel are here, the ELBO's M³ factorisations outside (its Cholesky
    guard is no traceable code): this is what ``mapping.compile`` compiles, specialised to
    the shapes alone."""
    f_z = base.features(z)
    k_uu = amplitude * base.from_precomputed(z, z, cache, f_z, f_z)
    k_uf = amplitude * base.from_precomputed(z, x, base.precompute(z, x), f_z, base.features(x))
    if mask is not None:
        k_uu, kappa = masked_gram(k_uu, mask)
        k_uf = k_uf * mask.unsqueeze(-1)
        shift, pad = kappa * (1.0 + jitter), 1.0 - mask
        cov = cov + torch.diag(pad * shift)
        logdet = logdet + pad.sum() * shift.log()
    return k_uu, k_uf, cov, logdet


class WhitenedElbo(TrainingObjective):
    """−ELBO / N on a mini-batch of all data, with q(v) = N(μ, R Rᵀ) (u = L v) trained by Adam.

    ``mean_w`` and ``sqrt_w`` are leaf tensors (R is read as its lower triangle); ``inducing``
    a leaf too when Z is trained. ``optimizer`` covers them: pass a persistent one (SVGP, whose
    parameters live across updates; its state is then restored on rollback) or None for a fresh
    Adam (POAM-VAR-OPT, whose q(u) is carried anew to the inducing inputs of each update).
    """

    uses_minibatches = True

    def __init__(self, model, mean_w: Tensor, sqrt_w: Tensor, inducing: Tensor | None = None,
                 optimizer: torch.optim.Optimizer | None = None):
        self.model, self.mean_w, self.sqrt_w = model, mean_w, sqrt_w
        self.trains_inducing = inducing is not None
        self.inducing = inducing if inducing is not None else model.inducing
        self.persistent = optimizer is not None
        if optimizer is None:
            groups = [{"params": [mean_w, sqrt_w], "lr": model.config.lr_variational}]
            if self.trains_inducing:
                groups.append({"params": [inducing], "lr": model.config.lr_inducing})
            optimizer = torch.optim.Adam(groups)
        self.optimizer = optimizer
        if self.persistent:
            params = [p for group in optimizer.param_groups for p in group["params"]]
            self._saved = ([p.detach().clone() for p in params],
                           clone_tree(optimizer.state_dict()))

    def loss(self) -> Tensor:
        model, z = self.model, self.inducing
        x, y = model.trainer.minibatch()
        return whitened_negative_elbo(model.covariance(z, z), model.covariance(z, x),
                                      model.amplitude, model.noise, y, self.mean_w,
                                      self.sqrt_w.tril(), model.num_fitted, model.config.jitter,
                                      model.config.max_jitter_tries)

    def commit(self) -> None:
        model = self.model
        z = self.inducing.detach().clone() if self.trains_inducing else model.inducing
        chol = model.k_uu_cholesky(z)
        posterior = posterior_from_whitened(chol, self.mean_w.detach().clone(),
                                            self.sqrt_w.detach().tril())
        model.inducing, model.posterior = z, posterior

    def rollback(self) -> None:
        if not self.persistent:
            return
        values, state = self._saved
        params = [p for group in self.optimizer.param_groups for p in group["params"]]
        with torch.no_grad():
            for param, value in zip(params, values):
                param.copy_(value)
        self.optimizer.load_state_dict(state)


class OnlineElbo(TrainingObjective):
    """−F / N of Bui et al.'s collapsed online ELBO (see :func:`.elbo.online_elbo`).

    The data are the newest batch only (all of it in every step: the collapsed bound does not
    split into mini-batches); the old data enter through ``prior`` (q_old and p(a | θ_old)),
    None at the first update, where the bound is Titsias'. ``prior`` may be a callable that
    builds the :class:`~.posterior.StreamingPrior`, so that a failing factorisation of S_a
    is a failure of this M-step. With ``train_inducing`` the new inducing inputs b are trained
    too (rate ``lr_inducing``).

    With static shapes (:meth:`~.training.Trainer.padding`, fixed b) b and a are padded to
    their buckets: K_bb as in :mod:`.padding`, K_bf's padded rows and K_ab's padded rows and
    columns zero, q_old padded with zero means and identity blocks of both Cholesky factors.
    Then L⁻¹K_bf and L⁻¹K_ba are zero on padded rows, so A and c are padded with zeros, I + A
    with an identity block, and the padded blocks of K_aa − Q_aa (zero) add nothing to the
    traces: the bound is unchanged. The batch itself is not padded.
    """

    def __init__(self, model, prior, x: Tensor, y: Tensor, train_inducing: bool = False):
        self.model, self.x, self.y = model, x, y
        self.prior: StreamingPrior | None = prior() if callable(prior) else prior
        self.mask_b = self.mask_a = None
        if train_inducing:
            self.inducing, self.optimizer = _trainable_inducing(model)
            return
        self.inducing = model.inducing
        padding = model.trainer.padding(len(self.inducing))
        if padding is not None and padding.extra:  # a full bucket needs no mask
            self.inducing, self.mask_b = padding.rows(self.inducing), padding.mask
        old = None if self.prior is None else model.trainer.padding(len(self.prior.inducing))
        if old is not None and old.extra:
            self.prior = StreamingPrior(old.rows(self.prior.inducing), old.rows(self.prior.mean),
                                        old.block(self.prior.cov_chol, 1.0),
                                        old.block(self.prior.prior_chol, 1.0))
            self.mask_a = old.mask

    def loss(self) -> Tensor:
        model, z, prior = self.model, self.inducing, self.prior
        config = model.config
        k_ab = k_aa = None
        if prior is not None:
            k_ab = model.inducing_cross_covariance(prior.inducing, z)
            k_aa = model.inducing_cross_covariance(prior.inducing, prior.inducing)
        k_bb, k_bf = model.covariance(z, z), model.covariance(z, self.x)
        if self.mask_b is not None:
            k_bb, k_bf = masked_gram(k_bb, self.mask_b)[0], k_bf * self.mask_b.unsqueeze(-1)
            if k_ab is not None:
                k_ab = k_ab * self.mask_b
        if self.mask_a is not None:
            k_ab = k_ab * self.mask_a.unsqueeze(-1)
            k_aa = k_aa * torch.outer(self.mask_a, self.mask_a)
        bound = online_elbo(k_bb, k_bf, model.amplitude, model.noise, self.y, prior, k_ab, k_aa,
                            config.jitter, config.max_jitter_tries)
        return -bound / self.y.shape[0]

    def commit(self) -> None:
        if self.optimizer is not None:
            self.model.inducing = self.inducing.detach().clone()


def clone_tree(tree):
    if isinstance(tree, torch.Tensor):
        return tree.clone()
    if isinstance(tree, dict):
        return {k: clone_tree(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [clone_tree(v) for v in tree]
    return tree
