"""CAPE: personality-questionnaire consistency, context-free vs context-dependent, and the
bridge to drift (the questionnaire asked after real vs filler session prefixes).

1. Table 1: TAR, ED, TC, OC per sensitivity factor and setting (CAPE §3.1) on a
   trait-balanced subset of MPI-120 (``n_items``; 0 = all 120).
2. Adversarial history attack (§6.3): the context-dependent runs with every earlier reply
   replaced by option C; the shift of the chosen options.
3. Ordering (§6.4): the OCEAN profile under the question orders ``orderings`` (CAPE's random,
   trait-grouped and cyclic at the paper's scale; the embedded build's random and cyclic).
4. Bridge: the questionnaire (context-free) after a real session prefix vs a matched
   filler prefix at snapshot positions; mean OCEAN profile per arm.
5. From the answers of 1, with no call of their own: Table 3 (how TC and OC go with TAR
   and ED over the factor and setting conditions), Table 4 (Cronbach's α per trait,
   context-free; test–retest on the stability factor's runs), Fig. 3a (context-dependent
   minus context-free item scores), Table 5 (whether each metric differs between the
   settings over the factor runs), Fig. 3b (the OCEAN profile in each setting and its shift)
   and App. A (logical consistency on item pairs of our own: two items of one facet).
6. Table 2 (§6.5): role-playing agents (InCharacter's ChatHaruhi characters) answer the BFI
   context-free (RPA) and context-dependent (RPA++), beside a Random baseline; OCEAN
   alignment (OA), MAE and type accuracy against the human labels, and TAR, ED, TC, OC over
   the runs (``rpa_*`` parameters; data in ``shared/data/rpa``, never copied).
7. Table 6 (App. E): the reasoning models (``reasoning_targets``; CAPE's two DeepSeek-R1) asked
   the questionnaire as Table 1 asks the targets, under the same factors in both settings;
   TAR, ED, TC, OC per setting, a row group per reasoning model. None by default: no call,
   and the section says it measures nothing.

Table 1 and Table 2 are asked of every target (``targets``: a row group per target, as CAPE
compares its seven LLMs); the other sections, and every number the text prints, are the
primary (first) target's. The reasoning targets are in Table 6 alone.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Sequence

import pandas as pd

from ..engine.cache import CallCache
from ..cape.administer import (CONTEXT_DEPENDENT, CONTEXT_FREE, DEFAULT_PARAMS, ANSWERS, administer, answer_counts,
                               chosen_answers)
from ..cape.factors import FACTORS, MissingParaphrases, factor_runs
from ..cape.paraphrase import generate_paraphrases, load_paraphrases, paraphrase_path
from ..cape.ordering import ORDERINGS
from ..cape.inventory import TRAITS, load_inventory, Inventory
from ..cape.metrics import NoComparableItems
from ..cape.analyses import (METRICS, attack_runs, factor_consistency, history_ablation, history_runs,
                             metric_correlations, option_shift, ordering_runs, score_differences, table1, table6)
from ..cape.reliability import NO_RETEST, RETEST_NEEDS, retest_correlation, retest_identical, trait_alphas
from ..cape.validity import TESTS, construct_validity
from ..cape.logical import KINDS, item_pairs, pair_accuracy
from ..cape.bridge import bridge_runs, bridge_summary, session_prefix_provider
from ..cape.profiles import ocean_profiles, profile_shift
from ..cape import rpa
from ..cape.prompts import LETTERS
from ..echo.arms import matched_filler
from ..engine.llm import LOCAL_MODEL
from .parameters import NON_NEGATIVE, POSITIVE, File, Models, NonEmpty, OneOf, Temperature, count, resolve_path
from ..paper import figures
from ..paper.declared import Declared
from ..paper.formats import COEFFICIENT, COUNT, MODEL, P_VALUE, PERCENT, SCORE, TEXT, model_name, not_estimable
from ..paper.sentences import CAPABLE_TARGET, PAPER_SCALE_SET, joined, listing, measures_nothing
from ..paper.tables import Column, Table, explained_if_empty
from ..paper.variables import Variable
from ..paper.show import Result, SavedFigure
from ..sessions.positions import positions as scheme_positions
from ..sessions.corpus import sha256_file
from ..sessions.render import render_prefix
from ..engine.hashing import rng_for
from . import spine
from .parameter_sets import ServingParameters
from .item_ids import ANSWER_KINDS, INVENTORIES
from .selection import select_sessions
from .spine import Run, Stage

TITLE = "CAPE: questionnaire consistency (Table 1), history attack, ordering, and the drift bridge"
#: CAPE's seven LLMs (§5; the Llama models on an OpenAI-compatible server, or Together AI's for the 405B).
CAPE_MODELS = ("openai/gpt-3.5-turbo", "openai/gpt-4-turbo", "gemini/gemini-1.5-flash",
               "anthropic/claude-3-5-haiku-20241022", "hosted_vllm/meta-llama/Llama-3.1-8B-Instruct",
               "hosted_vllm/meta-llama/Llama-3.3-70B-Instruct", "together_ai/meta-llama/Meta-Llama-3.1-405B-Instruct-Turbo")
#: CAPE's reasoning models (App. E, Table 6): DeepSeek-R1's 8B distillation into Llama-8B, on an
#: OpenAI-compatible server (vLLM with its ``deepseek_r1`` reasoning parser, which sends the
#: reasoning apart from the answer), and DeepSeek-R1 (671B) at DeepSeek's API.
CAPE_REASONING_MODELS = ("hosted_vllm/deepseek-ai/DeepSeek-R1-Distill-Llama-8B", "deepseek/deepseek-reasoner")
#: The tokens each reasoning model may think before its answer (added to ``max_tokens``: the budget
#: rule of README's Reasoning models); CAPE does not say how long its models thought.
REASONING_BUDGET = 4096
PAPER_SCALE = {"targets": CAPE_MODELS, "n_items": 0,
               "factors": ("stability", "temperature", "option_wording", "option_order", "instruction",
                           "paraphrasing"), "history_window": 0, "few_shots": (1, 2, 4, 8, 16, 32, 64),
               "orderings": ("random", "trait_grouped", "cyclic"),
               "bridge_positions": 12,
               "rpa_characters": ("all",), "rpa_items": 0, "rpa_runs": 3, "rpa_scene_chars": 20000,
               "reasoning_targets": CAPE_REASONING_MODELS,
               # DeepSeek-R1 reasons unasked: a reasoning budget alone, on top of the answer's tokens
               "model_options": json.dumps({m: {"reasoning_budget": REASONING_BUDGET} for m in CAPE_REASONING_MODELS})}


@dataclass(frozen=True)
class Parameters(ServingParameters):
    targets: tuple[str, ...] = (LOCAL_MODEL,)
    reasoning_targets: tuple[str, ...] = ()
    inventory: str = "mpi_120"
    n_items: int = 10
    factors: tuple[str, ...] = ("stability", "option_order")
    n_runs: int = 1
    history_window: int = 9
    few_shots: tuple[int, ...] = (1, 3)
    max_tokens: int = 4
    attack_letter: str = "C"
    orderings: tuple[str, ...] = ("random", "cyclic")
    bridge_sessions: int = 1
    bridge_positions: int = 2
    bridge_window: int = 2000
    bridge_runs: int = 1
    bridge_temperature: float = 1.0
    shuffle_seed: int = 20240601
    output_dir: str = ""
    answer: str = "text"
    paraphrases: str = ""
    paraphrase_model: str = ""
    rpa_characters: tuple[str, ...] = ("Hermione-en",)
    rpa_items: int = 5
    rpa_runs: int = 2
    rpa_temperature: float = 0.7
    rpa_scene_chars: int = 1500
    rpa_ambiguity: str = "pdb"
    rpa_max_tokens: int = 4

    HELP = {**ServingParameters.HELP,
            "targets": "LiteLLM model strings: Table 1 and Table 2 have a row group per target (CAPE compares seven); "
                       "the other sections run on the first, the primary target",
            "reasoning_targets": "CAPE's Table 6: reasoning models (LiteLLM model strings) asked like the targets, "
                                 "under the same factors in both settings, and kept out of every other table; give "
                                 "each a reasoning budget through model_options (README: Reasoning models); none: "
                                 "Table 6 measures nothing",
            "answer": "text (the reply's parsed option, the paper's) or constrained (the most probable "
                      "option letter from the model's token probabilities); both are read and reported",
            "n_items": "trait-balanced subset of the inventory (0 for all)",
            "n_runs": "runs per variant (a factor's three variants form one triple per run)",
            "max_tokens": "4 keeps the option letter (the paper: 16, which lets a reply contradict its letter)",
            "history_window": "question-answer pairs kept in context-dependent history (0 for auto: every earlier "
                              "pair, CAPE's, or on the embedded model the last 48, as many as its context holds; "
                              "the embedded build's 9 is every earlier pair of its 10 items, so each step's prompt "
                              "extends the previous step's and only the new pair is evaluated)",
            "orderings": "question orders of the ordering section (CAPE: random, trait_grouped and cyclic; the "
                         "embedded build asks random and cyclic, which on a trait-balanced subset is the inventory's "
                         "own order, already asked by the stability runs)",
            "few_shots": "Fig. 2's few-shot ablation (§6.1): the question-answer pairs kept, each a context-dependent "
                         "run of the primary target set beside a run that keeps its full history",
            "attack_letter": "every history reply replaced by this option",
            "bridge_window": "session prefix characters for the bridge",
            "paraphrases": "the reviewed paraphrase file the paraphrasing factor asks (CSV written by "
                           "'python -m contextecho paraphrases'; empty: data/mpi/paraphrases/<inventory>__<model>.csv "
                           "of paraphrase_model, if it exists)",
            "paraphrase_model": "the model that wrote the paraphrases (empty: the first target)",
            "rpa_characters": "Table 2's role-playing characters (InCharacter ids with a ChatHaruhi agent, e.g. "
                              "Hermione-en, zhongli-zh; all: the 16 agents)",
            "rpa_items": "BFI items asked: the first rpa_items // 5 of each dimension, in the BFI's order "
                         "(0: all 44, as InCharacter and CAPE; on the embedded model one character's two runs in "
                         "both conditions take about 15 s at 5 items, alone on two cores)",
            "rpa_runs": "runs per character and condition (consistency needs two or more)",
            "rpa_temperature": "the agents' sampling temperature (at 0 the runs repeat each other, and "
                               "consistency measures only determinism)",
            "rpa_scene_chars": "characters of dialogue snippets in the scenes message (whole snippets, in file order)",
            "rpa_ambiguity": "which label type X skips a (character, dimension) pair: pdb (InCharacter's code, "
                             "3 of 160) or annotation (the annotators', 23 of 160)",
            "rpa_max_tokens": "reply tokens (the choice is the first digit 1-5 of the reply)"}
    RANGES = {**ServingParameters.RANGES, "targets": (NonEmpty(), Models()), "reasoning_targets": Models(),
              "inventory": INVENTORIES, "n_items": count(zero="all"),
              "factors": (NonEmpty(), OneOf(tuple(FACTORS), "factor")), "n_runs": count(),
              "history_window": count(zero="auto"), "few_shots": (NonEmpty(), count()), "max_tokens": POSITIVE,
              "attack_letter": OneOf(LETTERS, "option letter"),
              "orderings": (NonEmpty(), OneOf(ORDERINGS, "ordering")), "bridge_sessions": count(),
              "bridge_positions": count(), "bridge_window": POSITIVE, "bridge_runs": count(),
              "bridge_temperature": Temperature(("targets",)), "shuffle_seed": NON_NEGATIVE,
              "answer": ANSWER_KINDS, "paraphrases": File(".csv", "the paraphrase model's default review file"),
              "paraphrase_model": Models(also=("",)),
              "rpa_characters": (NonEmpty(), OneOf(lambda: ["all", *rpa.agent_ids()], "RPA character")),
              "rpa_items": count(zero="all"), "rpa_runs": count(), "rpa_temperature": Temperature(("targets",)),
              "rpa_scene_chars": POSITIVE,
              "rpa_ambiguity": OneOf(rpa.AMBIGUITY, "ambiguity rule"), "rpa_max_tokens": POSITIVE}


# ---------------------------------------------------------------- what the manuscript reads
#: How Table 1 names each setting.
SETTING_NAMES = {CONTEXT_FREE: "context-free", CONTEXT_DEPENDENT: "context-dependent"}
_TRAITS = tuple(Column(t, SCORE, t) for t in TRAITS)


#: A row group's target, shown with several targets.
_TARGET = Column("Target", MODEL, "target", optional=True)


def _table1(stem: str, title: str) -> Table:
    return Table(stem, title, (
        _TARGET, Column("Factor", TEXT, "factor", widest="option_wording"),
        Column("Setting", TEXT, "setting", widest="context-dependent"), Column("TAR", PERCENT, "tar"),
        Column("ED", SCORE, "ed"), Column("TC", PERCENT, "tc"), Column("OC", PERCENT, "oc")), index=3)


MANUSCRIPT = Declared(
    variables=(
        Variable("table1_factors_{answer}", TEXT, answer=ANSWERS), Variable("table1_rows_{answer}", COUNT, answer=ANSWERS),
        Variable("answers_compared", COUNT), Variable("answers_agree_pct", PERCENT),
        Variable("n_constrained_ok", COUNT), Variable("n_constrained_invalid", COUNT),
        Variable("n_constrained_flat", COUNT), Variable("n_text_invalid", COUNT), Variable("answer", TEXT),
        Variable("table1_factors", TEXT), Variable("triples_not_comparable", COUNT),
        Variable("cf_tar_pct", PERCENT), Variable("cd_tar_pct", PERCENT),
        Variable("attack_letter", TEXT), Variable("attack_letter_before", COUNT), Variable("attack_letter_after", COUNT),
        Variable("bridge_max_trait_difference", SCORE), Variable("bridge_trait_of_max", TEXT),
        Variable("target", TEXT), Variable("targets", TEXT), Variable("n_targets", COUNT), Variable("n_items", COUNT), Variable("max_tokens", COUNT),
        Variable("n_factors", COUNT), Variable("n_runs", COUNT), Variable("factors", TEXT),
        Variable("history_window", COUNT), Variable("n_answers", COUNT), Variable("n_invalid", COUNT),
        Variable("n_failed", COUNT), Variable("invalid_pct", PERCENT), Variable("n_orderings", COUNT),
        Variable("bridge_positions", COUNT), Variable("bridge_window", COUNT), Variable("bridge_runs", COUNT),
        Variable("table3_conditions", COUNT), Variable("table3_finding", TEXT),
        Variable("alpha_{trait}", COEFFICIENT, trait=TRAITS), Variable("alpha_finding", TEXT),
        Variable("retest_r_{setting}", COEFFICIENT, setting=("cf", "cd")), Variable("retest_items", COUNT),
        Variable("retest_finding", TEXT), Variable("differences_compared", COUNT),
        Variable("differences_unchanged_pct", PERCENT),
        Variable("validity_units", COUNT), Variable("validity_p_{metric}", P_VALUE, metric=METRICS),
        Variable("validity_d_{metric}", COEFFICIENT, metric=METRICS), Variable("validity_finding", TEXT),
        Variable("profile_shift_{trait}", SCORE, trait=TRAITS), Variable("profile_shift_pairs", COUNT),
        Variable("profile_shift_finding", TEXT), Variable("logic_{pairs}_pairs", COUNT, pairs=KINDS),
        Variable("logic_{pairs}_{setting}_pct", PERCENT, pairs=KINDS, setting=("cf", "cd")),
        Variable("logic_finding", TEXT),
        Variable("rpa_characters", TEXT), Variable("rpa_n_characters", COUNT), Variable("rpa_n_agents", COUNT),
        Variable("rpa_n_label_only", COUNT), Variable("rpa_label_only_reason", TEXT), Variable("rpa_runs", COUNT),
        Variable("rpa_items", COUNT),
        Variable("rpa_temperature", COEFFICIENT), Variable("rpa_scene_chars", COUNT),
        Variable("rpa_ambiguity", TEXT), Variable("rpa_ambiguity_rule", TEXT), Variable("rpa_pairs", COUNT),
        Variable("rpa_pairs_skipped", COUNT),
        Variable("rpa_pairs_skipped_all", COUNT), Variable("rpa_pairs_all", COUNT), Variable("rpa_answers", COUNT),
        Variable("rpa_unparsable", COUNT), Variable("rpa_finding", TEXT), Variable("rpa_failed", COUNT),
        Variable("table6_finding", TEXT), Variable("few_shots", TEXT), Variable("few_shot_finding", TEXT)),
    tables=(
        _table1("table1", "Table 1 (TAR, TC, OC in %)"),
        _table1("table1_text", "Table 1 under text answers"),
        _table1("table1_constrained", "Table 1 under constrained answers"),
        Table("table3", "Table 3: TC and OC against TAR and ED over the conditions", (
            Column("Pattern", TEXT, "pattern", widest="TC"), Column("Point-wise", TEXT, "point", widest="TAR"),
            Column("Conditions", COUNT, "n"), Column("Pearson r", COEFFICIENT, "pearson"),
            Column("Spearman ρ", COEFFICIENT, "spearman")), index=2),
        Table("table4", "Table 4: Cronbach's α per trait (context-free)", (
            Column("Trait", TEXT, "trait", widest="O"), Column("Items", COUNT, "n_items"),
            Column("Runs", COUNT, "n_runs"), Column("α", COEFFICIENT, "alpha"))),
        Table("table5", "Table 5: construct validity, context-dependent against context-free over the factor runs", (
            Column("Metric", TEXT, "metric", widest="TAR"), Column("Factor runs", COUNT, "n"),
            Column("t-test p", P_VALUE, "t_p"), Column("Wilcoxon p", P_VALUE, "wilcoxon_p"),
            Column("ANOVA p", P_VALUE, "anova_p"), Column("Cohen's d_z", COEFFICIENT, "d"))),
        Table("profile_shift", "Fig. 3b: the OCEAN profile per setting and its shift", (
            Column("Trait", TEXT, "trait", widest="O"), Column("Context-free", SCORE, "cf"),
            Column("Context-dependent", SCORE, "cd"), Column("Shift", SCORE, "shift"),
            Column("Answer pairs", COUNT, "n"))),
        Table("logic", "App. A: logical consistency on our same-facet item pairs", (
            Column("Setting", TEXT, "setting", widest="context-dependent"),
            Column("Pairs", TEXT, "kind", widest="contradictory"), Column("In inventory", COUNT, "n_pairs"),
            Column("Asked", COUNT, "n_asked"), Column("Answered", COUNT, "n_answered"),
            Column("Neutral", COUNT, "n_neutral"), Column("Accuracy", PERCENT, "accuracy")), index=2),
        Table("table2", "Table 2: role-playing agents against the human OCEAN labels (MAE as % of the 1–5 span)", (
            _TARGET, Column("Condition", TEXT, "condition", widest="RPA++"), Column("Pairs", COUNT, "n_pairs"),
            Column("OA", PERCENT, "oa"), Column("MAE", PERCENT, "mae"), Column("Accuracy", PERCENT, "accuracy"),
            Column("TAR", PERCENT, "tar"), Column("ED", SCORE, "ed"), Column("TC", PERCENT, "tc"),
            Column("OC", PERCENT, "oc")), index=2),
        Table("table6", "Table 6: reasoning models, consistency per setting (mean over the factors; TAR, TC, OC in %)", (
            Column("Model", MODEL, "model"), Column("Setting", TEXT, "setting", widest="context-dependent"),
            Column("TAR", PERCENT, "tar"), Column("ED", SCORE, "ed"), Column("TC", PERCENT, "tc"),
            Column("OC", PERCENT, "oc")), index=2),
        Table("few_shot", "Fig. 2: each few-shot length's trajectory against the full history's (TAR, TC in %)", (
            Column("Pairs kept", TEXT, "history_pairs", widest="full"), Column("Items", COUNT, "n_items"),
            Column("TAR", PERCENT, "tar"), Column("ED", SCORE, "ed"), Column("TC", PERCENT, "tc"))),
        Table("attack", "Option shift under the history attack", (
            Column("Option", TEXT, "option", widest="E"), Column("Before", COUNT, "before"),
            Column("After", COUNT, "after"), Column("Change", COUNT, "change"))),
        Table("ordering", "OCEAN profile by question order", (
            Column("Order", TEXT, "ordering", widest="trait_grouped"), *_TRAITS)),
        Table("bridge", "Bridge: OCEAN profile after real vs filler prefixes", (
            Column("Session", TEXT, "session", widest="S12"), Column("Step", COUNT, "step"),
            Column("Arm", TEXT, "arm", widest="filler"), *_TRAITS,
            Column("Invalid answers", COUNT, "n_invalid")), index=3),
    ))


#: Why a factor has no Table 1 row in a setting (no comparable triple there).
NOT_COMPARABLE = ("not estimable: no run of this factor and setting had an item answered validly in every variant, "
                  "so no variant triple could be compared")


def _long(t1: pd.DataFrame) -> pd.DataFrame:
    """Table 1 one row per factor and setting (context-free first), a column per metric; a
    row without a metric says why (:data:`NOT_COMPARABLE`)."""
    if not len(t1.columns):
        return pd.DataFrame(columns=["factor", "setting", "note"])
    settings = list(dict.fromkeys(t1.columns.get_level_values(0)))
    rows = [{"factor": factor, "setting": SETTING_NAMES.get(s, s), **{m: t1.loc[factor, (s, m)] for m in
                                                                      t1[s].columns}}
            for factor in t1.index for s in settings]
    frame = pd.DataFrame(rows)
    metrics = [c for c in frame.columns if c not in ("factor", "setting")]
    frame["note"] = [NOT_COMPARABLE if row.isna().all() else "" for _, row in frame[metrics].iterrows()]
    return frame


# ---------------------------------------------------------------- the stages (one notebook cell each)
def _inventory(p: Parameters) -> Inventory:
    """The trait-balanced subset of ``n_items`` items the run asks."""
    return load_inventory(p.inventory).balanced(p.n_items)


def _history_pairs(p: Parameters):
    return p.history_window if p.history_window > 0 else "auto"


def start(params: Parameters) -> Run:
    """Open the outputs, check that the target can be called (before any call), and pick
    the sessions the bridge snapshots."""
    return spine.start("cape", params, models=params.targets + params.reasoning_targets,
                       sessions=lambda: select_sessions(params.bridge_sessions), declared=MANUSCRIPT)


def factors(run: Run) -> pd.DataFrame:
    """The questionnaire under each sensitivity factor's variants, context-free and
    context-dependent (every answer's option distribution read too: the constrained answer);
    Table 1 under both answers, text and constrained, and how often they agree."""
    p = run.params
    answers = _ask_factors(run, p.targets, "cape")
    run.out.parquet("answers", answers)
    run.batch("cape:factors", answer_counts(answers))
    for name in ANSWERS:  # Table 1 under both answers (text: the paper's)
        chosen = chosen_answers(answers, name)
        consistency_of = _target_consistency(chosen, p.targets)
        t = table1(consistency_of[p.targets[0]])
        run.table("table1_" + name, _table1_rows(consistency_of, list(dict.fromkeys(chosen["factor"]))))
        run.out.put("table1_factors_{answer}", ", ".join(t.index), answer=name)
        run.out.put("table1_rows_{answer}", len(t), answer=name)
    compared = answers[answers["agrees"].notna()]
    run.out.set(answers_compared=len(compared),
                answers_agree_pct=100 * float(compared["agrees"].astype(bool).mean())
                if len(compared) else not_estimable("no answer has both a parsed reply and a read distribution"),
                n_constrained_ok=int((answers["constrained_status"] == "ok").sum()),
                n_constrained_invalid=int((answers["constrained_status"] == "invalid").sum()),
                n_constrained_flat=int(answers["constrained_flat"].astype(bool).sum()),
                n_text_invalid=int((answers["status"] != "ok").sum()), answer=p.answer)
    return answers


def _ask_factors(run: Run, targets: Sequence[str], name: str, *, plan_paraphrases: bool = True,
                 constrained: bool = True) -> pd.DataFrame:
    """Each of ``targets`` asked the questionnaire under each sensitivity factor's variants,
    context-free and context-dependent (rounds ``<name>:<setting>``), with ``constrained`` every
    answer's option distribution read too (the constrained answer); the answers, one frame.
    Table 1's targets and Table 6's reasoning targets are asked through it alike.
    ``plan_paraphrases``: in a plan without a reviewed paraphrase file, plan their generation
    (false: an earlier stage did)."""
    p = run.params
    inventory = _inventory(p)
    paraphrases = _paraphrases(run, inventory, plan_generation=plan_paraphrases)
    factors_asked = [f for f in p.factors if f != "paraphrasing" or paraphrases is not None]
    runs = [r for f in factors_asked for r in factor_runs(f, inventory, n_runs=p.n_runs, paraphrases=paraphrases,
                                                          params={**DEFAULT_PARAMS, "max_tokens": p.max_tokens})]
    with CallCache() as cache:
        return pd.concat([administer(runs, target, setting=s, history_pairs=_history_pairs(p), cache=cache,
                                     transport=run.transport, progress=True, name=f"{name}:{s}",
                                     constrained=constrained).answers
                          for target in targets for s in (CONTEXT_FREE, CONTEXT_DEPENDENT)], ignore_index=True)


def _paraphrases(run: Run, inventory: Inventory, *,
                 plan_generation: bool = True) -> dict[int, tuple[str, str]] | None:
    """The reviewed paraphrases the paraphrasing factor asks (None when it is not asked). Without
    a reviewed file a plan plans the paraphrases' generation (unless ``plan_generation`` is
    false) and leaves the factor out, saying what to do; a run stops before any call with the
    same instructions."""
    p = run.params
    if "paraphrasing" not in p.factors:
        return None
    model = p.paraphrase_model or p.targets[0]
    path = resolve_path(p.paraphrases) if p.paraphrases else paraphrase_path(inventory, model)
    if path.is_file():
        found = load_paraphrases(path)
        print(f"[cape] paraphrases: {path} (sha256 {sha256_file(path)[:12]}, {len(found)} items reviewed)", flush=True)
        return found
    todo = (f"the paraphrasing factor needs a reviewed paraphrase file ({path} does not exist): run "
            f"'python -m contextecho paraphrases --model {model} --inventory {p.inventory}', review the file it "
            f"writes (fix a paraphrase, or write 'rejected' in its review column), then run again "
            f"(parameter paraphrases=PATH for a file elsewhere)")
    if run.planner is None:
        raise MissingParaphrases(todo)
    if not plan_generation:
        return None
    with CallCache() as cache:
        generate_paraphrases(inventory, model, cache=cache, transport=run.transport)
    print(f"[cape] planned the paraphrases' generation; the paraphrasing factor is left out of this plan: {todo}",
          flush=True)
    return None


def _primary(run: Run, answers: pd.DataFrame) -> pd.DataFrame:
    """The primary (first) target's rows of ``answers``: the sections after Table 1 read them."""
    return answers[answers["model"] == run.params.targets[0]]


def _target_consistency(chosen: pd.DataFrame, targets: Sequence[str], *,
                        primary: bool = True) -> dict[str, pd.DataFrame | None]:
    """:func:`factor_consistency` of each of ``targets``' ``chosen`` answers, in order. A target
    whose answers compare no variant triple has None (its table rows say why), not an error
    that would lose the others' rows; with ``primary`` the first is the primary target, which
    the later sections read, and its raises as before."""
    out: dict[str, pd.DataFrame | None] = {}
    for k, target in enumerate(targets):
        try:
            out[target] = factor_consistency(chosen[chosen["model"] == target])
        except NoComparableItems:
            if primary and k == 0:
                raise
            out[target] = None
    return out


def _table1_rows(consistency_of: dict[str, pd.DataFrame | None], factors: Sequence[str]) -> pd.DataFrame:
    """Table 1 in its long form (:func:`_long`) for each target of ``consistency_of``
    (:func:`_target_consistency`), a row group per target (its ``target`` column only with several); a
    target without a comparable triple gets a row per factor and setting saying so
    (:data:`NOT_COMPARABLE`)."""
    frames = [_long(table1(consistency)).assign(target=target) if consistency is not None else
              pd.DataFrame([{"target": target, "factor": factor, "setting": SETTING_NAMES[setting],
                             **{m: float("nan") for m in METRICS}, "note": NOT_COMPARABLE}
                            for factor in factors for setting in (CONTEXT_FREE, CONTEXT_DEPENDENT)])
              for target, consistency in consistency_of.items()]
    long = pd.concat(frames, ignore_index=True)
    return long if len(consistency_of) > 1 else long.drop(columns="target")


def consistency_table(run: Run, answers: pd.DataFrame) -> pd.DataFrame:
    """Table 1 (CAPE §3.1) under the chosen answers: TAR, ED, TC and OC per sensitivity
    factor, context-free (CF) and context-dependent (CD); TAR, TC and OC in %; a row group per
    target. The text's values are the primary target's."""
    p = run.params
    chosen = chosen_answers(answers, p.answer)
    consistency_of = _target_consistency(chosen, p.targets)
    primary = consistency_of[p.targets[0]]
    t1 = table1(primary)
    run.out.parquet("consistency", pd.concat([c.assign(model=t) for t, c in consistency_of.items() if c is not None],
                                             ignore_index=True))

    run.out.set(table1_factors=", ".join(t1.index), triples_not_comparable=primary.attrs["n_not_comparable"])
    for key, setting in (("cf_tar_pct", CONTEXT_FREE), ("cd_tar_pct", CONTEXT_DEPENDENT)):
        run.out.put(key, t1[(setting, "tar")].mean() if (setting, "tar") in t1.columns else None,
                    why=f"no factor has a comparable {SETTING_NAMES[setting]} triple")
    return run.table("table1", _table1_rows(consistency_of, list(dict.fromkeys(chosen["factor"]))))


#: Why Table 6 measures nothing on a build that asks no reasoning target (the embedded one's).
NO_REASONING_TARGET = "no reasoning target was asked (the parameter reasoning_targets is empty)"
#: Why a reasoning target has no Table 6 value in a setting.
NO_REASONING_TRIPLE = ("not estimable: no factor's variant triple of this setting had an item answered validly in every "
                       "variant (a reasoning model that thinks past its budget answers nothing)")
#: Whether a higher value of a metric is the more consistent (ED is a distance).
_HIGHER_IS_CONSISTENT = {"tar": True, "ed": False, "tc": True, "oc": True}


#: The answers Table 6 reads: the reply's option, whatever ``answer`` the targets' tables read.
REASONING_ANSWER = "text"


def reasoning_table(run: Run) -> pd.DataFrame:
    """Table 6 (CAPE App. E): the reasoning models (``reasoning_targets``) answer the
    questionnaire as Table 1's targets do, under the same factors, context-free and
    context-dependent, and are kept out of every other table; TAR, ED, TC and OC per setting,
    the mean over the factors of Table 1's values, a row group per reasoning model. A model's
    reasoning (its ``<think>`` block, or the reasoning its provider sends apart) is stored
    apart and never read as its answer; give each a reasoning budget in ``model_options``.
    Their text answers alone are read (:data:`REASONING_ANSWER`): a reasoning model's option
    distribution is not its answer's (its first tokens are its thinking), and DeepSeek's
    reasoner refuses ``logprobs``. With no reasoning target nothing is asked and the table's
    one row says why."""
    p = run.params
    consistency_of: dict[str, pd.DataFrame | None] = {}
    unread = ""
    if p.reasoning_targets:
        answers = _ask_factors(run, p.reasoning_targets, "cape:reasoning", plan_paraphrases=False, constrained=False)
        run.out.parquet("reasoning_answers", answers)
        counts = run.batch("cape:reasoning", answer_counts(answers))
        chosen = chosen_answers(answers, REASONING_ANSWER)
        consistency_of = _target_consistency(chosen, p.reasoning_targets, primary=False)
        unread = (f"{int((chosen['status'] != 'ok').sum())} of the reasoning targets' {counts.calls} answers were "
                  "not read as an option and are left out.")
    table = explained_if_empty(_table6_rows(consistency_of), f"{NO_REASONING_TARGET}; the notebook's paper-scale set "
                               "asks CAPE's two DeepSeek-R1 models", MANUSCRIPT.table("table6"))
    run.out.set(table6_finding=" ".join(filter(None, (_table6_finding(table, p.reasoning_targets), unread))))
    return run.table("table6", table)


def _table6_rows(consistency_of: dict[str, pd.DataFrame | None]) -> pd.DataFrame:
    """Table 6 in its long form: for each reasoning target of ``consistency_of``
    (:func:`_target_consistency`) a context-free and a context-dependent row (:func:`table6`); a
    row with a metric it could not measure says why."""
    rows = []
    for target, consistency in consistency_of.items():
        means = table6(consistency).set_index("setting") if consistency is not None else pd.DataFrame()
        for setting in (CONTEXT_FREE, CONTEXT_DEPENDENT):
            values = {m: means.loc[setting, m] if setting in means.index else float("nan") for m in METRICS}
            missing = [m.upper() for m, v in values.items() if pd.isna(v)]
            rows.append({"model": target, "setting": SETTING_NAMES[setting], **values,
                         "note": NO_REASONING_TRIPLE if len(missing) == len(METRICS) else
                         f"not estimable for {joined(missing)}: no variant triple of this setting had a valid answer "
                         "for every trait in every variant" if missing else ""})
    return pd.DataFrame(rows, columns=["model", "setting", *METRICS, "note"])


def _table6_finding(table: pd.DataFrame, reasoning_targets: Sequence[str]) -> str:
    """Table 6's sentence: per reasoning model, the metrics on which it is less consistent with
    its earlier answers in context than without, those on which it is more, and those alike
    (as the table prints them); or, where it measures nothing, why."""
    if not reasoning_targets:
        return measures_nothing("Table 6 (the reasoning models)", NO_REASONING_TARGET,
                                "reasoning models in reasoning_targets, each with a reasoning budget in model_options, "
                                f"or {PAPER_SCALE_SET} (CAPE's two DeepSeek-R1 models)")
    if table[list(METRICS)].isna().all().all():
        return measures_nothing("Table 6 (the reasoning models)",
                                "no reasoning target had a factor's variant triple with an item answered validly in "
                                "every variant, in either setting (a reasoning model that thinks past its budget "
                                "answers nothing)", "a larger reasoning_budget in model_options")
    kinds = {column.source: column.kind for column in MANUSCRIPT.table("table6").columns}  # as the table prints them
    sentences = []
    for target, rows in table.groupby("model", sort=False):
        by_setting = rows.set_index("setting")
        free, dependent = by_setting.loc[SETTING_NAMES[CONTEXT_FREE]], by_setting.loc[SETTING_NAMES[CONTEXT_DEPENDENT]]
        less, more, alike, unmeasured = [], [], [], []
        for m in METRICS:
            kind = kinds[m]
            if pd.isna(free[m]) or pd.isna(dependent[m]):
                unmeasured.append(m.upper())
                continue
            shown = f"{m.upper()} ({kind.variable(free[m])} without, {kind.variable(dependent[m])} with)"
            if kind.text(dependent[m]) == kind.text(free[m]):
                alike.append(shown)
            elif (dependent[m] > free[m]) == _HIGHER_IS_CONSISTENT[m]:
                more.append(shown)
            else:
                less.append(shown)
        clauses = ([f"less consistent on {joined(less)}"] if less else []) + \
                  ([f"more consistent on {joined(more)}"] if more else []) + \
                  ([f"as consistent on {joined(alike)}"] if alike else [])
        sentence = f"With its earlier answers in context, {model_name(target)} is " + "; ".join(clauses) \
            if clauses else f"{model_name(target)} has no metric measured in both settings"
        if unmeasured and clauses:
            sentence += f"; {joined(unmeasured)} not measured in both settings"
        sentences.append(sentence + ".")
    return " ".join(sentences)


#: How a setting is named in a variable's key.
SHORT = {CONTEXT_FREE: "cf", CONTEXT_DEPENDENT: "cd"}


def reliability(run: Run, answers: pd.DataFrame) -> pd.DataFrame:
    """Table 3 and Table 4 from the answers already given (no call of their own): how TC and OC
    go with TAR and ED over this run's factor, setting and run conditions (CAPE correlates them
    across models; with one target they are correlated across its conditions), and Cronbach's
    α per trait over the context-free runs, with test–retest on the stability factor's runs."""
    p = run.params
    chosen = _primary(run, chosen_answers(answers, p.answer))
    correlations = metric_correlations(factor_consistency(chosen))
    run.table("table3", correlations)
    conditions = int(correlations["n"].max()) if len(correlations) else 0
    run.out.set(table3_conditions=conditions)
    estimated = correlations[correlations["note"] == ""]
    run.out.set(table3_finding=measures_nothing(
        "the correlation of TC and OC with TAR and ED",
        f"{correlations['note'].iloc[0].removeprefix('not estimable: ')}",
        f"more factors and runs (n_runs), or {PAPER_SCALE_SET}") if estimated.empty else
        "Pearson's r over the conditions: " + listing(
            [(f"{r.pattern}–{r.point}", COEFFICIENT.text(r.pearson) if r.note == "" else not_estimable(
                r.note.removeprefix("not estimable: "))) for r in correlations.itertuples()]) + ".")
    alphas = trait_alphas(chosen, CONTEXT_FREE)
    for row in alphas.itertuples():
        run.out.put("alpha_{trait}", row.alpha, why=row.note.removeprefix("not estimable: ") or None, trait=row.trait)
    written = run.out.variables
    run.out.set(alpha_finding=measures_nothing(
        "Cronbach's α", "for every trait, " + alphas["note"].iloc[0].removeprefix("not estimable: "),
        f"sampled runs (the temperature factor) or {CAPABLE_TARGET}") if alphas["alpha"].isna().all() else
        "Cronbach's α per trait: " + listing([(t, written[f"alpha_{t}"]) for t in TRAITS]) + ".")
    reasons = {}
    for setting in (CONTEXT_FREE, CONTEXT_DEPENDENT):
        r, n, why = retest_correlation(chosen, setting)
        run.out.put("retest_r_{setting}", r, why=why or None, setting=SHORT[setting])
        reasons[setting] = why
        if setting == CONTEXT_FREE:
            run.out.set(retest_items=n)
    run.out.set(retest_finding=measures_nothing("test–retest reliability", reasons[CONTEXT_FREE], RETEST_NEEDS)
                if reasons[CONTEXT_FREE] == NO_RETEST else
                "Test–retest, Pearson's r of the stability factor's first two runs: "
                + listing([("context-free", written["retest_r_cf"]),
                           ("context-dependent", written["retest_r_cd"])]) + "."
                + (" In each setting the two runs gave every item the same score: they ask the same "
                   "prompts at temperature 0, so this r shows that the target decodes repeatably, not "
                   "how reliably a sampled respondent answers across occasions."
                   if all(retest_identical(chosen, s) for s in (CONTEXT_FREE, CONTEXT_DEPENDENT)) else ""))
    return run.table("table4", alphas)


def differences_figure(run: Run, answers: pd.DataFrame) -> SavedFigure:
    """Fig. 3a: how each item's score moves from context-free to context-dependent (CAPE §6.2),
    counted per difference −4 … 4 and factor, over every run asked in both settings."""
    counts = score_differences(_primary(run, chosen_answers(answers, run.params.answer)), by=["factor", "run_id"])
    long = counts.melt(id_vars=["factor", "run_id"], var_name="difference", value_name="items") \
        .groupby(["difference", "factor"], as_index=False)["items"].sum() if len(counts) else pd.DataFrame()
    compared = int(long["items"].sum()) if len(long) else 0
    run.out.set(differences_compared=compared, differences_unchanged_pct=100 * long.loc[
        long["difference"] == 0, "items"].sum() / compared if compared else not_estimable(
        "no item was answered validly in both settings"))
    return run.figure("score_differences", figures.bars(
        long, x="difference", y="items", hue="factor", order=list(range(-4, 5)),
        xlabel="context-dependent − context-free item score", ylabel="items",
        reason="no item was answered validly in both settings"))


def validity(run: Run, answers: pd.DataFrame) -> pd.DataFrame:
    """Table 5 (CAPE App. B, construct validity) from the answers already given: whether TAR,
    ED, TC and OC differ between the settings over the factor runs asked in both (a run's
    variant triple is the finest unit both settings measure; CAPE pairs per model and factor):
    paired t-test, Wilcoxon signed-rank and one-way ANOVA p, and Cohen's d_z (the paired form)
    of context-dependent minus context-free."""
    table = construct_validity(factor_consistency(_primary(run, chosen_answers(answers, run.params.answer))))
    why = table.attrs["why"]
    for row in table.itertuples():
        metric = row.metric.lower()
        run.out.put("validity_p_{metric}", row.t_p, why=why[row.metric].get("t_p"), metric=metric)
        run.out.put("validity_d_{metric}", row.d, why=why[row.metric].get("d"), metric=metric)
    run.out.set(validity_units=int(table["n"].max()))
    written = run.out.variables
    run.out.set(validity_finding=measures_nothing(
        "construct validity", table["note"].iloc[0].removeprefix("not estimable: "),
        f"more factors and runs (n_runs), or {PAPER_SCALE_SET}") if table[list(TESTS)].isna().all().all() else
        "Paired t-test p per metric: " + listing([(m.upper(), written[f"validity_p_{m}"]) for m in METRICS])
        + ". Cohen's d_z of context-dependent minus context-free: "
        + listing([(m.upper(), written[f"validity_d_{m}"]) for m in METRICS]) + ".")
    return run.table("table5", table)


#: Why the OCEAN profiles of the two settings cannot be compared.
NO_PAIRED_ANSWER = "no item was answered validly in both settings"


def profile_shift_table(run: Run, answers: pd.DataFrame) -> pd.DataFrame:
    """Fig. 3b's numbers (CAPE §6.2): the mean item score per OCEAN trait, context-free and
    context-dependent, over the answers to the same item in the same run valid in both
    settings, and its shift (context-dependent minus context-free)."""
    shift = profile_shift(_primary(run, chosen_answers(answers, run.params.answer)))
    for row in shift.itertuples():
        run.out.put("profile_shift_{trait}", row.shift, why=row.note.removeprefix("not estimable: ") or None,
                    trait=row.trait)
    run.out.set(profile_shift_pairs=int(shift["n"].sum()))
    written = run.out.variables
    run.out.set(profile_shift_finding=measures_nothing(
        "the shift of the OCEAN profile", NO_PAIRED_ANSWER, f"{CAPABLE_TARGET} or more items (n_items)")
        if shift["shift"].isna().all() else
        "Context-dependent minus context-free trait mean: " + listing(
            [(t, written[f"profile_shift_{t}"]) for t in TRAITS]) + ".")
    return run.table("profile_shift", shift)


def profile_shift_figure(run: Run, ocean_shift: pd.DataFrame) -> SavedFigure:
    """Fig. 3b: the mean item score per OCEAN trait in each setting (the answers of the table
    above)."""
    long = pd.DataFrame([{"trait": row.trait, "setting": SETTING_NAMES[setting], "mean": getattr(row, column),
                          "note": row.note} for row in ocean_shift.itertuples()
                         for setting, column in ((CONTEXT_FREE, "cf"), (CONTEXT_DEPENDENT, "cd"))])
    return run.figure("profile_shift", figures.bars(
        long, x="trait", y="mean", hue="setting", order=list(TRAITS),
        hue_order=[SETTING_NAMES[s] for s in (CONTEXT_FREE, CONTEXT_DEPENDENT)],
        ylabel="mean item score (1–5)", reason=NO_PAIRED_ANSWER))


def logical_consistency(run: Run, answers: pd.DataFrame) -> pd.DataFrame:
    """App. A: logical consistency from the answers already given, on item pairs of our own
    (CAPE's 38 similar and 73 contradictory pairs are not published): two items of one IPIP
    facet are a similar pair when keyed alike and a contradictory one when keyed oppositely.
    A similar pair is correct when both answers are on one side of the scale's midpoint 3, a
    contradictory one when they are on opposite sides (a neutral answer takes no side);
    accuracy per setting over every run that answered both items validly."""
    p = run.params
    pairs = item_pairs(load_inventory(p.inventory))
    accuracy = pair_accuracy(_primary(run, chosen_answers(answers, p.answer)), pairs)
    for kind in KINDS:
        run.out.put("logic_{pairs}_pairs", int((pairs["kind"] == kind).sum()), pairs=kind)
    for row in accuracy.itertuples():
        run.out.put("logic_{pairs}_{setting}_pct", row.accuracy, why=row.note.removeprefix("not estimable: ") or None,
                    pairs=row.kind, setting=SHORT[row.setting])
    written = run.out.variables
    run.out.set(logic_finding=measures_nothing(
        "logical consistency", accuracy["note"].iloc[0].removeprefix("not estimable: "),
        f"more items (n_items, 0 for all) or {PAPER_SCALE_SET}") if accuracy["accuracy"].isna().all() else
        " ".join(f"On our {kind} pairs the accuracy is " + listing(
            [(SETTING_NAMES[s], written[f"logic_{kind}_{SHORT[s]}_pct"]) for s in (CONTEXT_FREE, CONTEXT_DEPENDENT)])
            + "." for kind in KINDS))
    return run.table("logic", accuracy.assign(setting=accuracy["setting"].map(SETTING_NAMES)))


#: Fig. 2's reference: the run that keeps every earlier question-answer pair.
FULL = "full"


def few_shot(run: Run) -> pd.DataFrame:
    """§6.1, Fig. 2: the primary target answers the items in context-dependent runs that keep
    only the last k question-answer pairs (``few_shots``) and one that keeps them all; each
    k's trajectory is set beside the full history's (TAR, ED, TC over the items answered validly
    in both), and the figure draws every trajectory, the full one last."""
    p = run.params
    lengths = list(dict.fromkeys(p.few_shots))
    # how the figure and the sentence name each run: by the pairs it kept
    kept = {**{str(k): f"{k} pair{'' if k == 1 else 's'} kept" for k in lengths}, FULL: "full history"}
    runs = history_runs(_inventory(p), [*lengths, None], params={**DEFAULT_PARAMS, "max_tokens": p.max_tokens})
    with CallCache() as cache:
        asked = {k: administer(spec, p.targets[0], setting=CONTEXT_DEPENDENT, history_pairs=k, cache=cache,
                               transport=run.transport, progress=True, name=f"cape:few-shot:{k or FULL}",
                               constrained=p.answer == "constrained").answers for k, spec in runs.items()}
    chosen = {k: chosen_answers(answers, p.answer) for k, answers in asked.items()}
    run.batch("cape:few-shot", answer_counts(pd.concat(chosen.values(), ignore_index=True)))
    table = history_ablation(chosen).rename(columns={"agreement": "tar", "mean_abs_difference": "ed"})
    table = table.assign(history_pairs=table["history_pairs"].astype(str), tar=table["tar"] * 100,
                         tc=table["tc"] * 100)
    shown = table[table["history_pairs"] != FULL]
    lines = pd.concat([a.assign(history_pairs=FULL if k is None else str(k)) for k, a in chosen.items()],
                      ignore_index=True)
    run.out.parquet("few_shot", lines)
    run.figure("few_shot", figures.trajectory(
        lines.assign(kept=lines["history_pairs"].map(kept)), x="position", y="score", hue="kept",
        hue_order=list(kept.values()), xlabel="question (in the order asked)",
        ylabel="item score (1–5)", reason="no answer could be read as an option"))
    run.out.set(few_shots=", ".join(map(str, lengths)), few_shot_finding=measures_nothing(
        "the few-shot ablation", shown["note"].iloc[0].removeprefix("not estimable: "),
        f"{CAPABLE_TARGET} or {PAPER_SCALE_SET}") if shown["tar"].isna().all() else
        "Against the full history's trajectory the TAR is " + listing(
            [(kept[row.history_pairs], not_estimable(row.note.removeprefix("not estimable: ")) if row.note else PERCENT.variable(row.tar))
             for row in shown.itertuples()]) + ".")
    return run.table("few_shot", shown)


def attack(run: Run, answers: pd.DataFrame) -> pd.DataFrame:
    """The adversarial history attack (§6.3), on the first factor's runs: every earlier
    reply in the history replaced by ``attack_letter``; the options chosen before and after."""
    p = run.params
    runs = [r for r in factor_runs(p.factors[0], _inventory(p), n_runs=p.n_runs,
                                   params={**DEFAULT_PARAMS, "max_tokens": p.max_tokens})]
    with CallCache() as cache:
        attacked = chosen_answers(administer(attack_runs(runs, p.attack_letter), p.targets[0], setting=CONTEXT_DEPENDENT,
                                             history_pairs=_history_pairs(p), cache=cache, transport=run.transport,
                                             progress=True, name="cape:attack", constrained=p.answer == "constrained").answers,
                                  p.answer)
    run.batch("cape:attack", answer_counts(attacked))  # asked before the answers are read (a plan plans it)
    chosen = _primary(run, chosen_answers(answers, p.answer))
    before = chosen[(chosen["setting"] == CONTEXT_DEPENDENT) & chosen["run_id"].isin([r.run_id for r in runs])]
    shift = option_shift(before, attacked)
    run.out.parquet("attack", attacked)
    run.out.set(attack_letter=p.attack_letter,
                attack_letter_before=int(shift.loc[shift["option"] == p.attack_letter, "before"].iloc[0]),
                attack_letter_after=int(shift.loc[shift["option"] == p.attack_letter, "after"].iloc[0]))
    return run.table("attack", shift)


def ordering(run: Run) -> pd.DataFrame:
    """The OCEAN profile under each question order (§6.4; context-dependent: the order
    matters only with history)."""
    p = run.params
    runs = ordering_runs(_inventory(p), rng_for(p.shuffle_seed, "cape-ordering"), orderings=p.orderings,
                         params={**DEFAULT_PARAMS, "max_tokens": p.max_tokens})
    with CallCache() as cache:
        ordered = chosen_answers(administer(runs, p.targets[0], setting=CONTEXT_DEPENDENT, history_pairs=_history_pairs(p),
                                            cache=cache, transport=run.transport, progress=True, name="cape:ordering",
                                            constrained=p.answer == "constrained").answers, p.answer)
    run.batch("cape:ordering", answer_counts(ordered))
    run.out.parquet("ordering", ordered)
    return run.table("ordering", ocean_profiles(ordered, by=["ordering"]))


#: Table 2's target for the Random baseline, which calls no model.
NO_MODEL = "none (Random)"


def role_playing(run: Run) -> pd.DataFrame:
    """Table 2 (CAPE §6.5): InCharacter's ChatHaruhi characters as role-playing agents on the
    target (system prompt, a scenes message of the character's dialogue snippets, the query
    ``<experimenter>:「<question>」`` with InCharacter's self-report BFI question in the
    character's language) answer the BFI items (``rpa_items``; the paper asks all 44)
    ``rpa_runs`` times, context-free (RPA) and context-dependent (RPA++: the earlier
    question–answer pairs kept), beside a Random baseline (seeded, no call). InCharacter's
    scoring (reverse keys, dimension means, H above 3); OA (CAPE's OC between the human and
    the agent's OCEAN), MAE (% of the 1–5 span) and type accuracy on the mean over runs,
    pairs skipped under the ambiguity rule; TAR, ED, TC, OC over the runs; each a mean over
    the characters; a row group per target, beside one Random row group. The RoleLLM
    characters have labels only and are not run."""
    p = run.params
    bfi, characters = rpa.load_bfi().balanced(p.rpa_items), rpa.load_characters()
    agents = [c for c in characters if c.has_agent]
    chosen = agents if "all" in p.rpa_characters else [c for c in agents if c.id in p.rpa_characters]
    with CallCache() as cache:
        asked = pd.concat([rpa.answer_frame(rpa.administer_rpa(
            chosen, bfi, target, n_runs=p.rpa_runs, scene_chars=p.rpa_scene_chars,
            params={"temperature": p.rpa_temperature, "max_tokens": p.rpa_max_tokens}, cache=cache,
            transport=run.transport, progress=True)).assign(model=target) for target in p.targets], ignore_index=True)
    run.batch("cape:rpa", answer_counts(asked))
    random = rpa.answer_frame(rpa.random_answers(chosen, bfi, p.rpa_runs, p.shuffle_seed))
    run.out.parquet("rpa_answers", pd.concat([random.assign(model=None), asked], ignore_index=True))
    label_only = [c for c in characters if not c.has_agent]
    lacking = sorted({m.replace("_", " ") for c in label_only for m in c.missing})
    run.out.set(rpa_characters=", ".join(c.id for c in chosen), rpa_n_characters=len(chosen),
                rpa_n_agents=len(agents), rpa_n_label_only=len(label_only),
                rpa_label_only_reason=f"the data holds no {' and no '.join(lacking)} for them" if lacking else
                "every character has an agent", rpa_runs=p.rpa_runs, rpa_items=len(bfi.items),
                rpa_temperature=p.rpa_temperature,
                rpa_scene_chars=p.rpa_scene_chars, rpa_ambiguity=p.rpa_ambiguity,
                rpa_ambiguity_rule=rpa.AMBIGUITY_RULES[p.rpa_ambiguity],
                rpa_pairs=len(chosen) * len(rpa.DIMENSIONS), rpa_pairs_skipped=rpa.n_skipped(chosen, p.rpa_ambiguity),
                rpa_pairs_all=len(characters) * len(rpa.DIMENSIONS),
                rpa_pairs_skipped_all=rpa.n_skipped(characters, p.rpa_ambiguity), rpa_answers=len(asked),
                rpa_unparsable=int((asked["status"] == rpa.UNPARSABLE).sum()),
                rpa_failed=int(asked["error_type"].notna().sum()))
    written = run.out.variables
    scored_three = written["rpa_unparsable"] + written["rpa_failed"]
    run.out.set(rpa_finding=measures_nothing(
        "the agents' alignment with the human labels",
        f"{scored_three} of the {len(asked)} answers held no choice from 1 to 5 and were scored 3 by InCharacter's rule, "
        "so the agents' OCEAN is mostly the scale's midpoint whatever the character", f"{CAPABLE_TARGET} (make cape "
        f"TARGETS=…) or {PAPER_SCALE_SET}") if 2 * scored_three > len(asked) else
        f"{len(asked) - scored_three} of the {len(asked)} answers held a choice from 1 to 5.")
    table = pd.concat([rpa.table2(random, chosen, p.rpa_ambiguity).assign(target=NO_MODEL),
                       *(rpa.table2(asked[asked["model"] == target], chosen, p.rpa_ambiguity).assign(target=target)
                         for target in p.targets)], ignore_index=True)
    return run.table("table2", table if len(p.targets) > 1 else table.drop(columns="target"))


def bridge(run: Run) -> pd.DataFrame:
    """The bridge to drift: the questionnaire (context-free) after a real session prefix and
    after its length-matched filler, at snapshot positions; mean OCEAN profile per arm."""
    p = run.params
    arms = {"real": session_prefix_provider(window=p.bridge_window),
            "filler": lambda snapshot: matched_filler(snapshot, render_prefix(snapshot, window=p.bridge_window))}
    runs = []
    for s in run.sessions:
        runs += bridge_runs(s, scheme_positions(s, "uniform", k=p.bridge_positions), arms, _inventory(p),
                            n_runs=p.bridge_runs,
                            params={"temperature": p.bridge_temperature, "max_tokens": p.max_tokens})
    with CallCache() as cache:
        bridged = chosen_answers(administer(runs, p.targets[0], setting=CONTEXT_FREE, cache=cache, transport=run.transport,
                                            progress=True, name="cape:bridge",
                                            constrained=p.answer == "constrained").answers, p.answer)
    bridged["session"] = bridged["session"].map(run.labels)
    summary = bridge_summary(bridged)
    run.out.parquet("bridge", summary)
    run.batch("cape:bridge", answer_counts(bridged))
    means = summary.groupby("arm")[list(TRAITS)].mean()
    delta = (means.loc["real"] - means.loc["filler"]).abs() if {"real", "filler"} <= set(means.index) else None
    why = not_estimable("the bridge has no readable answer after both a real and a filler prefix")
    run.out.set(bridge_max_trait_difference=delta.max() if delta is not None and delta.notna().any() else why,
                bridge_trait_of_max=str(delta.idxmax()) if delta is not None and delta.notna().any() else why)
    return run.table("bridge", summary)


def bridge_figure(run: Run, bridge: pd.DataFrame) -> SavedFigure:
    """The mean item score per OCEAN trait after real and after filler prefixes."""
    means = bridge.groupby("arm")[list(TRAITS)].mean().rename_axis(columns="trait").stack(future_stack=True) \
        .rename("mean").reset_index() if len(bridge) else pd.DataFrame()
    return run.figure("bridge", figures.bars(
        means, x="trait", y="mean", hue="arm", order=list(TRAITS), hue_order=("real", "filler"),
        ylabel="mean item score (1–5)", reason="no questionnaire answer after a session prefix was readable"))


def variables(run: Run) -> pd.DataFrame:
    """The manuscript's numbers, written with the run log."""
    p = run.params
    counts = run.log.batches["cape:factors"]
    n_invalid = counts.invalid + counts.failed  # every answer not parsed as an option
    run.out.set(target=p.targets[0], targets=", ".join(p.targets), n_targets=len(p.targets), n_items=len(_inventory(p)), max_tokens=p.max_tokens, n_factors=len(p.factors),
                n_runs=p.n_runs, factors=", ".join(p.factors), history_window=p.history_window,
                n_answers=counts.calls, n_invalid=n_invalid, n_failed=counts.failed,
                invalid_pct=100 * n_invalid / max(1, counts.calls),
                n_orderings=len(p.orderings), bridge_positions=p.bridge_positions,
                bridge_window=p.bridge_window, bridge_runs=p.bridge_runs)
    return spine.finish(run)


STAGES = (Stage("run", start), Stage("answers", factors), Stage("table1", consistency_table),
          Stage("table6", reasoning_table),
          Stage("table4", reliability), Stage("differences", differences_figure), Stage("table5", validity),
          Stage("ocean_shift", profile_shift_table), Stage("ocean_figure", profile_shift_figure),
          Stage("logic", logical_consistency),
          Stage("few_shot", few_shot), Stage("shift", attack), Stage("profiles", ordering), Stage("table2", role_playing),
          Stage("bridge", bridge),
          Stage("figure", bridge_figure), Stage("variables", variables))


def run(params: Parameters) -> Result:
    """Every stage in order, as the notebook runs them."""
    return spine.run_stages(STAGES, params)
