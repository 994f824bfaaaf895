"""What a path is, and which memories apply to it."""

from __future__ import annotations

import pytest

from gitmem import lexicon
from gitmem.pathprofile import Profile, applies, applies_to_any, profile, profiles, why_not


@pytest.mark.parametrize(("path", "languages", "ecosystems", "techs"), [
    ("app/models.py", {"python"}, {"python"}, set()),
    ("contracts/Token.sol", {"solidity"}, {"solidity"}, set()),
    ("README.md", set(), set(), {"markdown"}),
    ("src/app.ts", {"typescript", "javascript"}, {"javascript"}, set()),
    ("package.json", set(), {"javascript"}, {"nodejs"}),
    ("src/main.rs", {"rust"}, {"rust"}, set()),
    ("main.go", {"go"}, {"go"}, set()),
    ("go.mod", set(), {"go"}, {"gomod"}),
    ("Dockerfile", set(), set(), {"docker"}),
    ("compose.yaml", set(), set(), {"docker", "docker-compose"}),
    (".github/workflows/ci.yml", set(), set(), {"github-actions", "github", "yaml"}),
    ("src/Main.java", {"java"}, {"jvm"}, set()),
    ("src/Button.tsx", {"typescript", "javascript", "jsx", "html"}, {"javascript", "web"}, {"react"}),
    ("src/Button.jsx", {"javascript", "jsx", "html"}, {"javascript", "web"}, {"react"}),
    ("src/x.cpp", {"cpp", "c"}, {"c"}, set()),
    ("styles/site.scss", {"scss", "css"}, {"web"}, set()),
    ("src/App.vue", {"javascript", "html", "css"}, {"javascript", "web"}, {"vue"}),
    ("src/routes/+page.svelte", {"javascript", "html", "css"}, {"javascript", "web"}, {"svelte", "sveltekit"}),
    ("app/Http/Controllers/UserController.php", {"php"}, {"php"}, {"laravel"}),
    ("resources/views/home.blade.php", {"php", "html"}, {"php", "web"}, {"laravel"}),
    ("Cargo.toml", set(), {"rust"}, {"cargo"}),
    ("Package.swift", {"swift"}, {"apple"}, {"swiftpm"}),
    ("foundry.toml", set(), {"solidity"}, {"foundry"}),
    ("hardhat.config.ts", {"typescript", "javascript"}, {"javascript", "solidity"}, {"hardhat"}),
    ("Gemfile", {"ruby"}, {"ruby"}, {"bundler"}),
    ("composer.json", set(), {"php"}, {"composer"}),
    ("build.gradle.kts", {"kotlin"}, {"jvm"}, {"gradle"}),
    ("pom.xml", set(), {"jvm"}, {"maven", "xml"}),
    ("pyproject.toml", set(), {"python"}, {"toml"}),
    ("requirements.txt", set(), {"python"}, {"pip"}),
    ("./src/app.ts", {"typescript", "javascript"}, {"javascript"}, set()),
    ("src\\win\\app.py", {"python"}, {"python"}, set()),
])
def test_profile_of_a_path(path: str, languages: set[str], ecosystems: set[str], techs: set[str]) -> None:
    got = profile(path)
    assert (got.languages, got.ecosystems, got.techs) == (languages, ecosystems, techs)


def test_models_py_alone_is_python_and_no_guess_of_django() -> None:
    # models.py is in many frameworks; only a strong sign (an import, a migration) says Django.
    assert "django" not in profile("app/models.py").techs
    assert "django" in profile("shop/migrations/0001_initial.py").techs
    assert "django" in profile("app/models.py", "from django.db import models\n").techs


@pytest.mark.parametrize(("path", "head", "tech"), [
    ("app/api.py", "import fastapi\nfrom pydantic import BaseModel\n", "fastapi"),
    ("app/api.py", "from pydantic import BaseModel\n", "pydantic"),
    ("src/App.tsx", "import { useQuery } from '@tanstack/react-query'\n", "tanstack-query"),
    ("src/server.js", "const express = require('express')\n", "express"),
    ("src/page.ts", "import Link from 'next/link'\n", "nextjs"),
    ("src/main.rs", "use tokio::sync::Mutex;\nuse axum::Router;\n", "axum"),
    ("src/lib.rs", "use anchor_lang::prelude::*;\n", "anchor"),
    ("main.go", 'package main\n\nimport (\n\t"fmt"\n\t"github.com/gin-gonic/gin"\n)\n', "gin"),
    ("main.go", 'package main\nimport "github.com/gofiber/fiber/v2"\n', "fiber"),
    ("contracts/Token.sol", 'import "@openzeppelin/contracts/token/ERC20/ERC20.sol";\n', "openzeppelin"),
    ("test/Token.t.sol", 'import {Test} from "forge-std/Test.sol";\n', "foundry"),
    ("src/Main.java", "import org.springframework.boot.SpringApplication;\n", "spring-boot"),
    ("src/Main.kt", "import io.ktor.server.application.*\n", "ktor"),
    ("src/User.php", "<?php\nuse Illuminate\\Database\\Eloquent\\Model;\n", "laravel"),
    ("Sources/App/View.swift", "import SwiftUI\n", "swiftui"),
    ("lib/main.dart", "import 'package:flutter/material.dart';\n", "flutter"),
    ("src/test.cpp", "#include <gtest/gtest.h>\n", "gtest"),
    ("styles/app.css", "@tailwind base;\n", "tailwind"),
    ("package.json", '{"dependencies": {"react": "^18", "next": "14"}}', "nextjs"),
    ("requirements.txt", "Django>=5\ncelery\n", "django"),
    ("pyproject.toml", '[project]\ndependencies = ["fastapi>=0.110"]\n[tool.ruff]\n', "ruff"),
    ("Cargo.toml", '[package]\nname = "x"\n[dependencies]\ntokio = "1"\n', "tokio"),
    ("go.mod", "module x\n\nrequire github.com/gin-gonic/gin v1.9.1\n", "gin"),
    ("Gemfile", "source 'https://rubygems.org'\ngem 'rails', '~> 7'\n", "rails"),
    ("pubspec.yaml", "dependencies:\n  flutter:\n    sdk: flutter\n  flutter_riverpod: ^2\n", "riverpod"),
    ("build.gradle", "plugins { id 'org.springframework.boot' version '3.2.0' }\n", "spring-boot"),
])
def test_a_head_adds_what_the_file_imports(path: str, head: str, tech: str) -> None:
    assert tech not in profile(path).techs
    assert tech in profile(path, head).techs


def test_an_import_of_a_library_of_two_ecosystems_keeps_the_file_in_its_own() -> None:
    # python-socketio and socket.io share a name; a Python file importing it is still only Python's.
    got = profile("app/ws.py", "import socketio\n")
    assert "socketio" in got.techs and got.ecosystems == {"python"}
    assert not applies(lexicon.mentions("We use pnpm, not npm"), got)


def test_path_patterns_match_whole_folder_names() -> None:
    assert "nextjs" in profile("app/dashboard/page.tsx").techs
    assert "nextjs" in profile("web/app/dashboard/page.tsx").techs
    assert "nextjs" not in profile("webapp/dashboard/page.tsx").techs


def test_a_head_of_another_language_adds_nothing() -> None:
    # A Python import line in a Go file's head is not a Python import.
    assert profile("main.go", "import django\n").techs == frozenset()


def test_typescript_in_a_vue_file_by_its_script_tag() -> None:
    assert "typescript" not in profile("src/App.vue").languages
    assert "typescript" in profile("src/App.vue", '<script setup lang="ts">\n').languages


def names(text: str) -> frozenset[str]:
    return lexicon.mentions(text)


@pytest.mark.parametrize(("text", "path", "expected"), [
    # Team-wide: names nothing bound to a language, or only cross-language tools.
    ("Write clear commit messages", "contracts/Token.sol", True),
    ("Use Docker multi-stage builds", "app/models.py", True),
    ("Use Postgres for everything", "src/main.rs", True),
    ("Run CI on GitHub Actions", "README.md", True),
    # Languages: the file must take one.
    ("Use TypeScript strict mode", "src/app.ts", True),
    ("Use TypeScript strict mode", "app/models.py", False),
    ("Prefer const over let in JavaScript", "src/app.ts", True),
    ("Write services in Go", "main.go", True),
    ("Write services in Go", "src/main.rs", False),
    ("Use C/C++ for drivers", "src/x.cpp", True),
    ("Use modern C++", "src/x.c", False),
    ("In Python use snake_case; in JavaScript camelCase", "app/models.py", True),
    # Tools: the file must be in their ecosystem.
    ("We use pnpm, not npm", "package.json", True),
    ("We use pnpm, not npm", "src/app.ts", True),
    ("We use pnpm, not npm", "app/models.py", False),
    ("Use pytest fixtures", "app/models.py", True),
    ("Use pytest fixtures", "src/app.ts", False),
    ("Run cargo clippy before merging", "src/main.rs", True),
    ("Run cargo clippy before merging", "main.go", False),
    ("Use Foundry for tests", "contracts/Token.sol", True),
    ("Use OpenZeppelin's SafeERC20", "contracts/Token.sol", True),
    ("Use OpenZeppelin's SafeERC20", "src/app.ts", False),
    # Frameworks: the file must show a sign of one.
    ("Use Django class-based views", "app/models.py", False),
    ("Use React hooks for state", "src/Button.tsx", True),
    ("Use React hooks for state", "src/app.ts", False),
    ("Use React hooks for state", "app/models.py", False),
    ("Use Vue, not React", "src/App.vue", True),
    ("Use Svelte 5 runes", "src/routes/+page.svelte", True),
    ("Use Eloquent scopes", "app/Http/Controllers/UserController.php", True),
    # A rule naming Next.js and React is a Next.js rule: React alone is no sign of it.
    ("Use Next.js App Router with React Server Components", "src/Button.tsx", False),
    ("Use Next.js App Router with React Server Components", "app/dashboard/page.tsx", True),
    # Three ecosystems or more: languages in general.
    ("Server-side programming (Go, Rust, Java, Python, Node.js)", "contracts/Token.sol", True),
])
def test_applies(text: str, path: str, expected: bool) -> None:
    assert applies(names(text), profile(path)) is expected, why_not(names(text), profile(path))


def test_applies_with_a_head_that_shows_the_framework() -> None:
    rule = names("Use Django class-based views")
    assert not applies(rule, profile("app/models.py"))
    assert applies(rule, profile("app/models.py", "from django.db import models\n"))


def test_why_not_says_what_failed() -> None:
    assert why_not(names("Use pytest fixtures"), profile("src/app.ts")) == (
        "it names pytest, tools of python, and src/app.ts (JavaScript, TypeScript) is not")
    assert why_not(names("Write services in Go"), profile("README.md")) == (
        "it names Go, and README.md (Markdown) is not written in it")
    assert why_not(names("Use Django views"), profile("app/models.py")) == (
        "it names Django, and app/models.py (Python) shows no sign of it")
    assert why_not(names("Use Django views"), profile("app/models.py", "import django\n")) is None


def test_several_files_apply_if_any_does() -> None:
    where = profiles(["src/app.ts", "package.json"])
    assert applies_to_any(names("We use pnpm, not npm"), where)
    assert applies_to_any(names("Use TypeScript strict mode"), where)
    assert not applies_to_any(names("Use pytest fixtures"), where)
    assert not applies_to_any(names("Use pytest fixtures"), [])


def test_a_union_of_profiles_joins_their_facts() -> None:
    both = profile("src/app.ts") | profile("package.json", '{"dependencies": {"react": "18"}}')
    assert isinstance(both, Profile)
    assert {"typescript", "javascript"} <= both.languages and "react" in both.techs
    assert applies(names("Use React hooks for state"), both)
    assert both.path == "src/app.ts + package.json"


def test_unknown_keys_are_ignored() -> None:
    assert applies(frozenset({"no-such-tech"}), profile("main.go"))


def test_an_unknown_extension_is_a_profile_of_nothing() -> None:
    got = profile("notes/todo.zzz")
    assert (got.languages, got.ecosystems, got.techs) == (frozenset(), frozenset(), frozenset())
    assert applies(names("Write clear commit messages"), got)
    assert not applies(names("Write services in Go"), got)
