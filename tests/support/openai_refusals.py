"""One check the OpenAI-route tests share: a body both OpenAI routes must refuse."""

from __future__ import annotations

from typing import Any

import openai
import pytest


def assert_both_openai_routes_refuse(oai: openai.OpenAI, extra: dict[str, Any],
                                     param: str) -> None:
    """Chat and legacy completions each answer `extra` with a 400 naming `param`, as the
    SDK reads it (``BadRequestError.param``) and in the message."""
    chat: Any = [{"role": "user", "content": "refused"}]
    for create in (
        lambda: oai.chat.completions.create(model="echo", messages=chat, extra_body=extra),
        lambda: oai.completions.create(model="echo", prompt="x", extra_body=extra),
    ):
        with pytest.raises(openai.BadRequestError) as info:
            create()
        assert info.value.param == param, info.value.body
        assert param in info.value.message, info.value.body
