"""A frozen scenario of TrainFail/PipelineTiedEmbedding-v1 (read by both phases: nothing private)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from scenario_base import params_base, size_limit  # the harness library


@dataclass(frozen=True)
class Scenario(params_base(Path(__file__).with_name("params.toml"))):
    """Layout (ranks, stages, micro-batches), the grader's inputs, the model and tolerances."""

    def validate(self) -> None:
        if self.world_size != self.devices or self.stages < 2 or self.world_size != self.stages * self.replicas:
            raise ValueError(f"{self.world_size} ranks on {self.devices} devices, {self.stages} stages")
        if self.num_blocks % self.stages or self.global_batch % (self.dp_size * self.micro_batches):
            raise ValueError("blocks must split over the stages and the batch over replicas x micro-batches")
        if self.steps < 1 or self.corpus_rows < self.global_batch:
            raise ValueError(f"steps={self.steps}, corpus_rows={self.corpus_rows}")

    @property
    def dp_size(self) -> int:
        return self.replicas

    def stage_names(self, stage: int) -> list[str]:
        """The README's parameter names a stage's checkpoint holds."""
        per = self.num_blocks // self.stages
        names = ["embed.weight"] if stage == 0 else []
        for i in range(stage * per, (stage + 1) * per):
            names += [f"blocks.{i}.fc1.weight", f"blocks.{i}.fc1.bias", f"blocks.{i}.fc2.weight", f"blocks.{i}.fc2.bias"]
        return names + (["head.weight"] if stage == self.stages - 1 else [])

    @property
    def state_limit_bytes(self) -> int:
        per_block = 2 * self.hidden_size * self.ffn_size + self.hidden_size + self.ffn_size
        return size_limit(2 * self.vocab_size * self.hidden_size + self.num_blocks * per_block, floor=4 << 20)
