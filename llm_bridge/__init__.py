"""Zero-shot evaluation of language models as agents, against the jitted environments.

`alemlite eval-llm` runs a batch of episodes in lockstep, asks every live LLM agent
through an OpenAI-compatible server (or a local transformers model), parses the
replies and steps the vmapped environment; `alemlite compare` tests two result files.
"""
