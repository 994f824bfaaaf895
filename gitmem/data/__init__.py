"""Data files the core reads: ``tech.json``, the technology lexicon (see ``tools/tech-lexicon/``)."""
