"""The constant + Matérn-5/2 kernel against its closed form, and its cached interfaces."""

import math

import gpytorch
import pytest
import torch

from poam_ros.kernels import ConstantMaternKernel, make_kernel
from poam_ros.models import MappingConfig, make_model


def inputs(n, seed, dim=2):
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(n, dim, generator=generator, dtype=torch.float64) * 2 - 1


@pytest.fixture
def kernel():
    kernel = ConstantMaternKernel().double()
    kernel.lengthscale = torch.tensor(0.4, dtype=torch.float64)  # a float rounds to float32
    kernel.constant = 0.25
    return kernel


def closed_form(x1, x2, lengthscale, constant):
    """(c + (1 + √5 r/l + 5 r²/(3 l²)) exp(−√5 r/l)) / (1 + c), one entry at a time."""
    out = torch.empty(len(x1), len(x2), dtype=torch.float64)
    for i, a in enumerate(x1):
        for j, b in enumerate(x2):
            r = math.sqrt(float(((a - b) ** 2).sum()))
            s = math.sqrt(5) * r / lengthscale
            out[i, j] = (constant + (1 + s + s * s / 3) * math.exp(-s)) / (1 + constant)
    return out


def test_matches_closed_form(kernel):
    x1, x2 = inputs(13, 0), inputs(9, 1)
    with torch.no_grad():
        assert torch.allclose(kernel.forward(x1, x2), closed_form(x1, x2, 0.4, 0.25),
                              rtol=1e-13, atol=1e-15)


def test_values_at_known_distances(kernel):
    """At r = l/√5 the Matérn part is (1 + 1 + 1/3) e⁻¹; far away only c / (1 + c) is left."""
    x1 = torch.zeros(1, 1, dtype=torch.float64)
    x2 = torch.tensor([[0.4 / math.sqrt(5)], [1e3]], dtype=torch.float64)
    with torch.no_grad():
        k = kernel.forward(x1, x2)[0]
    assert k[0].item() == pytest.approx((0.25 + (7 / 3) / math.e) / 1.25, rel=1e-14)
    assert k[1].item() == pytest.approx(0.2, rel=1e-14)


def test_scaled_is_the_papers_constant_plus_matern(kernel):
    """a · k = c_v + σ² m with a = c_v + σ² and c = c_v / σ² (gpytorch's Matérn as m)."""
    c_v, sigma2 = 0.3, 1.2
    kernel.constant = c_v / sigma2
    scaled = gpytorch.kernels.ScaleKernel(kernel).double()
    scaled.outputscale = c_v + sigma2
    matern = gpytorch.kernels.MaternKernel(nu=2.5).double()
    matern.lengthscale = torch.tensor(0.4, dtype=torch.float64)
    x1, x2 = inputs(20, 2, dim=3), inputs(15, 3, dim=3)
    with torch.no_grad():
        reference = c_v + sigma2 * matern(x1, x2).to_dense()
        assert torch.allclose(scaled(x1, x2).to_dense(), reference, rtol=1e-12, atol=1e-14)


def test_unit_diagonal_and_psd(kernel):
    x = inputs(150, 4)
    with torch.no_grad():
        gram = kernel.forward(x, x)
        assert torch.allclose(gram.diagonal(), torch.ones(150, dtype=torch.float64), atol=1e-15)
        assert torch.equal(kernel.forward(x, x, diag=True), torch.ones(150, dtype=torch.float64))
        assert torch.equal(gram, gram.T)
        assert torch.linalg.eigvalsh(gram).min() > -1e-10


def test_precomputed_and_columns_equal_forward(kernel):
    x1, x2 = inputs(30, 5), inputs(7, 6)
    with torch.no_grad():
        direct = kernel.forward(x1, x2)
        assert torch.equal(kernel.from_precomputed(x1, x2, kernel.precompute(x1, x2)), direct)
        f1, f2 = kernel.features(x1), kernel.features(x2)
        assert f1.shape == (30, 0)
        assert torch.equal(kernel.columns(x1, f1, x2, f2), direct)


def test_gradients_are_finite_at_coinciding_inputs(kernel):
    """m is smooth at r = 0: a Gram matrix's gradient for the inputs exists there (no 0 · ∞)."""
    x = inputs(8, 7).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a: kernel.forward(a, a), (x,))
    kernel.forward(x, x).sum().backward()
    assert torch.isfinite(x.grad).all()
    raw = (kernel.raw_lengthscale.detach().clone().requires_grad_(True),
           kernel.raw_constant.detach().clone().requires_grad_(True))
    points = x.detach()

    def gram(raw_l, raw_c):
        params = {"raw_lengthscale": raw_l, "raw_constant": raw_c}
        return torch.func.functional_call(kernel, params, (points, points)).to_dense()

    assert torch.autograd.gradcheck(gram, raw)


def test_lengthscale_map_is_the_lengthscale(kernel):
    with torch.no_grad():
        assert torch.allclose(kernel.lengthscale_map(inputs(5, 8)),
                              torch.full((5,), 0.4, dtype=torch.float64), rtol=1e-15, atol=0)


def test_made_from_the_configuration():
    config = MappingConfig(kernel="matern52", matern_initial_lengthscale=0.7,
                           matern_initial_constant=0.05, initial_amplitude=2.0)
    scaled = make_kernel("matern52", 2, config)
    assert isinstance(scaled.base_kernel, ConstantMaternKernel)
    assert scaled.base_kernel.lengthscale.item() == pytest.approx(0.7)
    assert scaled.base_kernel.constant.item() == pytest.approx(0.05)
    assert scaled.outputscale.item() == pytest.approx(2.0)


def test_a_model_learns_the_constant_and_lengthscale():
    """The constant is a trained hyper-parameter of a model like the lengthscale."""
    config = MappingConfig(method="poam", kernel="matern52", num_inducing=20, train_steps=5,
                           device="cpu")
    model = make_model(config, input_dim=2)
    x = inputs(100, 9).numpy()
    model.add_data(x, x.sum(1) + 3.0)
    before = (model.kernel.base_kernel.constant.item(),
              model.kernel.base_kernel.lengthscale.item())
    model.update()
    after = (model.kernel.base_kernel.constant.item(),
             model.kernel.base_kernel.lengthscale.item())
    assert before[0] != after[0] and before[1] != after[1]
