"""Reads Python sources with Python's own `ast` for `bigmac-bringup audit`; runs nothing of them.

Usage: audit_python.py FILE...  Prints one JSON object: {"files": [FACTS, ...]}, one entry per
FILE in order. FACTS holds what the audit needs as neutral facts; which names are parallel
settings is decided by the caller (src/audit/setting_catalog.cpp), not here:

  names    every place a name is given a value or read: argparse options, dataclass and class
           fields, parameter defaults, dict literal keys, call keywords, assignments, attribute
           and string-key reads, os.environ reads and writes; with line, literal value (or the
           expression's text) and context (class, class kind, enclosing dict keys)
  imports  imported modules; strings: string literals that look like file paths
  model    classes, layer containers (kind, element, whether a stable layer id is given),
           embeddings and output heads (whether they are created per pipeline stage)
  entry    `if __name__ == "__main__"`, init_process_group calls, print/log calls and the
           names they print

A file that does not parse gives {"path", "error": {"line", "column", "message"}}.
"""
import ast
import json
import os
import re
import sys

# The model half of the reader lives beside this file.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from audit_python_model import ModelFacts, dotted, last_name, mentions_stage, names_in  # noqa: E402

PRINT_NAMES = {"print", "pprint", "info", "debug", "warning", "warn", "write", "log", "echo",
               "print_rank_0", "print_rank_last", "log_rank_0", "rank_zero_info", "log_dist"}
CONFIG_OBJECTS = {"args", "cfg", "config", "conf", "opt", "opts", "hparams", "settings",
                  "training_args", "job_config", "train_config", "run_config", "params"}
PATH_LIKE = re.compile(r"(^|/)[\w.-]+\.(ya?ml|toml|json|py|sh|sbatch|slurm)$")
INIT_CALLS = {"init_process_group", "initialize_model_parallel", "init_distributed",
              "initialize_megatron", "init_device_mesh"}


def literal(node):
    """(True, JSON value) for a literal expression, else (False, None)."""
    try:
        value = ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return False, None
    return True, jsonable(value)


def jsonable(value):
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    return repr(value)


def text(node):
    try:
        return ast.unparse(node)[:200]
    except Exception:  # unparse of an odd node must not lose the whole file
        return ""


def env_key(node):
    """The variable name of `os.environ[...]`'s key, or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return None


def is_environ(node):
    return dotted(node) in ("os.environ", "environ")


class FileReader(ModelFacts, ast.NodeVisitor):
    def __init__(self):
        self.names, self.imports, self.strings = [], [], []
        self.classes, self.containers, self.parts, self.stage_clears, self.ties = [], [], [], [], []
        self.main_line, self.init_lines, self.prints = None, [], []
        self.class_stack, self.if_stack, self.loop_vars, self.dict_keys = [], [], [], []
        self.in_print = 0  # dicts built only to be printed hold no settings
        self.module_level = True

    # ---- recording ---------------------------------------------------------------------
    def context(self):
        cls = self.class_stack[-1] if self.class_stack else None
        return {"class": cls["name"] if cls else "", "class_kind": cls["kind"] if cls else "",
                "keys": list(self.dict_keys)}

    def name(self, node, name, role, value_node=None, extra=None):
        entry = {"line": node.lineno, "name": name, "role": role, "context": self.context()}
        if value_node is not None:
            ok, value = literal(value_node)
            entry["literal"] = ok
            if ok:
                entry["value"] = value
            else:
                entry["expr"] = text(value_node)
        entry.update(extra or {})
        self.names.append(entry)

    # ---- structure ---------------------------------------------------------------------
    def visit_ClassDef(self, node):
        bases = [dotted(b) for b in node.bases]
        decorators = [dotted(d.func if isinstance(d, ast.Call) else d) for d in node.decorator_list]
        if any(b.endswith(("Module", "Model")) for b in bases):
            kind = "module"
        elif any(d.endswith("dataclass") for d in decorators):
            kind = "dataclass"
        else:
            kind = "class"
        self.classes.append({"name": node.name, "line": node.lineno, "bases": bases, "kind": kind})
        self.class_stack.append({"name": node.name, "kind": kind, "containers": {}})
        for stmt in node.body:
            if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name) and stmt.value:
                self.field(stmt, stmt.target.id, stmt.value)
            elif isinstance(stmt, ast.Assign):
                for target in stmt.targets:
                    if isinstance(target, ast.Name):
                        self.field(stmt, target.id, stmt.value)
                self.visit(stmt.value)
            else:
                self.visit(stmt)
        self.class_stack.pop()

    def field(self, stmt, name, value):
        if isinstance(value, ast.Call) and last_name(value.func) == "field":
            for kw in value.keywords:
                if kw.arg == "default":
                    self.name(stmt, name, "field", kw.value)
            return
        self.name(stmt, name, "field", value)

    def visit_FunctionDef(self, node):
        args = node.args
        positional = args.posonlyargs + args.args
        for arg, default in zip(positional[len(positional) - len(args.defaults):], args.defaults):
            self.name(default, arg.arg, "param", default)
        for arg, default in zip(args.kwonlyargs, args.kw_defaults):
            if default is not None:
                self.name(default, arg.arg, "param", default)
        was_module_level, self.module_level = self.module_level, False
        for stmt in node.body:
            self.visit(stmt)
        self.module_level = was_module_level

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node):
        if self.module_level and isinstance(node.test, ast.Compare) and \
                last_name(node.test.left) == "__name__":
            self.main_line = node.lineno
        self.visit(node.test)
        self.if_stack.append(node.test)
        for stmt in node.body + node.orelse:
            self.visit(stmt)
        self.if_stack.pop()

    def visit_For(self, node):
        self.visit(node.iter)
        self.loop_vars.append(names_in(node.target))
        for stmt in node.body + node.orelse:
            self.visit(stmt)
        self.loop_vars.pop()

    def visit_Import(self, node):
        for alias in node.names:
            self.imports.append({"module": alias.name, "level": 0, "line": node.lineno})

    def visit_ImportFrom(self, node):
        module = node.module or ""
        self.imports.append({"module": module, "level": node.level, "line": node.lineno})
        for alias in node.names:  # `from pkg import module` imports a module too
            self.imports.append({"module": f"{module}.{alias.name}" if module else alias.name,
                                 "level": node.level, "line": node.lineno, "optional": True})

    def visit_Constant(self, node):
        if isinstance(node.value, str) and len(node.value) < 300 and PATH_LIKE.search(node.value) \
                and not any(c.isspace() for c in node.value):
            self.strings.append({"line": node.lineno, "text": node.value})

    # ---- values ------------------------------------------------------------------------
    def visit_Dict(self, node):
        for key, value in zip(node.keys, node.values):
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                if not isinstance(value, ast.Dict) and not self.in_print:
                    self.name(key, key.value, "dict", value)
                self.dict_keys.append(key.value)
                self.visit(value)
                self.dict_keys.pop()
            else:
                if key is not None:
                    self.visit(key)
                self.visit(value)

    def visit_Assign(self, node):
        for target in node.targets:
            if isinstance(target, (ast.Tuple, ast.List)) and isinstance(node.value, (ast.Tuple, ast.List)) \
                    and len(target.elts) == len(node.value.elts):
                for t, v in zip(target.elts, node.value.elts):
                    self.assign(node, t, v)
            else:
                self.assign(node, target, node.value)
        self.visit(node.value)
        for target in node.targets:
            self.visit_target(target)

    def visit_AnnAssign(self, node):
        if node.value is not None:
            self.assign(node, node.target, node.value)
            self.visit(node.value)

    def visit_target(self, target):
        """Reads inside an assignment target (`cfg[key]`'s cfg, `a.b.c = ...`'s a.b)."""
        if isinstance(target, (ast.Attribute, ast.Subscript)):
            self.visit(target.value)
            if isinstance(target, ast.Subscript):
                self.visit(target.slice)

    def assign(self, stmt, target, value):
        if isinstance(target, ast.Subscript) and is_environ(target.value):
            key = env_key(target.slice)
            if key:
                self.name(stmt, key, "env_write", value)
            return
        if isinstance(target, ast.Attribute) and isinstance(value, ast.Constant) and value.value is None:
            if any(mentions_stage(t) for t in self.if_stack):
                self.stage_clears.append({"attr": target.attr, "line": stmt.lineno})
        if isinstance(target, ast.Attribute) and target.attr == "weight" and \
                isinstance(value, ast.Attribute) and value.attr == "weight":
            self.ties.append({"line": stmt.lineno, "text": text(stmt)})
        self.layer_assignment(stmt, target, value)
        if isinstance(target, ast.Name):
            kind = "constant" if self.module_level else "local"
            self.name(stmt, target.id, "assign", value, {"target": kind})
        elif isinstance(target, ast.Attribute):
            self.name(stmt, target.attr, "assign", value, {"target": "attribute"})
        elif isinstance(target, ast.Subscript) and env_key(target.slice):
            keys, base = [], target.value
            while isinstance(base, ast.Subscript) and env_key(base.slice):
                keys.insert(0, base.slice.value)
                base = base.value
            self.dict_keys.extend(keys)
            self.name(stmt, target.slice.value, "assign", value, {"target": "key"})
            del self.dict_keys[len(self.dict_keys) - len(keys):]

    def visit_Delete(self, node):
        for target in node.targets:
            if isinstance(target, ast.Attribute) and any(mentions_stage(t) for t in self.if_stack):
                self.stage_clears.append({"attr": target.attr, "line": node.lineno})
            self.visit_target(target)

    def visit_Attribute(self, node):
        if isinstance(node.ctx, ast.Load):
            self.name(node, node.attr, "read")
        self.visit(node.value)

    def visit_Subscript(self, node):
        if isinstance(node.ctx, ast.Load):
            key = env_key(node.slice)
            if key and is_environ(node.value):
                self.name(node, key, "env_read")
            elif key:
                self.name(node, key, "read")
        self.generic_visit(node)

    def visit_Call(self, node):
        func = last_name(node.func)
        full = dotted(node.func)
        if func == "add_argument":
            self.argument(node)
        elif node.args and env_key(node.args[0]) and (full in ("os.getenv", "getenv") or (
                func in ("get", "setdefault", "pop") and isinstance(node.func, ast.Attribute)
                and is_environ(node.func.value))):
            default = node.args[1] if len(node.args) > 1 else None
            role = "env_write" if func == "setdefault" else "env_read"
            self.name(node, node.args[0].value, role, default)
        elif func == "getattr" and len(node.args) >= 2 and env_key(node.args[1]):
            self.name(node, node.args[1].value, "read")
        elif func in INIT_CALLS:
            self.init_lines.append(node.lineno)
        printing = func in PRINT_NAMES or func.lstrip("_").startswith(("print", "log_"))
        if printing:
            self.print_call(node)
        if func == "dict":
            for kw in node.keywords:
                if kw.arg:
                    self.name(kw.value, kw.arg, "dict", kw.value)
        elif func not in PRINT_NAMES:
            for kw in node.keywords:
                if kw.arg and literal(kw.value)[0]:
                    self.name(kw.value, kw.arg, "keyword", kw.value, {"call": func})
        self.in_print += printing
        self.generic_visit(node)
        self.in_print -= printing

    def argument(self, node):
        options = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        default = next((kw.value for kw in node.keywords if kw.arg == "default"), None)
        dest = next((kw.value.value for kw in node.keywords if kw.arg == "dest"
                     and isinstance(kw.value, ast.Constant)), None)
        for option in options + ([dest] if dest else []):
            if default is None:
                self.name(node, option, "argument")
            else:
                self.name(node, option, "argparse", default)

    # ---- entry -------------------------------------------------------------------------
    def print_call(self, node):
        mentioned, whole = set(), False
        for kw in node.keywords:
            if kw.arg:
                mentioned.add(kw.arg.lower())
        stack = [(arg, None) for arg in node.args] + [(kw.value, None) for kw in node.keywords]
        while stack:
            sub, parent = stack.pop()
            if isinstance(sub, ast.Name):
                mentioned.add(sub.id.lower())
                if sub.id in CONFIG_OBJECTS and not isinstance(parent, ast.Attribute):
                    whole = True
            elif isinstance(sub, ast.Attribute):
                mentioned.add(sub.attr.lower())
                if sub.attr in CONFIG_OBJECTS and not isinstance(parent, ast.Attribute):
                    whole = True
            elif isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                mentioned.update(w.lower() for w in re.findall(r"[A-Za-z_]\w*", sub.value))
            for child in ast.iter_child_nodes(sub):
                stack.append((child, sub))
        self.prints.append({"line": node.lineno, "names": sorted(mentioned), "whole": whole})

def read(path):
    try:
        with open(path, "rb") as f:
            source = f.read()
        tree = ast.parse(source, filename=path)
    except SyntaxError as err:
        return {"path": path, "error": {"line": err.lineno or 0, "column": err.offset or 0,
                                        "message": f"Python syntax error: {err.msg}"}}
    except (OSError, ValueError) as err:
        return {"path": path, "error": {"line": 0, "column": 0, "message": str(err)}}
    reader = FileReader()
    reader.visit(tree)
    return {
        "path": path, "names": reader.names, "imports": reader.imports, "strings": reader.strings,
        "model": {"classes": reader.classes, "containers": reader.containers,
                  "parts": reader.parts, "stage_clears": reader.stage_clears, "ties": reader.ties},
        "entry": {"main_line": reader.main_line, "init_lines": reader.init_lines,
                  "prints": reader.prints},
    }


def main(paths):
    sys.setrecursionlimit(10000)
    json.dump({"files": [read(p) for p in paths]}, sys.stdout)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
