"""What a run says about its protocol: the record in its run log (the protocol's key, the
settings it used beside the protocol's own, what it shortened, how it differs from the
paper-scale parameter set) and the manuscript variables that name them."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..echo.protocol import Protocol
from ..paper.declared import Declared
from ..paper.formats import COUNT, TEXT
from ..paper.variables import Variable

#: The manuscript variables of :func:`protocol_variables`.
PROTOCOL = Declared(variables=(
    Variable("protocol", TEXT), Variable("protocol_version", TEXT), Variable("protocol_sha256", TEXT),
    Variable("protocol_shortened", TEXT), Variable("protocol_divergences", TEXT),
    Variable("n_protocol_divergences", COUNT)))


def protocol_record(protocol: Protocol, p: Any, stressor_max_tokens: int | None = None,
                    paper_scale: Mapping[str, Any] | None = None) -> dict:
    """What a run manifest says about the ``protocol`` of a judged run ``p``: its key, the
    window and max tokens the run used next to the protocol's own, which of them were
    shortened (the embedded build's context and two cores cannot take the reference's
    30,000 characters and 600/1,024/400 tokens; under ``contextecho`` the window and tokens
    are the run's own parameters: nothing is shortened), and ``differs``: every parameter
    of the experiment's paper-scale set (``paper_scale``; under ``reference`` the harness's
    settings) whose value this run changed, computed from the parameters, never written by hand."""
    used = {"window_chars": p.window, "probe_max_tokens": p.max_tokens,
            "stressor_max_tokens": stressor_max_tokens or p.max_tokens,
            "judge_max_tokens": p.judge_max_tokens,
            "temperature": p.temperature if protocol.sampling.temperature is not None else "provider default"}
    return {**protocol.key(), "settings": used, "protocol_settings": protocol.settings(),
            "shortened": protocol.shortened(used), "differs": differences_from(p, paper_scale or {})}


def differences_from(p: Any, paper_scale: Mapping[str, Any]) -> list[dict[str, Any]]:
    """``[{setting, run, paper}]``: each parameter of ``paper_scale`` whose value in ``p``
    differs (sequences compared as tuples), in the set's order."""
    out = []
    for name, paper in paper_scale.items():
        ours = getattr(p, name, None)
        as_tuple = (lambda v: tuple(v) if isinstance(v, (list, tuple)) else v)
        if as_tuple(ours) != as_tuple(paper):
            out.append({"setting": name, "run": _setting_text(ours), "paper": _setting_text(paper)})
    return out


def _setting_text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return ", ".join(map(str, value)) or "none"
    return str(value)


def divergence_variables(differs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The manuscript variables listing every setting a run changed from its paper-scale
    set (``protocol_divergences``) and how many (``n_protocol_divergences``)."""
    listed = "; ".join(f"{d['setting']} {d['run']} (paper scale: {d['paper']})" for d in differs) or "none"
    return {"protocol_divergences": listed, "n_protocol_divergences": len(differs)}


def protocol_variables(record: Mapping[str, Any]) -> dict[str, Any]:
    """Manuscript variables naming the protocol of ``record`` (:func:`protocol_record`), what
    the run shortened, and every setting it changed from the paper-scale set."""
    shortened = ", ".join(f"{k} {record['settings'][k]} (protocol: {record['protocol_settings'][k]})"
                          for k in record["shortened"]) or "none"
    return {"protocol": record["protocol"], "protocol_version": record["protocol_version"],
            "protocol_sha256": record["protocol_sha256"][:12], "protocol_shortened": shortened,
            **divergence_variables(record.get("differs", []))}
