#!/usr/bin/env python3
"""Converts public tool-retrieval benchmarks into the files under
tests/data/search/public/<set>/ (catalogue in the livemcpbench shape, labelled
queries in the shape of tests/data/search/queries.json).

The converted files are committed, with each benchmark's licence, so neither
tests nor CI need this script or the network. It is kept to show exactly how
the files were derived and to redo it from the upstream files:

  azure-mcp: microsoft/mcp (MIT), eng/tools/ToolDescriptionEvaluator/{tools,prompts}.json
             at commit 2c930f6f591f94a1b52a2fecc26fe0f076ce38fa
  metatool:  HowieHwong/MetaTool (MIT), dataset/{data/all_clean_data.csv,
             big_tool_des.json,plugin_des.json} at its default branch
             (commit 35e81bb7576826e980c80fed8f8c0a2b4a1e6fbb gives the same files)
  seal-tools: fairyshine/Seal-Tools (Apache-2.0), Seal-Tools_Dataset/{tool.jsonl,
             dev.jsonl,test_in_domain.jsonl,test_out_domain.jsonl} and LICENSE
             at commit ce753ecd60ed08dd376984035de531ab8421f1c6
  apibench-huggingface, apibench-torchhub: ShishirPatil/gorilla (Apache-2.0),
             APIBench: data/api/{huggingface,torchhub}_api.jsonl,
             data/apibench/{huggingface,torchhub}_eval.json and LICENSE
             at commit 6ea57973c7a6097fd7c5915698c54c17c5b1b6c8

usage:
  convert-public-benchmarks.py azure AZURE_TOOLS AZURE_PROMPTS OUT_DIR
  convert-public-benchmarks.py metatool METATOOL_CSV METATOOL_BIG_DES METATOOL_PLUGIN_DES OUT_DIR
  convert-public-benchmarks.py seal-tools SEAL_TOOLS_CHECKOUT OUT_DIR
  convert-public-benchmarks.py apibench-huggingface GORILLA_CHECKOUT OUT_DIR
  convert-public-benchmarks.py apibench-torchhub GORILLA_CHECKOUT OUT_DIR
  convert-public-benchmarks.py AZURE_TOOLS AZURE_PROMPTS METATOOL_CSV \
           METATOOL_BIG_DES METATOOL_PLUGIN_DES OUT_DIR     (the first two at once)

A *_CHECKOUT is the upstream repository's work tree at the commit above; the
LICENSE is copied from it verbatim (for azure-mcp and metatool it was copied
by hand).

Every query gets a `split`: `tune` (one in three, by a hash of the text) or
`test`. Only `tune` queries may be looked at while choosing weights.

Where a query needs several tools, all of them are `relevant`, and the
evaluation counts a hit when any one of them is ranked (the rank of the first
relevant tool): such queries are easier than single-tool ones. Of the new sets
only seal-tools has them, and there single-tool queries are taken first.

Per set:
- seal-tools: one server per top-level `field` of tool.jsonl ("Chemical
  Engineering/Forensic engineering" -> server "Chemical Engineering"), tools
  with their parameters as inputSchema. Queries from dev, test_in_domain and
  test_out_domain (not train): every single-tool query (one distinct `api` in
  `calling`), then multi-tool queries of the two test files, smallest sha256
  of the text first, up to MAX_QUERIES in all (494 single + 706 multi-tool).
  The catalogue keeps every tool those queries need, then other tools by
  smallest sha256 of the name, up to MAX_TOOLS (upstream has 4,076). Its
  queries were generated from the tool descriptions, so they share many
  words with them: plain BM25 already ranks well.
- apibench-huggingface: one server per `domain` ("Computer Vision Image
  Classification"), one tool per distinct `api_name` (a model id, with
  characters outside [A-Za-z0-9_.-] as `_`; the first entry wins), described
  by its `functionality` and `description`; no inputSchema (`api_arguments`
  are a model's loading options, not a tool's parameters).
  Queries: the `###Instruction:` text of each eval item (without any
  `###Input:`), labelled with its `api_data.api_name`.
- apibench-torchhub: one server per `repo_or_dir` of the `api_call`, one tool
  per `api_call` named by its `model=` (else the `api_name`), described as
  above, labelled by the eval item's `api_call`.
  In both APIBench sets many models are variants of one another, often with
  the same description (vgg11 ... vgg19_bn), and a query is labelled with the
  one model its answer used: a label often names one of several equally
  fitting tools, so Hit@k is low for every ranker.
"""

import csv
import hashlib
import json
import os
import re
import shutil
import sys


def server_id(name):
    """The id Quiver gives a server (proto's `sanitise_server_id`)."""
    return "-".join(w for w in re.split(r"[^A-Za-z0-9_]+", name) if w) or "server"


def split_of(text):
    return "tune" if hashlib.sha256(text.encode()).digest()[0] % 3 == 0 else "test"


def azure(tools_path, prompts_path, out):
    results = json.load(open(tools_path, encoding="utf-8"))["results"]
    prompts = json.load(open(prompts_path, encoding="utf-8"))
    servers = {}
    names = set()
    for tool in results:
        words = tool["command"].split()
        name = "_".join(words)
        names.add(name)
        properties, required = {}, []
        for option in tool.get("option") or []:
            key = option["name"].lstrip("-")
            properties[key] = {"type": option.get("type") or "string",
                               "description": option.get("description") or ""}
            if option.get("required"):
                required.append(key)
        schema = {"type": "object", "properties": properties}
        if required:
            schema["required"] = required
        servers.setdefault(words[0], []).append(
            {"name": name, "description": tool.get("description") or "", "inputSchema": schema})
    catalogue = [{"name": server, "description": "", "tools": tools}
                 for server, tools in sorted(servers.items())]
    queries = []
    for name, texts in prompts.items():
        if name not in names:
            continue  # a prompt for a tool the listing does not have
        server = name.split("_")[0]
        for text in texts:
            queries.append({"query": text, "relevant": [f"{server}/{name}"],
                            "corpus": "azure-mcp", "split": split_of(text)})
    write(out, "azure-mcp", catalogue, queries)


def metatool(csv_path, big_des_path, plugin_des_path, out, per_tool=4):
    descriptions = json.load(open(plugin_des_path, encoding="utf-8"))
    descriptions.update(json.load(open(big_des_path, encoding="utf-8")))
    by_tool = {}
    for row in csv.DictReader(open(csv_path, encoding="utf-8")):
        by_tool.setdefault(row["Tool"], []).append(row["Query"].strip())
    catalogue = [{"name": tool, "description": "",
                  "tools": [{"name": tool, "description": descriptions[tool]}]}
                 for tool in sorted(by_tool)]
    queries = []
    for tool in sorted(by_tool):
        # A fixed sample per tool: the queries with the smallest hashes.
        texts = sorted(set(by_tool[tool]), key=lambda t: hashlib.sha256(t.encode()).hexdigest())
        for text in texts[:per_tool]:
            queries.append({"query": text, "relevant": [f"{server_id(tool)}/{tool}"],
                            "corpus": "metatool", "split": split_of(text)})
    write(out, "metatool", catalogue, queries)


MAX_TOOLS = 3000
MAX_QUERIES = 1200


def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


def read_jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


JSON_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean",
              "list": "array", "dict": "object"}


def seal_tools(checkout, out):
    data = os.path.join(checkout, "Seal-Tools_Dataset")
    tools = read_jsonl(os.path.join(data, "tool.jsonl"))
    field_of = {t["api_name"]: t["field"].split("/")[0].strip() for t in tools}
    singles, multis, seen = [], [], set()
    for part in ["dev", "test_in_domain", "test_out_domain"]:
        for item in read_jsonl(os.path.join(data, part + ".jsonl")):
            text = item["query"].strip()
            apis = sorted({call["api"] for call in item["calling"]})
            if text in seen or not apis:
                continue
            seen.add(text)
            if len(apis) == 1:
                singles.append((text, apis))
            elif part != "dev":
                multis.append((text, apis))
    multis.sort(key=lambda q: sha(q[0]))
    chosen = singles + multis[:max(0, MAX_QUERIES - len(singles))]
    keep = {api for _, apis in chosen for api in apis}
    others = sorted((t["api_name"] for t in tools if t["api_name"] not in keep), key=sha)
    keep.update(others[:max(0, MAX_TOOLS - len(keep))])
    servers = {}
    for t in tools:
        if t["api_name"] not in keep:
            continue
        properties = {key: {"type": JSON_TYPES.get(p.get("type"), "string"),
                            "description": p.get("description") or ""}
                      for key, p in (t.get("parameters") or {}).items()}
        schema = {"type": "object", "properties": properties}
        if t.get("required"):
            schema["required"] = t["required"]
        servers.setdefault(field_of[t["api_name"]], []).append(
            {"name": t["api_name"], "description": t.get("api_description") or "",
             "inputSchema": schema})
    catalogue = [{"name": field, "description": "", "tools": group}
                 for field, group in sorted(servers.items())]
    queries = [{"query": text,
                "relevant": [f"{server_id(field_of[api])}/{api}" for api in apis],
                "corpus": "seal-tools", "split": split_of(text)}
               for text, apis in chosen]
    write(out, "seal-tools", catalogue, queries)
    shutil.copyfile(os.path.join(checkout, "LICENSE"), os.path.join(out, "seal-tools", "LICENSE"))


def tool_name(text):
    """A tool name of [A-Za-z0-9_.-] (APIBench names are model ids with `/`)."""
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("_")


def apibench_instruction(code):
    """The request of an APIBench eval item: its `###Instruction:` text."""
    text = re.split(r"###\s*(?:Output|Input)", code)[0]
    return re.sub(r"^\s*###\s*Instruction\s*:\s*", "", text).strip()


def plain_text(value):
    """A string field that upstream sometimes gives as a list of strings."""
    if isinstance(value, list):
        return " ".join(v.strip() for v in value if isinstance(v, str))
    return value.strip() if isinstance(value, str) else ""


def apibench_tool(name, api):
    functionality = plain_text(api.get("functionality"))
    description = plain_text(api.get("description"))
    if functionality and functionality.lower() not in description.lower():
        description = f"{functionality}. {description}" if description else functionality
    return {"name": name, "description": description}


def apibench(checkout, out, hub):
    apis = read_jsonl(os.path.join(checkout, "data", "api", f"{hub}_api.jsonl"))
    evals = read_jsonl(os.path.join(checkout, "data", "apibench", f"{hub}_eval.json"))
    name = f"apibench-{hub}"
    servers, label = {}, {}
    for api in apis:
        if hub == "huggingface":
            key, server, tool = api["api_name"], api["domain"].strip(), tool_name(api["api_name"])
        else:
            call = api["api_call"]
            repo = re.search(r"""repo_or_dir=['"]([^'"]+)""", call).group(1)
            model = re.search(r"""model=['"]([^'"]+)""", call)
            key, server, tool = call, repo, tool_name(model.group(1) if model else api["api_name"])
        if key in label:
            continue  # a repeated entry: the first one wins
        tools = servers.setdefault(server, [])
        assert all(t["name"] != tool for t in tools), (server, tool)
        tools.append(apibench_tool(tool, api))
        label[key] = f"{server_id(server)}/{tool}"
    catalogue = [{"name": server, "description": "", "tools": tools}
                 for server, tools in sorted(servers.items())]
    by_text = {}
    for item in evals:
        text = apibench_instruction(item["code"])
        key = item["api_data"]["api_name"] if hub == "huggingface" else item["api_call"]
        relevant = by_text.setdefault(text, [])
        if label[key] not in relevant:
            relevant.append(label[key])
    kept = set(sorted(by_text, key=sha)[:MAX_QUERIES])  # all of them, at these sizes
    queries = [{"query": text, "relevant": relevant, "corpus": name, "split": split_of(text)}
               for text, relevant in by_text.items() if text in kept]
    write(out, name, catalogue, queries)
    shutil.copyfile(os.path.join(checkout, "LICENSE"), os.path.join(out, name, "LICENSE"))


def write(out, name, catalogue, queries):
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "tools.json"), "w", encoding="utf-8") as f:
        json.dump(catalogue, f, ensure_ascii=False, indent=1)
    with open(os.path.join(folder, "queries.json"), "w", encoding="utf-8") as f:
        f.write("[\n" + ",\n".join(json.dumps(q, ensure_ascii=False) for q in queries) + "\n]\n")
    print(name, sum(len(s["tools"]) for s in catalogue), "tools", len(queries), "queries")


COMMANDS = {
    "azure": (azure, 3),
    "metatool": (metatool, 4),
    "seal-tools": (seal_tools, 2),
    "apibench-huggingface": (lambda checkout, out: apibench(checkout, out, "huggingface"), 2),
    "apibench-torchhub": (lambda checkout, out: apibench(checkout, out, "torchhub"), 2),
}


if __name__ == "__main__":
    args = sys.argv[1:]
    if args and args[0] in COMMANDS:
        command, count = COMMANDS[args[0]]
        if len(args) != count + 1:
            sys.exit(__doc__)
        command(*args[1:])
    elif len(args) == 6:
        a_tools, a_prompts, m_csv, m_big, m_plugin, out = args
        azure(a_tools, a_prompts, out)
        metatool(m_csv, m_big, m_plugin, out)
    else:
        sys.exit(__doc__)
