"""The project's YAML configuration files a program loads, read as option defaults.

``cfg = config.load_cfg_from_cfg_file(args.config)`` with ``--config`` defaulting to
``config/ade20k/pspnet50.yaml``, ``OmegaConf.load("configs/train.yaml")``: a run with the
defaults reads that file, and ``if args.manual_seed is not None:`` is decided by its
``manual_seed:`` (empty: None). The collector notes the ``.yaml``/``.yml`` names a file passes to
calls or gives as an option's default (``FileFacts.config_files``); here each is found in the
project (beside the file that names it, the program's entry, or a source root), read with a safe
loader (never executed), and its leaves become option defaults by their last key. A file that is
missing, too large or not a mapping adds nothing.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Iterator, Optional

MAX_BYTES = 1 << 20  # a configuration, not a dataset
MAX_DEPTH = 8
MAX_LEAVES = 5000  # a document whose aliases repeat a mapping many times over is read this far


def find(name: str, folders: Iterable[Path], roots: Iterable[Path]) -> Optional[Path]:
    """The project file ``name`` stands for: relative to one of ``folders`` or a source root,
    and inside a root."""
    roots = [r.resolve() for r in roots]
    for folder in [*folders, *roots]:
        candidate = (folder / name).resolve()
        if candidate.is_file() and any(root == candidate or root in candidate.parents for root in roots):
            return candidate
    return None


def leaves(path: Path) -> dict[str, Any]:
    """The file's plain values by their last key (``TRAIN: {manual_seed: }`` -> manual_seed:
    None); a key met twice with different values is left out."""
    try:
        if path.stat().st_size > MAX_BYTES:
            return {}
        import yaml

        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
        data = yaml.load(path.read_text(encoding="utf-8", errors="replace"), Loader=loader)
    except Exception:  # unreadable or not YAML: nothing is known from it
        return {}
    found: dict[str, Any] = {}
    clashing: set[str] = set()
    for count, (key, value) in enumerate(_walk(data, 0, set())):
        if count >= MAX_LEAVES:
            break
        if key in found and found[key] != value:
            clashing.add(key)
        found.setdefault(key, value)
    return {k: v for k, v in found.items() if k not in clashing}


def _walk(data: Any, depth: int, seen: set[int]) -> Iterator[tuple[str, Any]]:
    """Each mapping once: YAML aliases make one object appear many times (a billion-laughs file)."""
    if not isinstance(data, dict) or depth > MAX_DEPTH or id(data) in seen:
        return
    seen.add(id(data))
    for key, value in data.items():
        if not isinstance(key, str):
            continue
        if isinstance(value, dict):
            yield from _walk(value, depth + 1, seen)
        elif value is None or isinstance(value, (bool, int, float, str)):
            yield key, value
