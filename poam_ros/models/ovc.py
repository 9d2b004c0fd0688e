"""Online variational conditioning (Maddox, Stanton, Wilson 2021): OVC and OVC++ of the POAM paper.

W. J. Maddox, S. Stanton, A. G. Wilson, "Conditioning Sparse Variational Gaussian Processes
for Online Decision-making", NeurIPS 2021. With a Gaussian likelihood, the optimal q(u) of a
sparse GP is Titsias' (SGPR) posterior, which depends on the data only through the
noise-weighted terms

    a = K_uf Σ⁻¹ y,   B = K_uf Σ⁻¹ K_fu,   q(u): S = K_uu (K_uu + B)⁻¹ K_uu, m = K_uu (K_uu + B)⁻¹ a

Conditioning on new data is SGPR on the augmented data set (old data ∪ new batch): cache a
and B and add the batch's K_uf σ⁻² y and K_uf σ⁻² K_fu, with σ² the noise variance *at the
time the batch arrives* (Σ is the heteroscedastic noise of the augmented data set; cached
terms are not re-weighted when the noise estimate changes later, unlike POAM's). When the
inducing inputs change from Z_b to Z', the cache is carried as POAM carries its terms,
a' = Pᵀa, B' = PᵀBP with P = K_bb⁻¹ K_bu' (the old inducing inputs standing in for the old
data). Per batch:

1. **Inducing inputs**: greedy pivoted Cholesky on [Z; X_new] (as POAM); OVC then moves them by
   Adam steps on the ELBO together with the hyper-parameters, OVC++ does not.
2. **q(u)**: SGPR on the augmented data from the carried cache plus the batch's terms.
3. **Hyper-parameters**: POAM's M-step (mini-batch ELBO on all data, q(u) fixed).

For a Gaussian likelihood this conditioning gives the same q(u) as Bui et al.'s streaming
update (old data at their noise of the time, old prior at the old hyper-parameters), in a
different, better-conditioned representation (no S⁻¹ − K⁻¹); OVC and SSGP differ in how they
learn the hyper-parameters and inducing inputs.
"""

from __future__ import annotations

import torch
from torch import Tensor

from poam_ros.models.batch_terms import CrossCovariance
from poam_ros.models.poam import POAM
from poam_ros.models.posterior import TERMS_DTYPE


class OVC(POAM):
    """OVC: cached noise-weighted terms, PCD inducing inputs then optimised by gradients."""

    method = "ovc"
    optimizes_inducing = True

    def _batch_terms(self, cross: CrossCovariance, y_new: Tensor) -> tuple[Tensor, Tensor]:
        """K_uf σ⁻² y and K_uf σ⁻² K_fu with the noise variance of now, kept as it is."""
        noise = self.noise.to(TERMS_DTYPE)
        vector, matrix = cross.terms(y_new)
        return vector / noise, matrix / noise

    def _terms_noise(self) -> Tensor:
        return torch.ones((), dtype=self.dtype, device=self.device)  # terms carry Σ⁻¹ already


class OVCPlusPlus(OVC):
    """OVC++: as OVC with the pivoted-Cholesky inducing inputs left where they are."""

    method = "ovc++"
    optimizes_inducing = False
