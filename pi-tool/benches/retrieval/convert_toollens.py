#!/usr/bin/env python3
"""Converts ToolLens (github.com/quchangle1/COLT, `datasets/ToolLens`) into the folder the
retrieval benchmark reads (`cargo bench -p pi-tool --bench retrieval`, env `PI_RETRIEVAL_DATA`):
a second public set beside MetaTool's, to check that the ranking is not fitted to one set.

    python3 convert_toollens.py SNAPSHOT OUT [COMMIT]

SNAPSHOT is a clone (or bare git directory) of quchangle1/COLT; the files are read at COMMIT
(default bbec292c38cabe3fbae098f50cc31b2e9f7e8fca, the snapshot the README's figures come
from). OUT (e.g. /work/data/toollens) must be outside the repository: the set is not ours to
redistribute, and CI does not need it.

ToolLens: 464 real RapidAPI endpoints of ToolBench and 18,770 questions, each needing one or
more of them (made for the COLT paper, arXiv 2405.16089, which says how they were written). Only
the test split (`qrels/test.tsv`: 1,877 questions needing one to three) is converted. Written
to OUT:
- tools.jsonl: one tool a line, {"name", "description", "parameters"}: the name as ToolBench
  gives a model (`{api}_for_{tool}`, lowercased, non-alphanumerics as `_`), the description as
  `{tool name}: {api description}` and the parameters as a JSON Schema object (their names,
  types and descriptions);
- queries.jsonl: one question a line, {"query", "gold": [names], "category"}, category the
  number of gold tools ("2 tools", ...);
- SOURCE: where and at which commit the files were read.
"""

import json
import os
import re
import subprocess
import sys

DEFAULT_COMMIT = "bbec292c38cabe3fbae098f50cc31b2e9f7e8fca"


def read(snapshot, commit, path):
    return subprocess.run(
        ["git", "--git-dir", git_dir(snapshot), "show", f"{commit}:{path}"],
        check=True,
        capture_output=True,
    ).stdout.decode("utf-8")


def git_dir(snapshot):
    dot_git = os.path.join(snapshot, ".git")
    return dot_git if os.path.isdir(dot_git) else snapshot


def snake(text):
    return re.sub(r"[^a-z0-9]+", "_", text.lower()).strip("_")


def parse_tool(text):
    """ToolLens's corpus text: `category_name:C, tool_name:T, api_name:A, api_description:D,
    required_params: [json], optional_params: [json], return_schema: ...`."""
    head, _, rest = text.partition(", required_params: ")
    fields = re.match(
        r"category_name:(.*?), tool_name:(.*?), api_name:(.*?), api_description:(.*)$", head, re.S
    )
    if fields is None:
        raise ValueError(f"unexpected tool text: {text[:200]!r}")
    category, tool, api, description = (f.strip() for f in fields.groups())
    decoder = json.JSONDecoder()
    required, end = decoder.raw_decode(rest)
    rest = rest[end:]
    prefix = ", optional_params: "
    if not rest.startswith(prefix):
        raise ValueError(f"unexpected tool text: {text[:200]!r}")
    optional, _ = decoder.raw_decode(rest[len(prefix):])
    properties = {}
    for param in required + optional:
        schema = {"type": str(param.get("type", "string")).lower()}
        if param.get("description"):
            schema["description"] = str(param["description"]).strip()
        properties[param["name"]] = schema
    parameters = {"type": "object", "properties": properties}
    if required:
        parameters["required"] = [p["name"] for p in required]
    return {
        "name": f"{snake(api)}_for_{snake(tool)}",
        "description": f"{tool}: {description}",
        "parameters": parameters,
        "category": category,
    }


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    snapshot, out = sys.argv[1], sys.argv[2]
    commit = sys.argv[3] if len(sys.argv) == 4 else DEFAULT_COMMIT
    commit = subprocess.run(
        ["git", "--git-dir", git_dir(snapshot), "rev-parse", commit],
        check=True, capture_output=True,
    ).stdout.decode().strip()
    repository = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    if os.path.realpath(out).startswith(repository + os.sep):
        sys.exit(f"{out} is inside the repository; write the data set elsewhere")
    folder = "datasets/ToolLens"
    tools = {}
    for line in read(snapshot, commit, f"{folder}/corpus.jsonl").splitlines():
        if line.strip():
            item = json.loads(line)
            tools[item["_id"]] = parse_tool(item["text"])
    names = [t["name"] for t in tools.values()]
    if len(set(names)) != len(names):
        sys.exit("two tools have one name")
    questions = {}
    for line in read(snapshot, commit, f"{folder}/queries.jsonl").splitlines():
        if line.strip():
            item = json.loads(line)
            questions[item["_id"]] = item["text"].strip()
    gold = {}
    for line in read(snapshot, commit, f"{folder}/qrels/test.tsv").splitlines()[1:]:
        query, tool, score = line.split("\t")
        if int(score) > 0:
            gold.setdefault(query, []).append(tools[tool]["name"])

    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tools.jsonl"), "w", encoding="utf-8") as f:
        for tool in sorted(tools.values(), key=lambda t: t["name"]):
            f.write(json.dumps({k: tool[k] for k in ("name", "description", "parameters")}, ensure_ascii=False) + "\n")
    with open(os.path.join(out, "queries.jsonl"), "w", encoding="utf-8") as f:
        for query in sorted(gold, key=int):
            names = sorted(set(gold[query]))
            category = f"{len(names)} tools" if len(names) > 1 else "1 tool"
            f.write(json.dumps({"query": questions[query], "gold": names, "category": category}, ensure_ascii=False) + "\n")
    with open(os.path.join(out, "SOURCE"), "w", encoding="utf-8") as f:
        f.write(f"github.com/quchangle1/COLT datasets/ToolLens (test split) at {commit} "
                "(converted by pi-tool/benches/retrieval/convert_toollens.py)\n")


if __name__ == "__main__":
    main()
