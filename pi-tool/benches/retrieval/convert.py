#!/usr/bin/env python3
"""Converts MetaTool's ToolE set (github.com/HowieHwong/MetaTool) into the folder the retrieval
benchmark reads (`cargo bench -p pi-tool --bench retrieval`, env `PI_RETRIEVAL_DATA`).

    python3 convert.py SNAPSHOT OUT [COMMIT]

SNAPSHOT is a clone (or bare git directory) of HowieHwong/MetaTool; the files are read at
COMMIT (default 35e81bb7576826e980c80fed8f8c0a2b4a1e6fbb, the snapshot the README's figures
come from). OUT (e.g. /work/data/metatool) must be outside the repository: the set is not ours
to redistribute, and CI does not need it.

Written to OUT:
- tools.jsonl: one tool a line, {"name", "description", "parameters"}: the 199 tools of
  `dataset/plugin_des.json` (MetaTool's descriptions; they take no parameters there);
- queries.jsonl: one question a line, {"query", "gold": [names], "category"}:
  `dataset/data/all_clean_data.csv` (20,614 questions, one tool each), category "merged tool"
  when the gold tool is one of the 47 tools MetaTool merged from several plugins
  (`dataset/big_tool_des.json`), else "single plugin"; and
  `dataset/data/multi_tool_query_golden.json` (497 questions needing two tools), category
  "two tools";
- SOURCE: where and at which commit the files were read.
"""

import csv
import io
import json
import os
import subprocess
import sys

DEFAULT_COMMIT = "35e81bb7576826e980c80fed8f8c0a2b4a1e6fbb"


def read(snapshot, commit, path):
    """The file `path` of `snapshot` at `commit`, as text."""
    return subprocess.run(
        ["git", "--git-dir", git_dir(snapshot), "show", f"{commit}:{path}"],
        check=True,
        capture_output=True,
    ).stdout.decode("utf-8")


def git_dir(snapshot):
    dot_git = os.path.join(snapshot, ".git")
    return dot_git if os.path.isdir(dot_git) else snapshot


def main():
    if len(sys.argv) not in (3, 4):
        sys.exit(__doc__)
    snapshot, out = sys.argv[1], sys.argv[2]
    commit = sys.argv[3] if len(sys.argv) == 4 else DEFAULT_COMMIT
    repository = os.path.realpath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
    if os.path.realpath(out).startswith(repository + os.sep):
        sys.exit(f"{out} is inside the repository; write the data set elsewhere")
    descriptions = json.loads(read(snapshot, commit, "dataset/plugin_des.json"))
    merged = set(json.loads(read(snapshot, commit, "dataset/big_tool_des.json")))
    rows = list(csv.DictReader(io.StringIO(read(snapshot, commit, "dataset/data/all_clean_data.csv"))))
    multi = json.loads(read(snapshot, commit, "dataset/data/multi_tool_query_golden.json"))

    queries = []
    for row in rows:
        tool = row["Tool"].strip()
        if tool not in descriptions:
            sys.exit(f"question {row['Query']!r}: unknown tool {tool!r}")
        category = "merged tool" if tool in merged else "single plugin"
        queries.append({"query": row["Query"].strip(), "gold": [tool], "category": category})
    for item in multi:
        gold = [t.strip() for t in item["tool"]]
        if not all(t in descriptions for t in gold):
            sys.exit(f"question {item['query']!r}: unknown tool among {gold}")
        queries.append({"query": item["query"].strip(), "gold": gold, "category": "two tools"})

    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "tools.jsonl"), "w", encoding="utf-8") as f:
        for name in sorted(descriptions):
            tool = {
                "name": name,
                "description": descriptions[name].strip(),
                "parameters": {"type": "object", "properties": {}},
            }
            f.write(json.dumps(tool, ensure_ascii=False) + "\n")
    with open(os.path.join(out, "queries.jsonl"), "w", encoding="utf-8") as f:
        for query in queries:
            f.write(json.dumps(query, ensure_ascii=False) + "\n")
    with open(os.path.join(out, "SOURCE"), "w", encoding="utf-8") as f:
        f.write(f"github.com/HowieHwong/MetaTool at {commit} (converted by pi-tool/benches/retrieval/convert.py)\n")
    print(f"{len(descriptions)} tools, {len(queries)} questions -> {out}")


if __name__ == "__main__":
    main()
