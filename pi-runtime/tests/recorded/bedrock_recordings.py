#!/usr/bin/env python3
"""Builds Bedrock ConverseStream recordings for pi-runtime's tests from the Vercel AI SDK's.

vercel/ai keeps Bedrock streams it recorded from the live service as `*.chunks.txt` files in
`packages/amazon-bedrock/src/__fixtures__`, one decoded event a line (`{"contentBlockDelta":
{...}}`), the binary framing taken off. This script frames each line again as Bedrock sends it
(AWS's event stream: prelude with lengths and CRC32, the `:event-type`, `:content-type` and
`:message-type` headers, the JSON payload, the message CRC32) and writes one `.eventstream`
body per recording, with SOURCES.md naming each origin file and commit, into a folder that the
test `providers_bedrock::recorded_bedrock_streams_decode_alike_split_at_every_byte` reads through
`PI_BEDROCK_RECORDINGS`. The recordings are not committed to this repository.

usage: bedrock_recordings.py <vercel/ai git dir or checkout> <output folder>
  (a git dir such as the one `fetch github:vercel/ai` makes: /work/.mirror/vercel+ai/repo)
"""

import json
import os
import struct
import subprocess
import sys
import zlib

FIXTURES = "packages/amazon-bedrock/src/__fixtures__"

# The recordings that are the service's own answers (ids, usage and timings of real calls);
# the fixtures written by hand for unit tests (`json-tool-id`, `tool-use-id`) are left out.
RECORDINGS = [
    "amazon-bedrock-text",
    "amazon-bedrock-reasoning",
    "amazon-bedrock-json-other-tool.1",
    "amazon-bedrock-redacted-content",
    "amazon-bedrock-document-citations",
    "issue-11409-kimi-k2-thinking-final",
    "issue-11409-kimi-k2-thinking-glob-search",
    "issue-11409-kimi-k2-thinking-read-file",
    "issue-13927-request-metadata",
    "issue-17523-converse-stream",
    "issue-17523-foundation-model-arn",
]


def string_header(name, value):
    name = name.encode()
    value = value.encode()
    return bytes([len(name)]) + name + bytes([7]) + struct.pack(">H", len(value)) + value


def frame(event_type, payload):
    headers = (
        string_header(":event-type", event_type)
        + string_header(":content-type", "application/json")
        + string_header(":message-type", "event")
    )
    body = json.dumps(payload, separators=(",", ":"), ensure_ascii=False).encode()
    total = 12 + len(headers) + len(body) + 4
    prelude = struct.pack(">II", total, len(headers))
    prelude += struct.pack(">I", zlib.crc32(prelude))
    message = prelude + headers + body
    return message + struct.pack(">I", zlib.crc32(message))


def git(repo, *args):
    return subprocess.run(
        ["git", "-C", repo, *args], check=True, capture_output=True
    ).stdout


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    repo, out = sys.argv[1], sys.argv[2]
    os.makedirs(out, exist_ok=True)
    sources = [
        "# Bedrock ConverseStream recordings",
        "",
        "Made by pi-runtime/tests/recorded/bedrock_recordings.py from vercel/ai "
        "(Apache-2.0): each line of the origin file framed as an event-stream message.",
        "",
        "| here | origin (vercel/ai) | commit |",
        "|---|---|---|",
    ]
    for name in RECORDINGS:
        path = f"{FIXTURES}/{name}.chunks.txt"
        commit = git(repo, "log", "--all", "--diff-filter=AM", "-1", "--format=%H", "--", path)
        commit = commit.decode().strip()
        if not commit:
            sys.exit(f"{path} is in no commit of {repo}")
        text = git(repo, "show", f"{commit}:{path}").decode()
        body = b""
        for line in text.splitlines():
            if not line.strip():
                continue
            event = json.loads(line)
            [(event_type, payload)] = event.items()
            body += frame(event_type, payload)
        with open(os.path.join(out, f"{name}.eventstream"), "wb") as f:
            f.write(body)
        sources.append(f"| `{name}.eventstream` | `{path}` | `{commit}` |")
    with open(os.path.join(out, "SOURCES.md"), "w") as f:
        f.write("\n".join(sources) + "\n")
    print(f"{len(RECORDINGS)} recordings written to {out}")


if __name__ == "__main__":
    main()
