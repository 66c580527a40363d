"""The hard-coded inputs of the harness's A-anchor analysis and plotting scripts.

Source: github.com/Accenture/ContextEcho at commit ``5f8dba3`` (Apache License 2.0; the
lists below are data of that repository, reproduced unchanged:
``analysis/analyze_anchor_variants.py`` (``TARGETS``, ``POSITIONS``),
``analysis/analyze_v2_full_trajectory.py`` (``POSITIONS``), ``plotting/fig_forest_stressors.py``
(``POSITIONS``, ``TARGETS``), ``plotting/fig_app_anchor_size.py`` (``TARGETS``) and
``plotting/fig_app_anchor_decay.py`` (its one target folder, ``:17``), ``plotting/fig_forest_mitigation.py``
(``POSITIONS``, ``TARGETS``)). Each script reads only
these targets and positions, whatever was run: a cell elsewhere is in no table.
"""
from __future__ import annotations

from .anchors import VARIANTS

#: analyze_anchor_variants.py: the variants, (target folder, label) and the pilot positions it reads.
VARIANT_NAMES: tuple[str, ...] = tuple(v.name for v in VARIANTS)
VARIANT_TARGETS: tuple[tuple[str, str], ...] = (
    ("claude-sonnet-4-6", "Sonnet 4.6"), ("claude-sonnet-4-5", "Sonnet 4.5"),
    ("claude-opus-4-1", "Opus 4.1"), ("claude-haiku-4-5", "Haiku 4.5"))
VARIANT_POSITIONS: tuple[str, ...] = ("P0_start", "P3_post_C3", "P5_pre_C6")
#: analyze_v2_full_trajectory.py: the same targets at the 12 e08 positions.
TRAJECTORY_POSITIONS: tuple[str, ...] = (
    "P0_start", "P1_pre_C1", "P2_post_C1", "P_pre_C2", "P_post_C2", "P_pre_C3", "P3_post_C3",
    "P_pre_C4", "P_post_C4", "P_pre_C5", "P4_post_C5", "P5_pre_C6")
#: The variant the trajectory analysis reads.
TRAJECTORY_VARIANT = "V2_IN_CONTEXT"

#: fig_forest_stressors.py: the positions it reads and its rows (folder, label, org, reasoning).
STRESSOR_PLOT_POSITIONS: tuple[str, ...] = ("P0_start", "P3_post_C3", "P5_pre_C6")
STRESSOR_PLOT_TARGETS: tuple[tuple[str, str, str, bool], ...] = (
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
    ("nvidia-nemotron-3-super-120b-a12b", "Nemotron Super 120B", "NVIDIA", True))

#: fig_forest_mitigation.py (Fig. 5): its ``TARGETS`` (``:46-70``) are fig_forest_stressors.py's, row for
#: row; its rows are sorted reasoning tier first, then by drift gap, largest first (``:178``).
MITIGATION_PLOT_TARGETS: tuple[tuple[str, str, str, bool], ...] = STRESSOR_PLOT_TARGETS

#: fig_app_anchor_size.py: its sizes and target folders, in bar order.
SIZE_PLOT_SIZES: tuple[str, ...] = ("small", "medium", "large")
SIZE_PLOT_TARGETS: tuple[str, ...] = ("claude-sonnet-4-6", "claude-sonnet-4-5", "claude-opus-4-1",
                                      "claude-haiku-4-5", "deepseek-v3", "gemini-2-5-pro")
#: fig_app_anchor_decay.py: the one target folder it reads.
DECAY_PLOT_TARGET = "claude-sonnet-4-5"

#: Where each script says it saved its output, relative to the harness's root (its printout).
OUTPUTS = {
    "anchor_variants": ("results/anchor_variants/ANCHOR_VARIANTS_RESULTS.json",),
    "v2_full_trajectory": ("results/anchor_variants/V2_FULL_TRAJECTORY_RESULTS.json",),
    "fig6": ("paper/figures/fig6_forest_stressors.png",),
    "anchor_size": ("paper/figures/fig_app_anchor_size.pdf", "paper/figures/fig_app_anchor_size.png"),
    "anchor_decay": ("paper/figures/fig_app_anchor_decay.pdf", "paper/figures/fig_app_anchor_decay.png"),
}
