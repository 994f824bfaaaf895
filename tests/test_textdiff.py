"""Word diffs and lost words: Latin by word, Chinese by character, punctuation never a word."""

from __future__ import annotations

from gitmem.textdiff import Piece, changed, is_word, lost_words, marked, tokens, word_diff


def test_tokens_cut_latin_by_word_and_chinese_by_character() -> None:
    assert tokens("Use ruff 0.6, 提交代码。") == ["Use", " ", "ruff", " ", "0", ".", "6", ",", " ", "提", "交", "代",
                                                 "码", "。"]
    assert "".join(tokens("any text\n\twith  spaces")) == "any text\n\twith  spaces"


def test_word_diff_keeps_the_unchanged_words_and_marks_the_rest() -> None:
    assert word_diff("The API listens on port 8080", "The API listens on port 9090") == [
        Piece("same", "The API listens on port "), Piece("del", "8080"), Piece("ins", "9090")]
    assert word_diff("提交代码前必须运行单元测试。", "提交代码前一定要运行单元测试。") == [
        Piece("same", "提交代码前"), Piece("del", "必须"), Piece("ins", "一定要"), Piece("same", "运行单元测试。")]
    assert not changed(word_diff("same text", "same text")) and changed(word_diff("a", "b"))


def test_lost_words_ignore_case_space_and_punctuation() -> None:
    assert lost_words("Deploy with Docker, to staging!", "deploy with docker to production") == ["staging"]
    assert lost_words("部署到生产环境。", "部署到测试环境") == ["生", "产"]
    assert not is_word("。") and not is_word(",") and is_word("码") and is_word("8080")


def test_marked_flags_every_lost_word_where_it_stands() -> None:
    assert marked("keep the token, set the region", ["region"]) == [
        Piece("same", "keep the token, set the "), Piece("del", "region")]
    assert [p.to_dict() for p in marked("a b", [])] == [{"op": "same", "text": "a b"}]
