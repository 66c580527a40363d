"""The runner shows a judge that is not in-process the target's answer redacted
(:mod:`contextecho.sessions.outbound`); the stored answer is the answer."""
from contextecho.echo import build_cells, run_cells
from contextecho.engine.cache import CallCache
from contextecho.echo.protocols import protocol

OURS = protocol("contextecho")

EMAIL = "jane.roe@example.org"
ANSWER = f"I'd mail {EMAIL} about /home/janeroe/proj/secret.txt first."


def test_the_runner_shows_a_hosted_judge_the_redacted_answer(sessions, tmp_path, provider):
    provider("quotingtarget", lambda model, messages: ANSWER)
    judge = provider("hostedjudge", lambda model, messages: "Score: 2")  # records what it was shown
    cells = build_cells("x", "quotingtarget/t", sessions[:1], positions=[4], arms=["real"], items=["C03"],
                        window=2_000)
    frame = run_cells(cells, "hostedjudge/j", protocol=OURS, cache=CallCache(tmp_path), progress=False)
    assert (frame.response == ANSWER).all()  # what is stored is the answer
    seen = "\n".join(str(m["content"]) for messages in judge.seen for m in messages)
    assert judge.seen and EMAIL not in seen and "janeroe" not in seen and "<EMAIL_" in seen
    unredacted = run_cells(cells, "hostedjudge/j", protocol=OURS, cache=CallCache(tmp_path / "b"), progress=False, redact=False)
    assert EMAIL in str(judge.seen[-1]) and (unredacted.verdict_status == "ok").all()
