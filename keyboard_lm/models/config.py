"""Model configuration, shared by training, checkpoints, export and inference."""

from __future__ import annotations

import dataclasses

from keyboard_lm.config_checks import check_fields
from keyboard_lm.errors import ConfigError

MODEL_TYPES = ("cifg", "si-cifg", "lstm", "gru")
#: ModelConfig.quantization values; the roundings are defined in keyboard_lm.models.quantization.
QUANTIZATION = ("none", "weight-only", "dynamic-range")


@dataclasses.dataclass(frozen=True)
class ModelConfig:
    """Sizes of a next-word model; defaults are Hard et al. 2018's CIFG.

    Attributes:
      model_type: ``cifg`` (Hard et al.), ``si-cifg`` (Ro et al.), ``lstm`` or
        ``gru`` (the client model of Ji et al.'s FedAtt).
      vocab_size: V, special tokens included (10,000).
      embedding_dim: D, also the recurrent projection size; input embedding
        and output projection are tied, so both are D (96).
      units: H, the cell size (670).
      quantization: ``none``, or the export mode the model is trained for
        (quantization-aware training, keyboard_lm.models.quantization):
        ``dynamic-range`` (int8 weights and int8-rounded matrix inputs, as
        TFLite's hybrid kernels compute) or ``weight-only`` (int8 weights,
        float arithmetic).  Exported in that mode, the file computes exactly
        what was trained and evaluated.
    """

    model_type: str = "cifg"
    vocab_size: int = 10_000
    embedding_dim: int = 96
    units: int = 670
    quantization: str = "none"

    def __post_init__(self):
        if self.model_type not in MODEL_TYPES:
            raise ConfigError(f"unknown model type {self.model_type!r}; choose one of {', '.join(MODEL_TYPES)}")
        if self.quantization not in QUANTIZATION:
            raise ConfigError(f"unknown quantization {self.quantization!r}; choose one of {', '.join(QUANTIZATION)}")
        check_fields(self, ("vocab_size", "embedding_dim", "units"), 1)
        if self.vocab_size <= 4:
            raise ConfigError(f"vocab_size must exceed the 4 special tokens, got {self.vocab_size}")

    @property
    def gates(self) -> int:
        """Weight blocks of the fused input/recurrent kernel."""
        return {"cifg": 3, "si-cifg": 3, "lstm": 4, "gru": 3}[self.model_type]

    def num_parameters(self) -> int:
        """Closed-form parameter count (Hard et al.: V*D + 3(D+P+1)H + H*P for CIFG)."""
        v, d, h = self.vocab_size, self.embedding_dim, self.units
        if self.model_type == "gru":
            # [x, h] -> z, r, candidate (H each) with bias; projection H -> D.
            return v * d + 3 * (d + h + 1) * h + h * d
        return v * d + self.gates * (d + d + 1) * h + h * d

    def to_dict(self) -> dict:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, d: dict) -> "ModelConfig":
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = set(d) - known
        if unknown:
            raise ConfigError(f"unknown model config fields {sorted(unknown)}")
        return cls(**d)
