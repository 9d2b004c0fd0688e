"""Batch references of the POAM paper: FULL, PAM and SVGP. Each reads all data at every update.

* **FULL** (Appendix B, the slower upper reference): POAM's inducing inputs (pivoted Cholesky on
  [Z; X_new]) and M-step, but q(u) recomputed from *all* data at every update,
  S = K_uu Σ⁻¹ K_uu, m = σ⁻² K_uu Σ⁻¹ K_uf y, Σ = K_uu + σ⁻² K_uf K_fu (POAM Eqs. 7-8), instead
  of carrying stored terms. Costs O(N M²) per update.
* **PAM** (Sec. IV-A, batch variational EM): inducing inputs by pivoted Cholesky on the kernel
  matrix of all data, q(u) from all data as FULL, then the hyper-parameter steps. Costs
  O(N M²) time per update and O(N M) memory: the selection reads the chosen columns only.
* **SVGP** (Hensman et al. 2013; the failure case of the POAM paper's Fig. 2): inducing inputs,
  whitened variational parameters and hyper-parameters all trained jointly by Adam on the
  mini-batch SVGP ELBO; no closed-form step. Z starts at a random subset of the first data, q(v)
  at the prior N(0, I).
"""

from __future__ import annotations

import torch
from torch import Tensor

from poam_ros.models.batch_terms import KernelCross
from poam_ros.models.linalg import robust_cholesky
from poam_ros.models.objectives import TrainingObjective, WhitenedElbo
from poam_ros.models.posterior import TERMS_DTYPE, optimal_posterior, posterior_from_whitened
from poam_ros.models.report import UpdateReport
from poam_ros.models.selection import InducingUpdate
from poam_ros.models.sparse_gp import OnlineSparseGP


class Full(OnlineSparseGP):
    """FULL: POAM with q(u) recomputed from all data at every update."""

    method = "full"

    def _update_variational(self, selection: InducingUpdate, x_new: Tensor, y_new: Tensor) -> None:
        """The sums over all data and q(u) in TERMS_DTYPE, as POAM's."""
        z, config = selection.inducing, self.config
        x_all, y_all = self._scaled(self._data_so_far(x_new))
        vector, matrix = KernelCross(self.covariance, z, x_all).terms(y_all)
        k_chol = robust_cholesky(selection.k_new.to(TERMS_DTYPE), config.jitter,
                                 config.max_jitter_tries, "K_uu of the inducing inputs")
        self.posterior = optimal_posterior(k_chol, vector, matrix, self.noise.to(TERMS_DTYPE),
                                           config.max_jitter_tries).to(self.dtype)
        self.inducing = z


class PAM(Full):
    """PAM: pivoted Cholesky on all data, then FULL's q(u) and POAM's M-step."""

    method = "pam"

    def _choose_inducing(self, x_new: Tensor, report: UpdateReport) -> InducingUpdate:
        """Pivots among all data: the selection reads the M chosen columns of their kernel
        matrix, never the N × N matrix (memory O(N M) once N > 4 M)."""
        x_all, _ = self._scaled(self._data_so_far(x_new))
        pcd, _ = self._pivoted_selection(x_all, report)
        z = x_all[pcd.pivots.to(self.device)]
        return InducingUpdate(z, self.covariance(z, z), KernelCross(self.covariance, z, x_new),
                              None)


class SVGP(OnlineSparseGP):
    """SVGP: Z, q(v) = N(μ, R Rᵀ) and θ jointly by Adam on the mini-batch ELBO.

    Z, μ and R are leaves that live across updates with one Adam (rates ``lr_inducing`` and
    ``lr_variational``), whose moments are saved with the model.
    """

    method = "svgp"
    optimizes_inducing = True

    def __init__(self, config=None, input_dim: int = 2):
        super().__init__(config, input_dim)
        self.z_param: Tensor | None = None
        self.mean_w: Tensor | None = None
        self.sqrt_w: Tensor | None = None
        self.svgp_optimizer: torch.optim.Optimizer | None = None

    def _update_posterior(self, x_new: Tensor, y_new: Tensor, report: UpdateReport) -> None:
        """Nothing is fitted in closed form: new data only enter the mini-batches. At the first
        update Z is drawn from the data (or fixed) and q(v) set to the prior."""
        if self.z_param is None:
            if self.fixed_inducing:
                z = self.intake.fixed_z
            else:
                x_all, _ = self._scaled(self._data_so_far(x_new))
                z = x_all[self._random_rows(len(x_all), self.config.num_inducing)]
            eye = torch.eye(len(z), dtype=self.dtype, device=self.device)
            parameters = (z, z.new_zeros(len(z)), eye)
        else:
            parameters = (self.z_param.detach(), self.mean_w.detach(), self.sqrt_w.detach())
        z, mean_w, sqrt_w = parameters
        posterior = posterior_from_whitened(self.k_uu_cholesky(z), mean_w, sqrt_w.tril())
        if self.z_param is None:
            self._set_parameters(*(p.clone() for p in parameters))
        self.inducing, self.posterior = z.clone(), posterior

    def _set_parameters(self, z: Tensor, mean_w: Tensor, sqrt_w: Tensor) -> None:
        self.z_param, self.mean_w, self.sqrt_w = (p.requires_grad_(True)
                                                  for p in (z, mean_w, sqrt_w))
        groups = [{"params": [self.mean_w, self.sqrt_w], "lr": self.config.lr_variational}]
        if not self.fixed_inducing:
            groups.append({"params": [self.z_param], "lr": self.config.lr_inducing})
        self.svgp_optimizer = torch.optim.Adam(groups)

    def fix_inducing_inputs(self, z) -> None:
        """As :meth:`OnlineSparseGP.fix_inducing_inputs`, before the first update only: after
        it the inducing inputs are parameters that Adam has been moving."""
        if self.z_param is not None:
            raise ValueError("SVGP's inducing inputs can only be fixed before its first update")
        super().fix_inducing_inputs(z)

    def _training_objective(self, x_new: Tensor, y_new: Tensor) -> TrainingObjective:
        return WhitenedElbo(self, self.mean_w, self.sqrt_w,
                            None if self.fixed_inducing else self.z_param, self.svgp_optimizer)

    def _method_state(self) -> dict[str, Tensor]:
        if self.z_param is None:
            return {}
        state = {"z_param": self.z_param.detach(), "mean_w": self.mean_w.detach(),
                 "sqrt_w": self.sqrt_w.detach()}
        for index, slots in self.svgp_optimizer.state_dict()["state"].items():
            state.update({f"adam_{index}_{name}": value for name, value in slots.items()})
        return state

    def _load_method_state(self, state: dict[str, Tensor]) -> None:
        """Also the in-place restore after a failed E-step, so the leaves keep their identity."""
        if "z_param" not in state:
            self.z_param = self.mean_w = self.sqrt_w = self.svgp_optimizer = None
            return
        values = (state["z_param"], state["mean_w"], state["sqrt_w"])
        if self.z_param is None or self.z_param.shape != values[0].shape:
            self._set_parameters(*(v.detach().clone() for v in values))
        else:
            with torch.no_grad():
                for leaf, value in zip((self.z_param, self.mean_w, self.sqrt_w), values):
                    leaf.copy_(value)
        slots: dict[int, dict] = {}
        for key, value in state.items():
            if key.startswith("adam_"):
                index, name = key[len("adam_"):].split("_", 1)
                slots.setdefault(int(index), {})[name] = value.clone()
        groups = self.svgp_optimizer.state_dict()["param_groups"]
        self.svgp_optimizer.load_state_dict({"state": slots, "param_groups": groups})
