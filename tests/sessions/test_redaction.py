"""Redaction: planted secrets of each class never reach a rendered prefix."""
from __future__ import annotations

import json
import re

import pytest

from contextecho.sessions import (RedactionLeak, Redactor, load_session, redact,
                                  render_prefix, snapshot_at)

# Synthetic, made-up values; none is a real credential or person.
PRIVATE_KEY = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ"
               "\nQyNTUxOQAAACBfakekeyfakekeyfakekeyfakekey\n-----END OPENSSH PRIVATE KEY-----")
PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyFakeKeyFakeKeyFakeKeyFakeKey12 jdoe@laptop"
PLANTED = {
    "USER": ["/Users/jdoe-planted/src/app", "/home/qwrtz/project", r"C:\Users\winuser9\repo"],
    "EMAIL": ["jane.planted@example.org", "x.y+tag@corp-mail.example.com"],
    "HOST": ["http://buildbox.internal:8080/api", "ssh deploy@10.20.30.40", "db.staging.lan",
             "localhost:5173"],
    "SSH_KEY": [PRIVATE_KEY, PUBLIC_KEY],
    "SECRET": ["sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
               "AKIAABCDEFGHIJKLMNOP", "password=hunter2hunter2", "Authorization: Bearer abcDEF123456ghiJKL789",
               "token: Zx9Qm2Lp8Rt4Vw6Ys1Bn3Kd7Hf5Jg0Ca", "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
               "blob kQ8vN2mX5pL9rT3wY7zB4cF6hJ1dG0sA8eK2uM5nP3qR"],
}
SECRETS = {  # the substrings that must disappear
    "USER": ["jdoe-planted", "qwrtz", "winuser9"],
    "EMAIL": ["jane.planted@example.org", "x.y+tag@corp-mail.example.com"],
    "HOST": ["buildbox.internal", "10.20.30.40", "db.staging.lan", "5173", "8080"],
    "SSH_KEY": ["b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ", "AAAAC3NzaC1lZDI1NTE5AAAAIFakeKey"],
    "SECRET": ["AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
               "AKIAABCDEFGHIJKLMNOP", "hunter2hunter2", "abcDEF123456ghiJKL789",
               "Zx9Qm2Lp8Rt4Vw6Ys1Bn3Kd7Hf5Jg0Ca", "dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
               "kQ8vN2mX5pL9rT3wY7zB4cF6hJ1dG0sA8eK2uM5nP3qR"],
}


@pytest.mark.parametrize("cls", sorted(PLANTED))
def test_each_class_is_replaced(cls):
    text = "\n".join(f"line: {v} end" for v in PLANTED[cls])
    out, report = redact(text)
    for secret in SECRETS[cls]:
        assert secret not in out
    assert f"<{cls}_1>" in out and report.distinct[cls] >= 1
    assert report.n_replacements >= len(PLANTED[cls]) - 1


def test_planted_secrets_never_reach_a_rendered_prefix(tmp_path, cc, write):
    everything = [v for vs in PLANTED.values() for v in vs]
    recs = [cc.user("please deploy; my key is " + PLANTED["SECRET"][0]), cc.assistant("a", cc.text("ok"))]
    for i, v in enumerate(everything):
        recs.append(cc.assistant(f"m{i}", cc.tool(f"t{i}", "Bash", command=f"echo {v}")))
        recs.append(cc.result(f"t{i}", f"output mentions {v} and jdoe-planted again"))
    recs.append(cc.assistant("end", cc.text("contact jane.planted@example.org, cwd /Users/jdoe-planted/src")))
    s = load_session(write(tmp_path / "t.jsonl", recs))
    p = render_prefix(snapshot_at(s, s.n_agent_steps))
    blob = "\n".join(m["content"] for m in p.messages)
    for cls, values in SECRETS.items():
        for secret in values:
            assert secret not in blob, (cls, secret)
    assert "<USER_1>" in blob and "<EMAIL_1>" in blob and "<HOST_" in blob and "<PORT_" in blob
    assert "<SSH_KEY_1>" in blob and "<SECRET_1>" in blob
    assert p.redacted and p.redaction.n_replacements > 0
    assert p.n_chars == sum(len(m["content"]) for m in p.messages)
    assert "jdoe-planted" not in repr(p.redaction)  # the report never holds originals


def test_placeholders_are_consistent_within_a_redactor():
    r = Redactor()
    a = r.redact("mail jane.planted@example.org and bob.planted@example.org")
    b = r.redact("again bob.planted@example.org then jane.planted@example.org")
    assert a == "mail <EMAIL_1> and <EMAIL_2>"
    assert b == "again <EMAIL_2> then <EMAIL_1>"


def test_user_names_replaced_everywhere_as_tokens():
    out, _ = redact("cd /Users/qwrtz/app; branch qwrtz/fix; project -Users-qwrtz-app; qwrtzy stays")
    assert out == ("cd /Users/<USER_1>/app; branch <USER_1>/fix; project -Users-<USER_1>-app; "
                   "qwrtzy stays")


def test_extra_terms_and_generic_accounts():
    r = Redactor({"PROJECT": ["Bluebird"]})  # extra terms are matched regardless of case
    out = r.redact("Bluebird lives in /home/ubuntu/bluebird and /root")
    assert out == "<PROJECT_1> lives in /home/ubuntu/<PROJECT_1> and /root"


def test_no_false_positives_on_ordinary_code():
    text = ("commit 4c2b7d4ff28cbca9278e47179ad804ed2a83fd77 uuid 00000000-0000-4000-8000-000000000001 "
            "see src/parser.py:123 and test_parse_claude_code_records_with_sidechain_flag_v2 "
            "Co-Authored-By: Claude <noreply@anthropic.com> git@github.com:org/repo.git version 2.1.42")
    out, report = redact(text)
    assert out == text and report.n_replacements == 0


def test_verification_fails_loudly_on_survivors():
    r = Redactor()
    r.discover("reach me at jane.planted@example.org")
    with pytest.raises(RedactionLeak, match="class EMAIL") as info:
        r.verify("leaked jane.planted@example.org", where="prefix X")
    assert "jane" not in str(info.value)  # the error does not repeat the secret


# Shapes the first rules missed (issue 13), and more of each class; made-up values.
CAUGHT = [
    ("SECRET", "DB_PASSWORD=x", "DB_PASSWORD=<SECRET_1>"),
    ("SECRET", "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key = <SECRET_1>"),
    ("SECRET", "password: hunter2", "password: <SECRET_1>"),
    ("SECRET", "git clone https://bob:pw@git.acme.io/r", "git clone https://<USER_1>:<SECRET_1>@<HOST_1>/r"),
    ("SECRET", "Authorization: Basic dXNlcjpodW50ZXIy", "Authorization: Basic <SECRET_1>"),
    ("SECRET", "https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX", "<SECRET_1>"),
    ("SECRET", '"apiToken": "Zx9Qm2"', '"apiToken": "<SECRET_1>"'),
    ("SECRET", '{\\"password\\": \\"hunter2\\"}', '{\\"password\\": \\"<SECRET_1>\\"}'),
    ("SECRET", "mysql -u root -phunter2 db", "mysql -u root -p<SECRET_1> db"),
    ("SECRET", "curl -u alice:pa55 https://x", "curl -u <USER_1>:<SECRET_1> https://x"),
    ("SECRET", "--password s3cret!", "--password <SECRET_1>"),
    ("SECRET", "my password is Tr0ub4dor", "my password is <SECRET_1>"),
    ("SECRET", "export PGPASSWORD=abc", "export PGPASSWORD=<SECRET_1>"),
    ("HOST", "connect db.prod.acme-corp.com:5432 now", "connect <HOST_1>:<PORT_1> now"),
    ("HOST", "ssh into bastion.acme-corp.com please", "ssh into <HOST_1> please"),
    ("HOST", "addr 2001:db8:85a3::8a2e:370:7334", "addr <HOST_1>"),
    ("HOST", "nodes 10.1.2.3 and 192.168.1.20", "nodes <HOST_1> and <HOST_2>"),
    ("CARD", "card 4111 1111 1111 1111 ok", "card <CARD_1> ok"),
    ("CARD", "card 5555555555554444", "card <CARD_1>"),
    ("IBAN", "IBAN DE89 3704 0044 0532 0130 00", "IBAN <IBAN_1>"),
    ("CRYPTO", "btc 1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", "btc <CRYPTO_1>"),
    ("CRYPTO", "eth 0x52908400098527886E0F7030069857D2E4169EE7", "eth <CRYPTO_1>"),
    ("PHONE", "call me at +1 415 555 0132", "call me at <PHONE_1>"),
    ("PHONE", "phone: (415) 555-0132", "phone: <PHONE_1>"),
    ("PERSON", "Author: Jane Doe <jane.doe@acme.org>", "Author: <PERSON_1> <<EMAIL_1>>"),
    ("USER", "cd /home/alice/proj; ls ~/.claude/projects/-home-alice-proj", "cd /home/<USER_1>/proj; ls ~/.claude/projects/-home-<USER_1>-proj"),
    ("USER", "-Users-j-doe-proj and /Users/j.doe/proj", "-Users-<USER_1>-proj and /Users/<USER_1>/proj"),
    ("USER", r"C:\Users\Jane Smith\repo", r"C:\Users\<USER_1>\repo"),
    ("USER", "alice@devbox:~/src$ ls", "<USER_1>@<HOST_1>:~/src$ ls"),
    ("SSH_KEY", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFakeKeyFakeKeyFakeKeyFakeKeyFakeKey12 jdoe@laptop",
     "<SSH_KEY_1> <USER_1>@<HOST_1>"),
    # issue 26: passwords by context
    ("SECRET", 'auth=("svcbot", "Tr1cky-Pa55")', 'auth=("<USER_1>", "<SECRET_1>")'),
    ("SECRET", 'requests.post(url, auth=("api", "key-3ax6xnjp29jd6fds4gc373sgvjxteol0"))',
     'requests.post(url, auth=("api", "<SECRET_1>"))'),
    ("SECRET", "db.acme.internal:5432:app:appuser:S3cret!", "<HOST_1>:<PORT_1>:app:<USER_1>:<SECRET_1>"),
    ("SECRET", "password: |\n  s3cr3tvalue\nother: 1", "password: |\n  <SECRET_1>\nother: 1"),
    ("SECRET", "GET /x?q=%7B%22password%22%3A%22ab1%22%7D", "GET /x?q=%7B%22password%22%3A%22<SECRET_1>%22%7D"),
    ("SECRET", 'password = "ab\\"cd"', 'password = "<SECRET_1>"'),
    ("SECRET", "echo -n 'hunter22' | base64", "echo -n '<SECRET_1>' | base64"),
    # cookies, session ids, tokens by position
    ("SECRET", "Set-Cookie: JSESSIONID=Ab12Cd34; Path=/; HttpOnly", "Set-Cookie: <SECRET_1>; Path=/; HttpOnly"),
    ("SECRET", "GET /app;jsessionid=A1B2C3D4E5", "GET /app;jsessionid=<SECRET_1>"),
    ("SECRET", 'Client("AC0123456789abcdef0123456789abcdef", "f0e1d2c3b4a5968778695a4b3c2d1e0f")',
     'Client("<SECRET_1>", "<SECRET_2>")'),
    ("SECRET", "heroku auth:token\n3f2a9c4e-7b1d-4e8a-9c2f-6d5b4a3e2f1c", "heroku auth:token\n<SECRET_1>"),
    # numbers
    ("PHONE", "ring 020 7946 0958 now", "ring <PHONE_1> now"),
    ("PHONE", "tel 01 23 45 67 89", "tel <PHONE_1>"),
    ("PHONE", "us 1 415 555 0132", "us <PHONE_1>"),
    ("PHONE", "mobile 07700 900123", "mobile <PHONE_1>"),
    ("IBAN", "iban de89 3704 0044 0532 0130 00 = DE89370400440532013000", "iban <IBAN_1> = <IBAN_1>"),
    ("SSN", "ssn 536-22-8745", "ssn <SSN_1>"),
    ("MAC", "ether 3c:22:fb:7a:11:9e", "ether <MAC_1>"),
    ("ARN", "arn:aws:iam::123456789012:role/Deploy and 123456789012", "<ARN_1> and <ACCOUNT_1>"),
    ("ADDRESS", "ship to 742 Evergreen Terrace, Springfield, IL 62704", "ship to <ADDRESS_1>"),
    # hosts
    ("HOST", "dig vault.service.consul", "dig <HOST_1>"),
    ("HOST", "router nas.fritz.box and lp4.home.arpa", "router <HOST_1> and <HOST_2>"),
    ("HOST", "node ip-10-0-3-17 is NotReady", "node <HOST_1> is NotReady"),
    ("HOST", "ssh jenkins-prod-02; curl http://jenkins-prod-02:8080/", "ssh <HOST_1>; curl http://<HOST_1>:<PORT_1>/"),
    # user names in every path form
    ("USER", r"cd c:\users\alice\x", r"cd c:\users\<USER_1>\x"),
    ("USER", "ls ~bob/src", "ls ~<USER_1>/src"),
    ("USER", r"\\wsl$\Ubuntu\home\carol\x", r"\\wsl$\Ubuntu\home\<USER_1>\x"),
    ("USER", "ls /mnt/c/Users/dave/x", "ls /mnt/c/Users/<USER_1>/x"),
    # names beside an address, in any layout
    ("PERSON", "Jane Doe (jane@x.org)", "<PERSON_1> (<EMAIL_1>)"),
    ("PERSON", "jane@x.org (Jane Doe)", "<EMAIL_1> (<PERSON_1>)"),
    ("PERSON", "| Jane Doe | Engineer | jane@x.org |", "| <PERSON_1> | Engineer | <EMAIL_1> |"),
    ("PERSON", "Best regards,\nJane Doe\nStaff Engineer\njane@x.org",
     "Best regards,\n<PERSON_1>\nStaff Engineer\n<EMAIL_1>"),
    # issue 43: internal hosts by shape and context, file bodies as tool calls write them,
    # names by context
    ("HOST", "the payments-prod-03 node is down", "the <HOST_1> node is down"),
    ("HOST", "DATABASE_URL=postgres://app@pgmain:5432/app", "DATABASE_URL=postgres://app@<HOST_1>:<PORT_1>/app"),
    ("HOST", "Host bastion\n  HostName 10.9.8.7", "Host <HOST_2>\n  HostName <HOST_1>"),
    ("HOST", "Server=tcp:sql04,1433;Database=app;", "Server=tcp:<HOST_1>,1433;Database=app;"),
    ("HOST", "ping Annas-MacBook-Pro.local", "ping <HOST_1>"),
    ("SECRET", "+db7:5432:app:ro:Pw4", "+db7:5432:app:<USER_1>:<SECRET_1>"),
    ("SECRET", "    12\u2192db7:5432:app:ro:Pw4", "    12\u2192db7:5432:app:<USER_1>:<SECRET_1>"),
    ("SECRET", "+password: |\n+  s3cr3t\n+port: 5", "+password: |\n+  <SECRET_1>\n+port: 5"),
    ("SECRET", "+*:*:*:pg:Pg\\:pw9", "+*:*:*:<USER_1>:<SECRET_1>"),
    ("HOST", "alias: payments-db-ci-3", "alias: <HOST_1>"),
    ("SECRET", "machine h.acme.io\n  login bob\n  password pw9x",
     "machine <HOST_1>\n  login <USER_1>\n  password <SECRET_1>"),
    ("PERSON", "Cheers,\nMaribet", "Cheers,\n<PERSON_1>"),
    ("PERSON", "Hi Quennell,\nthe build is green", "Hi <PERSON_1>,\nthe build is green"),
    ("PERSON", "Signed-off-by: Brisa Tallowmere", "Signed-off-by: <PERSON_1>"),
    ("PERSON", '{"content": "Kind regards,\\nFenna Oudekerk"}', '{"content": "Kind regards,\\n<PERSON_1>"}'),
]


@pytest.mark.parametrize("cls, text, expected", CAUGHT, ids=[f"{c}-{t[:24]}" for c, t, _ in CAUGHT])
def test_each_shape_is_replaced_by_its_class(cls, text, expected):
    out, report = redact(text)
    assert out == expected
    assert report.distinct.get(cls, 0) >= 1


def test_short_values_are_replaced_in_their_context_only():
    r = Redactor()
    out = r.redact("DB_PASSWORD=x\nfor x in range(3): print(x)")
    assert out == "DB_PASSWORD=<SECRET_1>\nfor x in range(3): print(x)"
    assert r.survivors("DB_PASSWORD=x") == ["SECRET"]  # found again in its context
    assert r.survivors("x = 1") == []


def test_a_secret_inside_escaped_json_and_its_escaped_forms_are_replaced():
    key = "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAplantedBODY0123456789abcdefgh\n-----END RSA PRIVATE KEY-----"
    escaped = json.dumps({"content": key, "note": "ping ops@acme-corp.io\nmysql -pS3cretMy5ql"})
    r = Redactor()
    r.discover(key)
    out = r.apply(escaped)
    assert "plantedBODY" not in out and "<SSH_KEY_1>" in out
    out = Redactor().redact(json.dumps(escaped))  # escaped twice
    assert "S3cretMy5ql" not in out and "ops@acme-corp.io" not in out and "plantedBODY" not in out


NOT_SECRETS = [
    "commit 4c2b7d4ff28cbca9278e47179ad804ed2a83fd77 see src/parser.py:123 and main.go:12",
    "for x in range(10): pass",
    "max_tokens: 300, token_count = 5; input_tokens=3",
    "--- PASS: TestFoo (0.00s)",
    "Co-Authored-By: Claude <noreply@anthropic.com>",
    "import tf.io; from google.cloud import storage; Path.home(); logger.info('x'); df.at[0]",
    "self.app.config['SECRET_KEY'] = os.environ['SECRET_KEY']",
    "password = getpass.getpass('Password: ')",
    "def check_password(password: str) -> bool:",
    "if password == hashed_password: return token",
    "let token = await getToken(); const apiKey = process.env.API_KEY;",
    "version 2.1.42 at 12:30:45 on 2026-01-15, 100 200 3000 rows",
    "see https://docs.python.org/3/library/re.html and https://github.com/org/repo",
    "password: ${DB_PASSWORD} token: <your-token> secret: '********'",
    "go-home-screen and the -home- dir",
]


# Code-ish numbers and names that look like the new classes (issue 26).
NOT_SECRETS += [
    "version 1.2.3 and v2.10.3, see L123 and L1042-L1050",
    "ts 1700000000 pid 12345678 id 20260115123045",
    "100 200 3000 rows; coverage 12 34 56 78 90; Mem: 16384 8192 4096",
    "2026-01-15 12:30:45 and 01/02/2026 and 15.01.2026",
    "ptr 0x7f3a2c1b4e50 sha 4c2b7d4ff28c",
    "127.0.0.1:8000 port 8080 ping -c 1 8.8.8.8",
    "isbn 978-3-16-148410-0; 3 files changed, 120 insertions(+), 15 deletions(-)",
    "session = requests.Session(); sid = 5; token_type: bearer",
    "arn:aws:iam::aws:policy/AdministratorAccess",
    "ssh -T git@github.com; scp file.txt remote:/tmp; dig +short github.com",
    "x = ~mask & 0xFF",
    "the Main Street project",
]


# Look-alikes of what issue 43 added: dashed names, code attributes, prose greetings.
NOT_SECRETS += [
    "apt install python3-dev libpq-dev; stage-2 of 3; e2e-test-4; node-16; v1.2-prod",
    "self.db.host = config.hostname; host = args.host; Server=myServerAddress;",
    "Host key verification failed. Thanks!\nSounds good. Cheers,\nThe Maintainers",
    'print("Hello World!"); every commit needs a Signed-off-by: trailer; Author: Claude',
    "machine learning; the default login page; -- Users table\nCREATE TABLE users (id int);",
    "cp .env.example .env.local; example.local; host.docker.internal; from settings.local import x",
]


@pytest.mark.parametrize("text", NOT_SECRETS)
def test_ordinary_code_and_prose_stay(text):
    out, report = redact(text)
    assert out == text and report.n_replacements == 0


def test_verification_rescans_the_output_with_every_rule():
    """What discovery never saw is still a leak when any rule finds it in the output."""
    r = Redactor()
    r.discover("nothing to see")
    assert r.survivors("call 020 7946 0958") == ["PHONE"]
    with pytest.raises(RedactionLeak, match="class HOST"):
        r.verify("ssh jenkins-prod-02", where="a prefix")
    assert r.survivors("ssh <HOST_1>") == []


def test_a_rule_that_misses_in_discovery_is_caught_by_verification():
    """Discovery saw the number split over two lines (no rule matches there); the output
    holds it on one line, and verification finds it."""
    r = Redactor()
    r.discover("call 020 7946\n0958 now")
    assert r.report().distinct == {}
    out = "call 020 7946 0958 now"
    with pytest.raises(RedactionLeak, match="class PHONE"):
        r.verify(out)


def test_apply_settles_what_the_rescan_finds():
    r = Redactor()
    assert r.apply("mail jane.planted@example.org") == "mail <EMAIL_1>"  # no discover() first
    r.verify("mail <EMAIL_1>")


def test_aliases_share_the_placeholder():
    r = Redactor()
    out = r.redact("jane.planted@example.org then ?to=jane.planted%40example.org and card 4111-1111-1111-1111 "
                   "or 4111111111111111")
    assert out == "<EMAIL_1> then ?to=<EMAIL_1> and card <CARD_1> or <CARD_1>"


def test_a_line_anchored_rule_is_tried_at_each_line_and_value_start_only():
    from contextecho.sessions.redaction.text import LINE_BODY, at_line_starts, walk_back

    rule = re.compile(LINE_BODY + r"Thanks,")
    text = 'x\n+Thanks,\n{"note": "Thanks,\\n"} and no Thanks, here'
    hits = re.compile("thanks").finditer(text.lower())
    assert [m.start() for m in at_line_starts(rule, text, hits)] == [2, 21]
    assert walk_back("ab-cd:1", 5, frozenset("abcd-"), 8) == 0
    assert walk_back("x" * 300 + ":1", 300, frozenset("x"), 253) == -1  # longer than a host name
