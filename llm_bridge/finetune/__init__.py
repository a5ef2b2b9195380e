"""Reinforcement learning on a language model that plays every seat (`alemlite finetune`):
GRPO, SRPO and TeamTR through LoRA adapters, on the likelihood head over legal action
names (`--decoding loglik`) or on sampled replies the bridge parses (`--decoding generate`,
`generation.py`). See `trainer.py` for the loop and `objectives.py` for the losses."""
