"""What the harness's panel consolidation reads and writes (``analysis/consolidate_12model_perm.py``).

The harness consolidates the e02 content-position runs of its twelve targets into one
table of paired-permutation contrasts (each condition against ``scratch`` per probe, Holm
within each target and across the panel): the statistic is
:func:`contextecho.stats.consolidation.consolidate_contrasts`. Which runs it reads is data of the
harness's code, not of any run: each target's display name and the file under
:data:`DOCS_FOLDER` holding its run (``None``: the target has no content-position run and
gets a row per condition noting so; a listed file that is absent is skipped with a
"Skipping" line, :data:`SKIP_LINE`).
"""
from __future__ import annotations

#: The harness's script and the folder, relative to its repository, it reads and writes.
RUNNER = "analysis/consolidate_12model_perm.py"
DOCS_FOLDER = "docs"
#: ``TARGETS`` (``:26-39``): display name, content-position file (``None`` = no run).
TARGETS: tuple[tuple[str, str | None], ...] = (
    ("Sonnet 4.5", "OPTION_C_SONNET45.json"),
    ("Sonnet 4.6", "CONTENT_POSITION_SONNET.json"),
    ("Haiku 4.5", "OPTION_C_HAIKU45.json"),
    ("Opus 4.6", "OPTION_C_OPUS46.json"),
    ("Opus 4.7", "CONTENT_POSITION_OPUS.json"),
    ("GPT-5", None),
    ("GPT-4o", "CONTENT_POSITION_GPT4O.json"),
    ("GPT-4o-mini", "CONTENT_POSITION_GPT4O_MINI.json"),
    ("GPT-4.1", "CONTENT_POSITION_GPT41.json"),
    ("Llama 3.3 70B", "CONTENT_POSITION_LLAMA33_70B.json"),
    ("Qwen 3 235B", "CONTENT_POSITION_QWEN3_235B.json"),
    ("DeepSeek V3", "CONTENT_POSITION_DEEPSEEK_V3.json"),
)
#: ``CONDITIONS`` (``:41``), each contrasted with :data:`BASELINE` (``compute_contrast``'s default).
CONDITIONS: tuple[str, ...] = ("recent3K", "recent3K_filler", "recent3K_earlier", "filler14K")
BASELINE = "scratch"
#: The paired permutation's defaults (``paired_permutation``, ``:44``).
N_RESAMPLES = 10_000
SEED = 42
#: What ``main`` (``:101-180``) writes: the experiment name in its JSON and the two files.
EXPERIMENT = "12_model_panel_paired_permutation_consolidated"
JSON_OUTPUT = "CROSS_ORG_PERM_CONSOLIDATED.json"
MD_OUTPUT = "CROSS_ORG_PERM_CONSOLIDATED.md"
#: The condition ``main`` headlines (its printed line and the markdown's first table).
HEADLINE = "recent3K"
SKIP_LINE = "Skipping {target}: {path} missing"
