"""`train`'s flags are declared beside the config field each one sets, and a value given reaches that field."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

from keyboard_lm.cli import build_parser
from keyboard_lm.cli.flags import Flag, field_flag, given, options_given
from keyboard_lm.cli.train import dp_options, federated_config_from_args
from keyboard_lm.cli.train_flags import (CENTRALIZED_FLAGS, DP_FLAGS, TRAIN_FLAGS, add_train_args,
                                        federated_only_given)
from keyboard_lm.data.config import ClientDataConfig
from keyboard_lm.errors import ConfigError
from keyboard_lm.federated.config import FederatedConfig, LoopConfig
from keyboard_lm.models.config import ModelConfig
from keyboard_lm.privacy.config import DPOptions
from keyboard_lm.training.config import CentralizedConfig


def _parse(*flags):
    return build_parser().parse_args(["train", "--out", "x", *flags])


def test_every_flag_names_a_field_of_its_config_and_every_option_is_parsed():
    parser = argparse.ArgumentParser()
    add_train_args(parser)
    usage = parser.format_usage()
    for f in TRAIN_FLAGS:
        assert f"[{f.option}" in usage or f" {f.option} " in usage, f.option
        for config, name in f.fields.items():
            assert name in {x.name for x in dataclasses.fields(config)}, f"{f.option}: {config.__name__}.{name}"
    options = [f.option for f in TRAIN_FLAGS]
    assert len(options) == len(set(options))


def test_a_value_given_reaches_the_field_its_flag_names():
    args = _parse("--centralized", "--epochs", "7", "--lr", "0.01", "--clipnorm", "0", "--seq-len", "12",
                  "--batch-size", "3", "--dropout", "0.3", "--seed", "5")
    cen = given(args, TRAIN_FLAGS, CentralizedConfig)
    assert cen == {"epochs": 7, "learning_rate": 0.01, "clipnorm": None, "seq_len": 12, "batch_size": 3,
                   "dropout": 0.3, "seed": 5}  # 0 = off for --clipnorm; flags left out are absent
    client = ClientDataConfig(**given(args, TRAIN_FLAGS, ClientDataConfig))
    assert (client.max_seq_len, client.batch_size, client.epochs) == (12, 3, 1)

    args = _parse("--client-lr", "0.3", "--client-clipnorm", "0", "--compression", "--seed", "4",
                  "--local-epochs", "2", "--eval-every", "5", "--model", "lstm", "--units", "16")
    fed = federated_config_from_args(args, init=None)
    assert (fed.client_lr, fed.client_clipnorm, fed.compression, fed.seed) == (0.3, None, True, 4)
    assert ClientDataConfig(**given(args, TRAIN_FLAGS, ClientDataConfig)).epochs == 2
    assert LoopConfig(**given(args, TRAIN_FLAGS, LoopConfig)).eval_every == 5
    model = given(args, TRAIN_FLAGS, ModelConfig)
    assert (model["model_type"], model["units"], model["vocab_size"]) == ("lstm", 16, ModelConfig().vocab_size)
    assert "embedding_dim" not in model  # left out: warm_start_from_args fills it in (the base's or the default)


def test_dp_flags_make_dp_options_and_are_refused_without_dp():
    options = dp_options(_parse("--dp", "ftrl", "--dp-clip", "0.5", "--dp-epsilon", "8", "--dp-tree-restart",
                                "epoch"))
    assert options == DPOptions("ftrl", clip=0.5, target_epsilon=8.0, tree_restart="epoch")
    with pytest.raises(ConfigError, match="--dp-clip, --dp-delta given without --dp"):
        dp_options(_parse("--dp-clip", "1", "--dp-delta", "1e-6"))
    assert options_given(_parse("--dp-clip", "1"), DP_FLAGS) == ["--dp-clip"]


def test_a_federated_run_refuses_the_centralized_groups_flags():
    from keyboard_lm.cli.train import cmd_train

    assert options_given(_parse("--epochs", "3", "--lr", "0.1"), CENTRALIZED_FLAGS) == ["--epochs", "--lr"]
    with pytest.raises(ConfigError, match="--epochs, --lr: centralized training only"):
        cmd_train(_parse("--epochs", "3", "--lr", "0.1"))


def test_field_flag_names_the_field_per_config():
    f = field_flag("--seq-len", {CentralizedConfig: "seq_len", ClientDataConfig: "max_seq_len"}, "h")
    assert f.fields == {CentralizedConfig: "seq_len", ClientDataConfig: "max_seq_len"}
    g = field_flag("--client-lr", FederatedConfig, "h", type=float)
    assert (g.fields, g.dest, dict(g.kwargs)) == ({FederatedConfig: "client_lr"}, "client_lr", {"type": float})
    assert isinstance(g, Flag)


def test_a_centralized_run_sees_which_federated_flags_were_given_and_left_out_ones_keep_the_defaults():
    assert federated_only_given(_parse("--centralized", "--seed", "3", "--resume")) == []  # both trainers' flags
    given_ = _parse("--centralized", "--eval-every", "2", "--rounds", "3", "--compression")
    assert federated_only_given(given_) == ["--rounds", "--compression", "--eval-every"]  # in table order
    # --local-epochs, --max-batches, --eval-every, --checkpoint-every left out are absent: the configs' defaults
    left_out = _parse()
    assert ClientDataConfig(**given(left_out, TRAIN_FLAGS, ClientDataConfig)) == ClientDataConfig()
    assert LoopConfig(**given(left_out, TRAIN_FLAGS, LoopConfig)) == LoopConfig()
