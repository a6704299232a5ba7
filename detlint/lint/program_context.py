"""What a program runs with besides its code: the framework versions it is judged at
(settings/program_versions.py) and the variables its launchers set (settings/launchers.py),
for the linter to hand to the evaluator."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterable, Optional

from detlint.knowledge.frameworks import FRAMEWORKS, framework
from detlint.knowledge.kb import KnowledgeBase
from detlint.knowledge.versions import Version
from detlint.lint.ftypes import FileFacts, Hit
from detlint.lint.programs.program import Program
from detlint.settings.commit_dates import CommitDates
from detlint.settings.config import Settings, Target
from detlint.settings.launchers import Launchers
from detlint.settings.program_versions import ProgramVersions


class ProgramContext:
    def __init__(self, settings: Settings, kb: KnowledgeBase, root: Path,
                 facts_of: Callable[[Path], Optional[FileFacts]]) -> None:
        self.settings, self.kb, self.facts_of = settings, kb, facts_of
        self.versions = ProgramVersions(settings, kb.eras, kb.released, CommitDates(root))
        self.launchers = Launchers(root)
        self._module_targets: dict[Path, dict[str, Target]] = {}

    def launch_hits(self, entry: Path) -> list[Hit]:
        """What the project's launchers set for this program, as hits of the groups that read
        those variables (a switch, a flag, a backend) at the entry's first line. Rules that report
        an assignment where it is written do not see them: the launcher is not the entry."""
        hits: list[Hit] = []
        settings = self.launchers.for_program(entry)
        if not settings:
            return hits
        from detlint.lint.conditions import check  # imports libcst: only when a launcher sets something

        for setting in settings:
            for owner, index in self.kb.index["env"].get(setting.name, ()):
                matcher = self.kb.matcher(owner, index)
                if owner.startswith("group:") and not matcher.imported_before \
                        and (matcher.value is None or check(matcher.value, setting.value)):
                    hits.append(Hit(owner, index, setting.name, 1, 0, 1, 0, None,
                                    detail=f"launcher:{setting.value}@{setting.where}"))
        return hits

    def targets_of(self, program: Program) -> dict[str, Target]:
        """The framework versions a program is judged at."""
        return self.versions.for_program(program.entry, program.modules)

    def frameworks_used(self, modules: Iterable[Path]) -> frozenset[str]:
        """The frameworks (registry keys) these files import."""
        imported: set[str] = set()
        for module in modules:
            facts = self.facts_of(module)
            # the framework groups' imports, and every top-level module (tensorflow_datasets runs TF)
            imported.update(getattr(facts, "frameworks", ()))
            imported.update(m.split(".")[0] for m in getattr(facts, "import_lines", {}))
        return frozenset(key for key, fw in FRAMEWORKS.items() if imported & set(fw.imports))

    def module_targets(self, module: Path, programs: Callable[[], list[Program]]) -> dict[str, Target]:
        """A library module's versions: the lowest of the programs that run it (``programs``),
        else what its own file and folder say. Worked out when a rule first asks."""
        if module not in self._module_targets:
            lowest: list[dict[str, Target]] = []

            def decide(key: str) -> tuple[Version, str, str]:
                if not lowest:
                    reaching = [self.targets_of(p) for p in programs()]
                    lowest.append(self.versions.lowest(reaching) if reaching
                                  else self.versions.for_program(module, [module]))
                found = lowest[0][key]
                return found.version, found.source, found.assumed

            targets: dict[str, Target] = {}
            for key in FRAMEWORKS:
                base = self.settings.targets[key]
                if base.explicit:
                    targets[key] = base
                    continue
                targets[key] = Target(base.version)
                targets[key].decide_later(lambda key=key: decide(key))
            self._module_targets[module] = targets
        return self._module_targets[module]

    def differing(self, program: Program, shown: Optional[dict[str, Target]] = None) -> dict[str, str]:
        """For --show-settings: the program's versions that differ from the project's (or from
        ``shown``, the top project's, for a nested project's program), of the frameworks it
        imports, with where they came from."""
        row: dict[str, str] = {}
        used = self.frameworks_used(program.modules)
        for key, target in self.targets_of(program).items():
            base = (shown or self.settings.targets)[key]
            if key in used and (target.version, target.source) != (base.version, base.source):
                setting = framework(key).setting
                row[setting], row[f"{setting}-source"] = str(target.version), target.source
        return row
