"""The model half of audit_python.py: AST helpers and the facts about a model's structure
(layer containers, stable layer ids, embeddings and heads per pipeline stage)."""
import ast
import re

ORDERED_CONTAINERS = {"ModuleList", "Sequential", "ModuleDict", "ParameterList"}
LAYER_ATTRS = {"layers", "blocks", "h", "layer", "decoder_layers", "transformer_layers",
               "transformer_blocks", "encoder_layers"}
HEAD_ATTRS = {"head", "lm_head", "output", "output_layer", "out_head", "unembed", "logits"}
STAGE_WORDS = ("stage", "first", "last", "pre_process", "post_process", "pp_rank", "pipeline")
BLOCK_CLASS = re.compile(r"(Block|Layer)$")
LAYER_ID = re.compile(r"layer_?(id|idx|index|number|num|no)$", re.IGNORECASE)


def last_name(node):
    """`a.b.c` -> "c", `f` -> "f", anything else -> ""."""
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Name):
        return node.id
    return ""


def dotted(node):
    if isinstance(node, ast.Attribute):
        base = dotted(node.value)
        return f"{base}.{node.attr}" if base else node.attr
    return node.id if isinstance(node, ast.Name) else ""

def names_in(node):
    """Every Name id and Attribute attr under `node`, lower-cased."""
    out = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id.lower())
        elif isinstance(sub, ast.Attribute):
            out.add(sub.attr.lower())
    return out


def mentions_stage(test):
    return any(word in name for name in names_in(test) for word in STAGE_WORDS)


class ModelFacts:
    """Mixed into audit_python.FileReader, which keeps class_stack, if_stack and loop_vars as
    it walks; these methods fill its containers and parts."""

    def layer_assignment(self, stmt, target, value):
        """Containers of blocks, embeddings and heads assigned to `self.X` in a module class."""
        cls = self.class_stack[-1] if self.class_stack else None
        if cls is None or cls["kind"] != "module":
            return
        if isinstance(target, ast.Subscript) and isinstance(target.value, ast.Attribute):
            container = cls["containers"].get(target.value.attr)
            if container is not None and isinstance(value, ast.Call):
                self.element(container, value, keyed=self.uses_loop_var(target.slice))
            return
        if not isinstance(target, ast.Attribute) or dotted(target.value) != "self":
            return
        attr = target.attr
        call = value.body if isinstance(value, ast.IfExp) else value
        staged = any(mentions_stage(t) for t in self.if_stack) or \
            (isinstance(value, ast.IfExp) and mentions_stage(value.test))
        ctor = last_name(call.func) if isinstance(call, ast.Call) else ""
        if "Embedding" in ctor:
            self.parts.append({"class": cls["name"], "attr": attr, "line": stmt.lineno,
                               "role": "embedding", "staged": staged, "ctor": ctor})
        elif ctor and (attr in HEAD_ATTRS or ctor.endswith("Head")):
            self.parts.append({"class": cls["name"], "attr": attr, "line": stmt.lineno,
                               "role": "head", "staged": staged, "ctor": ctor})
        kind = None
        if ctor in ORDERED_CONTAINERS:
            kind = ctor
        elif ctor in ("dict", "set") or isinstance(call, (ast.Dict, ast.DictComp, ast.Set, ast.SetComp)):
            kind = "set" if ctor == "set" or isinstance(call, (ast.Set, ast.SetComp)) else "dict"
        if kind is None:
            return
        container = {"class": cls["name"], "attr": attr, "line": stmt.lineno, "kind": kind,
                     "element": "", "element_line": 0, "id_passed": False, "keyed_by_id": False,
                     "layer_attr": attr in LAYER_ATTRS}
        cls["containers"][attr] = container
        self.containers.append(container)
        self.scan_elements(container, call, [])

    def scan_elements(self, container, node, loop_vars):
        """Block constructions inside a container expression, with the comprehension's loop
        variables, and dict keys that use them."""
        if isinstance(node, (ast.ListComp, ast.SetComp, ast.GeneratorExp, ast.DictComp)):
            variables = loop_vars + [names_in(g.target) for g in node.generators]
            if isinstance(node, ast.DictComp):
                keyed = any(names_in(node.key) & v for v in variables)
                self.scan_elements(container, node.value, variables)
                container["keyed_by_id"] = container["keyed_by_id"] or keyed
            else:
                self.scan_elements(container, node.elt, variables)
            return
        if isinstance(node, ast.Call):
            name = last_name(node.func)
            if BLOCK_CLASS.search(name) or (container["layer_attr"] and name not in
                                            ORDERED_CONTAINERS | {"dict", "OrderedDict", "range"}):
                self.element(container, node, loop_vars=loop_vars)
                return
        for child in ast.iter_child_nodes(node):
            self.scan_elements(container, child, loop_vars)

    def uses_loop_var(self, node, loop_vars=None):
        variables = loop_vars if loop_vars is not None else self.loop_vars
        return any(names_in(node) & v for v in variables)

    def element(self, container, call, keyed=False, loop_vars=None):
        name = last_name(call.func)
        if not (BLOCK_CLASS.search(name) or container["layer_attr"]):
            return
        container["element"] = container["element"] or name
        container["element_line"] = container["element_line"] or call.lineno
        variables = loop_vars if loop_vars is not None else self.loop_vars
        passed = any(kw.arg and LAYER_ID.search(kw.arg) for kw in call.keywords) or \
            any(LAYER_ID.search(n) for a in call.args + [k.value for k in call.keywords] for n in names_in(a)) or \
            any(self.uses_loop_var(a, variables) for a in call.args + [k.value for k in call.keywords])
        container["id_passed"] = container["id_passed"] or passed
        container["keyed_by_id"] = container["keyed_by_id"] or keyed

    def visit_Expr(self, node):
        call = node.value
        if isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute) and \
                isinstance(call.func.value, ast.Attribute) and self.class_stack:
            container = self.class_stack[-1]["containers"].get(call.func.value.attr)
            if container is not None and call.func.attr in ("append", "add_module", "extend") and call.args:
                keyed = call.func.attr == "add_module" and self.uses_loop_var(call.args[0])
                for arg in call.args:
                    if isinstance(arg, ast.Call):
                        self.element(container, arg, keyed=keyed)
        self.generic_visit(node)
