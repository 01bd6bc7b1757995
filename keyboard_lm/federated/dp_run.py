"""The DP side of one federated training run (``DPRun``): its settings, the cohorts the accountant assumes,
the running account (eps at the run's delta and at Gboard's 1e-10, rho-zCDP) and what run.json, the model
card and the log report. The learning processes it builds are ``dp``'s.
"""

from __future__ import annotations

import math

from keyboard_lm.errors import ConfigError
from keyboard_lm.federated.dp import build_dp_process, check_dp_settings
from keyboard_lm.federated.process import server_optimizer_for
from keyboard_lm.privacy.accounting import fedavg_epsilons, rho_to_epsilons
from keyboard_lm.privacy.blt import BLT, blt_for_schedule, participation_schema
from keyboard_lm.privacy.config import FTRL_MECHANISMS, DPOptions
from keyboard_lm.privacy.profile import ADVANTAGE, format_profile, privacy_profile, profile_deltas
from keyboard_lm.privacy.sampling import (fixed_size_sample, ftrl_participation, ftrl_schedule, poisson_sample,
                                          tree_sensitivity)


#: run.json's ``differential_privacy.vocabulary``: whether the guarantee covers the vocabulary too.
PUBLIC_VOCABULARY = "public: the base model's, covered (no client's text chose it)"
CLIENT_VOCABULARY = ("the training clients' most frequent words, chosen without noise: outside the guarantee "
                     "(--init-from base --init-vocab base keeps the base's public vocabulary)")


class DPRun:
    """The DP side of one training run: its settings, cohorts and running account.

    Built once the training population is known (the clients with text).
    ``cohort(t)`` draws round t's clients the way the accountant assumes
    (``options.sampling``); ``epsilon(t)`` is the guarantee after rounds
    1..t; ``info(t)`` is what run.json and the model card record.

    Sampling is seeded by the run's seed, so a resumed run samples what an
    uninterrupted one would have.  That is a simulation's convenience: privacy
    amplification by sampling assumes the cohort is secret, which a deployed
    server's own randomness provides.  The DP noise itself is never seeded.
    """

    def __init__(self, options: DPOptions, client_ids: list[str], config, public_vocabulary: bool = False):
        n, k = len(client_ids), config.clients_per_round
        if options.mechanism in FTRL_MECHANISMS and config.server_optimizer == "adam":
            raise ConfigError(f"--dp {options.mechanism} steps the server with SGD and momentum (DP-FTRLM); "
                              "--server-optimizer adam does not apply")
        if k > n:
            raise ConfigError(f"--clients-per-round {k} is above the {n} training clients with text, "
                              "the population DP samples from")
        z = options.noise_multiplier
        if z is None:
            from keyboard_lm.privacy.planner import noise_for

            delta = options.for_population(n, k, noise_multiplier=0.0).delta
            z = noise_for(options.target_epsilon, delta, n, config.rounds, k, options.mechanism,
                          options.tree_restart)
        self.options = options
        self.config = options.for_population(n, k, noise_multiplier=z)
        check_dp_settings(self.config, algorithm=config.algorithm, compression=config.compression,
                          clip=config.clip, population=n, client_momentum=config.client_momentum,
                          server_noise=config.server_noise)
        self.client_ids, self.seed = list(client_ids), config.seed
        # The vocabulary is part of the model: built from the clients' text, it is released without noise.
        self.public_vocabulary = public_vocabulary
        self.schedule = (ftrl_schedule(self.client_ids, k, config.rounds, config.seed)
                         if options.mechanism in FTRL_MECHANISMS else None)
        # BLT-DP-FTRL's matrix: optimized for this run's rounds and schedule once, kept by a resumed run
        self.blt = None
        if options.mechanism == "blt":
            self.blt = (BLT(tuple(options.blt["theta"]), tuple(options.blt["omega"])) if options.blt
                        else blt_for_schedule(n, k, config.rounds)[0])
        # eps at every profile delta after t rounds, asked for by the metrics row and again by
        # run.json in the same round (fixed-size accounting costs ~0.25 s a composition).
        self._epsilon: dict[int, tuple[dict[float, float], float | None]] = {}

    @property
    def sampling_probability(self) -> float:
        return self.config.clients_per_round / self.config.population

    def cohort(self, round_num: int) -> list[str]:
        """Round ``round_num``'s clients (1-based); Poisson may give none."""
        if self.schedule is not None:
            return self.schedule.rounds[round_num - 1]
        if self.options.sampling == "poisson":
            return poisson_sample(self.client_ids, self.sampling_probability, self.seed, round_num)
        return fixed_size_sample(self.client_ids, self.config.clients_per_round, self.seed, round_num)

    def epsilon(self, round_num: int) -> tuple[float, float | None]:
        """(eps at the run's delta, rho-zCDP or None) after rounds 1..``round_num``."""
        by_delta, rho = self._accounts(round_num)
        return by_delta[self.config.delta], rho

    def profile(self, round_num: int) -> list[dict]:
        """eps and the membership-inference bound at several deltas after ``round_num`` rounds
        (``profile.privacy_profile``), from the composition that gives ``epsilon``."""
        by_delta, _ = self._accounts(round_num)
        return privacy_profile(lambda deltas: [by_delta[d] for d in deltas], self.config.population,
                               self.config.delta)

    def _accounts(self, round_num: int) -> tuple[dict[float, float], float | None]:
        """({delta: eps} at every profile delta, the run's among them; rho or None): one composition a round."""
        if round_num not in self._epsilon:
            c = self.config
            deltas = [d for d, _ in profile_deltas(c.population, c.delta)]
            rho = None
            if round_num == 0:
                rho, eps = (0.0 if self.schedule is not None else None), [0.0] * len(deltas)
            elif self.schedule is not None:
                rho = (math.inf if c.noise_multiplier == 0 else
                       self.squared_sensitivity(round_num) / (2 * c.noise_multiplier ** 2))
                eps = rho_to_epsilons(rho, deltas)
            else:
                eps = fedavg_epsilons(c.noise_multiplier, self.sampling_probability, round_num, deltas,
                                      self.options.sampling, c.population)
            self._epsilon[round_num] = dict(zip(deltas, eps)), rho
        return self._epsilon[round_num]

    def squared_sensitivity(self, round_num: int) -> float:
        """S after ``round_num`` rounds (rho = S / (2 z^2)): the tree's over its nodes, or the BLT's over the
        rows released so far, for the schedule's (max participations, min separation) in those rounds."""
        c = self.config
        if self.blt is not None:
            k, b = participation_schema(c.population, c.clients_per_round, round_num)
            return self.blt.sensitivity(round_num, k, b) ** 2
        return tree_sensitivity(c.population, c.clients_per_round, round_num, c.restart_period)

    def trees(self, round_num: int) -> int:
        """DP-FTRL trees begun in rounds 1..``round_num`` (1 without restarts)."""
        period = self.config.restart_period
        return -(-round_num // period) if period else min(round_num, 1)

    def info(self, round_num: int) -> dict:
        """The run.json / model card record after ``round_num`` rounds."""
        c = self.config
        eps, rho = self.epsilon(round_num)
        out = {"mechanism": c.mechanism, "noise_multiplier": c.noise_multiplier, "clip": c.clip,
               "clip_quantile": c.clip_quantile, "delta": c.delta, "target_epsilon": c.target_epsilon,
               "population": c.population, "clients_per_round": c.clients_per_round,
               "sampling": self.options.sampling, "rounds": round_num,
               "epsilon": eps if math.isfinite(eps) else "inf", "rho": rho,
               # z*C/K, the noise std on the mean update (None with an adaptive clip: C moves).
               "noise_batch_ratio": (c.noise_multiplier * c.clip / c.clients_per_round
                                     if c.clip is not None else None),
               "unit": "user = one training client of the partition",
               "vocabulary": (PUBLIC_VOCABULARY if self.public_vocabulary else CLIENT_VOCABULARY),
               "accountant": (("zCDP of the BLT-correlated Gaussian mechanism, one mechanism over the run, "
                               "sensitivity over every pattern of the schedule's (max participations, min "
                               "separation) (McMahan, Xu and Zhang 2024)") if self.blt is not None else
                              ("zCDP of the tree, exact for the cyclic schedule (Kairouz et al. 2021, App. D)"
                               if c.restart_period is None else
                               f"zCDP of the trees (restarted every {c.restart_period} rounds), summed over each "
                               "client's trees, exact for the cyclic schedule (Kairouz et al. 2021, App. D)")
                              if self.schedule is not None else
                              "RDP, dp_accounting 0.4.3 (" + ("Poisson-sampled Gaussian, add/remove-one"
                                                             if self.options.sampling == "poisson" else
                                                             "sampled without replacement, replace-one") + ")")}
        if self.blt is not None:
            out.update(max_participations=self.schedule.max_participations,
                       min_separation=self.schedule.min_separation, blt=self.blt.to_dict(),
                       blt_buffers=len(self.blt.theta),
                       squared_sensitivity=self.squared_sensitivity(round_num) if round_num else 0.0)
            out["max_participations_so_far"], _ = ftrl_participation(c.population, c.clients_per_round,
                                                                     round_num) if round_num else (0, 0)
        elif self.schedule is not None:
            out.update(max_participations=self.schedule.max_participations,
                       min_separation=self.schedule.min_separation, tree_restart=c.tree_restart,
                       restart_period=c.restart_period, trees=self.trees(round_num))
            out["max_participations_so_far"], _ = ftrl_participation(c.population, c.clients_per_round,
                                                                     round_num) if round_num else (0, 0)
        else:
            out["sampling_probability"] = self.sampling_probability
        if c.clip_quantile is not None:
            out["clip"] = "adaptive"
        out["profile"] = self.profile(round_num)
        out["profile_advantage"] = ADVANTAGE
        return out

    def summary(self, round_num: int) -> str:
        """One line on the run's DP settings and its eps after ``round_num`` rounds."""
        d = self.info(round_num)
        name = {"fedavg": "DP-FedAvg", "ftrl": "DP-FTRL", "blt": "BLT-DP-FTRL"}[d["mechanism"]]
        eps = d["epsilon"] if isinstance(d["epsilon"], str) else f"{d['epsilon']:.3g}"
        restart = ""
        if self.blt is not None:
            restart = f"{len(self.blt.theta)} noise buffers; "
        elif self.schedule is not None:
            restart = ("one tree, no restart; " if d["restart_period"] is None else
                       f"tree restarted every {d['restart_period']} rounds"
                       + (" (an epoch)" if d["tree_restart"] == "epoch" else "") + f", {d['trees']} trees; ")
        return (f"{name}: noise multiplier {d['noise_multiplier']:.4g}, clip {d['clip']}, {d['sampling']} sampling, "
                f"{d['clients_per_round']} of {d['population']} clients a round; {restart}eps {eps} at delta "
                f"{d['delta']:.3g} after {d['rounds']} rounds"
                + (f" (noise-batch ratio {d['noise_batch_ratio']:.3g})" if d["noise_batch_ratio"] is not None else ""))

    def report(self, round_num: int) -> str:
        """``summary`` and the privacy profile table after ``round_num`` rounds (the end of a run)."""
        table = format_profile(self.profile(round_num), f"privacy profile after {round_num} rounds",
                               rho=self.epsilon(round_num)[1])
        return f"{self.summary(round_num)}\n{table}"

    def process(self, model_config, input_spec, config, metrics: bool = False):
        """The TFF learning process of this run (``build_dp_process``)."""
        return build_dp_process(model_config, self.config, input_spec, client_lr=config.client_lr,
                                server_optimizer=server_optimizer_for(config), server_lr=config.server_lr,
                                server_momentum=config.server_momentum, metrics=metrics, dropout=config.dropout,
                                client_clipnorm=config.client_clipnorm, blt=self.blt)
