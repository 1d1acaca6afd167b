#!/usr/bin/env python3
"""Builds the training queries of the search adapter (issue 55) under
tests/data/search/train/, from public data nobody here wrote. The files are
committed with their licences, so neither the trainer nor CI need this
script or the network; it shows how they were derived.

Sources (upstream commits as in scripts/convert-public-benchmarks.py):
  metatool:  HowieHwong/MetaTool (MIT), dataset/data/all_clean_data.csv
             at 35e81bb7576826e980c80fed8f8c0a2b4a1e6fbb: every labelled query
             that is not one of the benchmark's (tests/data/search/public/
             metatool/queries.json, tune or test), over that benchmark's 199
             tools.
  apibench-torchhub: ShishirPatil/gorilla (Apache-2.0),
             data/apibench/torchhub_train.json at 6ea57973c7a6097fd7c5915698c54c17c5b1b6c8:
             APIBench's own train split, labelled as the benchmark's eval
             queries are, over the benchmark's catalogue; a text that is also
             an eval query is left out.
  tensorflowhub: the same commit, data/api/tensorflowhub_api.jsonl and
             data/apibench/tensorflow_eval.json (its train file is not
             reachable here): a source of its own, absent from the
             benchmarks, one tool per model URL.

Nothing here is a test split: the public sets' `test` queries are never read
except to leave them out.

usage: build-search-train.py METATOOL_CSV GORILLA_DATA_DIR PUBLIC_DIR OUT_DIR
  (GORILLA_DATA_DIR holds torchhub_train.json, torchhub_api.jsonl,
   tensorflowhub_api.jsonl and tensorflow_eval.json)
"""
import ast
import csv
import importlib.util
import json
import os
import re
import shutil
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
spec = importlib.util.spec_from_file_location(
    "convert", os.path.join(HERE, "convert-public-benchmarks.py"))
convert = importlib.util.module_from_spec(spec)
spec.loader.exec_module(convert)


def benchmark_texts(public, name):
    with open(os.path.join(public, name, "queries.json"), encoding="utf-8") as f:
        return {q["query"].strip() for q in json.load(f)}


def write_queries(out, name, queries, catalogue=None, licence=None):
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "queries.json"), "w", encoding="utf-8") as f:
        f.write("[\n" + ",\n".join(json.dumps(q, ensure_ascii=False) for q in queries) + "\n]\n")
    if catalogue is not None:
        with open(os.path.join(folder, "tools.json"), "w", encoding="utf-8") as f:
            json.dump(catalogue, f, ensure_ascii=False, indent=1)
    if licence:
        shutil.copyfile(licence, os.path.join(folder, "LICENSE"))
    print(name, len(queries), "queries")


def metatool(csv_path, public, out):
    held = benchmark_texts(public, "metatool")
    seen, queries = set(), []
    for row in csv.DictReader(open(csv_path, encoding="utf-8")):
        text, tool = row["Query"].strip(), row["Tool"]
        if not text or text in held or (text, tool) in seen:
            continue
        seen.add((text, tool))
        queries.append({"query": text, "relevant": [f"{convert.server_id(tool)}/{tool}"],
                        "corpus": "metatool", "split": "train"})
    write_queries(out, "metatool", queries,
                  licence=os.path.join(public, "metatool", "LICENSE"))


def torchhub_label(call):
    repo = re.search(r"""repo_or_dir=['"]([^'"]+)""", call).group(1)
    model = re.search(r"""model=['"]([^'"]+)""", call)
    return repo, convert.tool_name(model.group(1) if model else "")


def torchhub(data, public, out):
    held = benchmark_texts(public, "apibench-torchhub")
    apis = convert.read_jsonl(os.path.join(data, "torchhub_api.jsonl"))
    label = {}
    for api in apis:
        repo, tool = torchhub_label(api["api_call"])
        label.setdefault(api["api_call"], f"{convert.server_id(repo)}/{tool or convert.tool_name(api['api_name'])}")
    by_text = {}
    for item in convert.read_jsonl(os.path.join(data, "torchhub_train.json")):
        match = re.search(r"'Instruction':\s*(.*?),\s*'Output'", item["code"], re.S)
        if not match or item["api_call"] not in label:
            continue
        text = match.group(1).strip().strip("'\"").strip()
        if not text or text in held:
            continue
        relevant = by_text.setdefault(text, [])
        if label[item["api_call"]] not in relevant:
            relevant.append(label[item["api_call"]])
    queries = [{"query": t, "relevant": r, "corpus": "apibench-torchhub", "split": "train"}
               for t, r in by_text.items()]
    write_queries(out, "apibench-torchhub", queries,
                  licence=os.path.join(public, "apibench-torchhub", "LICENSE"))


def tensorflowhub(data, public, out):
    servers, label = {}, {}
    for api in convert.read_jsonl(os.path.join(data, "tensorflowhub_api.jsonl")):
        url = re.search(r"""['"](https?://[^'"]+)['"]""", api["api_call"])
        if not url:
            continue
        url = url.group(1).rstrip("/")
        if url in label:
            continue
        parts = url.split("tfhub.dev/")[-1].split("/")
        server, tool = parts[0], convert.tool_name("_".join(parts[1:]) or parts[0])
        tools = servers.setdefault(server, [])
        if any(t["name"] == tool for t in tools):
            continue
        tools.append(convert.apibench_tool(tool, api))
        label[url] = f"{convert.server_id(server)}/{tool}"
    catalogue = [{"name": s, "description": "", "tools": t} for s, t in sorted(servers.items())]
    by_text = {}
    for item in convert.read_jsonl(os.path.join(data, "tensorflow_eval.json")):
        url = re.search(r"""['"](https?://[^'"]+)['"]""", item.get("api_call", ""))
        if not url or url.group(1).rstrip("/") not in label:
            continue
        text = convert.apibench_instruction(item["code"])
        if not text:
            continue
        relevant = by_text.setdefault(text, [])
        if label[url.group(1).rstrip("/")] not in relevant:
            relevant.append(label[url.group(1).rstrip("/")])
    queries = [{"query": t, "relevant": r, "corpus": "tensorflowhub", "split": "train"}
               for t, r in by_text.items()]
    write_queries(out, "tensorflowhub", queries, catalogue,
                  licence=os.path.join(public, "apibench-torchhub", "LICENSE"))


if __name__ == "__main__":
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    csv_path, data, public, out = sys.argv[1:]
    metatool(csv_path, public, out)
    torchhub(data, public, out)
    tensorflowhub(data, public, out)
