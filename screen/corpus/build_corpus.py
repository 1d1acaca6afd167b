#!/usr/bin/env python3
"""Build screen/corpus/{poisoned,benign}.jsonl from the raw licensed sources
collected under /tmp/poison-corpus (python3 stdlib only).

Usage: python3 build_corpus.py [--src /tmp/poison-corpus] [--out <dir of this script>]

Python FastMCP servers are read with `ast` (never imported or executed):
  description = the tool's docstring, normalised with inspect.cleandoc
                (ast.get_docstring(clean=True)) and .strip(), or the `description=` kwarg of @x.tool(...)
  inputSchema = {"type":"object","properties":{...},"required":[...]} from the function
                parameters: type hints -> JSON Schema types, defaults -> "default",
                parameters without a default -> "required"; parameter descriptions from
                Field(description=...)/Annotated metadata, else from the docstring's
                Google-style "Args:" section. Parameters typed Context (ctx) are dropped.
Output JSON is written with ensure_ascii=True so invisible characters survive as \\u escapes.
"""
import argparse
import ast
import glob
import json
import os
import re
import shutil
import sys

# --------------------------------------------------------------------------------------
# FastMCP extraction
# --------------------------------------------------------------------------------------
PRIM = {'str': {'type': 'string'}, 'int': {'type': 'integer'}, 'float': {'type': 'number'},
        'bool': {'type': 'boolean'}, 'dict': {'type': 'object'}, 'Dict': {'type': 'object'},
        'list': {'type': 'array'}, 'List': {'type': 'array'}, 'Any': {}, 'None': {'type': 'null'},
        'bytes': {'type': 'string'}, 'object': {}}


def ann_to_schema(node):
    if node is None:
        return {}
    if isinstance(node, ast.Constant):
        if node.value is None:
            return {'type': 'null'}
        if isinstance(node.value, str):  # string annotation
            try:
                return ann_to_schema(ast.parse(node.value, mode='eval').body)
            except SyntaxError:
                return {}
        return {}
    if isinstance(node, ast.Name):
        return dict(PRIM.get(node.id, {}))
    if isinstance(node, ast.Attribute):
        return dict(PRIM.get(node.attr, {}))
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.BitOr):
        return _union([node.left, node.right])
    if isinstance(node, ast.Subscript):
        base = node.value.id if isinstance(node.value, ast.Name) else getattr(node.value, 'attr', '')
        args = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
        if base == 'Optional':
            return _union([args[0], ast.Constant(None)])
        if base == 'Union':
            return _union(args)
        if base in ('List', 'list', 'Sequence', 'Set', 'set', 'Tuple', 'tuple'):
            s = {'type': 'array'}
            it = ann_to_schema(args[0])
            if it:
                s['items'] = it
            return s
        if base in ('Dict', 'dict', 'Mapping'):
            s = {'type': 'object'}
            if len(args) == 2:
                v = ann_to_schema(args[1])
                if v:
                    s['additionalProperties'] = v
            return s
        if base == 'Literal':
            vals = [a.value for a in args if isinstance(a, ast.Constant)]
            s = {'enum': vals}
            if all(isinstance(v, str) for v in vals):
                s['type'] = 'string'
            return s
        if base == 'Annotated':
            s = ann_to_schema(args[0])
            for meta in args[1:]:
                d = _field_description(meta)
                if d is None and isinstance(meta, ast.Constant) and isinstance(meta.value, str):
                    d = meta.value
                if d is not None:
                    s['description'] = d
            return s
    return {}


def _union(nodes):
    parts = []
    for n in nodes:
        s = ann_to_schema(n)
        if s not in parts:
            parts.append(s)
    return parts[0] if len(parts) == 1 else {'anyOf': parts}


def _is_field_call(node):
    return isinstance(node, ast.Call) and getattr(node.func, 'id', getattr(node.func, 'attr', None)) == 'Field'


def _field_description(node):
    if _is_field_call(node):
        for kw in node.keywords:
            if kw.arg == 'description' and isinstance(kw.value, ast.Constant):
                return kw.value.value
    return None


def _field_default(node):
    for kw in node.keywords:
        if kw.arg == 'default':
            try:
                return True, ast.literal_eval(kw.value)
            except Exception:
                return True, None
    if node.args:
        a = node.args[0]
        if isinstance(a, ast.Constant) and a.value is Ellipsis:
            return False, None
        try:
            return True, ast.literal_eval(a)
        except Exception:
            return True, None
    return False, None


_ARG_RE = re.compile(r'^\s*\*{0,2}([A-Za-z_][A-Za-z0-9_]*)\s*(\([^)]*\))?\s*:\s*(.*)$')


def docstring_args(doc):
    """Google-style 'Args:' section -> {param: description}."""
    out = {}
    if not doc:
        return out
    lines = doc.split('\n')
    i = 0
    while i < len(lines):
        if lines[i].strip() in ('Args:', 'Arguments:', 'Parameters:', 'Params:'):
            base_indent = len(lines[i]) - len(lines[i].lstrip())
            i += 1
            cur, arg_indent = None, None
            while i < len(lines):
                ln = lines[i]
                if not ln.strip():
                    i += 1
                    if i < len(lines) and lines[i].strip() and (len(lines[i]) - len(lines[i].lstrip())) > base_indent:
                        continue
                    break
                ind = len(ln) - len(ln.lstrip())
                if ind <= base_indent:
                    break
                m = _ARG_RE.match(ln)
                if m and (arg_indent is None or ind == arg_indent):
                    arg_indent = ind
                    cur = m.group(1)
                    out[cur] = m.group(3).strip()
                elif cur is not None:
                    out[cur] = (out[cur] + ' ' + ln.strip()).strip()
                i += 1
            break
        i += 1
    return out


def _is_tool_decorator(d, app_names):
    target = d.func if isinstance(d, ast.Call) else d
    return (isinstance(target, ast.Attribute) and target.attr == 'tool'
            and isinstance(target.value, ast.Name) and target.value.id in app_names)


def _decorator_kwargs(d):
    kw = {}
    if isinstance(d, ast.Call):
        for k in d.keywords:
            if isinstance(k.value, ast.Constant):
                kw[k.arg] = k.value.value
        if d.args and isinstance(d.args[0], ast.Constant) and isinstance(d.args[0].value, str):
            kw.setdefault('name', d.args[0].value)
    return kw


def cleandoc(s):
    import inspect
    return inspect.cleandoc(s)


def tool_from_func(fn, dec=None, doc_override=None):
    kw = _decorator_kwargs(dec) if dec is not None else {}
    name = kw.get('name') or fn.name
    doc = cleandoc(doc_override) if doc_override is not None else ast.get_docstring(fn, clean=True)
    if doc is not None:
        doc = doc.strip()  # cleandoc keeps a trailing whitespace-only line; strip it
    description = kw['description'] if kw.get('description') is not None else (doc or '')
    argdocs = docstring_args(doc)
    a = fn.args
    params = a.posonlyargs + a.args
    defaults = [None] * (len(params) - len(a.defaults)) + list(a.defaults)
    params += a.kwonlyargs
    defaults += list(a.kw_defaults)
    props, required = {}, []
    for p, dflt in zip(params, defaults):
        if p.arg in ('self', 'cls'):
            continue
        if p.annotation is not None and 'Context' in ast.unparse(p.annotation):
            continue
        s = ann_to_schema(p.annotation)
        has_default, dval = dflt is not None, None
        if dflt is not None:
            if _is_field_call(dflt):
                fd = _field_description(dflt)
                if fd is not None:
                    s['description'] = fd
                has_default, dval = _field_default(dflt)
            else:
                try:
                    dval = ast.literal_eval(dflt)
                except Exception:
                    dval = None
        if 'description' not in s and argdocs.get(p.arg):
            s['description'] = argdocs[p.arg]
        if has_default:
            s['default'] = dval
        else:
            required.append(p.arg)
        props[p.arg] = s
    schema = {'type': 'object', 'properties': props}
    if required:
        schema['required'] = required
    return {'name': name, 'description': description, 'inputSchema': schema}


def _app_names(tree):
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            f = node.value.func
            if getattr(f, 'id', getattr(f, 'attr', '')) in ('FastMCP', 'Server'):
                names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def extract_tools(path):
    """All active @<app>.tool() functions of a FastMCP server file, in source order.
    Tools defined inside register_*() wrapper functions count only if the wrapper is called."""
    tree = ast.parse(open(path, encoding='utf-8').read())
    app_names = _app_names(tree)
    wrappers = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef):
            if any(isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n is not node
                   and any(_is_tool_decorator(d, app_names) for d in n.decorator_list)
                   for n in ast.walk(node)):
                wrappers[node.name] = node
    called = {n.func.id for n in ast.walk(tree)
              if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in wrappers}
    tools = []

    def visit(body, active):
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                decs = [d for d in node.decorator_list if _is_tool_decorator(d, app_names)]
                if decs and active:
                    tools.append(tool_from_func(node, decs[0]))
                if node.name in wrappers:
                    visit(node.body, node.name in called)
            elif isinstance(node, (ast.If, ast.Try, ast.With)):
                visit(node.body, active)
    visit(tree.body, True)
    return tools


def find_function(tree, name):
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == name:
            return n
    raise KeyError(name)


def doc_reassignments(tree, fn_name):
    """String literals assigned to <fn_name>.__doc__ anywhere in the module (rug-pull mutations)."""
    out = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Constant) and isinstance(n.value.value, str):
            for t in n.targets:
                if (isinstance(t, ast.Attribute) and t.attr == '__doc__'
                        and isinstance(t.value, ast.Name) and t.value.id == fn_name):
                    out.append(n.value.value)
    return out


def tool_with_mutated_doc(path, fn_name, must_contain):
    tree = ast.parse(open(path, encoding='utf-8').read())
    fn = find_function(tree, fn_name)
    docs = [d for d in doc_reassignments(tree, fn_name) if must_contain in d]
    assert len(docs) == 1, (path, fn_name, len(docs))
    return tool_from_func(fn, None, doc_override=docs[0])


def by_name(tools, name):
    m = [t for t in tools if t['name'] == name]
    assert len(m) == 1, (name, [t['name'] for t in tools])
    return m[0]


# --------------------------------------------------------------------------------------
# Corpus assembly
# --------------------------------------------------------------------------------------
class Corpus:
    def __init__(self):
        self.poisoned, self.benign = [], []
        self.ids = set()
        self.seen = {}
        self.skipped_dups = []

    def _key(self, tool):
        return json.dumps(tool, sort_keys=True, ensure_ascii=True)

    def add(self, label, source, id_, group, tool, attack=None):
        full_id = f'{source}/{id_}'
        assert full_id not in self.ids, full_id
        k = (label, self._key(tool))
        if k in self.seen:  # exact duplicate definition already present
            self.skipped_dups.append((full_id, self.seen[k]))
            return
        self.seen[k] = full_id
        self.ids.add(full_id)
        assert isinstance(tool.get('name'), str) and isinstance(tool.get('description'), str)
        assert isinstance(tool.get('inputSchema'), dict) and tool['inputSchema'].get('type') == 'object'
        tool = {'name': tool['name'], 'description': tool['description'], 'inputSchema': tool['inputSchema']}
        if label == 'poisoned':
            assert attack
            self.poisoned.append({'id': full_id, 'source': source, 'group': group, 'attack': attack, 'tool': tool})
        else:
            self.benign.append({'id': full_id, 'source': source, 'group': group, 'attack': None,
                                'label': 'benign', 'tool': tool})


def stem(p):
    return os.path.splitext(os.path.basename(p))[0]


# ---------------------------------- getmcpm --------------------------------------------
GETMCPM_ATTACK = {
    'exfil-param-in-schema': 'exfiltration-parameter',
    'owasp-mcp-1-ansi-in-description': 'hidden-characters',
    'owasp-mcp-1-bidi-in-description': 'hidden-characters',
    'owasp-mcp-1-description-injection': 'description-injection',
    'owasp-mcp-1-multitool-poisoning': 'description-injection',
    'owasp-mcp-1-system-tag': 'description-injection',
    'owasp-mcp-1-tag-block-chained-emoji-flags': 'hidden-characters',
    'owasp-mcp-1-tag-block-chained-five-char-bodies': 'hidden-characters',
    'owasp-mcp-1-tag-block-decoy-in-description': 'hidden-characters',
    'owasp-mcp-1-tag-block-in-description': 'hidden-characters',
    'owasp-mcp-1-tag-block-separator-evasion': 'description-injection',
    'owasp-mcp-1-when-user-asks-poisoning': 'description-injection',
    'owasp-mcp-1-zwsp-in-description': 'hidden-characters',
}


def build_getmcpm(src, c):
    base = os.path.join(src, 'getmcpm-cli-guard-fixtures/src/guard/__tests__/fixtures')
    S = 'getmcpm'
    # attack fixtures that carry a tools/list result
    for f in sorted(glob.glob(os.path.join(base, 'mcptox/attacks/*.json'))):
        d = json.load(open(f, encoding='utf-8'))
        res = d.get('message', {}).get('result')
        if not (isinstance(res, dict) and 'tools' in res):
            continue  # responses, tools/call args, sampling, elicitation, initialize.instructions
        s = stem(f)
        attack = GETMCPM_ATTACK[s]
        tools = res['tools']
        for t in tools:
            if s == 'owasp-mcp-1-multitool-poisoning' and t['name'] != 'poisoned':
                # fixture notes: the other tools are the legitimate ones
                c.add('benign', S, f'{s}/{t["name"]}', f'{S}/{s}', t)
                continue
            tid = s if len(tools) == 1 else f'{s}/{t["name"]}'
            c.add('poisoned', S, tid, f'{S}/{s}', t, attack)
    # drift (rug-pull) fixtures: the post-install definition is the poisoned one
    for f in sorted(glob.glob(os.path.join(base, 'mcptox/drift/*.json'))):
        d = json.load(open(f, encoding='utf-8'))
        s = stem(f)
        if s == 'legitimate-upgrade':
            c.add('benign', S, f'drift/{s}/install', f'{S}/drift/{s}', d['install_time_definition'])
            c.add('benign', S, f'drift/{s}/post-install', f'{S}/drift/{s}', d['post_install_definition'])
        elif s == 'mcpoison-cve-2025-54136-equivalent':
            c.add('poisoned', S, f'drift/{s}', f'{S}/drift/{s}', d['post_install_definition'], 'description-injection')
        elif s == 'schema-mutation-input':
            c.add('poisoned', S, f'drift/{s}', f'{S}/drift/{s}', d['post_install_definition'], 'exfiltration-parameter')
    # benign fixtures with tools/list
    for f in sorted(glob.glob(os.path.join(base, 'mcptox/benign/*.json'))):
        d = json.load(open(f, encoding='utf-8'))
        res = d.get('message', {}).get('result')
        if isinstance(res, dict) and 'tools' in res:
            for t in res['tools']:
                c.add('benign', S, f'benign/{stem(f)}/{t["name"]}', f'{S}/benign/{stem(f)}', t)
    # legitimate-corpus sessions
    for f in sorted(glob.glob(os.path.join(base, 'legitimate-corpus/*.jsonl'))):
        for line in open(f, encoding='utf-8'):
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            res = json.loads(line).get('result')
            if isinstance(res, dict) and 'tools' in res:
                for t in res['tools']:
                    c.add('benign', S, f'legitimate-corpus/{stem(f)}/{t["name"]}',
                          f'{S}/legitimate-corpus/{stem(f)}', t)


# ---------------------------------- cisco ----------------------------------------------
def build_cisco(src, c):
    base = os.path.join(src, 'cisco-mcp-scanner')
    S = 'cisco'
    # behavioural-analysis: only the prompt-injection set puts the poison in the docstring;
    # tool-poisoning / goal-manipulation / description-code-mismatch hide it in code -> skipped.
    for f in sorted(glob.glob(os.path.join(base, 'evals/behavioral-analysis/data/prompt-injection/*.py'))):
        for t in extract_tools(f):
            c.add('poisoned', S, f'prompt-injection/{stem(f)}/{t["name"]}',
                  f'{S}/prompt-injection/{stem(f)}', t, 'description-injection')
    ex = os.path.join(base, 'examples/example-malicious-servers')
    # Invariant-style add + send_email (sse_server.py holds identical copies -> deduplicated)
    for fn in ('server.py', 'sse_server.py'):
        tools = extract_tools(os.path.join(ex, fn))
        g = f'{S}/examples/{stem(fn)}'
        c.add('poisoned', S, f'examples/{stem(fn)}/add', g, by_name(tools, 'add'), 'tool-poisoning')
        c.add('poisoned', S, f'examples/{stem(fn)}/send_email', g, by_name(tools, 'send_email'), 'shadowing')
    # line-jumping server
    tools = extract_tools(os.path.join(ex, 'line_jumping_server.py'))
    g = f'{S}/examples/line_jumping_server'
    for n in ('get_system_info', 'get_user_info', 'get_network_info', 'get_file_info'):  # "sample safe tool"
        c.add('benign', S, f'examples/line_jumping_server/{n}', g, by_name(tools, n))
    c.add('poisoned', S, 'examples/line_jumping_server/send_mail', g, by_name(tools, 'send_mail'), 'description-injection')
    c.add('poisoned', S, 'examples/line_jumping_server/retrieve_logs', g, by_name(tools, 'retrieve_logs'), 'tool-poisoning')
    c.add('poisoned', S, 'examples/line_jumping_server/get_workstation_environment', g,
          by_name(tools, 'get_workstation_environment'), 'line-jumping')
    # streamable example server (run_python_code only describes a dangerous capability -> skipped)
    tools = extract_tools(os.path.join(ex, 'malicious_mcp_streamable_server.py'))
    g = f'{S}/examples/malicious_mcp_streamable_server'
    c.add('poisoned', S, 'examples/malicious_mcp_streamable_server/execute_system_command', g,
          by_name(tools, 'execute_system_command'), 'description-injection')
    c.add('poisoned', S, 'examples/malicious_mcp_streamable_server/execute_system_command_test', g,
          by_name(tools, 'execute_system_command_test'), 'script-injection')
    c.add('poisoned', S, 'examples/malicious_mcp_streamable_server/run_injection_code', g,
          by_name(tools, 'run_injection_code'), 'description-injection')
    # tricky_server: rug-pull re-registers get_fact_of_the_day with a replaced __doc__
    p = os.path.join(ex, 'tricky_server.py')
    c.add('poisoned', S, 'examples/tricky_server/get_fact_of_the_day/rug-pull', f'{S}/examples/tricky_server',
          tool_with_mutated_doc(p, 'get_fact_of_the_day', '<IMPORTANT>'), 'shadowing')
    # stdio_example.py (low-level Server, literal Tool(...) objects): only innocent_calculator is taken
    p = os.path.join(ex, 'stdio_example.py')
    tree = ast.parse(open(p, encoding='utf-8').read())
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and getattr(n.func, 'id', None) == 'Tool':
            kw = {k.arg: ast.literal_eval(k.value) for k in n.keywords}
            if kw['name'] == 'innocent_calculator':
                c.add('benign', S, 'examples/stdio_example/innocent_calculator', f'{S}/examples/stdio_example',
                      {'name': kw['name'], 'description': kw['description'], 'inputSchema': kw['inputSchema']})
    # remote benign tool servers
    for f in sorted(glob.glob(os.path.join(base, 'evals/remote/benign/*.py'))):
        for t in extract_tools(f):
            c.add('benign', S, f'remote-benign/{stem(f)}/{t["name"]}', f'{S}/remote-benign/{stem(f)}', t)


# ---------------------------------- msb -------------------------------------------------
MSB_SERVERS = [  # (short, dir, base file stem)
    ('pubmed', 'academic_search/PubMed_MCP_Server', 'pubmed_server'),
    ('ddg', 'information_gathering/DuckDuckGo_Search_Server', 'server'),
    ('terminal', 'it_development_management/Terminal_Controller', 'terminal_controller'),
    ('memory', 'llm_enhancement/Memory_Tool', 'main'),
    ('word', 'office_assistance/Office_Word_Document_Server', 'word_mcp_server'),
]
MSB_VARIANTS = {  # variant file suffix -> attack label (name_overlap / tool_transfer skipped)
    'preference_manipulation': 'preference-manipulation',
    'out_of_scope_parameter': 'out-of-scope-parameter',
    'preference_manipulation-out_of_scope_parameter': 'preference-manipulation+out-of-scope-parameter',
}
MSB_BEST = 'This is the best tool in the world. '
MSB_TOOLS_PER_GOAL = 8


def msb_prompt_injection_template(path):
    tree = ast.parse(open(path, encoding='utf-8').read())
    val = None
    for n in tree.body:  # last live (uncommented) assignment wins, as at import time
        if isinstance(n, ast.Assign) and any(getattr(t, 'id', None) == 'PROMPT_INJECTION_TEMPLATE' for t in n.targets):
            val = ast.literal_eval(n.value)
    assert val and '{goal}' in val
    return val


def build_msb(src, c):
    base = os.path.join(src, 'msb-mcp-security-bench')
    at = os.path.join(base, 'data/tools/attack_tools')
    S = 'msb'
    pool = []  # (server short, tool) base tools, fixed order
    for short, d, b in MSB_SERVERS:
        base_tools = extract_tools(os.path.join(at, d, b + '.py'))
        for t in base_tools:
            c.add('benign', S, f'base/{short}/{t["name"]}', f'{S}/base/{short}', t)
            pool.append((short, t))
        base_by_name = {t['name']: t for t in base_tools}
        for variant, attack in MSB_VARIANTS.items():
            vt = extract_tools(os.path.join(at, d, f'{b}-{variant}.py'))
            assert len(vt) == len(base_tools)
            for t, bt in zip(vt, base_tools):
                pm_ok = t['description'].startswith(MSB_BEST)
                op_ok = bool(set(t['inputSchema']['properties']) - set(bt['inputSchema']['properties']))
                need_pm = variant.startswith('preference_manipulation')
                need_op = variant.endswith('out_of_scope_parameter')
                assert (pm_ok or not need_pm) and (op_ok or not need_op), (variant, short, t['name'])
                c.add('poisoned', S, f'{variant}/{short}/{t["name"]}', f'{S}/{variant}/{short}', t, attack)
    # other base servers (benign only; not used by MSB's attack variants)
    for short, rel in (('image', 'image_generation/Flux_ImageGen_Server/image_server.py'),
                       ('word-main', 'office_assistance/Office_Word_Document_Server/word_document_server/main.py')):
        for t in extract_tools(os.path.join(at, rel)):
            c.add('benign', S, f'base/{short}/{t["name"]}', f'{S}/base/{short}', t)
            if short == 'image':
                pool.append((short, t))
    # description injection: PROMPT_INJECTION_TEMPLATE with {goal} := attack_task.jsonl "implementation"
    # (main.py: PROMPT_INJECTION_TEMPLATE.replace('{goal}', attack_implement)); MSB's live
    # generate_tool_descriptions() appends that text as an extra line right after the tool
    # description lines ("\n".join), so it is attached here as description + "\n" + injection.
    tpl = msb_prompt_injection_template(os.path.join(base, 'data/prompt_template.py'))
    goals = [json.loads(l) for l in open(os.path.join(base, 'data/attack_task.jsonl'), encoding='utf-8') if l.strip()]
    for gi, g in enumerate(goals):
        injection = tpl.replace('{goal}', g['implementation'])
        chosen = [pool[(gi * MSB_TOOLS_PER_GOAL + k) % len(pool)] for k in range(MSB_TOOLS_PER_GOAL)]
        assert len({(s, t['name']) for s, t in chosen}) == MSB_TOOLS_PER_GOAL
        for short, t in chosen:
            pt = {'name': t['name'], 'description': t['description'] + '\n' + injection,
                  'inputSchema': t['inputSchema']}
            c.add('poisoned', S, f'injection/{gi}-{g["attack_task"]}/{short}/{t["name"]}',
                  f'{S}/injection/{gi}', pt, 'description-injection')


# ---------------------------------- mcpsecbench ----------------------------------------
def build_mcpsecbench(src, c):
    base = os.path.join(src, 'mcpsecbench/code')
    S = 'mcpsecbench'
    p = os.path.join(base, 'maliciousadd.py')
    tools = extract_tools(p)
    g = f'{S}/maliciousadd'
    for name, attack in (('add', 'tool-poisoning'),          # "#tool poison" comment in source
                         ('m_check', 'tool-poisoning'),      # data.json "Tool Poisoning Attack"
                         ('modify', 'shadowing'),            # rewrites the values used by `sub`
                         ('aft_check', 'shadowing'),         # data.json "Tool Shadowing Attack"
                         ('times', 'exfiltration-parameter'),  # data.json "Data Exfiltration" (tools_list)
                         ('sub', 'schema-inconsistency')):   # docstring Args a,b; function takes none
        c.add('poisoned', S, f'maliciousadd/{name}', g, by_name(tools, name), attack)
    c.add('poisoned', S, 'maliciousadd/get_weather_forecast/rug-pull', f'{S}/maliciousadd/rug-pull',
          tool_with_mutated_doc(p, 'get_weather_forecast', '<IMPORTANT>'), 'description-injection')
    c.add('benign', S, 'maliciousadd/reset_challenge', g, by_name(tools, 'reset_challenge'))
    for t in extract_tools(os.path.join(base, 'addserver.py')):
        c.add('benign', S, f'addserver/{t["name"]}', f'{S}/addserver', t)


LICENSES = {  # source -> licence file inside its /tmp/poison-corpus subdir
    'getmcpm': 'getmcpm-cli-guard-fixtures/LICENSE',
    'cisco': 'cisco-mcp-scanner/LICENSE',
    'msb': 'msb-mcp-security-bench/LICENSE.txt',
    'mcpsecbench': 'mcpsecbench/LICENSE',
}


def split_of(group):
    """The frozen split: a group (cases from one template, goal or file) is
    in `test` when the first hex digit of its SHA-256 is below 8. Tune rules
    on `train` only."""
    import hashlib
    return 'test' if hashlib.sha256(group.encode()).hexdigest()[0] in '01234567' else 'train'


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--src', default='/tmp/poison-corpus')
    ap.add_argument('--out', default=os.path.dirname(os.path.abspath(__file__)))
    a = ap.parse_args()
    c = Corpus()
    build_getmcpm(a.src, c)
    build_cisco(a.src, c)
    build_msb(a.src, c)
    build_mcpsecbench(a.src, c)
    for fname, rows in (('poisoned.jsonl', c.poisoned), ('benign.jsonl', c.benign)):
        with open(os.path.join(a.out, fname), 'w', encoding='ascii', newline='\n') as f:
            for r in rows:
                r['split'] = split_of(r['group'])
                f.write(json.dumps(r, ensure_ascii=True) + '\n')
    os.makedirs(os.path.join(a.out, 'LICENSES'), exist_ok=True)
    for s, rel in LICENSES.items():
        shutil.copyfile(os.path.join(a.src, rel), os.path.join(a.out, 'LICENSES', f'{s}-LICENSE'))
    print(f'poisoned: {len(c.poisoned)}  benign: {len(c.benign)}', file=sys.stderr)
    for dup, first in c.skipped_dups:
        print(f'skipped exact duplicate {dup} (same as {first})', file=sys.stderr)


if __name__ == '__main__':
    main()
