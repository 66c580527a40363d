"""The targets the harness's Fig.-5 mitigation forest reads, as its plotting code lists them.

Source: github.com/Accenture/ContextEcho at commit ``5f8dba3`` (Apache License 2.0; the list
below is data of that repository, reproduced unchanged: ``plotting/fig_forest_mitigation.py:46-70``).
The figure reads only these target folders (the runners' ``TARGET_SAFE`` names), in this order;
each row shows the label and organisation, and rows are sorted reasoning tier first, then by
the drift gap, largest first (``:178``), ties keeping this order.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ForestTarget:
    """One target of a forest figure: its folder (``target_safe``), label, organisation and
    whether the figure puts it in the reasoning tier."""

    folder: str
    label: str
    org: str
    reasoning: bool


MITIGATION_TARGETS: tuple[ForestTarget, ...] = tuple(ForestTarget(*t) for t in (
    ("claude-sonnet-4-6", "Sonnet 4.6", "Anthropic", True),
    ("claude-sonnet-4-5", "Sonnet 4.5", "Anthropic", True),
    ("claude-opus-4-1", "Opus 4.1", "Anthropic", True),
    ("claude-haiku-4-5", "Haiku 4.5", "Anthropic", True),
    ("gpt-5", "GPT-5", "OpenAI", True),
    ("gpt-5-mini", "GPT-5-mini", "OpenAI", True),
    ("gpt-4o", "GPT-4o", "OpenAI", False),
    ("gpt-4-1", "GPT-4.1", "OpenAI", False),
    ("gemini-2-5-pro", "Gemini 2.5 Pro", "Google", True),
    ("gemini-2-5-flash", "Gemini 2.5 Flash", "Google", False),
    ("deepseek-v3", "DeepSeek V3", "DeepSeek", False),
    ("mistral-small-latest", "Mistral Small", "Mistral", False),
    ("mistral-medium-latest", "Mistral Medium", "Mistral", False),
    ("mistral-large-latest", "Mistral Large", "Mistral", False),
    ("llama-3-3-70b", "Llama 3.3 70B", "Meta", False),
    ("qwen3-235b", "Qwen3 235B", "Alibaba", False),
    ("qwen3-next-80b-a3b", "Qwen3 Next 80B", "Alibaba", True),
    ("moonshotai-Kimi-K2-6", "Kimi K2.6", "Moonshot", True),
    ("command-a-03-2025", "Command A", "Cohere", False),
    ("command-r7b-12-2024", "Command R7B", "Cohere", False),
    ("nvidia-nemotron-3-nano-30b-a3b", "Nemotron Nano 30B", "NVIDIA", True),
    ("nvidia-nemotron-super-49b-v1-5", "Nemotron Super 49B", "NVIDIA", True),
    ("nvidia-nemotron-3-super-120b-a12b", "Nemotron Super 120B", "NVIDIA", True),
))
