"""The attentive kernel against its formula evaluated element by element, and its properties."""

import math

import gpytorch
import numpy as np
import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from poam_ros.kernels import AttentiveKernel, RBFKernel, base_stack
from poam_ros.kernels.base_stack import MixBaseKernels, base_kernel_stack, exp_floor
from poam_ros.models import make_model
from poam_ros.models.config import MappingConfig


@pytest.fixture
def kernel():
    torch.manual_seed(3)
    return AttentiveKernel(input_dim=2, block_rows=7).double()


def inputs(n, seed):
    generator = torch.Generator().manual_seed(seed)
    return torch.rand(n, 2, generator=generator, dtype=torch.float64) * 2 - 1


def direct_formula(kernel, x1, x2):
    """k(x,x') = (w̄ᵀw̄') Σ_m w̄_m w̄'_m exp(-|x-x'|²/(2 l_m²)), one entry at a time."""
    out = torch.empty(len(x1), len(x2), dtype=torch.float64)
    lengthscales = kernel.base_lengthscales
    for i, a in enumerate(x1):
        for j, b in enumerate(x2):
            wa = kernel.attention(a[None])[0]
            wb = kernel.attention(b[None])[0]
            wa, wb = wa / wa.norm(), wb / wb.norm()
            dist2 = ((a - b) ** 2).sum()
            total = sum(wa[m] * wb[m] * torch.exp(-dist2 / (2 * lengthscales[m] ** 2))
                        for m in range(len(lengthscales)))
            out[i, j] = (wa @ wb) * total
    return out


def test_matches_direct_formula(kernel):
    x1, x2 = inputs(23, 0), inputs(17, 1)
    with torch.no_grad():
        assert torch.allclose(kernel(x1, x2).to_dense(), direct_formula(kernel, x1, x2), atol=1e-13)


def test_base_lengthscales_linearly_spaced(kernel):
    assert torch.allclose(kernel.base_lengthscales,
                          torch.linspace(0.05, 0.5, 10, dtype=torch.float64))


def test_gram_matrix_is_symmetric_psd_with_unit_diagonal(kernel):
    x = inputs(200, 2)
    with torch.no_grad():
        gram = kernel(x, x).to_dense()
        assert torch.allclose(gram, gram.T, atol=1e-14)
        assert torch.linalg.eigvalsh(gram).min() > -1e-10
        assert torch.allclose(gram.diagonal(), torch.ones(200, dtype=torch.float64))
        assert torch.equal(kernel(x, x, diag=True), torch.ones(200, dtype=torch.float64))


def test_precomputed_path_equals_forward(kernel):
    x1, x2 = inputs(50, 3), inputs(40, 4)
    with torch.no_grad():
        cached = kernel.from_precomputed(x1, x2, kernel.precompute(x1, x2))
        assert torch.allclose(cached, kernel.forward(x1, x2), atol=1e-15)


def test_hand_written_gradient_matches_numerical():
    x1, x2 = inputs(9, 5), inputs(6, 6)
    lengthscales = torch.linspace(0.05, 0.5, 4, dtype=torch.float64)
    w1 = torch.rand(9, 4, dtype=torch.float64, requires_grad=True)
    w2 = torch.rand(6, 4, dtype=torch.float64, requires_grad=True)
    for stack in (None, base_kernel_stack(x1, x2, lengthscales)):
        assert torch.autograd.gradcheck(
            lambda a, b: MixBaseKernels.apply(a, b, x1, x2, lengthscales, stack, 4), (w1, w2))


def test_gradient_with_respect_to_the_inputs_matches_numerical(kernel):
    """For methods that optimise inducing inputs: gradients through the base stack and the
    attention weights, in cross-covariances and in a Gram matrix (x1 = x2)."""
    x1 = inputs(9, 8).requires_grad_(True)
    x2 = inputs(6, 9).requires_grad_(True)
    assert torch.autograd.gradcheck(lambda a, b: kernel.forward(a, b), (x1, x2))
    assert torch.autograd.gradcheck(lambda a: kernel.forward(a, a), (x1,))


def test_lengthscale_map_within_base_range(kernel):
    with torch.no_grad():
        ls = kernel.lengthscale_map(inputs(100, 7))
    assert ls.shape == (100,) and (ls >= 0.05).all() and (ls <= 0.5).all()


def test_rbf_cached_path_equals_gpytorch():
    kernel = RBFKernel().double()
    kernel.lengthscale = 0.3
    x1, x2 = inputs(30, 8), inputs(20, 9)
    reference = gpytorch.kernels.RBFKernel().double()
    reference.lengthscale = 0.3
    with torch.no_grad():
        assert torch.allclose(kernel.from_precomputed(x1, x2, kernel.precompute(x1, x2)),
                              reference(x1, x2).to_dense(), atol=1e-12)


def test_gram_matrix_from_upper_blocks_equals_the_full_evaluation(kernel):
    """A Gram matrix evaluates only the blocks on and above the diagonal and mirrors them."""
    x = inputs(30, 12)
    with torch.no_grad():
        for stack in (None, kernel.precompute(x, x)):
            gram = (kernel.forward(x, x) if stack is None
                    else kernel.from_precomputed(x, x, stack))
            full = kernel.forward(x, x.clone())
            assert torch.allclose(gram, full, atol=1e-15, rtol=0)


def test_gram_matrix_gradient_uses_symmetry_correctly(kernel):
    """The one-pass backward of a Gram matrix equals autograd's two-slot gradient."""
    x = inputs(30, 11)
    stack = kernel.precompute(x, x)
    upstream = torch.rand(30, 30, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    params = list(kernel.attention.parameters())
    fast = torch.autograd.grad((kernel.from_precomputed(x, x, stack) * upstream).sum(), params)
    reference = torch.autograd.grad((kernel.from_precomputed(x, x.clone(), stack) * upstream).sum(),
                                    params)
    for a, b in zip(fast, reference):
        assert torch.allclose(a, b, atol=1e-12)


class SmallestExpArgument(TorchDispatchMode):
    """Records the smallest argument any ``exp`` receives while active."""

    smallest = float("inf")

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func.overloadpacket in (torch.ops.aten.exp, torch.ops.aten.exp_):
            self.smallest = min(self.smallest, float(args[0].min()))
        return func(*args, **(kwargs or {}))


@pytest.fixture
def unclamped(monkeypatch):
    """Turns the clamp of exp's argument off, for a reference."""
    return lambda: monkeypatch.setattr(base_stack, "exp_floor", lambda dtype: -float("inf"))


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_exp_never_takes_its_slow_path(kernel, dtype):
    """Far apart inputs underflow every base kernel; exp is given nothing below the floor
    (where torch's CPU exp is 6-25 times slower), however far the inputs are."""
    kernel = kernel.to(dtype)
    x1, x2 = inputs(40, 20).to(dtype), 50 * inputs(30, 21).to(dtype)
    with torch.no_grad(), SmallestExpArgument() as mode:
        kernel.forward(x1, x2)
        kernel.from_precomputed(x1, x2, kernel.precompute(x1, x2))
    assert mode.smallest == torch.tensor(exp_floor(dtype), dtype=dtype).item() < -40


def test_the_clamp_changes_no_kernel_value_in_float64(kernel, unclamped):
    """For inputs in [-1, 1]² the largest base lengthscale's term keeps every sum far above
    e^floor: the clamped and the exact base stacks give the same kernel to the last bit."""
    x1, x2 = inputs(200, 22), inputs(150, 23)
    with torch.no_grad():
        clamped = kernel.forward(x1, x2), kernel.forward(x1, x1)
        assert (base_kernel_stack(x1, x2, kernel.base_lengthscales) == math.exp(
            exp_floor(torch.float64))).any()  # the clamp is at work here
        unclamped()
        exact = kernel.forward(x1, x2), kernel.forward(x1, x1)
    for a, b in zip(clamped, exact):
        assert torch.equal(a, b)


def test_float32_base_stack_and_its_products_hold_no_subnormal_numbers(kernel):
    """Subnormal operands slow the products down; e^floor times two weights stays normal."""
    kernel = kernel.float()
    x = inputs(300, 24).float() * 1.5
    with torch.no_grad():
        stack = kernel.precompute(x, x)
        weights = kernel.attention_weights(x)
        product = stack.transpose(0, 1) * weights.T.unsqueeze(0)  # as MixBaseKernels forms it
    tiny = torch.finfo(torch.float32).tiny
    for values in (stack, product):
        assert not ((values != 0) & (values.abs() < tiny)).any()


@pytest.mark.parametrize("cached", [False, True])
def test_whole_matrices_equal_row_blocks_with_their_gradients(kernel, cached):
    """The GPU path (block_rows None) computes the CPU path's function, symmetric or not."""
    x1 = inputs(30, 25).requires_grad_(True)
    x2 = inputs(20, 26).requires_grad_(True)
    upstream = torch.rand(30, 30, generator=torch.Generator().manual_seed(2), dtype=torch.float64)
    params = list(kernel.attention.parameters())
    results = []
    for rows in (7, None):
        kernel.block_rows = rows
        values = []
        for a, b in ((x1, x2), (x1, x1)):
            stack = kernel.precompute(a, b) if cached else None
            k = kernel.from_precomputed(a, b, stack)
            wrt = params + ([] if cached else [x1] + ([x2] if b is x2 else []))
            values.append((k, *torch.autograd.grad((k * upstream[:, :k.shape[1]]).sum(), wrt)))
        results.append(values)
    for blocked, whole in zip(*results):
        for a, b in zip(blocked, whole):
            assert torch.allclose(a, b, rtol=1e-12, atol=1e-14)


def test_whole_matrices_off_the_cpu(kernel):
    assert kernel.rows_for(torch.empty(3, 2)) == 7
    assert kernel.rows_for(torch.empty(3, 2, device="meta")) is None


def test_given_features_give_the_same_kernel(kernel):
    """K_uu and K_uf from the features of Z computed once equal those computed per call."""
    z, x = inputs(40, 27), inputs(25, 28)
    with torch.no_grad():
        f_z, f_x = kernel.features(z), kernel.features(x)
        assert torch.equal(kernel.from_precomputed(z, z, kernel.precompute(z, z), f_z, f_z),
                           kernel.from_precomputed(z, z, kernel.precompute(z, z)))
        assert torch.equal(kernel.from_precomputed(z, x, kernel.precompute(z, x), f_z, f_x),
                           kernel.from_precomputed(z, x, kernel.precompute(z, x)))


def test_rbf_direct_evaluation_is_the_cached_one():
    kernel = RBFKernel().double()
    kernel.lengthscale = 0.3
    x1, x2 = inputs(30, 29), inputs(20, 30)
    with torch.no_grad():
        assert torch.equal(kernel.forward(x1, x2),
                           kernel.from_precomputed(x1, x2, kernel.precompute(x1, x2)))
        assert torch.equal(kernel.forward(x1, x1, diag=True), torch.ones(30, dtype=torch.float64))


def test_rbf_with_one_lengthscale_per_input_is_gpytorchs_ard_kernel_on_every_path():
    lengthscales = torch.tensor([[0.2, 0.5, 1.5]], dtype=torch.float64)
    kernel = RBFKernel(ard_num_dims=3).double()
    kernel.lengthscale = lengthscales
    reference = gpytorch.kernels.RBFKernel(ard_num_dims=3).double()
    reference.lengthscale = lengthscales
    generator = torch.Generator().manual_seed(4)
    x1, x2 = (torch.rand(n, 3, generator=generator, dtype=torch.float64) for n in (25, 15))
    empty = torch.empty(25, 0, dtype=torch.float64)
    with torch.no_grad():
        expected = reference(x1, x2).to_dense()
        assert torch.allclose(kernel.forward(x1, x2), expected, atol=1e-14)
        assert torch.allclose(kernel.from_precomputed(x1, x2, kernel.precompute(x1, x2)),
                              expected, atol=1e-14)
        assert torch.allclose(kernel.columns(x1, empty, x2, empty[:15]), expected, atol=1e-14)
        assert torch.allclose(kernel.lengthscale_map(x1),
                              torch.full((25,), (0.2 * 0.5 * 1.5) ** (1 / 3),
                                         dtype=torch.float64))


def test_ard_with_equal_lengthscales_is_the_one_lengthscale_kernel():
    one, ard = RBFKernel().double(), RBFKernel(ard_num_dims=2).double()
    one.lengthscale, ard.lengthscale = 0.3, torch.tensor([[0.3, 0.3]])
    x1, x2 = inputs(30, 10), inputs(20, 11)
    with torch.no_grad():
        assert torch.allclose(ard(x1, x2).to_dense(), one(x1, x2).to_dense(), atol=1e-14)


def test_a_model_with_ard_learns_a_long_lengthscale_for_an_input_the_field_ignores():
    rng = np.random.default_rng(0)
    x = rng.uniform(-1, 1, size=(200, 2))
    y = np.sin(3 * x[:, 0]) + 0.05 * rng.standard_normal(200)
    config = MappingConfig(method="exact", kernel="rbf", rbf_ard=True, m_step="lbfgs",
                           rbf_initial_lengthscale=0.5, device="cpu", dtype="float64")
    model = make_model(config, input_dim=2)
    model.add_data(x, y)
    model.update()
    relevant, ignored = model.kernel.base_kernel.lengthscale.reshape(-1).tolist()
    assert ignored > 5 * relevant
