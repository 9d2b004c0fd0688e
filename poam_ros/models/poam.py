"""POAM: Probabilistic Online Attentive Mapping (Chen, Khardon, Liu).

Per update, with the newest batch (X_new, y_new) and the previous inducing inputs Z:

1. **Inducing inputs** (Sec. IV-B): greedy pivoted Cholesky on the kernel matrix of the
   candidates [Z; X_new] keeps at most M pivots Z' (the shared default selection of
   :class:`OnlineSparseGP`). Old data are represented by Z, so the cost does not grow with the
   data.
2. **Carry the stored data terms** (Eqs. 12-21): b = K_uf y and C = K_uf K_fu of all data so
   far are kept with respect to the inducing inputs Z_b of the E-step that last stored them
   (the anchor; Z itself unless a method moves Z by gradients after the E-step). Standing in
   for the old data by Z_b, K_u'f ≈ K_u'b K_bb⁻¹ K_bf, so b' = Pᵀ b and C' = Pᵀ C P with
   P = K_bb⁻¹ K_bu', where K_bb⁻¹ is taken under the kernel that produced b and C and K_bu'
   under the current one (the hyper-parameters move between updates; the consistent inverse
   keeps the carried terms close to a recomputation from all data). Then the new batch's own
   terms are added: b' += K_u'f_new y_new, C' += K_u'f_new K_f_new u'.
3. **Variational parameters** in closed form (Eqs. 7-8): the optimal q(u) given b' and C'.
4. **Hyper-parameters**: Adam steps on the ELBO (shared M-step of :class:`OnlineSparseGP`).

No step reads old data: an update costs O((M + N_new) M²) whatever the number of samples,
and memory O((M + N_new) M): the selection reads only the chosen columns of the candidates'
kernel matrix and the batch's terms are summed in blocks (:mod:`.batch_terms`).
"""

from __future__ import annotations

import torch
from torch import Tensor

from poam_ros.models.batch_terms import CrossCovariance
from poam_ros.models.linalg import robust_cholesky, solve_lower
from poam_ros.models.posterior import (
    TERMS_DTYPE,
    WhitenedTerms,
    whiten_terms,
    whitened_optimal_posterior,
)
from poam_ros.models.selection import InducingUpdate
from poam_ros.models.sparse_gp import OnlineSparseGP


class POAM(OnlineSparseGP):
    method = "poam"

    def __init__(self, config=None, input_dim: int = 2):
        super().__init__(config, input_dim)
        self.data_vector: Tensor | None = None  # b = K_uf y, (M,)
        self.data_matrix: Tensor | None = None  # C = K_uf K_fu, (M, M)
        self.data_chol: Tensor | None = None  # chol K_bb under the kernel that made b and C
        self.data_inducing: Tensor | None = None  # Z_b, the inputs b and C are expressed at
        self._whitened: WhitenedTerms | None = None  # b and C whitened by data_chol, if made

    def _update_variational(self, selection: InducingUpdate, x_new: Tensor, y_new: Tensor) -> None:
        """The terms and q(u) in TERMS_DTYPE; q(u) is then kept in the model's dtype."""
        vector, matrix = self._batch_terms(selection.cross, y_new)
        if self.data_vector is not None:
            old_vector, old_matrix = self._carried_terms(selection)
            vector, matrix = old_vector + vector, old_matrix + matrix
        k_chol = robust_cholesky(selection.k_new.to(TERMS_DTYPE), self.config.jitter,
                                 self.config.max_jitter_tries, "K_u'u' of the new inducing inputs")
        whitened = whiten_terms(k_chol, vector, matrix)  # the next E-step carries from these
        self.posterior = whitened_optimal_posterior(k_chol, whitened,
                                                    self._terms_noise().to(TERMS_DTYPE),
                                                    self.config.max_jitter_tries).to(self.dtype)
        self.inducing = self.data_inducing = selection.inducing
        self.data_vector, self.data_matrix, self.data_chol = vector, matrix, k_chol
        self._whitened = whitened

    def _batch_terms(self, cross: CrossCovariance, y_new: Tensor) -> tuple[Tensor, Tensor]:
        """The new batch's own terms K_u'f y and K_u'f K_fu', in chunks (TERMS_DTYPE)."""
        return cross.terms(y_new)

    def _terms_noise(self) -> Tensor:
        """The noise variance q(u) divides the stored terms by: the current one (POAM weighs
        every sample, old or new, with the latest noise estimate)."""
        return self.noise

    def _carried_terms(self, selection: InducingUpdate) -> tuple[Tensor, Tensor]:
        """Pᵀ b and Pᵀ C P with P = K_bb⁻¹ K_bu' (the anchor's inputs standing in for the data).

        K_bb⁻¹ is that of the kernel under which b and C were last expressed (kept from the
        previous E-step), K_bu' that of the current kernel: the stored terms are first mapped
        back to the anchor's inducing outputs, in which they are exact, then carried forward.
        The jitter of K_bb is a white-noise term of the kernel, so it also appears in K_bu'
        where an anchor and a new inducing input are the same point; with nothing moved and the
        same kernel, P is then the identity.
        """
        if selection.k_old is not None and self.data_inducing is self.inducing:
            k_anchor_new = selection.k_old
        else:  # the inducing inputs moved since the terms were stored
            k_anchor_new = self.inducing_cross_covariance(self.data_inducing, selection.inducing)
        chol = self.data_chol
        w = solve_lower(chol, k_anchor_new.to(TERMS_DTYPE))  # L⁻¹ K_bu'
        if self._whitened is None:  # loaded or restored: whiten the stored terms once
            self._whitened = whiten_terms(chol, self.data_vector, self.data_matrix)
        b, c = self._whitened.vector.unsqueeze(-1), self._whitened.matrix
        return (w.transpose(0, 1) @ b).squeeze(-1), w.transpose(0, 1) @ c @ w

    def _method_state(self) -> dict[str, Tensor]:
        if self.data_vector is None:
            return {}
        return dict(data_vector=self.data_vector, data_matrix=self.data_matrix,
                    data_chol=self.data_chol, data_inducing=self.data_inducing)

    def _load_method_state(self, state: dict[str, Tensor]) -> None:
        self._whitened = None
        if not state:  # no terms yet: the state before the first update
            self.data_vector = self.data_matrix = self.data_chol = self.data_inducing = None
            return
        self.data_vector, self.data_matrix, self.data_chol = (
            state[name].to(TERMS_DTYPE) for name in ("data_vector", "data_matrix", "data_chol"))
        inducing = state["data_inducing"].to(self.dtype)
        # The same object as Z when equal: _carried_terms tells "not moved" by identity.
        same = self.inducing is not None and torch.equal(inducing, self.inducing)
        self.data_inducing = self.inducing if same else inducing
