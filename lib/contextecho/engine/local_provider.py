"""The embedded default model as a LiteLLM provider (``local/smollm2-135m``): imported, with
LiteLLM, when the providers are first registered (:func:`.llm.ensure_providers`)."""
from __future__ import annotations

import asyncio

import litellm
from litellm import CustomLLM
from litellm.types.utils import ChatCompletionTokenLogprob, ChoiceLogprobs, ModelResponse, TopLogprob

from . import local_model
from .responses import fill_response


class LocalProvider(CustomLLM):
    """Serves ``<provider>/smollm2-135m`` (registered under :data:`.llm.LOCAL_PROVIDER`) from
    the embedded GGUF model, sync and async. A tool call of the model is sent as OpenAI's
    ``message.tool_calls`` (ids ``call_<i>``), with no content and finish reason
    ``tool_calls`` (:mod:`.responses`)."""

    def __init__(self, provider: str) -> None:
        super().__init__()
        self.provider = provider
        self.model = f"{provider}/{local_model.MODEL_NAME}"

    def _complete(self, model: str, messages: list, optional_params: dict,
                  model_response: ModelResponse) -> ModelResponse:
        if model != local_model.MODEL_NAME:
            raise litellm.NotFoundError(
                message=f"unknown local model {model!r}; available: {self.model}",
                model=f"{self.provider}/{model}", llm_provider=self.provider)
        params = {k: v for k, v in optional_params.items() if v is not None}
        kwargs = dict(model=self.model, llm_provider=self.provider)
        try:
            result = local_model.shared_model().complete(messages, params)
        except local_model.ContextOverflowError as exc:
            raise litellm.ContextWindowExceededError(message=str(exc), **kwargs) from exc
        except local_model.UnsupportedParameterError as exc:
            raise litellm.BadRequestError(message=str(exc), **kwargs) from exc
        response = fill_response(model_response, self.model, result.text, result.finish_reason,
                                 result.prompt_tokens, result.completion_tokens, result.tool_calls)
        if result.logprobs is not None:
            response.choices[0].logprobs = ChoiceLogprobs(content=[
                ChatCompletionTokenLogprob(token=token, logprob=logprob, top_logprobs=[
                    TopLogprob(token=t, logprob=lp) for t, lp in top])
                for token, logprob, top in result.logprobs])
        return response

    def completion(self, model, messages, api_base, custom_prompt_dict, model_response,
                   print_verbose, encoding, api_key, logging_obj, optional_params,
                   acompletion=None, litellm_params=None, logger_fn=None, headers={},
                   timeout=None, client=None) -> ModelResponse:
        return self._complete(model, messages, optional_params, model_response)

    async def acompletion(self, model, messages, api_base, custom_prompt_dict, model_response,
                          print_verbose, encoding, api_key, logging_obj, optional_params,
                          acompletion=None, litellm_params=None, logger_fn=None, headers={},
                          timeout=None, client=None) -> ModelResponse:
        # llama.cpp blocks; a worker thread keeps the event loop (and progress bar) alive.
        return await asyncio.to_thread(self._complete, model, messages, optional_params,
                                       model_response)
