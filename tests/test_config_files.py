"""YAML configurations a program loads, read as option defaults (programs/config_files.py)."""
from __future__ import annotations

from pathlib import Path

from detlint.lint.programs import config_files


def test_leaves_by_last_key_and_clashes_left_out(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("TRAIN:\n  manual_seed:\n  arch: psp\n  lr: 0.1\nTEST:\n  lr: 0.5\n  split: val\n"
                    "list: [1, 2]\n")
    assert config_files.leaves(path) == {"manual_seed": None, "arch": "psp", "split": "val"}


def test_not_yaml_too_large_or_not_a_mapping_adds_nothing(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [unclosed\n")
    assert config_files.leaves(bad) == {}
    listing = tmp_path / "list.yaml"
    listing.write_text("- 1\n- 2\n")
    assert config_files.leaves(listing) == {}
    large = tmp_path / "large.yaml"
    large.write_text("a: 1\n" + "#" * (config_files.MAX_BYTES + 1))
    assert config_files.leaves(large) == {}
    tagged = tmp_path / "tagged.yaml"
    tagged.write_text("a: !!python/object/apply:os.system ['true']\n")  # a safe loader refuses it
    assert config_files.leaves(tagged) == {}


def test_found_only_inside_the_project(tmp_path: Path) -> None:
    root = tmp_path / "proj"
    (root / "config").mkdir(parents=True)
    (root / "config" / "a.yaml").write_text("x: 1\n")
    (tmp_path / "outside.yaml").write_text("x: 2\n")
    assert config_files.find("config/a.yaml", [root / "tool"], [root]) == (root / "config" / "a.yaml").resolve()
    assert config_files.find("../outside.yaml", [root], [root]) is None
    assert config_files.find("missing.yaml", [root], [root]) is None


def test_aliases_are_read_once(tmp_path: Path) -> None:
    """A few KB of aliases nine deep stand for 30**9 mappings: each is walked once."""
    lines = ["l0: &l0 {manual_seed: 3, arch: psp}"]
    lines += [f"l{i}: &l{i} {{" + ", ".join(f"k{j}: *l{i - 1}" for j in range(30)) + "}" for i in range(1, 10)]
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    assert config_files.leaves(path) == {"manual_seed": 3, "arch": "psp"}
