"""pi: a pi package funes owns, listed in pi's settings.

pi has no MCP client and no hook configuration; an extension does both jobs.  The
package lives at ``$FUNES_HOME/integrations/pi`` (pi records it by path, so it must
stay put): ``index.ts`` (bridges ``recall``/``get``/``status`` to ``funes mcp`` and
runs the funes hook on ``agent_end``, plus publish hooks at session start and
shutdown for a Hub memory), ``package.json``, ``funes.json`` (the commands bound at
`add`) and the ``funes-recall`` skill.  ``$PI_CODING_AGENT_DIR/settings.json``
``packages`` lists it, as ``pi install <folder>`` would, so ``pi list`` shows it.
"""

from __future__ import annotations

import json
from pathlib import Path

from funes.config import funes_home
from funes.wiring import SKILL_NAME, Binding, Wiring, skill_description, skill_text
from funes.wiring.changes import FileChange, document_change, owned_file, read_text
from funes.wiring.json_text import JsonText

FILES = Path(__file__).parent / "files"
PACKAGE_FILES = ("index.ts", "package.json")


def package_dir() -> Path:
    return funes_home() / "integrations" / "pi"


def _package_contents(binding: Binding, agent: str) -> dict[str, str]:
    from funes.agents import all_agents

    agents = [known for known in all_agents() if known.swept]
    settings = {
        "mcp": binding.mcp_command(),
        "index": binding.hook_command(agent),
        "publish": binding.hook_command(agent, publish=True) if binding.remote else None,
        "guidelines": [skill_description()],
        # Named in the tools' descriptions: the agents whose sessions a memory holds.
        "agents": ", ".join(known.label for known in agents),
        "harnesses": ", ".join(known.name for known in all_agents()),
    }
    contents = {name: (FILES / name).read_text(encoding="utf-8") for name in PACKAGE_FILES}
    contents["funes.json"] = json.dumps(settings, indent=2, ensure_ascii=False) + "\n"
    contents[f"skills/{SKILL_NAME}/SKILL.md"] = skill_text()
    return contents


def _is_our_entry(entry: object, settings_dir: Path) -> bool:
    source = entry.get("source") if isinstance(entry, dict) else entry
    if not isinstance(source, str) or ":" in source.split("/", 1)[0]:  # npm:, git:, https:
        return False
    path = Path(source).expanduser()
    return (path if path.is_absolute() else settings_dir / path).resolve() == package_dir().resolve()


class PiWiring(Wiring):
    def _settings(self) -> JsonText:
        path = self.agent.home() / "settings.json"  # type: ignore[operator]
        return JsonText(path, read_text(path))

    def plan_add(self, binding: Binding) -> list[FileChange]:
        settings = self._settings()
        packages = settings.get(("packages",), [])
        if not isinstance(packages, list) or not any(_is_our_entry(e, settings.path.parent) for e in packages):
            settings.append(("packages",), str(package_dir()))  # refuses a "packages" that is not a list
        files = [owned_file(package_dir() / name, content, f"pi extension ({name})", owned_from=funes_home())
                 for name, content in _package_contents(binding, self.agent.name).items()]
        return [document_change(settings, f"packages: {package_dir()}"), *files]

    def plan_remove(self) -> list[FileChange]:
        settings = self._settings()
        packages = settings.get(("packages",), [])
        for index in reversed(range(len(packages) if isinstance(packages, list) else 0)):
            if _is_our_entry(packages[index], settings.path.parent):
                settings.delete(("packages", index))
        folder = package_dir()
        files = [owned_file(path, None, "pi extension", owned_from=funes_home())
                 for path in sorted(folder.rglob("*")) if path.is_file()] if folder.is_dir() else []
        return [document_change(settings, f"packages: {folder}"), *files]

    def notes_after_add(self, binding: Binding, changes: list[FileChange]) -> list[str]:
        if not any(change.changed for change in changes):
            return []
        return ["Restart pi (or /reload) to load the funes extension: tools recall, get, status."]

