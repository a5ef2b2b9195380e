"""The Craft world in words, for language models: one system prompt per variant and one
observation text per live agent, built from a batch of host-side states."""

from alemlite.envs.craft.prompting.renderer import CRAFT_VARIANTS, CraftRenderer

__all__ = ["CRAFT_VARIANTS", "CraftRenderer"]
