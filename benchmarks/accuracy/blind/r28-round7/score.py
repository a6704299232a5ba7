"""Judge this round: python score.py (prints the tables of results.md, writes judged.jsonl)."""
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from version_score import main  # noqa: E402

if __name__ == "__main__":
    main(HERE, ["dlai", "tf2c", "nlpc", "dltfb", "kyu", "cifar", "dmedu", "prl"])
