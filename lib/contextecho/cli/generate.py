"""``contextecho generate``: ask one prompt through the cached call site.

``--timeout`` bounds each attempt (one HTTP request); a call is attempted at most
``Transport.max_attempts`` times, and how many attempts it took is printed with an error."""
from __future__ import annotations

import argparse
import math
import sys

from ..engine.calls import ModelConfigError, Transport, generate
from ..engine.endpoints import Endpoint, EndpointError
from ..engine.llm import LOCAL_MODEL
from ..engine.model_request import ModelRequest


def configure(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("prompt", help="the user message to send")
    parser.add_argument("--model", default=LOCAL_MODEL,
                        help=f"a LiteLLM model string (default: the embedded {LOCAL_MODEL})")
    parser.add_argument("--system", help="an optional system message")
    parser.add_argument("--temperature", type=float, default=0.0, help="sampling temperature (default 0)")
    parser.add_argument("--max-tokens", type=int, default=256, help="tokens to generate at most (default 256)")
    parser.add_argument("--replicates", type=int, default=1, help="independent samples of the same request")
    parser.add_argument("--api-base", help="an OpenAI-compatible server (vLLM, llama.cpp server) that "
                        "serves --model, e.g. http://localhost:8000/v1")
    parser.add_argument("--api-key-env", metavar="NAME",
                        help="the environment variable holding that server's key (default: the "
                             "provider's own variable if set, else a placeholder: local servers need none)")
    parser.add_argument("--timeout", type=float, default=Transport.timeout_s, metavar="SECONDS",
                        help="how long one attempt (one HTTP request) may take before it counts as a "
                             f"timeout and is retried, up to {Transport.max_attempts} attempts in all "
                             f"(default {Transport.timeout_s:g})")
    parser.add_argument("--retry-errors", action="store_true",
                        help="call again the requests whose stored error is permanent (authentication, bad request, "
                             "not found); by default they are skipped and counted")


def run(args: argparse.Namespace) -> int:
    messages = ([{"role": "system", "content": args.system}] if args.system else []) + \
        [{"role": "user", "content": args.prompt}]
    params = {"temperature": args.temperature, "max_tokens": args.max_tokens}
    requests = [ModelRequest(args.model, messages, params, replicate=i) for i in range(args.replicates)]
    if not (math.isfinite(args.timeout) and args.timeout > 0):
        print(f"contextecho generate: --timeout {args.timeout:g}: give a number of seconds > 0", file=sys.stderr)
        return 2
    try:
        if args.api_key_env and not args.api_base:
            raise EndpointError("--api-key-env names the key of an --api-base server; give --api-base too")
        endpoints = (Endpoint(args.model, args.api_base, args.api_key_env),) if args.api_base else ()
        result = generate(requests, transport=Transport(endpoints=endpoints, timeout_s=args.timeout),
                          name="cli-generate", retry_errors=args.retry_errors)
    except (ModelConfigError, EndpointError) as exc:
        print(f"contextecho generate: {exc}", file=sys.stderr)
        return 2
    for record, cached, skipped in zip(result.records, result.cached, result.skipped):
        source = "cache" if cached else f"{record.latency_s:.2f}s"
        if record.ok:
            print(f"[{record.key[:12]} {source}] {record.response_text}")
        elif skipped:
            print(f"[{record.key[:12]} stored error, not retried: --retry-errors to call again] "
                  f"{record.error_type}: {record.error_message}")
        else:
            print(f"[{record.key[:12]} error after {record.attempts} attempt(s)] "
                  f"{record.error_type}: {record.error_message}")
    print(result.counts().line("generate"), file=sys.stderr)  # calls, attempts, HTTP requests
    return 0 if result.n_errors == 0 else 1
