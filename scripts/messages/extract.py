"""Message templates out of source files: what a library can print when something fails.

A template is a list of parts, each a literal string or HOLE (a value filled in at run time).
Python sources are read with `ast` (raise, warnings.warn, logger.warning/error/...); C and C++
sources with a small tokenizer over the macros and calls that build messages (TORCH_CHECK,
C10_THROW_ERROR, c10::str, LOG(ERROR) <<, NCCL's WARN, Gloo's GLOO_ENFORCE...).
"""

import ast
import re

HOLE = None

# ---------------------------------------------------------------------------------------------
# Templates


def join(parts):
    """Adjacent literals merged, adjacent holes collapsed, empty literals dropped."""
    out = []
    for p in parts:
        if p is HOLE:
            if out and out[-1] is HOLE:
                continue
            out.append(HOLE)
        elif p:
            if out and out[-1] is not HOLE:
                out[-1] += p
            else:
                out.append(p)
    return out


def render(parts):
    """The catalog's spelling: `{}` for a hole, `{{` and `}}` for literal braces."""
    text = ""
    for p in parts:
        text += "{}" if p is HOLE else p.replace("{", "{{").replace("}", "}}")
    return text


PRINTF = re.compile(r"%(?:\([A-Za-z_]\w*\))?[-+ #0]*(?:\*|\d+)?(?:\.(?:\*|\d+))?"
                    r"(?:hh|h|ll|l|L|z|j|t|q|I64)?[diouxXeEfFgGcrsapn]|%%")
FMT = re.compile(r"\{\{|\}\}|\{[^{}]*\}")


def split_format(text, style):
    """A format string's literal parts and holes: printf (`%s`, `%zu`) or fmt/str.format."""
    pattern = PRINTF if style == "printf" else FMT
    parts, last = [], 0
    for m in pattern.finditer(text):
        parts.append(text[last:m.start()])
        tok = m.group(0)
        if tok == "%%":
            parts.append("%")
        elif tok in ("{{", "}}"):
            parts.append(tok[0])
        else:
            parts.append(HOLE)
        last = m.end()
    parts.append(text[last:])
    return join(parts)


# ---------------------------------------------------------------------------------------------
# Python

PY_LOG_METHODS = {"warning": "warning", "warn": "warning", "error": "error",
                  "critical": "error", "exception": "error", "fatal": "error"}
# Framework helpers that print a warning (Lightning's rank_zero_warn, accelerate's, ...).
PY_WARN_FUNCS = {"warn": "warning", "rank_zero_warn": "warning", "_warn": "warning",
                 "warning_once": "warning", "warn_once": "warning", "log_warning": "warning",
                 "rank_zero_error": "error", "logger_warning": "warning"}
PY_SKIP_CATEGORIES = {"DeprecationWarning", "FutureWarning", "PendingDeprecationWarning",
                      "LightningDeprecationWarning"}


class _PyMessages(ast.NodeVisitor):
    def __init__(self):
        self.found = []  # (level, kind, parts)
        self.scopes = [{}]

    # Names assigned in the enclosing function: `msg = f"..."; raise X(msg)`.
    def visit_FunctionDef(self, node):
        names = {}
        for sub in ast.walk(node):
            if isinstance(sub, ast.Assign) and len(sub.targets) == 1 and isinstance(
                    sub.targets[0], ast.Name):
                names.setdefault(sub.targets[0].id, []).append(("=", sub.value))
            elif isinstance(sub, ast.AugAssign) and isinstance(sub.target, ast.Name) and \
                    isinstance(sub.op, ast.Add):
                names.setdefault(sub.target.id, []).append(("+=", sub.value))
        self.scopes.append(names)
        self.generic_visit(node)
        self.scopes.pop()

    visit_AsyncFunctionDef = visit_FunctionDef

    def parts(self, node, depth=0):
        if depth > 4:
            return [HOLE]
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return [node.value]
        if isinstance(node, ast.JoinedStr):
            out = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    out.append(v.value)
                else:
                    out.append(HOLE)
            return join(out)
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return join(self.parts(node.left, depth + 1) + self.parts(node.right, depth + 1))
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(
                node.left, (ast.Constant, ast.JoinedStr, ast.BinOp)):
            left = self.parts(node.left, depth + 1)
            return join([q for p in left for q in
                         ([p] if p is HOLE else split_format(p, "printf"))])
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and \
                node.func.attr == "format":
            base = self.parts(node.func.value, depth + 1)
            return join([q for p in base for q in ([p] if p is HOLE else split_format(p, "fmt"))])
        if isinstance(node, ast.Name):
            for scope in reversed(self.scopes):
                if node.id in scope:
                    out = []
                    for op, value in scope[node.id]:
                        if op == "=":
                            out = self.parts(value, depth + 1)
                        else:
                            out = join(out + self.parts(value, depth + 1))
                    return out
            return [HOLE]
        return [HOLE]

    def add(self, level, kind, node):
        parts = self.parts(node)
        if any(p is not HOLE for p in parts):
            self.found.append((level, kind, parts))

    def visit_Raise(self, node):
        exc = node.exc
        if isinstance(exc, ast.Call) and exc.args:
            self.add("error", _py_name(exc.func), exc.args[0])
        self.generic_visit(node)

    def visit_Call(self, node):
        name = _py_name(node.func)
        tail = name.rsplit(".", 1)[-1]
        if node.args:
            if isinstance(node.func, ast.Attribute) and tail in PY_LOG_METHODS and \
                    _looks_like_logger(node.func.value):
                self.add(PY_LOG_METHODS[tail], "log." + tail, node.args[0])
            elif tail in PY_WARN_FUNCS and not _deprecation(node):
                self.add(PY_WARN_FUNCS[tail], tail, node.args[0])
        self.generic_visit(node)


def _py_name(node):
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return _py_name(node.value) + "." + node.attr
    return "?"


def _looks_like_logger(node):
    name = _py_name(node).lower()
    return any(w in name for w in ("log", "_logger", "logging"))


def _deprecation(call):
    for arg in list(call.args[1:]) + [k.value for k in call.keywords if k.arg == "category"]:
        if _py_name(arg).rsplit(".", 1)[-1] in PY_SKIP_CATEGORIES:
            return True
    return False


def python_messages(source):
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError):
        return []
    v = _PyMessages()
    v.visit(tree)
    return v.found


# ---------------------------------------------------------------------------------------------
# C and C++

_CPP_TOKEN = re.compile(
    r'(?P<comment>//[^\n]*|/\*.*?\*/)'
    r'|(?P<string>(?:u8|u|U|L)?"(?:\\.|[^"\\\n])*")'
    r'|(?P<raw>R"(?P<delim>[^(\s]*)\((?P<rawbody>.*?)\)(?P=delim)")'
    r"|(?P<char>'(?:\\.|[^'\\\n])+')"
    r'|(?P<word>[A-Za-z_]\w*(?:::[A-Za-z_]\w*)*)'
    r'|(?P<op><<|::|->|[(){}\[\];,+])'
    r'|(?P<other>\S)', re.S)

_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", '"': '"', "'": "'", "\\": "\\", "0": "",
            "a": "", "b": "", "e": "", "f": "", "v": "", "?": "?"}


def _unescape(body):
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            n = body[i + 1]
            if n == "x":
                m = re.match(r"[0-9A-Fa-f]+", body[i + 2:])
                i += 2 + (len(m.group(0)) if m else 0)
                continue
            if n in "01234567" and n != "0":
                i += 2
                continue
            out.append(_ESCAPES.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def cpp_tokens(text):
    """(kind, value) tokens; comments dropped, literal strings decoded."""
    for m in _CPP_TOKEN.finditer(text):
        kind = m.lastgroup
        if kind == "comment":
            continue
        if kind == "string":
            body = m.group("string")
            yield ("str", _unescape(body[body.index('"') + 1:-1]), m.start(), m.end())
        elif kind == "raw" or kind == "rawbody" or kind == "delim":
            yield ("str", m.group("rawbody"), m.start(), m.end())
        else:
            yield (kind, m.group(0), m.start(), m.end())


def _args(tokens, start):
    """The top-level arguments of the call whose '(' is tokens[start]; each a token list."""
    depth, args, cur = 0, [], []
    i = start
    while i < len(tokens):
        kind, value = tokens[i][:2]
        if value in ("(", "[", "{"):
            depth += 1
            if depth > 1:
                cur.append(tokens[i])
        elif value in (")", "]", "}"):
            depth -= 1
            if depth == 0:
                args.append(cur)
                return args, i
            cur.append(tokens[i])
        elif value == "," and depth == 1:
            args.append(cur)
            cur = []
        elif value == ";" and depth <= 1:
            return args + [cur], i  # unbalanced: stop at the statement's end
        else:
            cur.append(tokens[i])
        i += 1
    return args + [cur], i


def _expr_parts(tokens):
    """An argument as literal parts and holes: `"a " + x + " b"` -> ["a ", HOLE, " b"]."""
    parts = []
    i = 0
    while i < len(tokens):
        kind, value = tokens[i][:2]
        if kind == "str":
            parts.append(value)
        elif kind == "word" and value in ("c10::str", "str", "MakeString", "::gloo::MakeString",
                                           "gloo::MakeString") and i + 1 < len(tokens) and \
                tokens[i + 1][1] == "(":
            args, end = _args(tokens, i + 1)
            for a in args:
                parts.extend(_expr_parts(a))
            i = end
        elif value == "+":
            pass
        elif value == "(" :
            # a parenthesised sub-expression or a call: one value
            depth = 0
            while i < len(tokens):
                if tokens[i][1] == "(":
                    depth += 1
                elif tokens[i][1] == ")":
                    depth -= 1
                    if depth == 0:
                        break
                i += 1
            parts.append(HOLE)
        else:
            parts.append(HOLE)
        i += 1
    return join(parts)


def _stream_parts(tokens, start):
    """`LOG(ERROR) << "a" << x << "b";` from the first `<<` to the `;`."""
    parts, cur, depth = [], [], 0
    i = start
    while i < len(tokens):
        kind, value = tokens[i][:2]
        if value in ("(", "[", "{"):
            depth += 1
        elif value in (")", "]", "}"):
            depth -= 1
            if depth < 0:
                break
        if depth == 0 and value == ";":
            break
        if depth == 0 and value == "<<":
            parts.extend(_expr_parts(cur))
            cur = []
        else:
            cur.append(tokens[i])
        i += 1
    parts.extend(_expr_parts(cur))
    return join(parts)


def _source_text(text, tokens):
    """An argument as the source spells it (Gloo prints its condition so: `#condition`)."""
    if not tokens:
        return ""
    return re.sub(r"\s+", " ", text[tokens[0][2]:tokens[-1][3]])


# name -> (level, how the arguments make the message)
#   ("args", n): arguments from n on, concatenated (c10::str / MakeString semantics)
#   ("printf", n): argument n is a printf format
#   ("fmt", n): argument n is a fmt/str.format format
#   ("enforce", n): Gloo: the condition's source, ". ", then arguments from n on
#   ("enforce2", op): Gloo's binary checks: "x op y", the values " vs ", then the rest
CPP_MACROS = {
    "TORCH_CHECK": ("error", ("args", 1)),
    "TORCH_CHECK_VALUE": ("error", ("args", 1)),
    "TORCH_CHECK_INDEX": ("error", ("args", 1)),
    "TORCH_CHECK_TYPE": ("error", ("args", 1)),
    "TORCH_CHECK_LINALG": ("error", ("args", 1)),
    "TORCH_CHECK_NOT_IMPLEMENTED": ("error", ("args", 1)),
    "TORCH_CHECK_WITH": ("error", ("args", 2)),
    "TORCH_CHECK_MSG": ("error", ("args", 1)),
    "TORCH_INTERNAL_ASSERT": ("error", ("args", 1)),
    "TORCH_INTERNAL_ASSERT_DEBUG_ONLY": ("error", ("args", 1)),
    "C10_THROW_ERROR": ("error", ("args", 1)),
    "C10D_THROW_ERROR": ("error", ("args", 1)),
    "TORCH_WARN": ("warning", ("args", 0)),
    "TORCH_WARN_ONCE": ("warning", ("args", 0)),
    "TORCH_WARN_DEPRECATION": ("skip", ("args", 0)),
    "C10D_ERROR": ("error", ("fmt", 0)),
    "C10D_WARNING": ("warning", ("fmt", 0)),
    "C10D_INFO": ("info", ("fmt", 0)),
    "C10D_CHECK_WITH": ("error", ("args", 2)),
    "fmt::format": ("message", ("fmt", 0)),
    "c10::str": ("message", ("args", 0)),
    "WARN": ("warning", ("printf", 0)),
    "INFO": ("info", ("printf", 1)),
    "GLOO_ENFORCE": ("error", ("enforce", 1)),
    "GLOO_ENFORCE_EQ": ("error", ("enforce2", "==")),
    "GLOO_ENFORCE_NE": ("error", ("enforce2", "!=")),
    "GLOO_ENFORCE_LE": ("error", ("enforce2", "<=")),
    "GLOO_ENFORCE_LT": ("error", ("enforce2", "<")),
    "GLOO_ENFORCE_GE": ("error", ("enforce2", ">=")),
    "GLOO_ENFORCE_GT": ("error", ("enforce2", ">")),
    "GLOO_THROW": ("error", ("args", 0)),
    "GLOO_THROW_IO_EXCEPTION": ("error", ("args", 0)),
    "GLOO_THROW_INVALID_OPERATION_EXCEPTION": ("error", ("args", 0)),
    "GLOO_ERROR": ("error", ("args", 0)),
    "GLOO_WARN": ("warning", ("args", 0)),
    "GLOO_ERROR_MSG": ("error", ("args", 0)),
    "std::runtime_error": ("error", ("args", 0)),
    "std::invalid_argument": ("error", ("args", 0)),
    "std::logic_error": ("error", ("args", 0)),
    "std::out_of_range": ("error", ("args", 0)),
    "DistNetworkError": ("error", ("args", 0)),
    "DistStoreError": ("error", ("args", 0)),
    "printf": ("info", ("printf", 0)),
    "fprintf": ("error", ("printf", 1)),
}
LOG_LEVELS = {"ERROR": "error", "WARNING": "warning", "FATAL": "error", "INFO": "info"}


def cpp_messages(text, macros=CPP_MACROS):
    tokens = list(cpp_tokens(text))
    found = []
    for i, (kind, value, _, _) in enumerate(tokens):
        if kind != "word":
            continue
        if value in ("LOG", "C10_LOG_FIRST_N", "LOG_EVERY_N") and i + 3 < len(tokens) and \
                tokens[i + 1][1] == "(" and tokens[i + 2][1] in LOG_LEVELS:
            j = i + 3
            while j < len(tokens) and tokens[j][1] != ")":
                j += 1
            if j + 1 < len(tokens) and tokens[j + 1][1] == "<<":
                parts = _stream_parts(tokens, j + 2)
                found.append((LOG_LEVELS[tokens[i + 2][1]], "LOG", parts))
            continue
        spec = macros.get(value)
        if spec is None or i + 1 >= len(tokens) or tokens[i + 1][1] != "(":
            continue
        if i > 0 and tokens[i - 1][1] in ("define",):
            continue
        level, (how, n) = spec
        if level == "skip":
            continue
        args, _ = _args(tokens, i + 1)
        parts = []
        if how == "args":
            for a in args[n:]:
                parts.extend(_expr_parts(a))
        elif how in ("printf", "fmt"):
            if len(args) > n and args[n] and all(t[0] == "str" for t in args[n]):
                parts = split_format("".join(t[1] for t in args[n]), how)
        elif how == "enforce":
            if args:
                parts = [_source_text(text, args[0]), ". "]
                for a in args[1:]:
                    parts.extend(_expr_parts(a))
        elif how == "enforce2":
            if len(args) >= 2:
                parts = [f"{_source_text(text, args[0])} {n} {_source_text(text, args[1])}. ", HOLE, " vs ",
                         HOLE]
                if len(args) > 2:
                    parts.append(". ")
                    for a in args[2:]:
                        parts.extend(_expr_parts(a))
        parts = join(parts)
        if any(p is not HOLE for p in parts):
            found.append((level, value, parts))
    return found


def returned_strings(text, function):
    """The literals a C function returns (NCCL's ncclGetErrorString): `return "..."`."""
    m = re.search(r"\b" + re.escape(function) + r"\s*\([^)]*\)\s*\{", text)
    if not m:
        return []
    body = text[m.end():]
    end = re.search(r"\n\}", body)
    body = body[:end.start()] if end else body
    return [_unescape(s) for s in re.findall(r'return\s+"((?:\\.|[^"\\])*)"', body)]
