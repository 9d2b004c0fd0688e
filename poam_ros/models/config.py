"""Configuration of the online mapping models: one dataclass for every method, its shared
settings as fields and each method family's own options as a nested group (``vips.delta``,
``mapping.vips.delta`` in a parameter file), which only that family reads.

The methods' names are those of :data:`poam_ros.models.registry.METHODS`; ``method`` reads its
choices from there when it is checked or declared (the registry's classes import this module).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar, Mapping

from poam_ros.models.likelihoods import LIKELIHOODS
from poam_ros.params import ConfigError, Params, group, param


def _method_names() -> tuple[str, ...]:
    """The registry's names, read when ``method`` is checked (the registry imports this
    module, so not before)."""
    from poam_ros.models.registry import METHODS

    return tuple(METHODS)


@dataclass
class SsgpOptions(Params):
    """ssgp's own options (ssgp.py)."""

    new_inducing_fraction: float = param(
        0.01, "ssgp: share of the M inducing inputs re-drawn from the new batch at each update "
        "(the rest are drawn from the old inducing inputs), before gradient steps",
        low=0.0, high=1.0)
    initial: str = param(
        "random", "ssgp: the first batch's M inducing inputs, drawn at random or as k-means "
        "centroids (kmeans.iterations Lloyd iterations; the OIPS paper's k-means/opt baseline)",
        choices=("random", "kmeans"))


@dataclass
class KmeansOptions(Params):
    """poam-z-kmeans' own options (ablations.py)."""

    iterations: int = param(
        100, "poam-z-kmeans: most Lloyd iterations after k-means++ seeding", low=0, high=10000)


@dataclass
class VipsOptions(Params):
    """vips and poam-vips size the model themselves (vips.py); num_inducing is a hard cap."""

    delta: float = param(
        0.035, "vips, poam-vips: inducing inputs are added while the bound's gap L* - L(Z) "
        "exceeds delta |L* - L_noise| (VIPS App. D.3)", low=0.0)
    bound_subset: int = param(
        5000, "vips, poam-vips: the most new samples the bound is evaluated on; a larger "
        "batch uses a random subset of this size (as the VIPS reference code)", low=1)


@dataclass
class CvOptions(Params):
    """cv sizes the model itself (cv.py); num_inducing is a hard cap."""

    tolerance: float = param(
        0.01, "cv: pivoted Cholesky over [Z; X_new] stops once the unexplained trace "
        "(absolute, standardised target units) is below this", low=0.0)


@dataclass
class OipsOptions(Params):
    """oips and poam-oips size the model themselves (oips.py); num_inducing is a hard cap."""

    rho: float = param(
        0.8, "oips, poam-oips: a sample becomes an inducing input when its largest kernel "
        "value with the set is below rho times the amplitude", low=1e-9, high=1.0)
    kmin: int = param(
        10, "oips, poam-oips: random samples of the first batch the set starts from, and the "
        "fewest inducing inputs pruning keeps", low=1)
    at_capacity: str = param(
        "stop", "oips, poam-oips: what a full set (num_inducing inputs) does: stop adding, or "
        "prune and lower rho so that selection goes on in bounded memory (the authors' library, "
        "kmax = num_inducing)", choices=("stop", "prune"))
    eta: float = param(
        0.95, "oips, poam-oips, prune: pruning removes inputs correlated above eta times the "
        "largest correlation in the set, and then lowers rho to eta times that", low=1e-6,
        high=1.0)
    median_lengthscale: bool = param(
        False, "oips, poam-oips, rbf kernel: the first update sets the lengthscale from the "
        "median pairwise distance of the first batch (the OIPS paper's App. E; with lr_hyper 0 "
        "it then stays fixed, as there)")
    move_inducing: bool = param(
        False, "oips, poam-oips: the M-step also moves the inducing inputs by Adam (rate "
        "lr_inducing; the OIPS paper's OIPS/opt)")


@dataclass
class DualOptions(Params):
    """The memory-based dual GP's own options (dual_gp.py)."""

    memory_per_batch: int = param(
        10, "dual-gp: samples of each new batch added to the memory", low=0, high=1000000)
    memory_max: int = param(
        0, "dual-gp: the most samples the whole memory holds, 0 for no bound (beyond it the "
        "lowest leverage is evicted)", low=0, high=10000000)
    memory_pick: str = param(
        "leverage", "dual-gp: how new memory samples are drawn: in proportion to their "
        "leverage (Eq. 31) or uniformly", choices=("leverage", "random"))
    objective: str = param(
        "dual", "dual-gp: hyper-parameter objective, the dual objective on the memory "
        "(Eqs. 25-26) or POAM's all-data mini-batch ELBO", choices=("dual", "all-data"))


@dataclass
class CmogpOptions(Params):
    """cmogp's and cmogp-bui's own options (cmogp.py)."""

    sweeps: int = param(
        10, "cmogp, cmogp-bui: coordinate-ascent sweeps over the latents' factors of q(u) per "
        "E-step (one is exact when num_latents is 1)", low=1, high=10000)


@dataclass
class ExactOptions(Params):
    """The exact GP's own options (exact.py)."""

    max_samples: int = param(
        2000, "exact: the most samples the exact GP accepts (O(N³) per update)", low=1,
        high=1000000)


@dataclass
class MappingConfig(Params):
    """Settings of a mapping model. Lengths are in scaled input units ([-1, 1] per axis),
    variances in standardised target units, unless stated otherwise."""

    #: the family options' former flat names, refused with the new ones
    RENAMED: ClassVar[dict[str, str]] = {
        "ssgp_new_inducing_fraction": "ssgp.new_inducing_fraction",
        "kmeans_iterations": "kmeans.iterations", "vips_delta": "vips.delta",
        "vips_bound_subset": "vips.bound_subset", "cv_tolerance": "cv.tolerance",
        "oips_rho": "oips.rho", "oips_kmin": "oips.kmin",
        "dual_memory_per_batch": "dual.memory_per_batch", "dual_memory_max": "dual.memory_max",
        "dual_memory_pick": "dual.memory_pick", "dual_objective": "dual.objective",
        "cmogp_sweeps": "cmogp.sweeps", "exact_max_samples": "exact.max_samples"}

    method: str = param("poam", "mapping method, a name of poam_ros.models.registry.METHODS",
                        choices=_method_names)
    kernel: str = param("attentive", "covariance function (matern52: constant + Matern-5/2)",
                        choices=("attentive", "rbf", "matern52"))
    num_inducing: int = param(500, "maximum number of inducing inputs M", low=1, high=100000)
    pcd_tolerance: float = param(
        1e-6, "pivoted Cholesky stops once the unexplained trace is below this fraction",
        low=0.0, high=1.0)
    train_steps: int = param(10, "Adam steps on the ELBO per update", low=0, high=100000)
    first_train_steps: int = param(
        0, "Adam steps of the first update (the pilot survey): a fit of the hyper-parameters "
        "and the attention network before the first informative decision; 0: train_steps",
        low=0, high=100000)
    idle_steps: int = param(
        0, "Adam steps of the same objective between updates, in the mapper's idle time (the "
        "vehicle on its leg): the ROS-free mission and the remap run them all before the "
        "next update, the mapper node in rounds of train_steps while no batch waits "
        "(mapper.idle_share), republishing the map it moved; the methods training POAM's "
        "objective with Adam only; 0: none", low=0, high=1000000)
    batch_size: int = param(256, "mini-batch size of the hyper-parameter steps", low=1)
    lr_attention: float = param(1e-3, "Adam learning rate of the attention network", low=0.0)
    lr_hyper: float = param(1e-2, "Adam learning rate of amplitude, noise and RBF lengthscale",
                            low=0.0)
    initial_amplitude: float = param(1.0, "initial kernel amplitude (prior variance)", low=1e-6)
    initial_noise_variance: float = param(1.0, "initial observation noise variance", low=1e-6)
    min_noise_variance: float = param(1e-4, "lower bound of the learned noise variance",
                                      low=1e-9)
    attention_hidden_width: int = param(10, "width of the attention MLP's hidden layers", low=1)
    num_base_lengthscales: int = param(10, "number of base RBF kernels of the attentive kernel",
                                       low=1)
    min_lengthscale: float = param(0.05, "smallest base lengthscale", low=1e-6)
    max_lengthscale: float = param(0.5, "largest base lengthscale", low=1e-6)
    rbf_initial_lengthscale: float = param(0.3, "initial lengthscale of the RBF kernel", low=1e-6)
    rbf_ard: bool = param(False, "the RBF kernel learns one lengthscale per input dimension "
                          "(automatic relevance determination) instead of one for all")
    matern_initial_lengthscale: float = param(
        0.3, "initial lengthscale of the matern52 kernel's Matern-5/2 part", low=1e-6)
    matern_initial_constant: float = param(
        0.1, "initial constant share c of the matern52 kernel: the constant's variance over "
        "the Matern part's (the amplitude is their sum)", low=1e-9)
    lr_inducing: float = param(
        1e-2, "Adam learning rate of the inducing inputs, for the methods that optimise them "
        "(ssgp, ovc, svgp, poam-z-opt)", low=0.0)
    lr_variational: float = param(
        1e-2, "Adam learning rate of the whitened variational parameters, for the methods that "
        "learn q(u) by gradients (svgp, poam-var-opt)", low=0.0)
    max_whole_batch: int = param(
        20000, "ssgp, ssgp++, poam-online-elbo: the most new samples one update takes (their "
        "hyper-parameter steps evaluate the collapsed bound on the whole batch, M × N_new "
        "kernel blocks with gradients in every step); a larger batch fails the update",
        low=1, high=10000000)
    m_step: str = param(
        "adam", "hyper-parameter optimiser: train_steps Adam steps, or L-BFGS to convergence "
        "(the VIPS and OIPS papers' setting, for reproductions; a mini-batch objective then "
        "sees all samples, at most max_whole_batch of them)", choices=("adam", "lbfgs"))
    # The multi-channel methods (multitask.py, cmogp.py, poam_mt.py).
    num_latents: int = param(
        2, "cmogp, poam-mt: latent GPs Q of the linear model of coregionalisation (each with the "
        "configured kernel); poam-mt's joint q(u) over Q·M outputs costs (Q·M)³ per update",
        low=1, high=64)
    channel_min_samples: int = param(
        20, "cmogp, poam-mt: samples a channel needs before it enters the model; its target "
        "scaler is then fitted on its samples so far (about this many for a slow channel, the "
        "pilot survey's for a dense one)", low=1, high=1000000)
    channel_likelihoods: list[str] = param(
        [], "cmogp, cmogp-bui, poam-mt: each output channel's likelihood in order (the depth "
        "first), gaussian, bernoulli (labels 0/1, probit) or poisson (counts, log link), "
        "sharing the latents (CMOGP Sec. 3.4); empty: every channel gaussian. dual-gp-bernoulli "
        "maps its one channel as bernoulli")
    site_steps: int = param(
        20, "cmogp, cmogp-bui, poam-mt with a non-Gaussian channel: most damped site iterations "
        "of its E-step per update (they stop earlier once the sites settle)", low=1, high=10000)
    site_rate: float = param(
        1.0, "cmogp, cmogp-bui, poam-mt with a non-Gaussian channel: step of each site "
        "iteration, 1 for Newton's step in the natural parameters", low=1e-3, high=1.0)
    input_scaling: str = param(
        "auto", "what the frozen input scaling spans: the first update's samples (first_batch: "
        "the pilot survey, as the POAM paper) or the workspace's bounding box (workspace); "
        "auto: the samples, unless they span less than half the workspace along an axis (a "
        "first batch that is a short stretch of track). Without a workspace, the samples",
        choices=("auto", "first_batch", "workspace"))
    jitter: float = param(1e-6, "relative diagonal jitter added before a Cholesky", low=0.0)
    max_jitter_tries: int = param(4, "times the jitter may grow tenfold before giving up",
                                  low=0, high=12)
    device: str = param("auto", "where the model runs; auto picks CUDA when torch sees it",
                        choices=("auto", "cpu", "cuda"))
    dtype: str = param(
        "float64", "precision of the kernel, the training steps and prediction (the data terms, "
        "q(u) and the prediction factors are float64 always); float32 updates 1.4x faster and "
        "maps as float64 does on Table I and the default survey (docs/benchmarks.md)",
        choices=("float64", "float32"))
    static_shapes: bool = param(
        False, "the training steps run on the inducing set padded to a bucket (powers of two "
        "from 32, capped at num_inducing) with masked rows that add nothing, so that a compiled "
        "step or a CUDA graph is made once per bucket, not per M (docs/benchmarks.md)")
    compile: str = param(
        "off", "the training step compiled by torch inductor on a CPU model (cpu; paid once per "
        "process and shape, eager with one log line where compilation fails) or not (off)",
        choices=("off", "cpu"))
    cuda_graphs: bool = param(
        False, "on a CUDA model, the training steps captured as one CUDA graph per bucket and "
        "replayed (implies static_shapes there; eager with one log line if capture fails)")
    seed: int = param(0, "seed of the network initialisation and the mini-batch draws", low=0)
    # Each method family's own options (mapping.<family>.*), read by that family only.
    ssgp: SsgpOptions = group(SsgpOptions)
    kmeans: KmeansOptions = group(KmeansOptions)
    vips: VipsOptions = group(VipsOptions)
    cv: CvOptions = group(CvOptions)
    oips: OipsOptions = group(OipsOptions)
    dual: DualOptions = group(DualOptions)
    cmogp: CmogpOptions = group(CmogpOptions)
    exact: ExactOptions = group(ExactOptions)

    @classmethod
    def from_saved(cls, values: Mapping[str, Any]) -> MappingConfig:
        """The config a state file stores (:meth:`to_dict`). A file written before the family
        options were grouped holds them flat (``vips_delta``): they are read as their new
        names, so that a saved map still loads."""
        return cls.from_dict({cls.RENAMED.get(name, name): value
                              for name, value in values.items()})

    def validate(self) -> None:
        unknown = sorted(set(self.channel_likelihoods) - set(LIKELIHOODS))
        if unknown:
            raise ConfigError(f"MappingConfig.channel_likelihoods: {unknown} not among "
                              f"{list(LIKELIHOODS)}")
        if self.min_lengthscale > self.max_lengthscale:
            raise ConfigError("MappingConfig.min_lengthscale must not exceed max_lengthscale")
        if self.oips.median_lengthscale and self.kernel != "rbf":
            raise ConfigError("MappingConfig.oips.median_lengthscale needs kernel rbf")
