"""What a judge is shown leaves the machine redacted: a target's answer, shown to a judge that
is not in-process, is redacted with its session's redactor; an in-process judge sees it as is."""
from contextecho.sessions.outbound import JudgeInputs, shown_texts

EMAIL = "jane.roe@example.org"
ANSWER = f"I'd mail {EMAIL} about /home/janeroe/proj/secret.txt first."


def test_a_hosted_judge_is_shown_the_answer_redacted_and_a_local_one_as_is():
    shown = JudgeInputs()
    hosted = shown.text(ANSWER, "openai/gpt-4o-mini", "s1")
    assert EMAIL not in hosted and "janeroe" not in hosted and "<EMAIL_1>" in hosted
    assert shown.text(ANSWER, "local/smollm2-135m", "s1") == ANSWER
    assert shown.text(ANSWER, "fake/echo", "s1") == ANSWER
    assert JudgeInputs(redact=False).text(ANSWER, "openai/gpt-4o-mini", "s1") == ANSWER


def test_one_redactor_per_session_reads_what_the_target_was_shown_first():
    shown = JudgeInputs()
    context = [f"Author: Jane Roe <{EMAIL}>", "other@example.org wrote the parser"]
    first = shown.text(f"ask {EMAIL}", "anthropic/claude-sonnet-4-5", "s1", context)
    # the placeholders follow the session's texts, read first: the address is the first found
    assert first == "ask <EMAIL_1>"
    again = shown.text("cc other@example.org", "anthropic/claude-sonnet-4-5", "s1", context)
    assert again == "cc <EMAIL_2>"
    assert shown.text("cc other@example.org", "anthropic/claude-sonnet-4-5", "s2") == "cc <EMAIL_1>"


def test_shown_texts_reads_strings_and_text_parts():
    messages = [{"role": "system", "content": "sys"},
                {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "image_url", "image_url": {}}]}]
    assert shown_texts(messages) == ["sys", "a"]
