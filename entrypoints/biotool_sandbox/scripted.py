"""A scripted stand-in for a model, for the examples and the image tests: `mockllm/model`
making the given tool calls in order, then giving the answer read from their results."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from inspect_ai.model import ChatMessage, Model, ModelOutput, ModelUsage, get_model


def scripted_model(calls: Sequence[tuple[str, dict]],
                   answer: Callable[[list[ChatMessage]], str]) -> Model:
    """mockllm/model: call (tool, arguments) after (tool, arguments), then say answer(messages)."""

    def outputs(messages, tools, tool_choice, config) -> ModelOutput:
        done = sum(1 for m in messages if m.role == "tool")
        if done < len(calls):
            out = ModelOutput.for_tool_call("mockllm/model", *calls[done])
        else:
            out = ModelOutput.from_content("mockllm/model", answer(messages))
        # Usage given, so mockllm does not count tokens (its tokenizer would be downloaded).
        out.usage = ModelUsage(input_tokens=0, output_tokens=0, total_tokens=0)
        return out

    return get_model("mockllm/model", custom_outputs=outputs)
