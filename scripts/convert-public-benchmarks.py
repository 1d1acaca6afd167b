#!/usr/bin/env python3
"""Converts two public tool-retrieval benchmarks into the files under
tests/data/search/public/ (catalogue in the livemcpbench shape, labelled
queries in the shape of tests/data/search/queries.json).

The converted files are committed, with each benchmark's licence, so neither
tests nor CI need this script or the network. It is kept to show exactly how
the files were derived and to redo it from the upstream files:

  azure-mcp: microsoft/mcp (MIT), eng/tools/ToolDescriptionEvaluator/{tools,prompts}.json
             at commit 2c930f6f591f94a1b52a2fecc26fe0f076ce38fa
  metatool:  HowieHwong/MetaTool (MIT), dataset/{data/all_clean_data.csv,
             big_tool_des.json,plugin_des.json} at its default branch

usage: convert-public-benchmarks.py AZURE_TOOLS AZURE_PROMPTS METATOOL_CSV \
           METATOOL_BIG_DES METATOOL_PLUGIN_DES OUT_DIR

Every query gets a `split`: `tune` (one in three, by a hash of the text) or
`test`. Only `tune` queries may be looked at while choosing weights.
"""

import csv
import hashlib
import json
import os
import re
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


def write(out, name, catalogue, queries):
    folder = os.path.join(out, name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "tools.json"), "w", encoding="utf-8") as f:
        json.dump(catalogue, f, ensure_ascii=False, indent=1)
    with open(os.path.join(folder, "queries.json"), "w", encoding="utf-8") as f:
        f.write("[\n" + ",\n".join(json.dumps(q, ensure_ascii=False) for q in queries) + "\n]\n")
    print(name, sum(len(s["tools"]) for s in catalogue), "tools", len(queries), "queries")


if __name__ == "__main__":
    a_tools, a_prompts, m_csv, m_big, m_plugin, out = sys.argv[1:7]
    azure(a_tools, a_prompts, out)
    metatool(m_csv, m_big, m_plugin, out)
