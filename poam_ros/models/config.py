"""Configuration of the online mapping models (one dataclass for every method)."""

from __future__ import annotations

from dataclasses import dataclass

from poam_ros.params import ConfigError, Params, param

#: The names of poam_ros.models.METHODS, which is built from the method classes; listed here
#: because those classes import this module (a test holds the two equal).
METHOD_NAMES = ("poam", "ssgp", "ssgp++", "ovc", "ovc++", "full", "pam", "svgp", "exact",
                "poam-z-opt", "poam-z-rand", "poam-z-kmeans", "poam-var-opt", "poam-var-ssgp",
                "poam-online-elbo")


@dataclass
class MappingConfig(Params):
    """Settings of a mapping model. Lengths are in scaled input units ([-1, 1] per axis),
    variances in standardised target units, unless stated otherwise."""

    method: str = param("poam", "mapping method, a name of poam_ros.models.METHODS",
                        choices=METHOD_NAMES)
    kernel: str = param("attentive", "covariance function", choices=("attentive", "rbf"))
    num_inducing: int = param(500, "maximum number of inducing inputs M", low=1, high=100000)
    pcd_tolerance: float = param(
        1e-6, "pivoted Cholesky stops once the unexplained trace is below this fraction",
        low=0.0, high=1.0)
    train_steps: int = param(10, "Adam steps on the ELBO per update", low=0, high=100000)
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
    lr_inducing: float = param(
        1e-2, "Adam learning rate of the inducing inputs, for the methods that optimise them "
        "(ssgp, ovc, svgp, poam-z-opt)", low=0.0)
    lr_variational: float = param(
        1e-2, "Adam learning rate of the whitened variational parameters, for the methods that "
        "learn q(u) by gradients (svgp, poam-var-opt)", low=0.0)
    ssgp_new_inducing_fraction: float = param(
        0.01, "ssgp: share of the M inducing inputs re-drawn from the new batch at each update "
        "(the rest are drawn from the old inducing inputs), before gradient steps",
        low=0.0, high=1.0)
    kmeans_iterations: int = param(
        100, "poam-z-kmeans: most Lloyd iterations after k-means++ seeding", low=0, high=10000)
    max_whole_batch: int = param(
        20000, "ssgp, ssgp++, poam-online-elbo: the most new samples one update takes (their "
        "hyper-parameter steps evaluate the collapsed bound on the whole batch, M × N_new "
        "kernel blocks with gradients in every step); a larger batch fails the update",
        low=1, high=10000000)
    exact_max_samples: int = param(
        2000, "exact: the most samples the exact GP accepts (O(N³) per update)", low=1,
        high=1000000)
    jitter: float = param(1e-6, "relative diagonal jitter added before a Cholesky", low=0.0)
    max_jitter_tries: int = param(4, "times the jitter may grow tenfold before giving up",
                                  low=0, high=12)
    device: str = param("auto", "where the model runs; auto picks CUDA when torch sees it",
                        choices=("auto", "cpu", "cuda"))
    dtype: str = param(
        "float64", "precision of the kernel, the training steps and prediction (the data terms, "
        "q(u) and the prediction factors are float64 always); float32 updates 1.35x faster and "
        "maps as float64 does on Table I, but worse on smooth fields (docs/benchmarks.md)",
        choices=("float64", "float32"))
    seed: int = param(0, "seed of the network initialisation and the mini-batch draws", low=0)

    def validate(self) -> None:
        if self.min_lengthscale > self.max_lengthscale:
            raise ConfigError("MappingConfig.min_lengthscale must not exceed max_lengthscale")
