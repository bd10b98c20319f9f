"""What the program's own argparse parser accepts, for `adopt` (BIGMAC_PROBE_ARGPARSE).

The first parse of the command line (`parse_args()`/`parse_known_args()` with no explicit
argument list) writes, once, a JSON file: the program's `sys.argv` and every action of that
parser (its option strings, `dest`, `nargs`, the type when it is int/float/str, and the default
when it is a number or a string). `adopt` reads it to recognise positional arguments by their
`dest`, and flags the user did not pass (`--batch_size`, default 32) that the gates can set.
The parse itself is the program's, untouched."""
import functools
import json
import os
import sys

MARK = "_bigmac_probe"
_TYPES = {int: "int", float: "float", str: "str"}


def _scalar(value):
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, (int, float, str)):
        return value
    return None


def describe(parser):
    """The record of `parser`: JSON-ready."""
    actions = []
    for action in parser._actions:  # noqa: SLF001 - argparse's own list, stable since 3.2
        nargs = action.nargs
        actions.append({
            "dest": action.dest,
            "options": list(action.option_strings),
            "nargs": nargs if isinstance(nargs, (int, str)) or nargs is None else str(nargs),
            "takes_value": bool(action.option_strings) and action.nargs != 0,
            "store": type(action).__name__ == "_StoreAction",
            "type": _TYPES.get(action.type) if action.type is not None else None,
            "default": _scalar(action.default),
        })
    return {"argv": list(sys.argv), "prefix_chars": parser.prefix_chars, "actions": actions}


def write_record(path, parser):
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    temporary = f"{path}.{os.getpid()}.tmp"
    with open(temporary, "w", encoding="utf-8") as f:
        json.dump(describe(parser), f)
    os.replace(temporary, path)


def instrument_argparse(probe, patches, argparse):
    """ArgumentParser.parse_known_args (parse_args calls it): the first parse of sys.argv."""
    parser_cls = argparse.ArgumentParser
    original = parser_cls.parse_known_args
    if getattr(original, MARK, False):
        return
    written = False

    @functools.wraps(original)
    def parse_known_args(self, args=None, namespace=None):
        nonlocal written
        result = original(self, args, namespace)
        if args is None and not written and probe.failsafe.active:
            written = True
            probe.guard("args", write_record, probe.settings.argparse_path, self)
        return result
    setattr(parse_known_args, MARK, True)
    patches.replace(parser_cls, "parse_known_args", parse_known_args)
