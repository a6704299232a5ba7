"""Rule documentation rendered from the knowledge base (``detlint rule``, docs/rules.md, SARIF)."""
from __future__ import annotations

from typing import Optional

from detlint.knowledge.frameworks import framework
from detlint.knowledge.kb import KnowledgeBase, Rule

SECTION_TITLES = (("what", "What it does"), ("why", "Why is this bad?"), ("example", "Example"),
                  ("use-instead", "Use instead"), ("fix-safety", "Fix safety"), ("options", "Options"),
                  ("references", "References"))
CODE_SECTIONS = {"example", "use-instead"}


def rule_anchor(rule: Rule) -> str:
    """The heading anchor of a rule in docs/rules.md."""
    return f"{rule.name}-{rule.code.lower()}"


def rule_url(rule: Rule, docs_url: Optional[str]) -> Optional[str]:
    """The absolute URL of a rule's documentation, from the ``docs-url`` setting: the address
    where docs/rules.md is published (the rule's anchor is added), or a template with
    ``{code}``, ``{name}`` or ``{anchor}``. None without it: detlint publishes no docs site."""
    if not docs_url:
        return None
    if "{" in docs_url:
        return docs_url.format(code=rule.code, name=rule.name, anchor=rule_anchor(rule))
    return f"{docs_url.split('#')[0]}#{rule_anchor(rule)}"


def versions_line(rule: Rule) -> str:
    """One line a version range, its fix title filled in as a message would fill it (the
    default seed; "TensorFlow" where a message names the exact version)."""
    from detlint.lint.checks import render
    from detlint.settings.config import DEFAULT_SEED

    short = "TF" if rule.framework == "tensorflow" else framework(rule.framework).title
    parts = []
    for fix in rule.fixes:
        title = render(fix.title.replace("TF {version}", "TensorFlow"), seed=DEFAULT_SEED,
                       version=str(fix.versions), api="the call", os="os")
        parts.append(f"- {short} {fix.versions}: {title} ({fix.safety})")
    return "\n".join(parts)


def rule_markdown(rule: Rule, level: int = 1) -> str:
    head = "#" * level
    out = [f"{head} {rule.name} ({rule.code})", "", rule.summary, ""]
    for key, title in SECTION_TITLES:
        value = rule.doc.get(key)
        if value is None:
            continue
        out.append(f"{head}# {title}")
        if key == "references":
            out.extend(f"- [{ref['title']}]({ref['url']})" if ref.get("url") else f"- {ref['title']}"
                       for ref in value)
        elif key in CODE_SECTIONS:
            out.extend(["```python", str(value).rstrip(), "```"])
        else:
            out.append(str(value).rstrip())
        if key == "fix-safety" and rule.fixes:
            out.extend(["", f"Fix by {framework(rule.framework).title} version:", versions_line(rule)])
        out.append("")
    return "\n".join(out).rstrip() + "\n"


def rules_page(kb: KnowledgeBase) -> str:
    """docs/rules.md: every rule, generated; a test fails when it drifts from the YAML."""
    out = ["# detlint rules", "",
           "Generated from `rules/*.yaml` by `detlint rule --all --markdown`; do not edit by hand.", "",
           "| code | name | scope | summary |", "|---|---|---|---|"]
    for rule in kb.rules.values():
        out.append(f"| [{rule.code}](#{rule_anchor(rule)}) | {rule.name} | {rule.scope} | "
                   f"{rule.summary} |")
    out.append("")
    for rule in kb.rules.values():
        out.append(rule_markdown(rule, level=2))
    return "\n".join(out).rstrip() + "\n"
