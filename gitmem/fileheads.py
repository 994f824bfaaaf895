"""The packages a file's first few kilobytes import or declare, for the signs of its frameworks.

A source file's imports (Python ``import``/``from``, JavaScript ``import``/``require``, Rust
``use``, Go ``import``, Solidity ``import "@openzeppelin/..."``, Java/Kotlin ``import``, PHP ``use``,
Ruby ``require``, Swift ``import``, Dart ``import 'package:...'``, C ``#include``) and a manifest's
dependencies (package.json, requirements.txt, pyproject.toml, Cargo.toml, go.mod, Gemfile,
composer.json, pubspec.yaml, build.gradle, pom.xml) name packages; the lexicon's import tables say
which technology each package is. Pure: callers hand the text in.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator

_PYTHON = re.compile(r"^[ \t]*(?:from[ \t]+([\w.]+)[ \t]+import|import[ \t]+([\w., \t]+))", re.MULTILINE)
_JS = re.compile(r"""(?:\bfrom\s*|\bimport\s*\(?\s*|\brequire\s*\(\s*)["']([^"'\s]+)["']""")
_RUST = re.compile(r"^[ \t]*(?:pub[ \t]+)?(?:use[ \t]+(?:::)?|extern[ \t]+crate[ \t]+)(\w+)", re.MULTILINE)
_GO_BLOCK = re.compile(r"^import[ \t]*\(([^)]*)\)", re.MULTILINE)
_GO_ONE = re.compile(r'^import[ \t]+(?:\w+[ \t]+)?"([^"]+)"', re.MULTILINE)
_QUOTED = re.compile(r'"([^"]+)"')
_SOLIDITY = re.compile(r"""^[ \t]*import[ \t]+(?:[^"';]*from[ \t]+)?["']([^"']+)["']""", re.MULTILINE)
_JVM = re.compile(r"^[ \t]*import[ \t]+(?:static[ \t]+)?([\w.]+)", re.MULTILINE)
_PHP = re.compile(r"^[ \t]*use[ \t]+\\?([\w\\]+)", re.MULTILINE)
_RUBY = re.compile(r"""^[ \t]*require(?:_relative)?[ \t(]+["']([\w/.-]+)["']""", re.MULTILINE)
_SWIFT = re.compile(r"^[ \t]*(?:@testable[ \t]+)?import[ \t]+(\w+)", re.MULTILINE)
_DART = re.compile(r"""^[ \t]*import[ \t]+["']package:(\w+)/""", re.MULTILINE)
_C = re.compile(r"""^[ \t]*#[ \t]*include[ \t]*[<"]([\w./+-]+)[>"]""", re.MULTILINE)
_ELIXIR = re.compile(r"^[ \t]*(?:use|import|alias)[ \t]+(\w+)", re.MULTILINE)
_CSS_TAILWIND = re.compile(r"""@tailwind\b|@import\s+["']tailwindcss""")

_JSON_KEY = re.compile(r'"(@?[\w.\-/]+)"\s*:')
_REQUIREMENT = re.compile(r"^[ \t]*([A-Za-z0-9][\w.\-]*)", re.MULTILINE)
_TOML_DEP_STRING = re.compile(r"""["']([A-Za-z0-9][\w.\-]*)\s*(?:\[[^\]]*\])?\s*(?:[<>=!~;@ ]|["'])""")
_TOML_TOOL = re.compile(r"^\[tool\.([\w-]+)", re.MULTILINE)
_TOML_KEY = re.compile(r"^([A-Za-z0-9][\w\-]*)[ \t]*=", re.MULTILINE)
_GO_MOD = re.compile(r"^[ \t]*(?:require[ \t]+)?([a-z0-9.\-]+\.[a-z]+/[\w.\-/]+)[ \t]+v", re.MULTILINE)
_GEM = re.compile(r"""^[ \t]*gem[ \t]+["']([\w.\-]+)["']""", re.MULTILINE)
_YAML_KEY = re.compile(r"^[ \t]{2}([a-z_][\w]*):", re.MULTILINE)
_GRADLE = re.compile(r"""["']([\w.\-]+):([\w.\-]+)(?::[^"']*)?["']|\bid[ \t(]+["']([\w.\-]+)["']""")
_POM = re.compile(r"<groupId>([\w.\-]+)</groupId>")


def _python(head: str) -> Iterator[str]:
    for match in _PYTHON.finditer(head):
        if match.group(1):
            yield match.group(1)
        else:
            yield from (name.strip() for name in match.group(2).split(",") if name.strip())


def _js(head: str) -> Iterator[str]:
    for match in _JS.finditer(head):
        spec = match.group(1)
        if spec.startswith((".", "/", "~", "@/", "#", "node:")):
            continue
        parts = spec.split("/")
        yield "/".join(parts[:2]) if spec.startswith("@") else parts[0]


def _go(head: str) -> Iterator[str]:
    for block in _GO_BLOCK.finditer(head):
        yield from _QUOTED.findall(block.group(1))
    yield from _GO_ONE.findall(head)


def _solidity(head: str) -> Iterator[str]:
    for path in _SOLIDITY.findall(head):
        parts = path.split("/")
        yield "/".join(parts[:2]) if path.startswith("@") else parts[0]


def _c(head: str) -> Iterator[str]:
    for path in _C.findall(head):
        yield path
        yield path.split("/")[0].removesuffix(".h")


# What a file of each ecosystem imports, by the pattern of its import lines.
SOURCE_READERS: dict[str, Callable[[str], Iterator[str]]] = {
    "python": _python,
    "javascript": _js,
    "rust": lambda head: iter(_RUST.findall(head)),
    "go": _go,
    "solidity": _solidity,
    "jvm": lambda head: iter(_JVM.findall(head)),
    "php": lambda head: iter(_PHP.findall(head)),
    "ruby": lambda head: iter(_RUBY.findall(head)),
    "apple": lambda head: iter(_SWIFT.findall(head)),
    "dart": lambda head: iter(_DART.findall(head)),
    "c": _c,
    "beam": lambda head: iter(_ELIXIR.findall(head)),
}


def _pyproject(head: str) -> Iterator[tuple[str, str]]:
    for name in _TOML_DEP_STRING.findall(head):
        yield "python", name.lower()
    for tool in _TOML_TOOL.findall(head):
        yield "tool", tool.lower()


def _cargo(head: str) -> Iterator[tuple[str, str]]:
    section = ""
    for line in head.splitlines():
        stripped = line.strip()
        if stripped.startswith("["):
            section = stripped
        elif "dependencies" in section:
            match = _TOML_KEY.match(stripped)
            if match:
                yield "rust", match.group(1)


def _gradle(head: str) -> Iterator[tuple[str, str]]:
    for group, artifact, plugin in _GRADLE.findall(head):
        yield "jvm", plugin or (f"{group}.{artifact}" if artifact else group)


def manifest_packages(basename: str, head: str) -> Iterator[tuple[str, str]]:
    """(ecosystem, package) pairs a manifest declares; ("tool", name) for a pyproject ``[tool.name]``."""
    low = basename.lower()
    if low == "package.json":
        yield from (("javascript", name) for name in _JSON_KEY.findall(head))
    elif low == "composer.json":
        yield from (("php", name) for name in _JSON_KEY.findall(head) if "/" in name)
    elif low.startswith("requirements") and low.endswith((".txt", ".in")):
        yield from (("python", name.lower()) for name in _REQUIREMENT.findall(head))
    elif low in {"pyproject.toml", "setup.cfg", "pipfile"}:
        yield from _pyproject(head)
    elif low == "cargo.toml":
        yield from _cargo(head)
    elif low == "go.mod":
        yield from (("go", path) for path in _GO_MOD.findall(head))
    elif low == "gemfile":
        yield from (("ruby", name) for name in _GEM.findall(head))
    elif low == "pubspec.yaml":
        yield from (("dart", name) for name in _YAML_KEY.findall(head))
    elif low in {"build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts"}:
        yield from _gradle(head)
    elif low == "pom.xml":
        yield from (("jvm", group) for group in _POM.findall(head))


def uses_tailwind(head: str) -> bool:
    """Whether a style sheet's head pulls Tailwind in."""
    return bool(_CSS_TAILWIND.search(head))
