"""The mapping methods by name: the one list of them.

:data:`METHODS` maps each name ``mapping.method`` takes to its class. The choices of
``mapping.method`` (its check and its ROS descriptor), the commands' method lists, the sweep
and the tests read it. A new method is its class file (an :class:`OnlineSparseGP` subclass
whose ``method`` is its name, reading its family's options ``config.<family>``, see
:mod:`.config`), one line here and its docs; a test may add one for its duration
(``monkeypatch.setitem(METHODS, cls.method, cls)``).

    poam                     POAM (poam.py)
    ssgp, ssgp++             streaming sparse GP, Bui et al. 2017 (ssgp.py)
    ovc, ovc++               online variational conditioning, Maddox et al. 2021 (ovc.py)
    full, pam, svgp          batch references (batch.py)
    exact                    exact GP regression, small data only (exact.py)
    poam-z-opt, poam-z-rand, poam-z-kmeans, poam-var-opt, poam-var-ssgp, poam-online-elbo
                             ablations of the paper's Fig. 8 (ablations.py)
    oips, poam-oips, cv      model size by a kernel threshold, Galy-Fajou & Opper (oips.py),
                             and by a conditional-variance tolerance (cv.py)
    vips, poam-vips          model size by the bound's gap, Pescador-Barrios et al. (vips.py)
    dual-gp                  memory-based dual GP, Chang et al. 2023 (dual_gp.py)
    dual-gp-bernoulli        the dual GP of a binary channel, probit link (bernoulli.py)
    cmogp, poam-mt           several channels: continual multi-task GP, Moreno-Muñoz et al.
                             2019 (cmogp.py), and POAM lifted to its LMC (poam_mt.py)
    cmogp-bui                cmogp with Bui et al.'s streaming factor over the old inducing
                             outputs instead of the paper's continual prior (cmogp.py)
    poam-independent,        several channels, one POAM or one dual GP map each: their
    dual-gp-independent      baseline; a Bernoulli channel's is dual-gp-bernoulli
                             (independent.py)
"""

from poam_ros.models.ablations import (
    PoamOnlineElbo,
    PoamVarOpt,
    PoamVarSsgp,
    PoamZKmeans,
    PoamZOpt,
    PoamZRand,
)
from poam_ros.models.batch import PAM, SVGP, Full
from poam_ros.models.bernoulli import BernoulliDualGP
from poam_ros.models.cmogp import CMOGP, CMOGPBui
from poam_ros.models.cv import ConditionalVariance
from poam_ros.models.dual_gp import DualGP
from poam_ros.models.exact import ExactGP
from poam_ros.models.independent import DualGPChannels, IndependentChannels
from poam_ros.models.oips import Oips, PoamOips
from poam_ros.models.ovc import OVC, OVCPlusPlus
from poam_ros.models.poam import POAM
from poam_ros.models.poam_mt import PoamMT
from poam_ros.models.sparse_gp import OnlineSparseGP
from poam_ros.models.ssgp import SSGP, SSGPPlusPlus
from poam_ros.models.vips import PoamVips, Vips

METHODS: dict[str, type[OnlineSparseGP]] = {cls.method: cls for cls in (
    POAM,
    SSGP, SSGPPlusPlus,
    OVC, OVCPlusPlus,
    Full, PAM, SVGP,
    ExactGP,
    PoamZOpt, PoamZRand, PoamZKmeans, PoamVarOpt, PoamVarSsgp, PoamOnlineElbo,
    Vips, PoamVips,
    Oips, PoamOips,
    ConditionalVariance,
    DualGP, BernoulliDualGP,
    CMOGP, CMOGPBui, PoamMT,
    IndependentChannels, DualGPChannels,
)}
