"""Observation images for vision-language models: PNG data URIs in OpenAI content parts.

A frame is enlarged by whole-pixel repetition until its shorter side is at least
`MIN_SIDE` pixels (vision encoders read patches of 14 to 28 pixels, so a Craft tile of
8 pixels would be a fraction of one) and sent as a lossless PNG, inline, as the OpenAI
chat format carries images: `{"type": "image_url", "image_url": {"url": "data:..."}}`.
"""

from __future__ import annotations

import base64
from typing import Any, Literal

import imageio.v3 as iio
import numpy as np

Observation = Literal["text", "image", "both"]
OBSERVATIONS: tuple[str, ...] = ("text", "image", "both")
MIN_SIDE = 224
# The view is centred on the agent, outlined there with a tick where it faces (EnvSpec).
IMAGE_NOTE = (
    "The image is your view, centred on you: you are the outlined agent at its centre, and "
    "the tick on the outline shows the side you face."
)


def scale_of(height: int, width: int) -> int:
    """The whole-pixel enlargement of a `height x width` frame (1: none)."""
    return max(1, -(-MIN_SIDE // max(1, min(height, width))))


def enlarge(frame: np.ndarray) -> np.ndarray:
    """`frame` `(H, W, 3)` uint8 with each pixel repeated `scale_of(H, W)` times each way."""
    scale = scale_of(*frame.shape[:2])
    return np.repeat(np.repeat(frame, scale, axis=0), scale, axis=1)


def png_data_uri(frame: np.ndarray) -> str:
    """The enlarged frame as a `data:image/png;base64,...` URI."""
    png = iio.imwrite("<bytes>", enlarge(np.asarray(frame, np.uint8)), extension=".png")
    return "data:image/png;base64," + base64.b64encode(png).decode("ascii")


def user_content(observation: Observation, text: str, notes: str, frame: Any) -> Any:
    """The user message's content: the observation text and the run's notes, then (image and
    both modes) a note on what the picture shows and the image. In image mode `text` is the
    builder's text beside a picture (what the picture cannot show: stats, inventory,
    teammates, messages, legal actions)."""
    if observation == "text":
        return "\n".join(part for part in (text, notes) if part)
    shown = (text, notes, IMAGE_NOTE)
    return [
        {"type": "text", "text": "\n".join(part for part in shown if part)},
        {"type": "image_url", "image_url": {"url": png_data_uri(frame)}},
    ]
