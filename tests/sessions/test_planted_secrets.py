"""Planted secrets never leave the machine: a catalogue of kinds (every class the
redaction covers, several shapes each), planted by generated cases and by the real
sessions of the corpus.

Generated cases (no corpus needed): every kind x every position of a session (user text,
assistant text, a JSON string inside a tool input, tool output, a file path, a command
line) x every encoding the redactor handles (as written, JSON-escaped inside a JSON
string, percent-encoded in a query string; multi-line kinds are neither paths nor URLs).
Each case builds a small Claude Code session, redacts it as ``import-sessions`` does
(one redactor over every record, then verification) and as a prefix sent to a model is
rendered, and searches both outputs for every needle of the kind, as written, JSON-escaped
and percent-encoded. A second family plants benign look-alikes (versions, commit hashes,
line numbers, ports, loopback hosts, documentation and public hosts, test UUIDs ...) the
same way and requires them unchanged: the false positives are counted, and must be 0.

Corpus exits (``corpus`` marker): the whole catalogue planted in copies of real Claude
Code and Codex CLI sessions at every depth (user text, tool input, a JSON key of the tool
input, tool output, a compaction summary, a record-level key), then run through every
exit: the requests a non-local model receives, the call cache, the run manifests,
``import-sessions`` and an experiment's outputs. Zero may survive.

Every value below is invented for the tests; none is a real credential, person or host.
``KINDS`` holds (class, planted text, needles): no needle may appear in anything that
leaves the machine.
"""
from __future__ import annotations

import base64
import copy
import csv
import json
from pathlib import Path
from urllib.parse import quote, quote_plus

import pyarrow.parquet as pq
import pytest

from litellm import CustomLLM

from contextecho.engine import llm
from contextecho.engine.responses import fill_response
from contextecho.__main__ import main
from contextecho.engine.cache import CallCache
from contextecho.echo import build_cells, run_cells
from contextecho.notebooks import experiment
from contextecho.engine.paths import cache_dir, runs_dir
from contextecho.sessions import load_session, render_prefix, snapshot_at
from contextecho.sessions.codex_cli import INJECTED_PREFIXES
from contextecho.sessions.redaction import Redactor

from tests.sessions.conftest import CC, write_jsonl
from contextecho.echo.protocols import protocol

OURS = protocol("contextecho")

RSA_KEY = ("-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEAplantedPLANTEDplanted0123456789abcdefghijklmnopq\n"
           "rstuvwxyzPLANTEDkeyBODYline2ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+/\n"
           "-----END RSA PRIVATE KEY-----")
OPENSSH_KEY = ("-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUPLANTEDopensshBODY0123456789\n"
               "QyNTUxOQAAACBplantedOPENSSHsecondLINEabcdefghij\n-----END OPENSSH PRIVATE KEY-----")
CUT_KEY = "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIPlantedCutOffKeyBodyNoEndLine0123456789abcdefABCDEF"
PUBLIC_KEY = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIPlAnTeDkEyPlAnTeDkEyPlAnTeDkEy0123 zqwalice@laptop-9"
JWT = ("eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJwbGFudGVkLXVzZXIifQ."
       "PlAnTeDsIgNaTuRe0123456789abcdefghijklmnopq")
B64_PLAIN = "B64-plain-Secr3t"
B64_OF_PLAIN = base64.b64encode(B64_PLAIN.encode()).decode()  # what `| base64` prints


def patch(path: str, body: str) -> str:
    """``body`` as a new file of a Codex ``apply_patch`` (every line a ``+`` line)."""
    return f"*** Begin Patch\n*** Add File: {path}\n" + "\n".join("+" + line for line in body.split("\n")) \
        + "\n*** End Patch"


def hunk(path: str, before: str, after: str, context: str) -> str:
    """An ``apply_patch`` update of ``path``: ``before`` removed, ``after`` added, a context line."""
    lines = [f" {context}"] + [f"-{line}" for line in before.split("\n")] + [f"+{line}" for line in after.split("\n")]
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n" + "\n".join(lines) + "\n*** End Patch"

PLANTS: dict[str, list[tuple[str, list[str]]]] = {
    "USER": [
        ("cwd /Users/zqwalice/src/app", ["zqwalice"]),
        ("python /home/bxnorris/project/main.py", ["bxnorris"]),
        ("ls ~/.claude/projects/-home-kvtester-webapp", ["kvtester"]),
        ("cd C:\\Users\\Pqlmnrs Doe\\repo", ["Pqlmnrs Doe"]),
        ("open /Users/wtj.harlow/proj and ~/.claude/projects/-Users-wtj-harlow-proj", ["wtj.harlow", "wtj-harlow"]),
        ("ssh deploy9x@build7.example.net", ["deploy9x"]),
        ("jqvsmith@devbox-17:~/work$ make test", ["jqvsmith", "devbox-17"]),
        ("export POSTGRES_USER=pgqzowner", ["pgqzowner"]),
        ("cd c:\\users\\lcqzbob\\repo", ["lcqzbob"]),
        ("type C:\\USERS\\UPQZCASE\\notes.txt", ["UPQZCASE"]),
        ("ls /mnt/c/Users/mntqzuser/dev", ["mntqzuser"]),
        ("cat /c/users/gitbashqz/.bashrc", ["gitbashqz"]),
        ("code \\\\wsl$\\Ubuntu\\home\\wslqzuser\\proj", ["wslqzuser"]),
        ("ls ~kqzuser/src", ["kqzuser"]),
        ("open /Users/Mary Quinlan/Documents/x.md", ["Mary Quinlan"]),
    ],
    "PERSON": [
        ("Author: Qarlotta Brenwick <qb.planted@example.org>", ["Qarlotta Brenwick"]),
        ('git config user.name "Tobiah Quenstrom"', ["Tobiah Quenstrom"]),
        ("Co-authored-by: Mirela Vasquez-Oyelaran <mvo.planted@example.com>", ["Mirela Vasquez-Oyelaran"]),
        ("reviewed by Qora Vantreight (qora.v@example.org) today", ["Qora Vantreight"]),
        ("| Pellam Oxtoby | Staff Engineer | pellam.o@example.org |", ["Pellam Oxtoby"]),
        ("owner: jasper.k@example.org (Jasper Kellerwick)", ["Jasper Kellerwick"]),
        ("Best regards,\nIsolde Farquar\nStaff Engineer, Acme\nisolde.f@example.org", ["Isolde Farquar"]),
        ('{"name": "Brannoc Telwyn", "email": "brannoc@example.org"}', ["Brannoc Telwyn"]),
        # names where the context says a person, without an address (issue 43)
        ("Thanks for the review!\n\nBest regards,\nQuillon Varga", ["Quillon Varga"]),
        ("Cheers,\nMaribet", ["Maribet"]),
        ("--\nOsric Thalberg\nPlatform Team, Qzacme", ["Osric Thalberg"]),
        ("Hi Quennell,\nthe build is green again.", ["Quennell"]),
        ("Dear Dr. Ysolde Marchetti,\nplease find the report attached.", ["Ysolde Marchetti"]),
        ("Signed-off-by: Brisa Tallowmere", ["Brisa Tallowmere"]),
        ("fix: retry\n\nCo-authored-by: Teodor Wrenfield", ["Teodor Wrenfield"]),
        ('{"name": "qz-tool", "author": "Calloway Penhallow"}', ["Calloway Penhallow"]),
        (patch("docs/letter.md", "The numbers are attached.\n\nKind regards,\nFenna Oudekerk"), ["Fenna Oudekerk"]),
        (patch("NOTES.md", "Thanks,\nAnwenqa"), ["Anwenqa"]),
        ("Thanks, Anwyllqa!", ["Anwyllqa"]),
        ("Dear Tamsinqa:\nthe invoice is attached.", ["Tamsinqa"]),
        ("Best regards,\nDr. Ysabeau Kerrigan", ["Ysabeau Kerrigan"]),
    ],
    "EMAIL": [
        ("mail jane.q.planted@example.org", ["jane.q.planted@example.org"]),
        ("cc x.y+tag@corp-mail.example.com", ["x.y+tag@corp-mail.example.com"]),
        ("notify ops-team@acme-internal.io now", ["ops-team@acme-internal.io"]),
    ],
    "PHONE": [
        ("call +1 415 555 0132", ["415 555 0132"]),
        ("office (415) 555-0199", ["555-0199"]),
        ("london +44 20 7946 0958", ["7946 0958"]),
        ("phone: 030 91234567", ["91234567"]),
        ("ring the desk on 020 7946 0321 after lunch", ["7946 0321"]),
        ("my mobile is 07700 900123", ["07700 900123"]),
        ("au bureau 01 23 45 67 89 ou portable 06.12.34.56.78", ["23 45 67 89", "06.12.34.56.78"]),
        ("us desk 1 415 555 0147", ["415 555 0147"]),
        ("us desk 212 555 0188", ["212 555 0188"]),
        ("paris +33 6 12 34 56 79", ["6 12 34 56 79"]),
    ],
    "HOST": [
        ("psql -h db.prod.acme-corp.com -p 5432", ["db.prod.acme-corp.com"]),
        ("connect to pg.acme-corp.com:5432 now", ["pg.acme-corp.com"]),
        ("ssh into bastion.qwzcorp.net please", ["bastion.qwzcorp.net"]),
        ("GET http://buildbox.internal:8080/api", ["buildbox.internal"]),
        ("cache at redis.cache.lan", ["redis.cache.lan"]),
        ("server 10.20.30.40 and 172.16.254.3:6379", ["10.20.30.40", "172.16.254.3"]),
        ("v6 2001:db8:85a3::8a2e:370:7334 and fe80::1ff:fe23:4567:890a", ["2001:db8:85a3::8a2e:370:7334",
                                                                       "fe80::1ff:fe23:4567:890a"]),
        ("ssh admin@gw7.acme-corp.net", ["gw7.acme-corp.net"]),
        ("dig vault.service.consul", ["vault.service.consul"]),
        ("printer at lp-qz4.home.arpa", ["lp-qz4.home.arpa"]),
        ("router nas-qz.fritz.box is up", ["nas-qz.fritz.box"]),
        ("node ip-10-0-3-17 is NotReady", ["ip-10-0-3-17"]),
        ("ssh jenkins-prod-02", ["jenkins-prod-02"]),
        ("ping -c 3 qzbuild-04", ["qzbuild-04"]),
        ("curl http://qzjenkins-03:8080/job/x", ["qzjenkins-03"]),
        # internal names without a public suffix: by shape, and by context (issue 43)
        ("the payments-prod-03 node is down", ["payments-prod-03"]),
        ("failover from qzledger-stg-2 to prod-qzbill-07", ["qzledger-stg-2", "prod-qzbill-07"]),
        ("DATABASE_URL=postgres://app@qzpgmain:5432/app", ["qzpgmain"]),
        ("jdbc:mysql://qzorders:3306/orders?useSSL=true", ["qzorders"]),
        ("REDIS_URL=redis://qzcachebox:6379/0", ["qzcachebox"]),
        ("scp dump.sql ops@qzvault:/tmp/", ["qzvault"]),
        ("Host qzbastion\n  HostName qzgate\n  User deploy", ["qzbastion", "qzgate"]),
        ("Server=tcp:qzsql04,1433;Database=app;Trusted_Connection=True;", ["qzsql04"]),
        ("export DB_HOST=qzpg-7", ["qzpg-7"]),
        ('{"host": "qzkafka-2", "port": 9092}', ["qzkafka-2"]),
        ("psql -h qzwarehouse-1 -U analyst", ["qzwarehouse-1"]),
        # the local domains of home routers, mDNS and company networks
        ("open http://QzNas-2.fritz.box:5000 on the home wifi", ["QzNas-2"]),
        ("ping Qzannas-MacBook-Pro.local", ["Qzannas-MacBook-Pro"]),
        ("join DC01.CORP.QZACME.LOCAL", ["DC01.CORP.QZACME"]),
        ("mount qznas.lan:/volume1 and qzpi.localnet", ["qznas.lan", "qzpi.localnet"]),
        ("grafana at qzgrafana.internal, pihole at qzpihole.home", ["qzgrafana.internal", "qzpihole.home"]),
        (patch(".ssh/config", "Host qzjump\n  HostName qzjump-01.corp\n  User ops"), ["qzjump"]),
        ("backups go to QzDiskStation.local", ["QzDiskStation"]),
        ("10.0.0.5 qzpayments-db", ["qzpayments-db"]),
        ("Data Source=qzsqlprod;Initial Catalog=app;", ["qzsqlprod"]),
    ],
    "MAC": [
        ("ether 3c:22:fb:7a:11:9e", ["3c:22:fb:7a:11:9e"]),
        ("MAC 3C-22-FB-7A-11-9F", ["3C-22-FB-7A-11-9F"]),
        ("cisco mac 3c22.fb7a.11a0", ["3c22.fb7a.11a0"]),
    ],
    "ACCOUNT": [
        ("assume arn:aws:iam::918273645501:role/PlantedDeployRole", ["918273645501", "PlantedDeployRole"]),
        ('{"UserId": "AIDAPLANTED", "Account": "918273645502"}', ["918273645502"]),
        ("docker push 918273645503.dkr.ecr.eu-west-1.amazonaws.com/app:1", ["918273645503"]),
        ("export AWS_ACCOUNT_ID=918273645504", ["918273645504"]),
        ("az account set --subscription /subscriptions/5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d",
         ["5a4b3c2d-1e0f-4a9b-8c7d-6e5f4a3b2c1d"]),
    ],
    "SSH_KEY": [
        (RSA_KEY, ["plantedPLANTEDplanted0123456789", "PLANTEDkeyBODYline2"]),
        (OPENSSH_KEY, ["PLANTEDopensshBODY", "plantedOPENSSHsecondLINE"]),
        (CUT_KEY, ["PlantedCutOffKeyBodyNoEndLine"]),
        (PUBLIC_KEY, ["PlAnTeDkEyPlAnTeDkEy", "zqwalice", "laptop-9"]),
    ],
    "SECRET": [
        ("DB_PASSWORD=x", ["DB_PASSWORD=x"]),
        ("API_TOKEN=ab12", ["API_TOKEN=ab12"]),
        ("aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYPLANTEDKEY", ["wJalrXUtnFEMI/K7MDENG/bPxRfiCYPLANTEDKEY"]),
        ("password: hunter2", ["hunter2"]),
        ('"client_secret": "Zx9Qm2Lp"', ["Zx9Qm2Lp"]),
        ("git clone https://deployer:Pa55w0rdZq@git.acme-corp.com/repo.git", ["Pa55w0rdZq", "deployer:"]),
        ("redis://:qpw9@cache7.acme-corp.com:6379/0", [":qpw9@"]),
        ("Authorization: Basic ZGVwbG95ZXI6UGE1NXcwcmRacQ==", ["ZGVwbG95ZXI6UGE1NXcwcmRacQ"]),
        (f"Authorization: Bearer {JWT}", ["PlAnTeDsIgNaTuRe0123456789", "eyJzdWIiOiJwbGFudGVkLXVzZXIifQ"]),
        ("https://hooks.slack.com/services/T0PLANT01/B0PLANT02/abcDEFghiJKLmnoPQRstuVWX",
         ["abcDEFghiJKLmnoPQRstuVWX"]),
        ("ANTHROPIC_API_KEY=sk-ant-api03-PlAnTeD0123456789abcdefghijklmnopqrstuvwxyzABCD",
         ["PlAnTeD0123456789abcdefghijklmnop"]),
        ("key sk-proj-PlAnTeD9876543210zyxwvutsrqponmlkjihgfedcbaZYXW", ["PlAnTeD9876543210zyxwvut"]),
        ("token ghp_PlAnTeDabcdefghijklmnopqrstuvwxyz0123", ["ghp_PlAnTeDabcdefghijklmnop"]),
        ("github_pat_11PLANTED0_abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789ab",
         ["11PLANTED0_abcdefghijklmnopqrst"]),
        ("AKIAPLANTED0EXAMPLE1", ["AKIAPLANTED0EXAMPLE1"]),
        ("maps AIzaSyPLANTED-1234567890abcdefghijklmno", ["AIzaSyPLANTED-1234567890"]),
        ("xoxb-123456789012-1234567890123-PlAnTeDsLaCkToKeN0123", ["PlAnTeDsLaCkToKeN0123"]),
        ("sk_live_PlAnTeD4eC39HqLyjWDarjtT1zd", ["PlAnTeD4eC39HqLyjWDarjt"]),
        ("export STRIPE_WEBHOOK_SECRET=whsec_PlAnTeD1234567890abcdef", ["whsec_PlAnTeD1234567890"]),
        ("mysql -u app -pS3cretMy5ql db", ["S3cretMy5ql"]),
        ("curl -u ops:Curl9Pass https://api.acme-corp.com", ["Curl9Pass"]),
        ("blob kQ8vN2mX5pL9rT3wY7zB4cF6hJ1dG0sA8eK2uM5nP3qR", ["kQ8vN2mX5pL9rT3wY7zB4cF6h"]),
        ("--password 'correct horse battery'", ["correct horse battery"]),
        ("sshpass -p Qq9zz ssh box", ["Qq9zz"]),
        ("docker login -u bob -p hUnter77 registry.acme-corp.com", ["hUnter77"]),
        ("machine api.acme-corp.com login nrcuser password s3cr3tNet", ["s3cr3tNet", "nrcuser"]),
        ("jdbc:postgresql://db7.acme-corp.com:5432/app?user=jdbcq&password=secret1", ["secret1", "jdbcq"]),
        ("Server=sql1;User Id=sa;Password=Zq!9x;", ["Zq!9x"]),
        ("Cookie: sessionid=PlAnTeDc00kie42", ["PlAnTeDc00kie42"]),
        ("DATABRICKS_HOST=x dapi0123456789abcdef0123456789abcdef", ["dapi0123456789abcdef0123456789abcdef"]),
        # passwords in positions the first rules did not look at
        ('r = requests.get(url, auth=("svcqzbot", "Tr1cky-Pa55"))', ["Tr1cky-Pa55", "svcqzbot"]),
        ("db7.acme-corp.com:5432:billing:billqzrw:Pg!pass-771", ["Pg!pass-771", "billqzrw"]),
        ("vault:\n  db_password: |\n    Yaml-Bl0ck-Secret\n  port: 5432", ["Yaml-Bl0ck-Secret"]),
        ("GET /cb?state=%7B%22password%22%3A%22Url3nc-Pw%21%22%7D", ["Url3nc-Pw"]),
        ('settings = {"password": "esc\\"aped-Pw9"}', ["aped-Pw9", 'esc\\"aped']),
        (f"echo -n '{B64_PLAIN}' | base64  # prints {B64_OF_PLAIN}", [B64_PLAIN, B64_OF_PLAIN.rstrip("=")]),
        # cookies and session ids
        ("Cookie: sessionid=9f8e7d6c5b4a3f2e1d0c; csrftoken=Zq81PlantedCsrf", ["9f8e7d6c5b4a3f2e1d0c", "Zq81PlantedCsrf"]),
        ("Set-Cookie: JSESSIONID=Ab12Cd34Ef56Gh78; Path=/; HttpOnly", ["Ab12Cd34Ef56Gh78"]),
        ("GET /shop/cart;jsessionid=0F1E2D3C4B5A69788796A5B4 HTTP/1.1", ["0F1E2D3C4B5A69788796A5B4"]),
        # tokens known by position
        ('client = Client("AC5f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c", "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b")',
         ["9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b", "AC5f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c"]),
        ("$ heroku auth:token\n \u203a   Warning: token will expire 03/01/2027\n3f2a9c4e-7b1d-4e8a-9c2f-6d5b4a3e2f1c",
         ["3f2a9c4e-7b1d-4e8a-9c2f-6d5b4a3e2f1c"]),
        ('requests.post(url, auth=("api", "key-3ax6xnjp29jd6fds4gc373sgvjxteol0"))', ["3ax6xnjp29jd6fds4gc373sgvjxteol0"]),
        ("AKIAPLANTEDCSV0EXAM1,wJalrXUtnFEMI/K7MDENG/bPxRfiCYPLANTEDCSVX", ["wJalrXUtnFEMI/K7MDENG/bPxRfiCYPLANTEDCSVX"]),
        ("datadog api key 6f5e4d3c2b1a09f8e7d6c5b4a3f2e1d0", ["6f5e4d3c2b1a09f8e7d6c5b4a3f2e1d0"]),
        # credential files as a tool call writes them: apply_patch bodies, heredocs (issue 43)
        (patch(".pgpass", "qzpg-prod-2:5432:billing:svcqz:Pg-pw71\n*:*:*:qzro:Pw4"),
         ["Pg-pw71", "svcqz", "qzpg-prod-2", "qzro", ":Pw4"]),
        (patch(".netrc", "machine api.qzacme.example.net\n  login qznetrc\n  password Nrc-77pw"), ["Nrc-77pw", "qznetrc"]),
        (patch(".env", "QZ_DB_PASSWORD=Env-9pw\nQZ_API_TOKEN=tok42"), ["Env-9pw", "=tok42"]),
        (patch("config.ini", "[database]\npassword = Ini-Pw3\napi_key = ak-Qz1"), ["Ini-Pw3", "ak-Qz1"]),
        (patch("settings.toml", '[auth]\nsecret = "Toml-S3c"\npasswd = "Tp9"'), ["Toml-S3c", '"Tp9"']),
        (patch("values.yaml", "db:\n  password: |\n    Yb-Lit3ral\n  port: 5432"), ["Yb-Lit3ral"]),
        (patch("smtp.yaml", "smtp:\n  api_token: >-\n    Fold-Tok9\n    more-Fold7\n  host: x"), ["Fold-Tok9", "more-Fold7"]),
        (hunk("deploy/values.yaml", "  password: old", "  password: |\n    Upd-Bl0ck", "db:"), ["Upd-Bl0ck"]),
        ("cat > ~/.pgpass <<'EOF'\nqzdb.internal:5432:app:hdqz:Hd-pw5\nEOF", ["Hd-pw5", "hdqz"]),
        ("     1\u2192qzdb7:5432:app:lnqz:Ln-pw6\n     2\u2192", ["Ln-pw6", "lnqz"]),
        (patch("settings.xml", "<server>\n  <username>deployer</username>\n  <password>Xml-pw7</password>\n</server>"),
         ["Xml-pw7"]),
        ('<add key="DbPassword" value="Cfg-pw8" />', ["Cfg-pw8"]),
        ("define('DB_PASSWORD', 'wp-Pa55');", ["wp-Pa55"]),
        ('setenv("API_TOKEN", "tokQ9z")', ["tokQ9z"]),
    ],
    "CARD": [
        ("card 4111 1111 1111 1111", ["4111 1111 1111 1111"]),
        ("mc 5555-5555-5555-4444", ["5555-5555-5555-4444"]),
        ("amex 378282246310005", ["378282246310005"]),
    ],
    "IBAN": [
        ("iban DE89 3704 0044 0532 0130 00", ["3704 0044 0532 0130"]),
        ("GB82WEST12345698765432", ["GB82WEST12345698765432"]),
        ("iban de89 3704 0044 0532 0130 00", ["3704 0044 0532 0130"]),
        ("rib fr14 2004 1010 0505 0001 3m02 606", ["2004 1010 0505 0001"]),
    ],
    "SSN": [
        ("SSN: 536-22-8745", ["536-22-8745"]),
        ("the sample 078-05-1120 again", ["078-05-1120"]),
        ("social security number 536 22 8746", ["536 22 8746"]),
    ],
    "ADDRESS": [
        ("ship to 742 Evergreen Terrace, Springfield, IL 62704", ["Evergreen Terrace", "62704"]),
        ("office: 221B Baker Street, London NW1 6XE", ["Baker Street", "NW1 6XE"]),
        ("send it to 4 Privet Drive, Little Whinging", ["Privet Drive"]),
        ("adresse : 12 rue de la Paix, 75002 Paris", ["rue de la Paix"]),
        ("Anschrift: Hauptstraße 5, 10115 Berlin", ["Hauptstraße 5"]),
        ("postcode SW1A 2AA", ["SW1A 2AA"]),
    ],
    "CRYPTO": [
        ("btc 1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa", ["1A1zP1eP5QGefi2DMPTfTL5SLmv7DivfNa"]),
        ("bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq", ["bc1qar0srrr7xfkvy5l643lydnw9re59gtzzwf5mdq"]),
        ("eth 0x52908400098527886E0F7030069857D2E4169EE7", ["52908400098527886E0F7030069857D2E4169EE7"]),
    ],
}
DEPTHS = ("user text", "tool input", "tool input key", "tool output", "compaction summary", "record key")


def all_plants() -> list[tuple[str, str, list[str]]]:
    return [(cls, text, needles) for cls, items in PLANTS.items() for text, needles in items]


def block() -> str:
    """Every planted text, one per line."""
    return "\n".join(text for _, text, _ in all_plants())


def forms(needle: str) -> set[str]:
    """The needle as written, as JSON writes it (escaped quotes, backslashes, newlines,
    non-ASCII letters; up to four times) and percent-encoded."""
    found = {needle, quote(needle, safe=""), quote_plus(needle)}
    for ensure_ascii in (False, True):
        form = needle
        for _ in range(4):
            form = json.dumps(form, ensure_ascii=ensure_ascii)[1:-1]
            found.add(form)
    return found


def survivors(blob: str) -> dict[str, list[str]]:
    """{class: needles found in ``blob``} (empty when nothing survived)."""
    found: dict[str, list[str]] = {}
    for cls, _, needles in all_plants():
        for needle in needles:
            if any(f in blob for f in forms(needle)):
                found.setdefault(cls, []).append(needle)
    return found


# ------------------------------------------------------------------ generated cases
POSITIONS = ("user text", "assistant text", "tool input JSON string", "tool output", "file path", "command line",
             "file written")
WRITERS = ("Write", "Edit", "MultiEdit")  # the editor tools a "file written" payload goes through, in turn
ENCODINGS = ("plain", "json-escaped", "url-encoded")


def encode(text: str, encoding: str) -> str:
    """``text`` as the encoding writes it into a session."""
    if encoding == "json-escaped":  # a JSON document held in a string: quotes and newlines escaped
        return json.dumps({"note": text})
    if encoding == "url-encoded":
        return f"/callback?next=%2Fhome&q={quote_plus(text)}"
    return text


def plant_at(position: str, payload: str, writer: str = "Write") -> list[dict]:
    """A small Claude Code session with ``payload`` at ``position`` (a file body through
    ``writer`` for ``"file written"``)."""
    user, reply = "please look into the deploy", "Looking into it."
    tool = CC.tool("t1", "Bash", command="ls -la")
    output = "total 0"
    if position == "user text":
        user += "\n" + payload
    elif position == "assistant text":
        reply += "\n" + payload
    elif position == "tool input JSON string":
        tool = CC.tool("t1", "Write", file_path="/srv/app/notes.json", content=json.dumps({"note": payload}))
    elif position == "tool output":
        output = "output:\n" + payload
    elif position == "file path":
        tool = CC.tool("t1", "Read", file_path=f"/srv/app/{payload}/notes.md")
    elif position == "command line":
        command = f"cd /srv/app && {payload}" if "\n" not in payload else f"cat <<'EOF' > notes.txt\n{payload}\nEOF"
        tool = CC.tool("t1", "Bash", command=command)
    elif position == "file written":
        path = "/srv/app/notes.md"
        tool = {"Write": lambda: CC.tool("t1", "Write", file_path=path, content=payload),
                "Edit": lambda: CC.tool("t1", "Edit", file_path=path, old_string="TODO", new_string=payload),
                "MultiEdit": lambda: CC.tool("t1", "MultiEdit", file_path=path,
                                             edits=[{"old_string": "a", "new_string": "b"},
                                                    {"old_string": "TODO", "new_string": payload}])}[writer]()
    return [CC.user(user), CC.assistant("m1", CC.text(reply)), CC.assistant("m2", tool), CC.result("t1", output),
            CC.assistant("m3", CC.text("Done."))]


def kind_cases() -> list:
    cases = []
    for cls, items in PLANTS.items():
        for i, (text, needles) in enumerate(items):
            for position in POSITIONS:
                for encoding in ENCODINGS:
                    if "\n" in text and (position == "file path" or encoding == "url-encoded"):
                        continue  # a multi-line block is neither a path nor a query string
                    writer = WRITERS[(i + ENCODINGS.index(encoding)) % len(WRITERS)]
                    cases.append(pytest.param(text, needles, position, encoding, writer,
                                              id=f"{cls}{i + 1}-{position.replace(' ', '_')}-{encoding}"))
    return cases


def redacted_outputs(records: list[dict], tmp_path: Path) -> dict[str, str]:
    """The session redacted as import-sessions writes it (verified as it verifies: every
    rule on the decoded records, every original in the written text) and as a prefix for
    a model renders it."""
    redactor = Redactor()
    redactor.discover_object(records)
    clean = [redactor.apply_object(r) for r in records]
    written = "\n".join(json.dumps(c, ensure_ascii=False) for c in clean)
    assert redactor.object_survivors(clean) == []
    assert redactor.originals_in(written) == []
    session = load_session(write_jsonl(tmp_path / "s.jsonl", records))
    prefix = render_prefix(snapshot_at(session, session.n_agent_steps), window=None)
    return {"import": written, "prefix": json.dumps(prefix.messages, ensure_ascii=False)}


def needles_in(blob: str, needles: list[str]) -> list[str]:
    return [n for n in needles if any(f in blob for f in forms(n))]


@pytest.mark.parametrize("text, needles, position, encoding, writer", kind_cases())
def test_a_planted_kind_never_survives(text, needles, position, encoding, writer, tmp_path):
    records = plant_at(position, encode(text, encoding), writer)
    raw = "\n".join(json.dumps(r) for r in records)
    assert needles_in(raw + json.dumps(raw), needles)  # planted, so the case can fail
    for exit_, blob in redacted_outputs(records, tmp_path).items():
        assert needles_in(blob, needles) == [], exit_


# Look-alikes of the classes above that identify no one: they must come out unchanged.
BENIGN = [
    "release 1.2.3 and 2.10.0-rc.1 (semver), python 3.11.9",
    "commit 4c2b7d4ff28cbca9278e47179ad804ed2a83fd77 on main, short 4c2b7d4",
    "see L123 and src/parser.py:123:45, line 1042 of main.go",
    "listening on port 8080; --port 3000; EXPOSE 5432",
    "open http://localhost/ or 127.0.0.1:8000 on localhost",
    "docs at https://example.com/api and https://www.example.org/x",
    "push to https://github.com/org/repo and pypi.org/project/x",
    "test id 00000000-0000-4000-8000-000000000001 and 123e4567-e89b-12d3-a456-426614174000",
    "2026-01-15T12:30:45Z took 12.345 s (1700000000 epoch)",
    "Ran 1234 tests in 56.789s; 100 200 3000 rows",
    "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b4b0b822cd15d6c15b0f00a08",
    "for i in range(10): x = ~mask & 0xFF",
    "max_tokens: 300, token_count = 5; input_tokens=3",
    "password = getpass.getpass('Password: ')",
    "version: 2.1.42 at 12:30:45 on 2026-01-15",
    "claude-3-5-sonnet-20241022 via anthropic",
    "Co-Authored-By: Claude <noreply@anthropic.com>",
    "ff02::1 multicast, 0.0.0.0 any",
    "table | Name | Value | with | cells |",
    "Build Project",
    # look-alikes of the classes issue 43 added: hosts without a public suffix, credential
    # files in bodies, names by context
    "apt install python3-dev libpq-dev build-essential; pip install psycopg2-binary",
    "tag v1.2-prod, docker-compose.prod.yml, NODE_ENV=production, stage-2 of 3, e2e-test-4",
    "self.db.host = config.hostname; host = args.host; server = settings.server",
    "cp .env.example .env.local; edit config.yaml and settings.local.py",
    "mDNS names look like example.local; Docker's is host.docker.internal",
    "open http://localhost/ or postgres://postgres@db:5432/app and redis://redis:6379/0",
    "Host key verification failed.",
    "Server=myServerAddress;Database=myDataBase;",
    "password_field = form.password; if user.password == hashed: pass",
    "every commit needs a Signed-off-by: trailer, see CONTRIBUTING.md",
    'print("Hello World!"); print("Hi there, welcome")',
    "Thanks!\nSounds good, merging now.",
    "Cheers,\nThe Maintainers",
    "-- Users table\nCREATE TABLE users (id int);",
    "machine learning models; the default login page",
    "host: ${DB_HOST}\nport: 5432\npassword: ${DB_PASSWORD}",
    "+    return self.cache.get(key)\n-    return None",
    "Author: Claude",
    "Thanks, Great Work! Cheers, Happy Coding! Dear Sir: Hello World,",
    "<password>${DB_PASSWORD}</password> <token>true</token> <add key=\"Theme\" value=\"dark\" />",
    'config.get("password", "default"); headers.get("Authorization", ""); threading.local()',
]


def benign_cases() -> list:
    return [pytest.param(text, position, id=f"benign{i + 1}-{position.replace(' ', '_')}")
            for i, text in enumerate(BENIGN) for position in POSITIONS]


def false_positives(text: str, position: str, tmp_path: Path) -> list[str]:
    """The exits that altered ``text`` planted at ``position``."""
    records = plant_at(position, text)
    outputs = redacted_outputs(records, tmp_path)
    expected = forms(text)  # as it reads inside the JSON of either exit, at any depth
    expected.add(json.dumps(json.dumps({"note": text}, ensure_ascii=False)[1:-1], ensure_ascii=False)[1:-1])
    return [exit_ for exit_, blob in outputs.items() if not any(e in blob for e in expected)]


@pytest.mark.parametrize("text, position", benign_cases())
def test_a_benign_look_alike_is_kept(text, position, tmp_path):
    assert false_positives(text, position, tmp_path) == []


def test_false_positives_are_counted_and_none(tmp_path):
    """All look-alikes at every position: the count of altered ones, listed when not 0."""
    altered = [(text, position) for text in BENIGN for position in POSITIONS
               if false_positives(text, position, tmp_path)]
    assert len(altered) == 0, altered


def read_tree(root: Path) -> str:
    """Every byte under ``root`` as text (Parquet decoded: its pages are compressed), plus
    the relative paths themselves."""
    parts = []
    for path in sorted(p for p in Path(root).rglob("*") if p.is_file()):
        parts.append(path.relative_to(root).as_posix())
        if path.suffix == ".parquet":
            parts.append(json.dumps(pq.read_table(path).to_pylist(), default=str, ensure_ascii=False))
        else:
            parts.append(path.read_bytes().decode("utf-8", errors="replace"))
    return "\n".join(parts)


# ------------------------------------------------------------------ planting
def plant_claude_code(records: list[dict], text: str) -> list[dict]:
    """``text`` planted in a copy of Claude Code records at every depth of ``DEPTHS``."""
    records = copy.deepcopy(records)
    user_texts = [r for r in records if r.get("type") == "user" and not r.get("isMeta")
                  and _cc_user_text(r) is not None]
    tool_uses = [b for r in records if r.get("type") == "assistant"
                 for b in (r.get("message", {}).get("content") or []) if isinstance(b, dict) and b.get("type") == "tool_use"]
    results = [b for r in records if r.get("type") == "user" and isinstance(r.get("message", {}).get("content"), list)
               for b in r["message"]["content"] if isinstance(b, dict) and b.get("type") == "tool_result"]
    assert user_texts and tool_uses and results, "the session needs user text, tool calls and results"
    first = user_texts[0]
    content = first["message"]["content"]
    if isinstance(content, str):
        first["message"]["content"] = content + "\n" + text
    else:
        next(b for b in content if b.get("type") == "text")["text"] += "\n" + text
    middle = tool_uses[len(tool_uses) // 2]
    middle["input"] = {**middle["input"], "note": text, text: "planted key"}
    result = results[len(results) // 2]
    if isinstance(result.get("content"), str):
        result["content"] += "\n" + text
    else:
        result["content"] = list(result.get("content") or []) + [{"type": "text", "text": text}]
    records[1]["plantedMeta"] = {text: text}
    last_assistant = max(i for i, r in enumerate(records) if r.get("type") == "assistant")
    summary = {**copy.deepcopy(first), "isCompactSummary": True, "isVisibleInTranscriptOnly": True,
               "uuid": "00000000-0000-4000-8000-00000000beef"}
    summary["message"] = {"role": "user", "content": "This session is being continued. Summary:\n" + text}
    boundary = {"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
                "uuid": "00000000-0000-4000-8000-00000000cafe", "sessionId": first.get("sessionId"),
                "timestamp": first.get("timestamp"), "compactMetadata": {"trigger": "auto", "preTokens": 1}}
    return records[:last_assistant] + [boundary, summary] + records[last_assistant:]


def _cc_user_text(record: dict):
    content = record.get("message", {}).get("content")
    if isinstance(content, str) and content.strip() and not content.startswith("<"):
        return content
    if isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "text" for b in content) \
            and not any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content):
        return content
    return None


def plant_codex(records: list[dict], text: str) -> list[dict]:
    """``text`` planted in a copy of Codex CLI records at every depth of ``DEPTHS``, and as
    the body of a file an ``apply_patch`` call adds."""
    records = copy.deepcopy(records)
    payloads = [r.get("payload", {}) for r in records if r.get("type") == "response_item"]
    users = [p for p in payloads if p.get("type") == "message" and p.get("role") == "user"
             and not str(p["content"][0].get("text", "")).startswith(INJECTED_PREFIXES)]
    calls = [p for p in payloads if p.get("type") == "function_call"]
    outputs = [p for p in payloads if p.get("type") == "function_call_output"]
    assert users and calls and outputs, "the session needs user messages, calls and outputs"
    users[0]["content"][0]["text"] += "\n" + text
    call = calls[len(calls) // 2]
    args = json.loads(call["arguments"])
    call["arguments"] = json.dumps({**args, "note": text, text: "planted key"})
    out = outputs[len(outputs) // 2]
    out["output"] = (out["output"] if isinstance(out["output"], str) else json.dumps(out["output"])) + "\n" + text
    records[0].setdefault("payload", {})["plantedMeta"] = {text: text}
    last_assistant = max(i for i, r in enumerate(records) if r.get("type") == "response_item"
                         and r["payload"].get("type") == "message" and r["payload"].get("role") == "assistant")
    compacted = {"timestamp": records[last_assistant].get("timestamp"), "type": "compacted",
                 "payload": {"message": "Summary of the work so far:\n" + text}}
    stamp = records[last_assistant].get("timestamp")
    patched = [{"timestamp": stamp, "type": "response_item",
                "payload": {"type": "custom_tool_call", "status": "completed", "call_id": "call_planted_patch",
                            "name": "apply_patch", "input": patch("planted/notes.txt", text)}},
               {"timestamp": stamp, "type": "response_item",
                "payload": {"type": "custom_tool_call_output", "call_id": "call_planted_patch",
                            "output": "Success. Updated the following files:\nA planted/notes.txt"}}]
    return records[:last_assistant] + patched + [compacted] + records[last_assistant:]


def read_records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


def write_records(path: Path, records: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(json.dumps(r) for r in records) + "\n", encoding="utf-8")
    return path


# ------------------------------------------------------------------ fixtures
CLAUDE_FILE = "moredip/samples/claude-code-projects/0ccf1a04-1b4c-43b6-8aa5-79e41db43a68.jsonl"
CODEX_FILE = "neurodata/sessions/2025/09/26/rollout-2025-09-26T17-01-04-019985ca-7ef7-7580-a921-c20ac619f40b.jsonl"
FORMATS = ("claude_code", "codex_cli")


class Spy(CustomLLM):
    """A provider outside the in-process set (so, to the code, a non-local model) that
    keeps every request and answers with all of it: a leak would also reach the cache."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    def _answer(self, model, messages, model_response):
        self.seen.append(json.dumps(messages, ensure_ascii=False))
        text = "\n".join(str(m.get("content")) for m in messages)
        return fill_response(model_response, f"planted/{model}", text, "stop", 1, 1)

    def completion(self, model, messages, *args, model_response, **kwargs):
        return self._answer(model, messages, model_response)

    async def acompletion(self, model, messages, *args, model_response, **kwargs):
        return self._answer(model, messages, model_response)


@pytest.fixture
def spy():
    handler = Spy()
    llm.register_provider("planted", handler)
    assert not llm.is_in_process("planted/echo")
    return handler


@pytest.fixture(scope="module")
def planted(tmp_path_factory, corpus_dir) -> dict[str, Path]:
    """Planted copies laid out as ~/.claude/projects and ~/.codex/sessions would be."""
    root = tmp_path_factory.mktemp("planted")
    text = block()
    cc = plant_claude_code(read_records(corpus_dir / CLAUDE_FILE), text)
    cx = plant_codex(read_records(corpus_dir / CODEX_FILE), text)
    return {"root": root,
            "claude_code": write_records(root / "claude" / "-Users-zqwalice-src-app" / Path(CLAUDE_FILE).name, cc),
            "codex_cli": write_records(root / "codex" / "2025" / "09" / "26" / Path(CODEX_FILE).name, cx)}


def needles_of(found: dict[str, list[str]]) -> int:
    return sum(len(v) for v in found.values())


def depth_steps(session) -> list[int]:
    """The last step before the planted compaction (its prefix holds the user text, tool
    input and output) and the last step (its prefix starts with the compaction summary)."""
    last = session.n_agent_steps
    for step in range(last, 0, -1):
        kinds = {t.kind for t in render_prefix(snapshot_at(session, step), window=None, redact=False).turns}
        if "compaction_summary" not in kinds:
            return [step, last]
    raise AssertionError("no step before the planted compaction")


@pytest.mark.corpus
# ------------------------------------------------------------------ the planting itself
@pytest.mark.parametrize("fmt", FORMATS)
def test_planted_secrets_reach_the_unredacted_prefix_from_every_depth(planted, fmt):
    """Without redaction every needle reaches the model, from every depth (so the suite
    below can fail)."""
    session = load_session(planted[fmt])
    texts_by_kind: dict[str, str] = {}
    for step in depth_steps(session):
        raw = render_prefix(snapshot_at(session, step), window=None, redact=False)
        for turn, text in zip(raw.turns, raw.texts):
            texts_by_kind[turn.kind] = texts_by_kind.get(turn.kind, "") + "\n" + text
    expected = {cls: [n for c, _, needles in all_plants() if c == cls for n in needles] for cls in PLANTS}
    for kind in ("text", "tool_call", "tool_result", "compaction_summary"):
        assert survivors(texts_by_kind[kind]) == expected, kind
    assert texts_by_kind["tool_call"].count("bxnorris") >= 2  # as a value and as a JSON key


@pytest.mark.corpus
# ------------------------------------------------------------------ exits
@pytest.mark.parametrize("fmt", FORMATS)
def test_rendered_prefixes_hold_no_planted_secret(planted, fmt):
    session = load_session(planted[fmt])
    for step in depth_steps(session):
        for window in (None, 3000):
            prefix = render_prefix(snapshot_at(session, step), window=window)
            assert survivors(json.dumps(prefix.messages, ensure_ascii=False)) == {}, (step, window)


@pytest.mark.corpus
def test_requests_to_a_non_local_model_the_cache_and_the_manifests_hold_no_planted_secret(planted, spy):
    sessions = [load_session(planted[f]) for f in FORMATS]
    cells = build_cells("planted", "planted/echo", sessions, arms=("real", "filler"), items=["C01"],
                        positions={s.session_id: depth_steps(s) for s in sessions}, window=None)
    cache = CallCache()
    try:
        frame = run_cells(cells, judges=["planted/judge"], protocol=OURS, cache=cache, progress=False, name="planted")
    finally:
        cache.close()
    assert (frame["status"] == "ok").all() and len(spy.seen) >= 2 * len(cells)
    requests = "\n".join(spy.seen)
    assert "<SECRET_" in requests and "<USER_" in requests  # the sessions were sent, redacted
    assert survivors(requests) == {}
    assert survivors(read_tree(cache_dir())) == {}
    manifests = read_tree(runs_dir())
    assert manifests and survivors(manifests) == {}
    assert survivors(frame.to_json()) == {}


@pytest.mark.corpus
def test_import_sessions_holds_no_planted_secret(planted, tmp_path, capsys):
    dest = tmp_path / "own"
    rc = main(["import-sessions", "--claude-dir", str(planted["root"] / "claude"),
               "--codex-dir", str(planted["root"] / "codex"), "--dest", str(dest)])
    printed = capsys.readouterr()
    assert rc == 0, printed.err
    written = sorted(p for p in dest.rglob("*.jsonl"))
    assert len(written) == 2 and "imported 2 transcript file(s)" in printed.out
    assert survivors(read_tree(dest) + printed.out + printed.err) == {}
    # what was written is still the same session, only redacted
    for fmt, path in zip(FORMATS, sorted(written, key=lambda p: p.relative_to(dest).parts[0])):
        copy_, original = load_session(path), load_session(planted[fmt])
        assert copy_.n_agent_steps == original.n_agent_steps
    assert "<USER_1>" in written[0].parent.name  # the project folder -Users-<name>-src-app


@pytest.mark.corpus
@pytest.mark.parametrize("protocol, n_sessions", [("contextecho", 2), ("reference", 1)])
def test_an_experiment_run_writes_no_planted_secret(planted, spy, tmp_path, monkeypatch, protocol, n_sessions):
    """The panel experiment on the planted sessions, against the non-local spy model, under
    both protocols (the reference one reads Claude Code sessions only)."""
    data = tmp_path / "data"
    rows = []
    for fmt in FORMATS:
        name = f"planted/{planted[fmt].name}"
        target = data / "corpus" / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(planted[fmt].read_bytes())
        rows.append({"file": name, "format": fmt, "license": "MIT", "n_assistant_msgs": 99,
                     "n_compactions": 1, "n_user_msgs": 1, "n_tool_calls": 1})
    with open(data / "corpus_manifest.csv", "w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    monkeypatch.setenv("CONTEXTECHO_DATA", str(data))
    module = experiment("panel")
    out = tmp_path / "panel"
    params = module.Parameters(targets=("planted/echo",), judges=("planted/echo",), n_sessions=n_sessions,
                               protocol=protocol,
                               n_positions=2, probes=("C01",), stressors=("S2#01",), window=200_000,
                               max_tokens=16, n_resamples=200, output_dir=str(out))
    module.run(params)
    assert "<SECRET_" in "\n".join(spy.seen)
    assert survivors("\n".join(spy.seen)) == {}
    for tree in (out, cache_dir(), runs_dir()):
        blob = read_tree(tree)
        assert blob and survivors(blob) == {}, tree
