"""The technology lexicon: what a text names, the words for categories, and the data behind them."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from gitmem import lexicon

DATA = Path(__file__).resolve().parent / "data"


@pytest.mark.parametrize(("text", "category"), [
    ("which package manager do we use?", "package_manager"),
    ("我们用什么包管理器", "package_manager"),
    ("包管理工具", "package_manager"),
    ("what linter runs in CI", "linter"),
    ("代码检查用什么", "linter"),
    ("静态检查", "linter"),
    ("lint 工具", "linter"),
    ("code formatter", "formatter"),
    ("代码格式化", "formatter"),
    ("格式化工具", "formatter"),
    ("test runner", "test"),
    ("testing framework", "test"),
    ("测试框架", "test"),
    ("测试运行器", "test"),
    ("单元测试", "test"),
    ("bundler", "builder"),
    ("build tool", "builder"),
    ("打包工具", "builder"),
    ("构建工具", "builder"),
    ("which ORM", "orm"),
    ("CI/CD", "ci"),
    ("continuous integration", "ci"),
    ("持续集成", "ci"),
    ("container", "container"),
    ("容器化", "container"),
    ("database", "db"),
    ("数据库", "db"),
    ("message queue", "queue"),
    ("message broker", "queue"),
    ("消息队列", "queue"),
    ("web framework", "framework"),
    ("框架", "framework"),
    ("programming language", "language"),
    ("编程语言", "language"),
    ("type checker", "type_checker"),
    ("类型检查", "type_checker"),
])
def test_categories_are_found_by_their_words_in_english_and_chinese(text: str, category: str) -> None:
    assert category in lexicon.categories(text)


def test_a_longer_category_phrase_wins_over_the_word_inside_it() -> None:
    assert lexicon.categories("test framework") == {"test"}
    assert lexicon.categories("UI framework") == {"ui_framework"}
    assert lexicon.categories("what do we eat for lunch") == frozenset()


@pytest.mark.parametrize(("category", "expected"), [
    ("package_manager", {"pnpm", "npm", "yarn", "uv", "poetry", "pip", "cargo", "bun"}),
    ("linter", {"ruff", "eslint", "flake8", "pylint", "clippy", "golangci-lint", "biome"}),
    ("formatter", {"prettier", "black", "gofmt", "rustfmt", "clang-format", "biome", "ruff", "isort"}),
    ("test", {"pytest", "jest", "vitest", "junit", "foundry", "hardhat"}),
    ("builder", {"vite", "webpack", "esbuild", "cmake", "gradle", "maven"}),
    ("orm", {"prisma", "sqlalchemy", "diesel", "gorm", "typeorm", "drizzle"}),
    ("ci", {"github-actions", "gitlab-ci", "jenkins", "circleci"}),
    ("container", {"docker", "podman", "docker-compose", "kubernetes", "helm"}),
    ("db", {"postgres", "mysql", "sqlite", "mongodb", "redis"}),
    ("queue", {"kafka", "rabbitmq", "celery"}),
    ("type_checker", {"mypy", "pyright", "tsc"}),
])
def test_members_of_a_category(category: str, expected: set[str]) -> None:
    assert expected <= lexicon.members(category)


def test_prettier_is_a_formatter_not_a_linter() -> None:
    # stack-analyser files it under linters; the overlay corrects it.
    assert lexicon.kind("prettier") == "formatter"
    assert "prettier" not in lexicon.members("linter")


def test_kinds_and_ecosystems() -> None:
    assert lexicon.kind("pnpm") == "package_manager"
    assert lexicon.kinds("ruff") == {"linter", "formatter"}
    assert lexicon.ecosystems("django") == {"python"}
    assert lexicon.ecosystems("react") == {"javascript"}
    assert lexicon.ecosystems("postgres") == frozenset()
    assert lexicon.scope("docker") == "global"
    assert lexicon.scope("pytest") == "tool"
    assert lexicon.scope("django") == "library"
    assert lexicon.scope("rust") == "language"
    assert lexicon.implied(["nextjs"]) >= {"nextjs", "react"}
    with pytest.raises(KeyError):
        lexicon.kind("no-such-tech")


@pytest.mark.parametrize(("text", "expected"), [
    ("Go to the settings page", set()),
    # A name inside a longer word is no name.
    ("Use reactive forms", set()),
    ("a rustic look", set()),
    ("the go veterans", set()),
    ("select rows with df.loc and df.iloc", {"pandas"}),
    ("never block across fut.await", {"rust"}),
    ("Go ahead and merge", set()),
    ("Write services in Go", {"go"}),
    ("Go code must pass go vet", {"go", "govet"}),
    ("用Go语言写服务", {"go"}),
    ("Use Express for the API", {"express"}),
    ("express your intent clearly", set()),
    ("Express your intent clearly", set()),
    ("We use pnpm, not npm", {"pnpm", "npm"}),
    ("Use Swift for the iOS app", {"swift", "ios"}),
    ("a swift response", set()),
    ("Dart classes", {"dart"}),
    ("hit the dart board", set()),
    ("Use C/C++ for drivers", {"c", "cpp"}),
    ("plan C is the fallback", set()),
    ("Objective-C code", {"objectivec"}),
    ("C# and F# services", {"csharp", "fsharp"}),
    ("In R, use the tidyverse", {"r"}),
    ("Write R package docs with roxygen2", {"r"}),
    ("R&D budget", set()),
    ("the next release", set()),
    ("Use Next.js 14 with the App Router", {"nextjs"}),
    ("Spring Boot services", {"spring-boot"}),
    ("Use the black box approach", set()),
    ("Format with Black", {"black"}),
    ("Flask blueprints", {"flask"}),
    ("Remix loaders", {"remix"}),
    ("remix the track", set()),
    ("Ruby gems", {"ruby"}),
    ("rust is fine in lower case", {"rust"}),
    ("bootstrap the project", set()),
    ("Use Bootstrap 5 grids", {"bootstrap"}),
    ("Run make build", set()),
    ("Keep the Makefile short", {"make"}),
    ("the Angular convention for commit types", set()),
    ("S3 class names in R6", {"r"}),
    ("Upload to S3 buckets", {"aws"}),
    ("Place logic in lib.rs, not main.rs", {"rust"}),
    ("use '@tanstack/react-router' with Vite", {"tanstack-router", "vite"}),
    ("鸿蒙应用用 ArkTS", {"arkts"}),
    # Smart contracts are written in Python, Rust, Move and Cairo too.
    ("Smart contracts are written in native Python", {"python"}),
])
def test_mentions_with_ambiguous_words(text: str, expected: set[str]) -> None:
    assert lexicon.mentions(text) == expected, [(m.text, m.key) for m in lexicon.find(text)]


def test_find_gives_the_spans_of_each_name() -> None:
    found = lexicon.find("Use pnpm and Docker Compose")
    assert [(m.text, m.key) for m in found] == [("pnpm", "pnpm"), ("Docker Compose", "docker-compose")]
    assert all("Use pnpm and Docker Compose"[m.start:m.end] == m.text for m in found)


@pytest.mark.parametrize(("name", "expected"), [
    ("go.mdc", {"go"}),
    ("go-backend-scalability-cursorrules-prompt-file.mdc", {"go"}),
    ("python-django-best-practices.mdc", {"python", "django"}),
    ("r-cursorrules-prompt-file-best-practices.mdc", {"r"}),
    ("clean-code.mdc", set()),
    ("backend-go-notes", set()),
])
def test_mentions_in_names_and_tags(name: str, expected: set[str]) -> None:
    assert lexicon.mentions_in_name(name) == expected


def test_the_data_names_its_sources_and_their_licences() -> None:
    sources = lexicon.data().sources
    names = {s["name"] for s in sources}
    assert {"github-linguist/linguist", "specfy/stack-analyser"} <= names
    assert all(s["licence"] == "MIT" for s in sources)
    assert all(len(s.get("commit", "x" * 40)) == 40 for s in sources)


def test_a_few_hundred_technologies_each_with_a_known_scope_and_kind() -> None:
    techs = lexicon.data().techs
    assert 250 <= len(techs) <= 800
    assert {t.scope for t in techs.values()} <= set(lexicon.SCOPES)
    for tech in techs.values():
        assert tech.kinds, tech.key
        assert tech.implies <= set(techs), tech.key


def test_every_name_belongs_to_one_technology() -> None:
    owners: dict[str, str] = {}
    for folded, aliases in lexicon.data().aliases.items():
        keys = {a.key for a in aliases}
        assert len(keys) == 1, (folded, keys)
        owners[folded] = keys.pop()
    assert owners["pnpm"] == "pnpm"


def test_real_statements_sample(capsys: pytest.CaptureFixture[str]) -> None:
    """On 200 random real statements: names are found, and common words are not taken for names."""
    rows = [json.loads(line) for line in (DATA / "cursorrules.jsonl").read_text(encoding="utf-8").splitlines()]
    sample = random.Random(21).sample(rows, 200)
    found = {r["text"]: lexicon.mentions(r["text"]) for r in sample}
    named = sum(1 for keys in found.values() if keys)
    assert 40 <= named <= 140
    # The everyday words that are also names never come out of these statements in lower case.
    for text, keys in found.items():
        for key, word in (("go", " go "), ("express", " express "), ("swift", " swift "), ("r", " r ")):
            if word in f" {text.lower()} " and key in keys:
                assert any(m.text != m.text.lower() for m in lexicon.find(text) if m.key == key), text


def test_mentions_of_all_statements_are_cached_and_consistent() -> None:
    texts = [json.loads(line)["text"] for line in (DATA / "cursorrules.jsonl").read_text(encoding="utf-8").splitlines()]
    first = [lexicon.mentions(t) for t in texts]
    assert [lexicon.mentions(t) for t in texts] == first
    assert sum(1 for keys in first if keys) > 1000
