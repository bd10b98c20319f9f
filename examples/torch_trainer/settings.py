"""Settings of the example trainer: defaults, the per-gate config file, and --set overrides.

The tables and keys are the ones bigmac-bringup writes into each gate's config file
(src/config/schema.cpp); keys this trainer does not use (the [trainer] table, [logs.fields],
derived values) are read past. The defaults equal configs/demo.toml so that
`python3 train.py` with no arguments trains the same small model.
"""
import copy
import json
import os
import tomllib
from types import SimpleNamespace

DEFAULTS = {
    "launch": {"devices": "cpu", "backend": "auto", "threads_per_rank": 1},
    "parallel": {"pp_size": 1, "tp_size": 1, "schedule": "1f1b", "micro_batches": 0},
    "train": {
        "micro_batch_size": 2, "gradient_accumulation_steps": 4, "seq_length": 32,
        "seed": 1234, "max_steps": 20, "lr": 3e-3, "warmup_steps": 5, "weight_decay": 0.01,
        "grad_clip": 1.0, "dtype": "float32", "checkpoint_dir": "", "checkpoint_every": 0,
    },
    "model": {
        "num_layers": 4, "hidden": 64, "heads": 4, "vocab": 64, "ffn_mult": 4,
        "tie_embeddings": True, "split_points": "auto",
    },
    "faults": {
        "split_out_of_range": False, "lr_scale_by_world": False, "crash_rank": "",
        "hang_rank": "", "all_ranks_checkpoint": False, "nan_at_step": -1,
    },
    "trace": {"shapes": False},
}

# Faults the tool can ask for that this trainer has no code for. Asked for anyway, the trainer
# refuses to start rather than run healthy and let a fault test pass for the wrong reason.
UNSUPPORTED_FAULTS = {
    "grad_blowup": 0, "skip_step_log": -1, "dup_step_log": -1, "world_size_offset": 0,
    "master_port_offset": "", "boundary_seq_trim": 0, "boundary_dtype": "",
    "ragged_microbatch": False, "middle_stage_loss": False, "stage_stall": "",
    "untied_sync": False, "extra_collective": "", "collective_shape": "",
}


class SettingsError(ValueError):
    """A bad config file, --set value or combination; the message names the key."""


def _coerce(key, value, default):
    if key == "model.split_points":
        if value == "auto" or (isinstance(value, list) and all(type(v) is int for v in value)):
            return value
        raise SettingsError(f"{key}: expected \"auto\" or a list of integers, got {value!r}")
    if isinstance(default, bool):
        if isinstance(value, bool):
            return value
    elif isinstance(default, int):
        if type(value) is int:
            return value
    elif isinstance(default, float):
        if type(value) in (int, float):
            return float(value)
    elif isinstance(value, str):
        return value
    raise SettingsError(f"{key}: expected {type(default).__name__}, got {value!r}")


def _parse_text(text):
    """A --set value: JSON when it parses (numbers, true/false, lists), else a bare string."""
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def read_file(path):
    """The gate config file as a dict of tables: YAML for .yaml/.yml, TOML for .toml, and for
    any other name TOML if it parses as TOML, else YAML."""
    with open(path, "rb") as f:
        text = f.read().decode("utf-8")
    ext = os.path.splitext(path)[1].lower()
    if ext in (".yaml", ".yml"):
        data = _yaml(text)
    else:
        try:
            data = tomllib.loads(text)
        except tomllib.TOMLDecodeError as err:
            if ext == ".toml":
                raise SettingsError(f"{path}: {err}") from None
            data = _yaml(text)
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: expected tables at the top level")
    return data


def _yaml(text):
    import yaml  # Debian python3-yaml; only needed for trainer.gate_config_format = "yaml"

    try:
        return yaml.safe_load(text) or {}
    except yaml.YAMLError as err:
        raise SettingsError(f"config file is neither TOML nor YAML: {err}") from None


def load(config_path=None, overrides=()):
    """Defaults, then the config file, then each `table.key=value` override, in that order."""
    values = copy.deepcopy(DEFAULTS)
    faults_asked = {}
    if config_path:
        data = read_file(config_path)
        for table, entries in data.items():
            if not isinstance(entries, dict):
                continue
            if table == "faults":
                faults_asked.update(entries)
            for key, value in entries.items():
                if table in values and key in values[table]:
                    values[table][key] = _coerce(f"{table}.{key}", value, DEFAULTS[table][key])
    for item in overrides:
        name, sep, text = item.partition("=")
        table, dot, key = name.strip().partition(".")
        value = _parse_text(text.strip())
        if not sep or not dot:
            raise SettingsError(f"--set {item!r}: expected table.key=value")
        if table == "faults" and key in UNSUPPORTED_FAULTS:
            faults_asked[key] = value
            continue
        if table not in values or key not in values[table]:
            raise SettingsError(f"--set {item!r}: this trainer has no setting {name.strip()}")
        values[table][key] = _coerce(name.strip(), value, DEFAULTS[table][key])
    for key, off in UNSUPPORTED_FAULTS.items():
        if key in faults_asked and faults_asked[key] != off:
            raise SettingsError(
                f"faults.{key} = {faults_asked[key]!r}: this example trainer does not implement "
                "that fault (it implements split_out_of_range, lr_scale_by_world, crash_rank, "
                "hang_rank, all_ranks_checkpoint, nan_at_step)")
    return SimpleNamespace(**{t: SimpleNamespace(**v) for t, v in values.items()})


def parse_rank_and_step(text, key):
    """`"R:K"` of crash_rank/hang_rank as (R, K); "" as None."""
    if not text:
        return None
    rank, sep, step = text.partition(":")
    try:
        if sep:
            return int(rank), int(step)
    except ValueError:
        pass
    raise SettingsError(f"faults.{key}: expected \"RANK:STEP\", got {text!r}")


def even_split(num_layers, pp):
    """First layer of stages 1..pp-1, earlier stages taking the remainder (as `auto` does)."""
    base, extra = divmod(num_layers, pp)
    points, cut = [], 0
    for stage in range(pp - 1):
        cut += base + (1 if stage < extra else 0)
        points.append(cut)
    return points
